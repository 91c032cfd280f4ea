package engine

import (
	"cmp"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/store"
)

// targetTimes are a target system's configured times.
type targetTimes struct {
	timeout, settle, retention time.Duration
}

// times reads system's times from the configuration: its call timeout,
// how long it may take to commit a request after the gateway stopped
// waiting (settle_ms, never less than the timeout: until then a "not
// found" from a lookup is not yet trusted), and how long its terminal
// operations are kept (retention.<target>, else retention.default).
func (e *Engine) times(system string) targetTimes {
	t, ok := e.cfg.Targets[system]
	if !ok {
		t.Timeout = 5 * time.Second
	}
	return targetTimes{
		timeout:   t.Timeout,
		settle:    max(t.Settle, t.Timeout),
		retention: cmp.Or(t.Retention, e.cfg.Retention),
	}
}

// timeout is one call's timeout at the target system.
func (e *Engine) timeout(system string) time.Duration { return e.times(system).timeout }

// settle is how long system's target may take to commit a request after
// the gateway stopped waiting for it.
func (e *Engine) settle(system string) time.Duration { return e.times(system).settle }

// retention is how long system's terminal operations are kept.
func (e *Engine) retention(system string) time.Duration { return e.times(system).retention }

// purgeable reports whether a final row is past its target's retention,
// so that any gateway's purge may have removed it from the journal.
func (e *Engine) purgeable(op store.Operation) bool {
	return !op.CompletedAt.After(e.store.Now().Add(-e.retention(op.TargetSystem)))
}

// lookupBudget is the longest one look-up at system's target may take: a
// call timeout for each call it may make, which for a target that pages
// through a list (adapters.PagedLookup) is one per page it may read. A target
// whose reads have a shorter timeout of their own (adapters.ReadTimer) is
// given that per call.
func (e *Engine) lookupBudget(system string) time.Duration {
	calls := 1
	if p, ok := e.targets[system].(adapters.PagedLookup); ok {
		calls = max(p.LookupCalls(), 1)
	}
	per := e.timeout(system)
	if r, ok := e.targets[system].(adapters.ReadTimer); ok && r.ReadTimeout() > 0 {
		per = min(per, r.ReadTimeout())
	}
	return time.Duration(calls) * per
}

// budget is the longest one drive of an operation may take: a lookup and
// every attempt of the retry policy with its delays. Target calls run
// under this deadline, so they always end before the lease does.
func (e *Engine) budget(system string) time.Duration {
	t := e.timeout(system)
	return e.lookupBudget(system) + time.Duration(max(e.policy.MaxAttempts, 1))*t + e.policy.MaxTotalDelay()
}

// lease is how long a claim holds an operation: its budget plus a margin
// for the journal writes around the calls.
func (e *Engine) lease(system string) time.Duration { return e.budget(system) + 10*time.Second }

// MaxLease is the longest lease of any target.
func (e *Engine) MaxLease() time.Duration {
	var m time.Duration
	for _, system := range e.Systems() {
		m = max(m, e.lease(system))
	}
	return m
}

// dedupes reports whether system's target makes one effect per key
// however often the key is sent.
func (e *Engine) dedupes(system string) bool {
	d, ok := e.targets[system].(adapters.Deduper)
	return ok && d.DedupesByKey()
}

// inFlightUntil is until when a send of op's last attempt may still land
// at its target: every send of a drive happens within the drive's budget
// of the attempt being recorded, and the target may take settle_ms more to
// commit what it received.
func (e *Engine) inFlightUntil(op store.Operation) time.Time {
	return op.LastAttemptAt.Add(e.budget(op.TargetSystem) + e.settle(op.TargetSystem))
}

// nextCheck is when the reconciler should look an unknown operation up:
// once an attempt may have landed, and not before its next pass.
func (e *Engine) nextCheck(system string) time.Time {
	return e.store.Now().Add(max(e.settle(system), e.cfg.ReconcileInterval))
}
