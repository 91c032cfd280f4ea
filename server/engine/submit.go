package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// Submission is one operation request as an agent sent it, its transport
// already checked: the body read within its limit, the token verified.
type Submission struct {
	Token store.Token
	// KeyHeader is the Idempotency-Key header's first value; HasKeyHeader
	// reports whether the request carries the header at all.
	KeyHeader    string
	HasKeyHeader bool
	Body         []byte
	// step: a process's step, sent by the engine under a derived key,
	// which no agent may send; event: the run of a notice, likewise.
	step, event bool
}

// OutcomeKind is what an Outcome reports: a journal row, a validation, or a read.
type OutcomeKind int

const (
	// KindOperation: a journal row (Op), replayed or driven now.
	KindOperation OutcomeKind = iota
	// KindValidated: mode validate passed every check (Plan, PlanHash).
	KindValidated
	// KindRead: a read-only intent's answer (Read).
	KindRead
)

// Outcome is what Submit made of a submission.
type Outcome struct {
	// What is known of the request: its intent once the envelope named a
	// known one, its key once the key passed the contract, its
	// fingerprint once the payload did. Set as far as known even when
	// Submit refuses the request, for the refusal's answer.
	Intent      *intent.Intent
	Key         string
	Fingerprint string
	// RequestID is the request id to echo.
	RequestID string

	Kind OutcomeKind
	// Op is the journal row; Replayed reports that the effect was made
	// before this request (a replay, or found at the target by key).
	Op       store.Operation
	Replayed bool
	Plan     json.RawMessage
	PlanHash string
	Read     adapters.Result
	// Warnings of mode validate: a suspected duplicate.
	Warnings []Warning
	// Process and Steps: a process's row and its steps (KindProcess).
	Process store.Process
	Steps   []StepView
}

// request is an operation request that passed the contract.
type request struct {
	env  contract.Envelope
	def  *intent.Intent
	key  string // "" only for read-only intents and validate without a key
	norm contract.Normalized
	// replay is the final operation of a key whose definition is gone,
	// replayed as it is (def then stands for the definition).
	replay *store.Operation
}

// Submit answers one operation request: it checks the request against
// the contract — envelope, intent, scope, key, payload — before anything
// is journaled, so a refusal binds nothing; then validates it, reads, or
// binds its key to its fingerprint in the journal and drives the
// operation to the target exactly once.
func (e *Engine) Submit(ctx context.Context, sub Submission) (Outcome, error) {
	tok := sub.Token
	seen := &seenRequest{digest: requestDigest(tok.Agent, sub.KeyHeader, sub.HasKeyHeader, sub.Body)}
	if final, req, ok := e.replays.byRequest(seen.digest); ok && tok.Has(req.intent.Scope) {
		// These very bytes were checked and replayed from this row before.
		e.decided(req.intent.Name, store.DecisionReplay)
		return Outcome{Intent: req.intent, Key: final.Key, Fingerprint: final.Fingerprint, RequestID: req.requestID,
			Kind: KindOperation, Op: final, Replayed: true}, nil
	}
	var out Outcome
	r, err := e.check(ctx, sub, &out)
	if err != nil {
		return out, err
	}
	if r.replay != nil {
		e.decided(r.def.Name, store.DecisionReplay)
		return Outcome{Intent: r.def, Key: r.key, Fingerprint: r.replay.Fingerprint, RequestID: r.env.RequestID,
			Kind: KindOperation, Op: *r.replay, Replayed: true}, nil
	}
	env, def, key, norm := r.env, r.def, r.key, r.norm
	out.RequestID = env.RequestID
	if def.IsProcess() {
		return e.submitProcess(ctx, tok, r, &out)
	}
	seen.intent, seen.requestID = def, env.RequestID

	switch {
	case env.Mode == contract.ModeValidate:
		if err := e.checkLimits(def, norm); err != nil {
			return out, err
		}
		if err := e.keyStillFits(ctx, key, tok.Agent, norm.Fingerprint); err != nil {
			return out, err
		}
		out.Kind = KindValidated
		if out.Plan, out.PlanHash, err = e.validate(ctx, def, norm, key); err != nil {
			return out, err
		}
		out.Warnings, err = e.validateDuplicate(ctx, def, norm, key, tok.Agent)
		return out, err
	case !def.Journaled:
		out.Kind = KindRead
		out.Read, err = e.read(ctx, def, norm)
		return out, err
	}
	out.Kind = KindOperation
	out.Op, out.Replayed, err = e.execute(ctx, tok, r, seen)
	return out, err
}

// check applies the contract to a submission, noting in out what it
// learned of the request as it goes.
func (e *Engine) check(ctx context.Context, sub Submission, out *Outcome) (request, error) {
	var (
		r   request
		err error
	)
	if r.env, err = contract.DecodeEnvelope(sub.Body); err != nil {
		return request{}, err
	}
	def, ok := e.cfg.Catalog.Lookup(r.env.Intent)
	if !ok {
		def, ok = e.cfg.Catalog.Process(r.env.Intent)
	}
	if !ok {
		op, err := e.notServed(ctx, sub, r.env)
		if err != nil {
			return request{}, err
		}
		r.def, r.key, r.replay = retired(op), op.Key, &op
		out.Intent, out.Key, out.Fingerprint = r.def, op.Key, op.Fingerprint
		return r, nil
	}
	r.def, out.Intent = def, def
	if !def.IsProcess() && !sub.Token.Has(def.Scope) {
		return request{}, codes.Refusef(codes.PermissionDenied, "", "this token lacks the %q scope that %s needs", def.Scope, def.Name)
	}
	if r.key, err = contract.KeyFromRequest(sub.KeyHeader, sub.HasKeyHeader, r.env.RequestID, e.cfg.Contour, def.Name); err != nil {
		return request{}, err
	}
	if r.key == "" && def.Journaled && r.env.Mode != contract.ModeValidate {
		return request{}, contract.ErrKeyMissing(e.cfg.Contour, def.Name)
	}
	if r.key != "" {
		if err := contract.CheckKey(r.key, e.cfg.Contour, def.Name); err != nil {
			return request{}, err
		}
		if isStepKey(r.key) && !sub.step {
			return request{}, codes.Refusef(codes.KeyInvalid, contract.KeyField,
				"operation keys whose id starts with %s are the keys of processes' steps, which the gateway makes; build your key from a business id, e.g. %s",
				stepKeyPrefix, contract.ExampleKey(e.cfg.Contour, def.Name))
		}
		if isEventKey(r.key) && !sub.event {
			return request{}, e.eventKeyRefusal(def.Name)
		}
		out.Key = r.key
	}
	if r.norm, err = def.NormalizeEnvelope(&r.env); err != nil {
		return request{}, err
	}
	out.Fingerprint = r.norm.Fingerprint
	if _, ok := e.targets[def.Target]; !ok && !def.IsProcess() {
		return request{}, fmt.Errorf("no target configured for system %q", def.Target)
	}
	return r, nil
}

// execute binds a journaled request's key to its fingerprint and drives
// the operation, unless the journal answers for it: a replay, an attempt
// in progress, an approval awaited, a refusal by the target's checks, a
// key used with another request or by another agent. replayed reports an
// effect made before this request.
func (e *Engine) execute(ctx context.Context, tok store.Token, r request, seen *seenRequest) (op store.Operation, replayed bool, err error) {
	env, def, key, norm := r.env, r.def, r.key, r.norm
	var refused *adapters.Error
	var dup *store.DuplicateCheck
	if final, ok := e.replays.get(key); ok && final.Agent == tok.Agent && final.Fingerprint == norm.Fingerprint {
		// Kept from a read of the journal: answered, like the read, only
		// once what it saw is on disk.
		store.NoteRead(ctx)
		e.replays.remember(key, seen)
		e.decided(def.Name, store.DecisionReplay)
		return final, true, nil
	}
	ctx = store.WithActor(ctx, store.Actor{Kind: store.ActorAgent, Name: tok.Agent})
	// The lease this request's claim would take is in use until its drive
	// ended: no other request of this run takes it meanwhile.
	owner, done := e.useLease()
	defer done()

	// A new key that needs nothing asked of the target before its claim is
	// claimed at once, as new: one read of the journal fewer per new
	// operation. A key that has a row comes back unchanged, nothing
	// written, and goes the way of a key seen before below; so does any
	// request the limits refuse (a key seen before is not refused by them)
	// or whose claim failed.
	var existing store.Operation
	if !e.checksBeforeClaim(def, env.PlanHash) && e.checkLimits(def, norm) == nil {
		rule, err := duplicateCheck(def, norm)
		if err != nil {
			return store.Operation{}, false, err
		}
		d, op, err := e.store.Claim(ctx, e.claimRequest(tok, r, def, norm, owner, nil, rule, true))
		if err == nil && d != store.DecisionExists {
			return e.claimed(ctx, tok, def, key, d, op)
		}
		if err == nil {
			existing = op
		}
	}
	if existing.Key == "" {
		existing, err = e.store.Get(ctx, key)
	}
	switch {
	case err == nil && existing.Status.Terminal() && existing.Agent == tok.Agent && existing.Fingerprint == norm.Fingerprint:
		// Fast path: a final row of this agent with this fingerprint is
		// replayed from a read, without taking the journal's writer. Final
		// rows never change, so the read is as good as the claim's; the
		// row is kept for the next replay.
		e.replays.put(existing)
		e.replays.remember(key, seen)
		e.decided(def.Name, store.DecisionReplay)
		return existing, true, nil
	case err == nil && existing.Agent == tok.Agent:
		// A key seen before, not final: it runs only under the definition
		// it was first accepted with, and its fingerprint is that
		// definition's.
		if def, err = e.acceptedUnder(existing); err != nil {
			return store.Operation{}, false, err
		}
		if def != r.def {
			if norm, err = def.Normalize(env.Payload); err != nil {
				return store.Operation{}, false, err
			}
		}
	case errors.Is(err, store.ErrNotFound):
		// A key never seen: the business limits, then every check at the
		// target (references, business rules), which writes nothing — unless
		// the target's execute makes the same checks itself. The
		// target's refusal is journaled failed_final below, before anything
		// was sent to execute. (A key seen before was accepted then: its
		// retries and replays are not refused by limits changed since.)
		if err := e.checkLimits(def, norm); err != nil {
			return store.Operation{}, false, err
		}
		if e.checksBeforeClaim(def, env.PlanHash) {
			if refused, err = e.precheck(ctx, def, norm, key, env.PlanHash); err != nil {
				return store.Operation{}, false, err
			}
		}
		// The duplicate rule is decided by the claim, in its transaction.
		if dup, err = duplicateCheck(def, norm); err != nil {
			return store.Operation{}, false, err
		}
	case err != nil:
		return store.Operation{}, false, err
	}

	d, op, err := e.store.Claim(ctx, e.claimRequest(tok, r, def, norm, owner, refused, dup, false))
	if err != nil {
		if store.Unavailable(err) && existing.AttemptCount > 0 && existing.Agent == tok.Agent && existing.Fingerprint == norm.Fingerprint {
			// This request sent nothing, but an earlier one with this key
			// may have: "nothing was sent" would invite a new key.
			return e.unrecorded(existing, err), false, nil
		}
		return store.Operation{}, false, err
	}
	return e.claimed(ctx, tok, def, key, d, op)
}

// claimRequest is the claim of r's key under def, its payload normalized
// as norm, for owner's lease.
func (e *Engine) claimRequest(tok store.Token, r request, def *intent.Intent, norm contract.Normalized, owner string, refused *adapters.Error, dup *store.DuplicateCheck, onlyNew bool) store.ClaimRequest {
	return store.ClaimRequest{
		Key:           r.key,
		Intent:        def.Name,
		Fingerprint:   norm.Fingerprint,
		TargetSystem:  def.Target,
		Agent:         tok.Agent,
		ActorID:       r.env.ActorID,
		RequestID:     r.env.RequestID,
		Payload:       norm.Payload,
		IntentVersion: def.Version,
		IntentDigest:  def.Digest,
		AwaitApproval: def.Money,
		ApprovalTTL:   e.cfg.ApprovalTTL,
		Refused:       e.failureOf(refused),
		Duplicates:    dup,
		Owner:         owner,
		Lease:         e.lease(def.Target),
		OnlyNew:       onlyNew,
	}
}

// claimed answers what the journal decided for a claim of key, driving the
// operation when it is the caller's to run.
func (e *Engine) claimed(ctx context.Context, tok store.Token, def *intent.Intent, key string, d store.Decision, op store.Operation) (store.Operation, bool, error) {
	e.log.Info("operation claimed", "key", key, "intent", def.Name, "agent", tok.Agent, "decision", d.String())
	e.decided(def.Name, d)
	if d == store.DecisionDuplicate || op.Suspected {
		e.duplicateDecided(def)
	}

	switch d {
	case store.DecisionDuplicate:
		return store.Operation{}, false, duplicateBlocked(def, op, tok.Agent)
	case store.DecisionMismatch:
		return store.Operation{}, false, keyMismatch(op)
	case store.DecisionForeign:
		return store.Operation{}, false, keyForeign()
	case store.DecisionReplay:
		return op, true, nil
	case store.DecisionInProgress, store.DecisionAwaitingApproval, store.DecisionRefused:
		return op, false, nil
	}
	return e.drive(ctx, d, op)
}

// notServed answers an intent the catalog does not serve. The retry of a
// key this agent's operation of that intent holds (its definition is gone
// since the key was accepted) gets the operation back to replay when it is
// final and the request is the one it recorded — its fingerprint, taken
// without the gone definition's normalization, is the row's — and
// INTENT_CHANGED otherwise: nothing runs without its definition. Any other
// request is INTENT_NOT_ALLOWED.
func (e *Engine) notServed(ctx context.Context, sub Submission, env contract.Envelope) (store.Operation, error) {
	name := env.Intent
	key, err := contract.KeyFromRequest(sub.KeyHeader, sub.HasKeyHeader, env.RequestID, e.cfg.Contour, name)
	if err != nil || key == "" {
		return store.Operation{}, e.cfg.Catalog.NotAllowed(name)
	}
	op, err := e.store.Get(ctx, key)
	if err != nil || op.Agent != sub.Token.Agent || op.Intent != name {
		return store.Operation{}, e.cfg.Catalog.NotAllowed(name)
	}
	if op.Status.Terminal() {
		obj, err := contract.DecodePayload(name, env.Payload)
		var stored map[string]any
		if err == nil && json.Unmarshal(op.Payload, &stored) == nil {
			asStored(obj, stored)
			if norm, err := contract.Seal(name, obj); err == nil && norm.Fingerprint == op.Fingerprint {
				return op, nil
			}
		}
	}
	return store.Operation{}, intentChanged(name, max(op.IntentVersion, 1), "is no longer served")
}

// asStored brings a request's payload obj toward the normalized payload a
// definition made of it, where a definition's normalization could have
// made the difference: a string upper-cased (declared upper), a date-time
// in UTC, an empty optional member dropped. Nothing else changes, so the
// fingerprint matches only a request a definition would have normalized
// to the stored one.
func asStored(obj, stored map[string]any) {
	for k, v := range obj {
		sv, ok := stored[k]
		if !ok {
			if v == nil || v == "" {
				delete(obj, k)
			}
			continue
		}
		obj[k] = asStoredValue(v, sv)
	}
}

func asStoredValue(v, sv any) any {
	switch v := v.(type) {
	case map[string]any:
		if sm, ok := sv.(map[string]any); ok {
			asStored(v, sm)
		}
	case []any:
		if sl, ok := sv.([]any); ok && len(sl) == len(v) {
			for i := range v {
				v[i] = asStoredValue(v[i], sl[i])
			}
		}
	case string:
		ss, ok := sv.(string)
		if !ok || ss == v {
			return v
		}
		if ss == strings.Map(asciiUpper, v) {
			return ss
		}
		t1, err1 := time.Parse(time.RFC3339, strings.ToUpper(v))
		t2, err2 := time.Parse(time.RFC3339, ss)
		if err1 == nil && err2 == nil && t1.Equal(t2) {
			return ss
		}
	}
	return v
}

// asciiUpper upper-cases an ASCII letter, as a definition's upper does.
func asciiUpper(r rune) rune {
	if 'a' <= r && r <= 'z' {
		return r - ('a' - 'A')
	}
	return r
}

// retired stands for the definition, gone from the catalog, of a final
// operation replayed: what an answer names.
func retired(op store.Operation) *intent.Intent {
	return &intent.Intent{Name: op.Intent, Version: max(op.IntentVersion, 1), Target: op.TargetSystem, Journaled: true, Digest: op.IntentDigest}
}

// acceptedUnder is the definition an unfinished operation runs under: the
// one its key was first accepted with, which need not be the version the
// catalog serves now. A definition gone, or edited in place since (its
// file's digest differs), is INTENT_CHANGED: the key never runs under
// another meaning. Rows from before the journal recorded digests run
// under the catalog's definition of their version.
func (e *Engine) acceptedUnder(op store.Operation) (*intent.Intent, error) {
	version := max(op.IntentVersion, 1)
	def, ok := e.cfg.Catalog.Version(op.Intent, version)
	switch {
	case !ok:
		return nil, intentChanged(op.Intent, version, "is no longer served")
	case op.IntentDigest != "" && !def.Accepts(op.IntentDigest):
		return nil, intentChanged(op.Intent, version, "was edited since")
	}
	return def, nil
}

// intentChanged is the refusal of a retry whose definition changed.
func intentChanged(name string, version int, what string) error {
	return codes.Refusef(codes.IntentChanged, "intent",
		"this key was first accepted under version %d of %s, whose definition %s; nothing ran: the operation is left for a person to settle, and a new request needs a new key", version, name, what)
}

// decided tells OnDecision what the journal decided for intent.
func (e *Engine) decided(intent string, d store.Decision) {
	if e.cfg.OnDecision != nil {
		e.cfg.OnDecision(intent, d)
	}
}

// Operation returns the journal row of key as agent may see it: another
// agent's key is store.ErrNotFound as well, for keys are not shared. An
// operation a notice ran is the firm's, not an agent's: every agent may
// read it.
func (e *Engine) Operation(ctx context.Context, agent, key string) (store.Operation, error) {
	op, err := e.store.Get(ctx, key)
	if err == nil && op.Agent != agent && !strings.HasPrefix(op.Agent, EventAgentPrefix) {
		return store.Operation{}, fmt.Errorf("operation %q: %w", key, store.ErrNotFound)
	}
	return op, err
}

// failureOf is how a refusal by the target's checks is journaled.
func (e *Engine) failureOf(ae *adapters.Error) *store.Failure {
	if ae == nil {
		return nil
	}
	return &store.Failure{Code: ae.Code, Field: ae.Field, Message: ae.Message, Detail: e.detail(ae.Err)}
}

// keyStillFits refuses a validate whose key an execute would refuse: a
// key first used by another agent, or with another request. A key never
// seen, or seen with this very request, fits.
func (e *Engine) keyStillFits(ctx context.Context, key, agent, fingerprint string) error {
	if key == "" {
		return nil
	}
	op, err := e.store.Get(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case op.Agent != agent:
		return keyForeign()
	case op.Fingerprint != fingerprint:
		return keyMismatch(op)
	}
	return nil
}
