package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/store"
)

// journalCtx is the context for journal writes that record what a target
// did, in a drive whose target calls may take up to calls: detached from
// the call budget, which may be spent by then, and lasting the calls and
// 30 s more, so the outcome is never lost to a deadline meant for the
// network.
func journalCtx(ctx context.Context, calls time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), calls+30*time.Second)
}

// drive takes an operation whose lease the caller holds to its next
// resting state in the journal and returns the row as it is then. A
// resumed operation is first looked up by key at the target; found
// reports that the effect was found there rather than made now.
//
// Target calls run detached from the agent's request: an agent that hangs
// up must not turn a call in flight into an unknown outcome.
func (e *Engine) drive(ctx context.Context, d store.Decision, op store.Operation) (store.Operation, bool, error) {
	if !e.inflight.start() {
		// Shutdown is waiting for the drives in flight: this one sends
		// nothing. The row keeps this run's lease (the agent is told it is
		// in progress); the next run finds it orphaned and reconciles it.
		e.log.Warn("shutting down: operation not driven", "key", op.Key)
		return op, false, nil
	}
	defer e.inflight.done()
	// Target calls run under the budget; journal writes under their own.
	jctx, jcancel := journalCtx(ctx, e.budget(op.TargetSystem))
	defer jcancel()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.budget(op.TargetSystem))
	defer cancel()

	target := e.targets[op.TargetSystem]
	aop := e.targetOp(op)

	found := false
	// sent: the operation may have reached its target, in this drive or
	// an earlier one. A journal failure after that must not become
	// "nothing was sent".
	sent := d == store.DecisionResume && op.AttemptCount > 0
	sentNow := false         // this drive sent something
	var done store.Operation // the row as its completion wrote it
	err := func() error {
		// Look the key up before anything is sent again.
		if d == store.DecisionResume {
			clear, ok, err := e.lookUp(ctx, jctx, op, true)
			if !clear || err != nil {
				found = ok
				return err
			}
			aop.Attempt = op.AttemptCount + 1
		}
		if d == store.DecisionExecute && e.lookFirst(op) {
			adopted, settled, err := e.adopt(ctx, jctx, op)
			if settled || err != nil {
				found = adopted
				return err
			}
		}
		res, calls, err := e.policy.Execute(ctx, target, aop, func(n int) error {
			if n <= op.AttemptCount {
				// Recorded by the claim. Where another gateway may take
				// the lease once it ran out (a process frozen since the
				// claim), the lease is checked still ours.
				if e.store.Shared() {
					return e.store.Holds(jctx, op.Key, op.LeaseOwner)
				}
				return nil
			}
			return e.store.RecordAttempt(jctx, op.Key, op.LeaseOwner, n, e.lease(op.TargetSystem))
		})
		sentNow = calls > 0
		sent = sent || sentNow
		done, err = e.settleOutcome(jctx, op, res, err)
		return err
	}()
	if sentNow && done.Key == "" {
		e.sentUnsettled(op)
	}
	if store.Unavailable(err) && sent {
		return e.unrecorded(op, err), false, nil
	}
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		return store.Operation{}, false, err
	}
	if errors.Is(err, store.ErrLeaseLost) {
		e.log.Warn("lease lost while driving an operation", "key", op.Key)
	}
	if done.Key != "" {
		return done, false, nil
	}
	after, err := e.store.Get(jctx, op.Key)
	if err != nil && sent {
		return e.unrecorded(op, err), false, nil
	}
	return after, found && after.Status == store.StatusSucceeded, err
}

// unrecorded is the answer for an operation that may have reached its
// target when the journal could not record what came of it (a full or
// failing disk): its outcome is unknown, never "nothing was sent". The row
// stays started under this drive's lease; once the lease expires the
// reconciler looks the key up (a restart hands it over at once), and the
// agent's retry with the same key gets the outcome then.
func (e *Engine) unrecorded(op store.Operation, err error) store.Operation {
	e.log.Error("JOURNAL FAILED AFTER A SEND: the outcome of this operation could not be recorded; it is answered unknown and reconciled by key once the journal writes again",
		"key", op.Key, "err", err)
	op.Status = store.StatusUnknown
	op.ErrorCode = codes.OutcomeUnknown
	op.LeaseOwner, op.LeaseUntil = "", time.Time{}
	return op
}

// targetOp is a journal row as its target sees it, under the version of
// its intent's definition it was accepted with.
func (e *Engine) targetOp(op store.Operation) adapters.Op {
	version := max(op.IntentVersion, 1)
	return adapters.Op{
		Key:         op.Key,
		Intent:      op.Intent,
		Version:     version,
		Fingerprint: op.Fingerprint,
		Payload:     op.Payload,
		Attempt:     max(op.AttemptCount, 1),
		ObjectID:    op.TargetObjectID,
		CreatedAt:   op.CreatedAt,
	}
}

// lookUp asks the target, by key, for the effect of an operation whose
// lease the caller took back (an agent's retry, byAgent, or the
// reconciler), and journals what the answer settles, with jctx:
//
//   - found → succeeded (found reports it); found and failed → failed_final;
//   - certainly nothing there, but the last unclear attempt may still land
//     (inFlightUntil) → still unknown, checked again once it could have;
//   - the target could not tell → back to failed_retryable when it was
//     unavailable after an attempt that had no effect, else still unknown
//     with the failed look-up counted (backoff, then a person's review),
//     keeping the object the target named (a payment not final yet).
//
// clear reports the one case left to the caller, the row still held:
// nothing at the target, and nothing on its way. The agent's retry then
// sends the operation again; the reconciler marks it safe to retry.
func (e *Engine) lookUp(ctx, jctx context.Context, op store.Operation, byAgent bool) (clear, found bool, err error) {
	lctx, cancel := context.WithTimeout(ctx, e.lookupBudget(op.TargetSystem))
	aop := e.targetOp(op)
	if !op.LastAttemptAt.IsZero() {
		aop.SentBy = e.inFlightUntil(op) // a scan need not look later
	}
	res, err := e.targets[op.TargetSystem].Lookup(lctx, aop)
	cancel()
	ctx = jctx // from here on, only journal writes
	switch {
	case err == nil:
		e.log.Info("look-up: the target has the effect", "key", op.Key, "object", res.ObjectID)
		return false, true, e.complete(ctx, op, res)
	case finalAtTarget(err):
		var ae *adapters.Error
		errors.As(err, &ae)
		e.log.Info("look-up: the target has the effect, failed", "key", op.Key, "object", ae.ObjectID, "code", ae.Code)
		return false, false, e.store.Fail(ctx, op.Key, op.LeaseOwner, true, store.Failure{Code: ae.Code, Field: ae.Field, Message: ae.Message, ObjectID: ae.ObjectID})
	case errors.Is(err, adapters.ErrNotFound):
		// Nothing there now. That is the answer once nothing can still be
		// on its way: after an attempt classified Retry (it had no effect),
		// to an agent's retry at a target that dedupes the key (sending it
		// again is harmless), or else once every send of the last attempt
		// could have landed. Before that a "not found" is no answer: the
		// row would say "no effect" of an effect about to appear.
		safe := op.ResumedFrom == store.StatusFailedRetryable || (byAgent && e.dedupes(op.TargetSystem))
		if wait := e.inFlight(op); wait > 0 && !safe {
			return false, false, e.store.MarkUnknown(ctx, op.Key, op.LeaseOwner, "", store.Failure{Code: codes.OutcomeUnknown, Message: "the last attempt may still be in flight"}, e.store.Now().Add(wait))
		}
		e.log.Info("look-up: the target has no effect", "key", op.Key)
		return true, false, nil
	case op.ResumedFrom == store.StatusFailedRetryable && adapters.ClassOf(err) == adapters.Retry:
		e.log.Warn("look-up failed", "key", op.Key, "err", e.detail(err))
		return false, false, e.store.Fail(ctx, op.Key, op.LeaseOwner, false, store.Failure{Code: codes.TargetUnavailable, Message: "the target is unavailable"})
	default:
		// Not known yet: the target holds the effect not final yet (a
		// pending payment: polled, its id kept), or could not be asked or
		// could not tell (counted, with backoff, and after review_after
		// times a person is asked to look).
		return false, false, e.stillUnknown(ctx, op, err)
	}
}

// settleOutcome journals the outcome of the execute attempts; on
// success it returns the row as its completion wrote it.
func (e *Engine) settleOutcome(ctx context.Context, op store.Operation, res adapters.Result, err error) (store.Operation, error) {
	if err == nil {
		return e.completed(ctx, op, res)
	}
	var ae *adapters.Error
	if !errors.As(err, &ae) {
		if errors.Is(err, store.ErrLeaseLost) {
			return store.Operation{}, err
		}
		ae = &adapters.Error{Class: adapters.ClassOf(err), Code: codes.OutcomeUnknown, Err: err}
	}
	detail := e.detail(ae.Err)
	logged := detail
	if ae.Message != "" {
		// What the adapter makes of it (a route the 1C module does not
		// publish): the operator's next step, beside the target's words.
		logged = e.detail(ae)
	}
	e.log.Warn("target call failed", "key", op.Key, "class", ae.Class.String(), "code", ae.Code, "detail", logged)
	switch ae.Class {
	case adapters.Final:
		return store.Operation{}, e.store.Fail(ctx, op.Key, op.LeaseOwner, true, store.Failure{Code: ae.Code, Field: ae.Field, Message: ae.Message, Detail: detail, ObjectID: ae.ObjectID})
	case adapters.Retry:
		// The cause (an outage, or the target refusing the gateway's own
		// credentials) goes to the audit trail for the operator.
		return store.Operation{}, e.store.Fail(ctx, op.Key, op.LeaseOwner, false, store.Failure{Code: codes.TargetUnavailable, Message: "the target is unavailable", Detail: ae.Code + ": " + detail})
	default:
		return store.Operation{}, e.unknownAfterSend(ctx, op, ae)
	}
}

func (e *Engine) complete(ctx context.Context, op store.Operation, res adapters.Result) error {
	_, err := e.completed(ctx, op, res)
	return err
}

// completed journals op succeeded with what the target answered and
// returns the row as written.
func (e *Engine) completed(ctx context.Context, op store.Operation, res adapters.Result) (store.Operation, error) {
	var data json.RawMessage
	if len(res.Data) > 0 {
		b, err := json.Marshal(res.Data)
		if err != nil {
			return store.Operation{}, err
		}
		data = b
	}
	return e.store.Completed(ctx, op, res.ObjectID, data)
}

// finalAtTarget reports whether a lookup found the effect ended in failure
// at the target: a Final error naming the target's object.
func finalAtTarget(err error) bool {
	var ae *adapters.Error
	return errors.As(err, &ae) && ae.Class == adapters.Final && ae.ObjectID != ""
}
