package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// Warning is something an answer tells the agent that did not stop the
// operation: an answer's warnings (docs/api.md, Answers), of the errors' shape.
type Warning struct {
	Code    string
	Field   string
	Message string
}

// duplicateCheck is in's duplicate rule applied to a request's
// normalized payload, nil when the intent has none.
func duplicateCheck(def *intent.Intent, norm contract.Normalized) (*store.DuplicateCheck, error) {
	if def.Duplicates == nil {
		return nil, nil
	}
	bk, err := def.BusinessKey(norm)
	if err != nil {
		return nil, err
	}
	return &store.DuplicateCheck{BusinessKey: bk, Window: def.Duplicates.Window, Action: store.DuplicateAction(def.Duplicates.Action)}, nil
}

// fieldsOf names a rule's fields for a message.
func fieldsOf(def *intent.Intent) string {
	var names []string
	for _, f := range def.Duplicates.Fields {
		if f.Day {
			names = append(names, "the day of "+f.Field)
			continue
		}
		names = append(names, f.Field)
	}
	return strings.Join(names, ", ")
}

// earlierText says when the earlier operation of the same business event
// was made and, only to the agent that made it, under which key.
func earlierText(earlier store.Operation, at time.Time, agent string) string {
	s := "was made at " + at.UTC().Format(time.RFC3339)
	if earlier.Key != "" && earlier.Agent == agent {
		s += " under the key " + earlier.Key
	}
	return s
}

// duplicateBlocked is the refusal of a new key whose business event a
// live operation has already, under a rule that blocks.
func duplicateBlocked(def *intent.Intent, earlier store.Operation, agent string) error {
	return codes.Refusef(codes.DuplicateSuspected, "",
		"another operation of %s about the same business event (the same %s) %s; this intent's rule refuses a second one within %s: nothing was journaled and this key stays free",
		def.Name, fieldsOf(def), earlierText(earlier, earlier.CreatedAt, agent), def.Duplicates.Window)
}

// DuplicateWarning is the warning an answer about op carries when its
// duplicate rule found an earlier operation of the same business event
// (rule warn, or hold, whatever a person decided since); nil otherwise.
func (e *Engine) DuplicateWarning(ctx context.Context, op store.Operation) *Warning {
	if op.DuplicateOf == "" {
		return nil
	}
	earlier, err := e.store.Get(ctx, op.DuplicateOf)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			e.log.Warn("reading the earlier operation of a suspected duplicate", "key", op.Key, "err", err)
		}
		earlier = store.Operation{} // retention removed it: its time is kept on the row
	}
	what := "another operation about the same business event"
	if def, ok := e.cfg.Catalog.Lookup(op.Intent); ok && def.Duplicates != nil {
		what = fmt.Sprintf("another operation of %s about the same business event (the same %s)", op.Intent, fieldsOf(def))
	}
	return &Warning{Code: codes.DuplicateSuspected, Message: what + " " + earlierText(earlier, op.DuplicateAt, op.Agent)}
}

// validateDuplicate is the warning of mode validate: an earlier live
// operation of the same business event, read without deciding anything.
func (e *Engine) validateDuplicate(ctx context.Context, def *intent.Intent, norm contract.Normalized, key, agent string) ([]Warning, error) {
	check, err := duplicateCheck(def, norm)
	if check == nil || err != nil {
		return nil, err
	}
	earlier, err := e.store.FindDuplicate(ctx, def.Name, *check, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("another operation of %s about the same business event (the same %s) %s; executing this request would be %s",
		def.Name, fieldsOf(def), earlierText(earlier, earlier.CreatedAt, agent),
		map[string]string{intent.DuplicateBlock: "refused", intent.DuplicateHold: "held for a person to decide", intent.DuplicateWarn: "carried out with this warning"}[def.Duplicates.Action])
	return []Warning{{Code: codes.DuplicateSuspected, Message: msg}}, nil
}

// duplicateDecided tells OnDuplicate what a rule did to a new key.
func (e *Engine) duplicateDecided(def *intent.Intent) {
	if e.cfg.OnDuplicate != nil && def.Duplicates != nil {
		e.cfg.OnDuplicate(def.Name, def.Duplicates.Action)
	}
}
