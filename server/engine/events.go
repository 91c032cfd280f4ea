package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// Events in (docs/events.md). A notice is journaled before it is
// answered, one row per rule; then, at once and again from the background
// pass while it stays pending, its object is read back from the source
// and, when the source holds it as the notice says, the rule's run is
// submitted as an ordinary operation under a key derived from the
// notice's stable id: however often the notice comes, and on however many
// gateways sharing the journal, the key makes one effect.

// EventAgentPrefix starts the agent name an event's operation runs as
// ("event:payments"): no agent's token can be named so.
const EventAgentPrefix = "event:"

// eventKeyPrefix starts the id segment of a key derived from a notice:
// agents' keys may not start so.
const eventKeyPrefix = "evt-"

var eventsCtx = store.Actor{Kind: store.ActorSystem, Name: "events"}

// EventKey is the key of the operation a notice of source runs: in the
// run's key grammar, <contour>:<run>:evt-<source>-<notice id>:v1, the id
// shortened with a digest of the whole where the key would be too long
// (letters only, so no run of digits reads as a card number).
func EventKey(contour, run, source, noticeID string) string {
	id := eventKeyPrefix + source + "-" + keySafe(noticeID)
	head, tail := contour+":"+run+":", ":v1"
	if room := contract.MaxKeyLen - len(head) - len(tail); len(id) > room {
		sum := sha256.Sum256([]byte(source + "\x00" + noticeID))
		var h [16]byte
		for i := range h {
			h[i] = 'a' + sum[i]%16
		}
		id = id[:max(room-len(h)-1, 0)] + "-" + string(h[:])
	}
	return head + id + tail
}

// keySafe is s with every character keys do not take replaced by "-".
func keySafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, s)
}

// isEventKey reports whether key is shaped as a key derived from a notice.
func isEventKey(key string) bool {
	segs := strings.Split(key, ":")
	return len(segs) >= 4 && strings.HasPrefix(segs[len(segs)-2], eventKeyPrefix)
}

// rules are the event rules of source's event, in the configuration's
// order.
func (e *Engine) rules(source, event string) []*intent.EventRule {
	var out []*intent.EventRule
	for _, r := range e.cfg.Events {
		if r.Source == source && r.On == event {
			out = append(out, r)
		}
	}
	return out
}

// Takes reports whether a rule of this gateway runs on source's event.
func (e *Engine) Takes(source, event string) bool { return len(e.rules(source, event)) > 0 }

// ReceiveNotice journals one delivery of a notice of source, one row per
// rule that runs on its event, and starts reading it back; a notice no
// rule takes is refused (EVENT_UNKNOWN) and journals nothing. It returns
// once the rows are durable: only then may the source be told the notice
// is received.
func (e *Engine) ReceiveNotice(ctx context.Context, source string, n adapters.Notice) ([]store.Event, error) {
	rules := e.rules(source, n.Event)
	if len(rules) == 0 {
		return nil, codes.Refusef(codes.EventUnknown, "event", "no rule of this gateway runs on %s's %s; the notice is not journaled", source, n.Event)
	}
	var rows []store.EventRule
	for _, r := range rules {
		rows = append(rows, store.EventRule{Run: r.Run, OpKey: EventKey(e.cfg.Contour, r.Run, source, n.ID())})
	}
	evs, err := e.store.ReceiveEvent(ctx, source, n.Event, n.ObjectID, rows, e.store.Now().Add(eventGrace))
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if ev.Opened {
			e.runEventLater(ev)
		}
	}
	return evs, nil
}

// runEventLater reads a pending event back and runs it, outside the
// request that received it: the source is answered as soon as the notice
// is on disk. At most eventRunners run at once, the rest waiting their
// turn: a burst of notices neither opens a connection to the source per
// notice nor takes the cores from the notices still arriving. Shutdown
// waits for the runs begun; one not begun then is the background pass's.
func (e *Engine) runEventLater(ev store.Event) {
	if !e.inflight.start() {
		return
	}
	go func() {
		defer e.inflight.done()
		e.eventRuns <- struct{}{}
		defer func() { <-e.eventRuns }()
		if e.inflight.closing() {
			return
		}
		e.RunEvent(store.WithActor(context.Background(), eventsCtx), ev)
	}()
}

// eventRunners is how many notices are read back and run at once: a run
// waits mostly on the source and the target, so a few keep both cores
// busy.
const eventRunners = 16

// eventTick is how often the background pass looks for pending events;
// eventGrace how long it leaves one just received to the reader its
// delivery started, before taking it as left behind (by a run that
// stopped).
const (
	eventTick  = time.Second
	eventGrace = 10 * time.Second
)

// eventBackoff is the wait before a pending event whose source could not
// be read back is read again, after n such read-backs: doubling from a
// second to five minutes.
func eventBackoff(n int) time.Duration {
	return min(time.Second<<min(n, 9), 5*time.Minute)
}

// RunEvent reads a pending event's object back from its source and, when
// the source holds it as the notice says and the rule's conditions are
// met, submits the rule's run under the event's key. A source that cannot
// tell leaves it pending, to be read back later; it is never dropped for
// that.
func (e *Engine) RunEvent(ctx context.Context, ev store.Event) {
	var rule *intent.EventRule
	for _, r := range e.rules(ev.Source, ev.Event) {
		if r.Run == ev.Run {
			rule = r
		}
	}
	src := e.cfg.Sources[ev.Source]
	if rule == nil || src == nil {
		e.settleEvent(ctx, ev, store.EventFailed, "no rule of this gateway's configuration runs "+ev.Run+" on "+ev.Source+"'s "+ev.Event+" now")
		return
	}
	readCtx, cancel := context.WithTimeout(ctx, e.lookupBudget(ev.Source))
	object, err := src.ReadBack(readCtx, adapters.Notice{Event: ev.Event, ObjectID: ev.ObjectID})
	cancel()
	if reason, ok := adapters.IsMismatch(err); ok {
		e.settleEvent(ctx, ev, store.EventDropped, "the source does not hold it as the notice says: "+reason)
		return
	}
	switch {
	case errors.Is(err, adapters.ErrNotFound):
		e.settleEvent(ctx, ev, store.EventDropped, "the source has no object "+ev.ObjectID)
		return
	case err != nil:
		e.postponeEvent(ctx, ev, "the source could not be read back: "+e.detail(err))
		return
	}
	if unmet := rule.Unmet(object); unmet != "" {
		e.settleEvent(ctx, ev, store.EventDropped, unmet)
		return
	}
	payload, err := rule.Map(object)
	if err != nil {
		e.settleEvent(ctx, ev, store.EventFailed, "the rule's payload: "+err.Error())
		return
	}
	body, err := json.Marshal(map[string]any{"schema_version": contract.SchemaVersion, "intent": rule.Run, "payload": payload})
	if err != nil {
		e.settleEvent(ctx, ev, store.EventFailed, err.Error())
		return
	}
	tok := store.Token{Agent: EventAgentPrefix + ev.Source, Scopes: rule.Scopes}
	_, err = e.Submit(ctx, Submission{Token: tok, KeyHeader: ev.OpKey, HasKeyHeader: true, Body: body, event: true})
	var r *codes.Refusal
	switch {
	case err == nil:
		e.settleEvent(ctx, ev, store.EventRun, "")
	case errors.As(err, &r) && r.Code == codes.KeyMismatch:
		// A delivery read back earlier ran it, and the source's object
		// has changed since: the operation is the key's own.
		e.settleEvent(ctx, ev, store.EventRun, "ran before with what the source answered then; the source's object has changed since")
	case errors.As(err, &r) && r.Status < http.StatusInternalServerError && !codes.Retryable(r.Code):
		e.settleEvent(ctx, ev, store.EventFailed, r.Code+": "+r.Message)
	default:
		e.postponeEvent(ctx, ev, "its operation could not be submitted for now: "+e.detail(err))
	}
}

func (e *Engine) settleEvent(ctx context.Context, ev store.Event, state store.EventState, reason string) {
	if err := e.store.SettleEvent(ctx, ev.ID, state, reason); err != nil {
		e.log.Error("events: settle", "source", ev.Source, "event", ev.Event, "object", ev.ObjectID, "err", err)
		return
	}
	if state != store.EventRun {
		e.log.Warn("events: a notice ran nothing", "source", ev.Source, "event", ev.Event, "object", ev.ObjectID, "state", state, "reason", reason)
	}
}

func (e *Engine) postponeEvent(ctx context.Context, ev store.Event, reason string) {
	wait := eventBackoff(ev.Attempts)
	if err := e.store.PostponeEvent(ctx, ev.ID, reason, e.store.Now().Add(wait)); err != nil {
		e.log.Error("events: postpone", "source", ev.Source, "event", ev.Event, "object", ev.ObjectID, "err", err)
		return
	}
	e.log.Info("events: read back again later", "source", ev.Source, "event", ev.Event, "object", ev.ObjectID, "in", wait, "reason", reason)
}

// runDueEvents runs the pending events whose time has come: those the
// previous run left (received, not yet read back when it stopped), and
// those whose source could not be read.
func (e *Engine) runDueEvents(ctx context.Context) {
	if len(e.cfg.Events) == 0 {
		return
	}
	due, err := e.store.DueEvents(ctx, 100)
	if err != nil {
		e.log.Error("events: list pending", "err", err)
		return
	}
	for _, ev := range due {
		if ctx.Err() != nil {
			return
		}
		e.RunEvent(store.WithActor(ctx, eventsCtx), ev)
	}
}

// EventsOf lists the events whose rule runs the operation of key.
func (e *Engine) EventsOf(ctx context.Context, key string) ([]store.Event, error) {
	if !isEventKey(key) {
		return nil, nil
	}
	return e.store.EventsOfKey(ctx, key)
}

// eventKeyRefusal refuses an agent's key shaped as a notice's.
func (e *Engine) eventKeyRefusal(intentName string) error {
	return codes.Refusef(codes.KeyInvalid, contract.KeyField,
		"operation keys whose id starts with %s are the keys of operations that notices run, which the gateway makes; build your key from a business id, e.g. %s",
		eventKeyPrefix, contract.ExampleKey(e.cfg.Contour, intentName))
}
