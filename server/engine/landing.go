package engine

import (
	"sync"
	"time"

	"github.com/oncegate/oncegate/store"
)

// landing is, by operation key, until when a send of this run may still
// land at its target: kept for the drives that sent something and ended
// without the outcome, on this process's monotonic clock, which no step
// of the wall clock moves.
type landing struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// landingSweep is the size from which note drops what can no longer land.
const landingSweep = 256

// note records that a send of key may land until until.
func (l *landing) note(key string, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.until == nil {
		l.until = make(map[string]time.Time)
	}
	if len(l.until) >= landingSweep {
		now := time.Now()
		for k, t := range l.until {
			if !t.After(now) {
				delete(l.until, k)
			}
		}
	}
	if t, ok := l.until[key]; !ok || until.After(t) {
		l.until[key] = until
	}
}

// wait is how long a send of key by this run may still land, or 0.
func (l *landing) wait(key string) time.Duration {
	l.mu.Lock()
	t, ok := l.until[key]
	l.mu.Unlock()
	if !ok {
		return 0
	}
	return max(time.Until(t), 0)
}

// sentUnsettled notes that a drive of op sent something and ended without
// knowing what came of it: whatever it sent reached the target before the
// drive ended, and may take the target's settle_ms more to land.
func (e *Engine) sentUnsettled(op store.Operation) {
	e.landing.note(op.Key, time.Now().Add(e.settle(op.TargetSystem)))
}

// inFlight is how long a send of op may still land at its target from
// now, 0 when none can, on clocks that cannot step under the gateway:
//
//   - this run's own sends: until settle_ms after the drive that made them
//     ended (landing), on this process's monotonic clock;
//   - an earlier run's sends: each was made before this run started, so
//     settle_ms after that;
//   - another gateway's (a shared journal): settle_ms and a drive's budget
//     after its last attempt as journaled, on the journal server's clock,
//     which every gateway reads.
func (e *Engine) inFlight(op store.Operation) time.Duration {
	if op.AttemptCount == 0 {
		return 0
	}
	wait := max(e.landing.wait(op.Key), time.Until(e.started.Add(e.settle(op.TargetSystem))))
	if e.store.Shared() && !op.LastAttemptAt.IsZero() {
		wait = max(wait, e.inFlightUntil(op).Sub(e.store.Now()))
	}
	return max(wait, 0)
}
