package engine

import (
	"context"
	"errors"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/store"
)

// keyWindowMargin is kept off the end of a target's key window before the
// reconciler stops sending an operation again by its key: the clocks of the
// gateway and of the target may differ.
const keyWindowMargin = time.Hour

// pendingMessage is what an agent and a person read of an operation whose
// effect the target holds, not final yet.
const pendingMessage = "pending: the target holds the effect but it is not final yet (a payment waiting for the payer's bank, say); it is checked again until it is"

// Pending reports whether an unknown operation's effect is at its target,
// not final yet (a payment waiting for the payer's bank), as the engine
// journaled it: the row keeps the engine's pending message. It is still
// unknown to agents; the answer and the admin pages say pending.
func Pending(op store.Operation) bool {
	return op.Status == store.StatusUnknown && op.ErrorMessage == pendingMessage
}

// resends reports whether the reconciler finds op's outcome by sending the
// same request again under the same key rather than by a look-up: its
// target documents that as the way (adapters.Resender, YooKassa), the key
// is certainly still held (the window counts from the operation's
// acceptance, which precedes its first send), something was sent, and the
// target named no object yet (with one, a read by id is exact).
//
// Sending again never makes a second effect within the window: the target
// answers the effect the key made. When the first send never arrived it
// makes the effect now; that is the effect the operation was accepted,
// approved and sent to make, and its agent was told the outcome is
// unknown, not that nothing happened. Each send is journaled as an attempt
// before it leaves.
func (e *Engine) resends(op store.Operation) bool {
	window := e.keyWindow(op.TargetSystem)
	if window <= keyWindowMargin || op.TargetObjectID != "" || op.AttemptCount < 1 || op.LastAttemptAt.IsZero() {
		return false
	}
	return e.store.Now().Before(op.CreatedAt.Add(window - keyWindowMargin))
}

// keyWindow is how long system's target answers a repeat of a key with
// the effect it made (adapters.Resender), or 0.
func (e *Engine) keyWindow(system string) time.Duration {
	r, ok := e.targets[system].(adapters.Resender)
	if !ok || !r.DedupesByKey() {
		return 0
	}
	return r.KeyWindow()
}

// resend sends op again under its key, as the reconciler's way to learn
// its outcome (see resends), with the retry policy, and journals what the
// answer settles with jctx: the effect → succeeded; a refusal → failed
// final; pending → polled (see stillUnknown); anything else → still
// unknown, counted like a failed look-up.
func (e *Engine) resend(ctx, jctx context.Context, op store.Operation) error {
	ctx, cancel := context.WithTimeout(ctx, e.budget(op.TargetSystem))
	defer cancel()
	aop := e.targetOp(op)
	aop.Attempt = op.AttemptCount + 1
	res, calls, err := e.policy.Execute(ctx, e.targets[op.TargetSystem], aop, func(n int) error {
		return e.store.RecordAttempt(jctx, op.Key, op.LeaseOwner, n, e.lease(op.TargetSystem))
	})
	if calls > 0 && err != nil {
		e.sentUnsettled(op)
	}
	switch {
	case err == nil:
		e.log.Info("sent again by key: the target has the effect", "key", op.Key, "object", res.ObjectID)
		return e.complete(jctx, op, res)
	case errors.Is(err, store.ErrLeaseLost):
		return err
	case adapters.ClassOf(err) == adapters.Final:
		_, err := e.settleOutcome(jctx, op, res, err)
		return err
	}
	return e.stillUnknown(jctx, op, err)
}

// stillUnknown journals an operation whose outcome a look-up (or a send
// again by key) did not settle. Pending at the target is an answer: the
// row stays unknown, keeps the object's id and is polled again with gaps
// growing with its age, without counting toward a person's review. Any
// other failure is counted, with backoff, and after review_after a person
// is asked to look.
func (e *Engine) stillUnknown(ctx context.Context, op store.Operation, err error) error {
	var ae *adapters.Error
	errors.As(err, &ae)
	if ae != nil && ae.Pending {
		next := e.store.Now().Add(e.pendingGap(op))
		e.log.Info("look-up: the effect is pending at the target", "key", op.Key, "object", ae.ObjectID, "next_check", next)
		return e.store.MarkUnknown(ctx, op.Key, op.LeaseOwner, ae.ObjectID, store.Failure{Code: codes.OutcomeUnknown, Message: pendingMessage}, next)
	}
	var objectID string
	wait := max(e.lookupBackoff(op.LookupFailures+1), e.settle(op.TargetSystem))
	if ae != nil {
		objectID = ae.ObjectID
		if e.resends(op) {
			// Sent again by key: the target's own hint, not settle_ms,
			// says when to ask again.
			wait = max(e.lookupBackoff(op.LookupFailures+1), time.Duration(ae.RetryAfter)*time.Second)
		}
	}
	answer := e.detail(err)
	flagged, ferr := e.store.LookupFailed(ctx, op.Key, op.LeaseOwner, objectID, answer, e.cfg.ReviewAfter, e.store.Now().Add(wait))
	e.log.Warn("look-up failed", "key", op.Key, "failures", op.LookupFailures+1, "review", flagged, "err", answer)
	return ferr
}

// pendingGap is the wait before a pending effect is checked again: half
// its age since the last send, between the reconciler's interval and
// max_backoff_ms, so a payment that settles in seconds is seen in seconds
// and one that takes a day is asked about a few dozen times.
func (e *Engine) pendingGap(op store.Operation) time.Duration {
	since := op.LastAttemptAt
	if since.IsZero() {
		since = op.CreatedAt
	}
	return min(max(e.store.Now().Sub(since)/2, e.cfg.ReconcileInterval), max(e.cfg.MaxBackoff, e.cfg.ReconcileInterval))
}

// unknownAfterSend journals an attempt whose outcome is unknown. A target
// that is asked again by key (adapters.Resender) is asked at once, after
// its own retry_after if it named one; any other once whatever was sent
// could have landed (settle_ms).
func (e *Engine) unknownAfterSend(ctx context.Context, op store.Operation, ae *adapters.Error) error {
	next := e.nextCheck(op.TargetSystem)
	msg := "the request was sent but its outcome is not known"
	switch {
	case ae.Pending:
		// The target made it and holds it, not final: nothing is in
		// flight, so it is polled from now on.
		msg, next = pendingMessage, e.store.Now().Add(e.cfg.ReconcileInterval)
	case e.keyWindow(op.TargetSystem) > keyWindowMargin && ae.ObjectID == "":
		next = e.store.Now().Add(max(e.cfg.ReconcileInterval, time.Duration(ae.RetryAfter)*time.Second))
	}
	return e.store.MarkUnknown(ctx, op.Key, op.LeaseOwner, ae.ObjectID, store.Failure{Code: codes.OutcomeUnknown, Message: msg}, next)
}
