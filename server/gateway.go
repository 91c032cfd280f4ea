package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/oncegate/oncegate/store"
)

// systems are the target systems, by the journal's names.
var systems = []string{contract.TargetOneC, contract.TargetCRM, contract.TargetPayments}

// targetTimes are a target system's configured times.
type targetTimes struct {
	timeout, settle, retention time.Duration
}

// times reads system's times from the configuration: its call timeout,
// how long it may take to commit a request after the gateway stopped
// waiting (settle_ms, never less than the timeout: until then a "not
// found" from a lookup is not yet trusted), and how long its terminal
// operations are kept (retention.<target>, else retention.default).
func (s *Server) times(system string) targetTimes {
	timeoutMS, settleMS, retention := 5000, 0, s.cfg.Retention.Default
	switch system {
	case contract.TargetOneC:
		t := s.cfg.Targets.OneC
		timeoutMS, settleMS, retention = t.TimeoutMS, t.SettleMS, cmp.Or(s.cfg.Retention.OneC, retention)
	case contract.TargetCRM:
		t := s.cfg.Targets.Bitrix24
		timeoutMS, settleMS, retention = t.TimeoutMS, t.SettleMS, cmp.Or(s.cfg.Retention.Bitrix24, retention)
	case contract.TargetPayments:
		t := s.cfg.Targets.YooKassa
		timeoutMS, settleMS, retention = t.TimeoutMS, t.SettleMS, cmp.Or(s.cfg.Retention.YooKassa, retention)
	}
	timeout := time.Duration(timeoutMS) * time.Millisecond
	return targetTimes{
		timeout:   timeout,
		settle:    max(time.Duration(settleMS)*time.Millisecond, timeout),
		retention: time.Duration(retention),
	}
}

// timeout is one call's timeout at the target system.
func (s *Server) timeout(system string) time.Duration { return s.times(system).timeout }

// settle is how long system's target may take to commit a request after
// the gateway stopped waiting for it.
func (s *Server) settle(system string) time.Duration { return s.times(system).settle }

// retention is how long system's terminal operations are kept.
func (s *Server) retention(system string) time.Duration { return s.times(system).retention }

// purgeable reports whether a final row is past its target's retention,
// so that any gateway's purge may have removed it from the journal.
func (s *Server) purgeable(op store.Operation) bool {
	return !op.CompletedAt.After(s.store.Now().Add(-s.retention(op.TargetSystem)))
}

// lookupBudget is the longest one look-up at system's target may take: a
// call timeout for each call it may make, which for a target that pages
// through a list (adapters.Pager) is one per page it may read.
func (s *Server) lookupBudget(system string) time.Duration {
	calls := 1
	if p, ok := s.targets[system].(adapters.Pager); ok {
		calls = max(p.LookupCalls(), 1)
	}
	return time.Duration(calls) * s.timeout(system)
}

// budget is the longest one drive of an operation may take: a lookup and
// every attempt of the retry policy with its delays. Target calls run
// under this deadline, so they always end before the lease does.
func (s *Server) budget(system string) time.Duration {
	t := s.timeout(system)
	return s.lookupBudget(system) + time.Duration(max(s.policy.MaxAttempts, 1))*t + s.policy.MaxTotalDelay()
}

// lease is how long a claim holds an operation: its budget plus a margin
// for the journal writes around the calls.
func (s *Server) lease(system string) time.Duration { return s.budget(system) + 10*time.Second }

// maxLease is the longest lease of any target.
func (s *Server) maxLease() time.Duration {
	var m time.Duration
	for _, system := range systems {
		m = max(m, s.lease(system))
	}
	return m
}

// dedupes reports whether system's target makes one effect per key
// however often the key is sent.
func (s *Server) dedupes(system string) bool {
	d, ok := s.targets[system].(adapters.Deduper)
	return ok && d.DedupesByKey()
}

// inFlightUntil is until when a send of op's last attempt may still land
// at its target: every send of a drive happens within the drive's budget
// of the attempt being recorded, and the target may take settle_ms more to
// commit what it received.
func (s *Server) inFlightUntil(op store.Operation) time.Time {
	return op.LastAttemptAt.Add(s.budget(op.TargetSystem) + s.settle(op.TargetSystem))
}

// nextCheck is when the reconciler should look an unknown operation up:
// once an attempt may have landed, and not before its next pass.
func (s *Server) nextCheck(system string) time.Time {
	return s.store.Now().Add(max(s.settle(system), time.Duration(s.cfg.Reconciler.IntervalMS)*time.Millisecond))
}

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
func (s *Server) drive(ctx context.Context, d store.Decision, op store.Operation) (store.Operation, bool, error) {
	if !s.inflight.start() {
		// Shutdown is waiting for the drives in flight: this one sends
		// nothing. The row keeps this run's lease (the agent is told it is
		// in progress); the next run finds it orphaned and reconciles it.
		s.log.Warn("shutting down: operation not driven", "key", op.Key)
		return op, false, nil
	}
	defer s.inflight.done()
	// Target calls run under the budget; journal writes under their own.
	jctx, jcancel := journalCtx(ctx, s.budget(op.TargetSystem))
	defer jcancel()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.budget(op.TargetSystem))
	defer cancel()

	target := s.targets[op.TargetSystem]
	aop := targetOp(op)

	found := false
	err := func() error {
		// Look the key up before anything is sent again.
		if d == store.DecisionResume {
			clear, ok, err := s.lookUp(ctx, jctx, op, true)
			if !clear || err != nil {
				found = ok
				return err
			}
			aop.Attempt = op.AttemptCount + 1
		}
		res, _, err := s.policy.Execute(ctx, target, aop, func(n int) error {
			if n <= op.AttemptCount {
				return nil // recorded by the claim
			}
			return s.store.RecordAttempt(jctx, op.Key, op.LeaseOwner, n, s.lease(op.TargetSystem))
		})
		return s.settleOutcome(jctx, op, res, err)
	}()
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		return store.Operation{}, false, err
	}
	if errors.Is(err, store.ErrLeaseLost) {
		s.log.Warn("lease lost while driving an operation", "key", op.Key)
	}
	after, err := s.store.Get(jctx, op.Key)
	return after, found && after.Status == store.StatusSucceeded, err
}

// targetOp is a journal row as its target sees it.
func targetOp(op store.Operation) adapters.Op {
	return adapters.Op{
		Key:         op.Key,
		Intent:      op.Intent,
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
func (s *Server) lookUp(ctx, jctx context.Context, op store.Operation, byAgent bool) (clear, found bool, err error) {
	lctx, cancel := context.WithTimeout(ctx, s.lookupBudget(op.TargetSystem))
	res, err := s.targets[op.TargetSystem].Lookup(lctx, targetOp(op))
	cancel()
	ctx = jctx // from here on, only journal writes
	switch {
	case err == nil:
		s.log.Info("look-up: the target has the effect", "key", op.Key, "object", res.ObjectID)
		return false, true, s.complete(ctx, op, res)
	case finalAtTarget(err):
		var ae *adapters.Error
		errors.As(err, &ae)
		s.log.Info("look-up: the target has the effect, failed", "key", op.Key, "object", ae.ObjectID, "code", ae.Code)
		return false, false, s.store.Fail(ctx, op.Key, op.LeaseOwner, true, store.Failure{Code: ae.Code, Field: ae.Field, Message: ae.Message, ObjectID: ae.ObjectID})
	case errors.Is(err, adapters.ErrNotFound):
		// Nothing there now. That is the answer once nothing can still be
		// on its way: after an attempt classified Retry (it had no effect),
		// to an agent's retry at a target that dedupes the key (sending it
		// again is harmless), or else once every send of the last attempt
		// could have landed. Before that a "not found" is no answer: the
		// row would say "no effect" of an effect about to appear.
		safe := op.ResumedFrom == store.StatusFailedRetryable || (byAgent && s.dedupes(op.TargetSystem))
		if wait := s.inFlightUntil(op).Sub(s.store.Now()); wait > 0 && !safe {
			return false, false, s.store.MarkUnknown(ctx, op.Key, op.LeaseOwner, "", store.Failure{Code: CodeOutcomeUnknown, Message: "the last attempt may still be in flight"}, s.store.Now().Add(wait))
		}
		s.log.Info("look-up: the target has no effect", "key", op.Key)
		return true, false, nil
	case op.ResumedFrom == store.StatusFailedRetryable && adapters.ClassOf(err) == adapters.Retry:
		s.log.Warn("look-up failed", "key", op.Key, "err", maskSecrets(errText(err)))
		return false, false, s.store.Fail(ctx, op.Key, op.LeaseOwner, false, store.Failure{Code: CodeTargetUnavailable, Message: "the target is unavailable"})
	default:
		// Not known yet (the target could not be asked, could not tell, or
		// holds the effect not final yet, such as a pending payment, whose
		// id is kept): counted, with backoff, and after review_after times a
		// person is asked to look.
		var objectID string
		if ae := (*adapters.Error)(nil); errors.As(err, &ae) {
			objectID = ae.ObjectID
		}
		next := s.store.Now().Add(max(s.lookupBackoff(op.LookupFailures+1), s.settle(op.TargetSystem)))
		flagged, ferr := s.store.LookupFailed(ctx, op.Key, op.LeaseOwner, objectID, s.cfg.Reconciler.ReviewAfter, next)
		s.log.Warn("look-up failed", "key", op.Key, "failures", op.LookupFailures+1, "review", flagged, "err", maskSecrets(errText(err)))
		return false, false, ferr
	}
}

// settleOutcome journals the outcome of the execute attempts.
func (s *Server) settleOutcome(ctx context.Context, op store.Operation, res adapters.Result, err error) error {
	if err == nil {
		return s.complete(ctx, op, res)
	}
	var ae *adapters.Error
	if !errors.As(err, &ae) {
		if errors.Is(err, store.ErrLeaseLost) {
			return err
		}
		ae = &adapters.Error{Class: adapters.ClassOf(err), Code: CodeOutcomeUnknown, Err: err}
	}
	detail := maskSecrets(errText(ae.Err))
	s.log.Warn("target call failed", "key", op.Key, "class", ae.Class.String(), "code", ae.Code, "detail", detail)
	switch ae.Class {
	case adapters.Final:
		return s.store.Fail(ctx, op.Key, op.LeaseOwner, true, store.Failure{Code: ae.Code, Field: ae.Field, Message: ae.Message, Detail: detail, ObjectID: ae.ObjectID})
	case adapters.Retry:
		// The cause (an outage, or the target refusing the gateway's own
		// credentials) goes to the audit trail for the operator.
		return s.store.Fail(ctx, op.Key, op.LeaseOwner, false, store.Failure{Code: CodeTargetUnavailable, Message: "the target is unavailable", Detail: ae.Code + ": " + detail})
	default:
		return s.store.MarkUnknown(ctx, op.Key, op.LeaseOwner, ae.ObjectID, store.Failure{Code: CodeOutcomeUnknown, Message: "the request was sent but its outcome is not known"}, s.nextCheck(op.TargetSystem))
	}
}

func (s *Server) complete(ctx context.Context, op store.Operation, res adapters.Result) error {
	var data json.RawMessage
	if len(res.Data) > 0 {
		b, err := json.Marshal(res.Data)
		if err != nil {
			return err
		}
		data = b
	}
	return s.store.Complete(ctx, op.Key, op.LeaseOwner, res.ObjectID, data)
}

// finalAtTarget reports whether a lookup found the effect ended in failure
// at the target: a Final error naming the target's object.
func finalAtTarget(err error) bool {
	var ae *adapters.Error
	return errors.As(err, &ae) && ae.Class == adapters.Final && ae.ObjectID != ""
}
