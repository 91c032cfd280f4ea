package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// The journal's clocks. What the journal compares — whether a lease ran
// out, whether an approval expired, when a check is due — is compared with
// times the journal itself stamped, so both must come from one clock that
// does not jump:
//
//   - SQLite: the machine's wall clock (Store.Wall). One gateway writes the
//     journal, and a lease in use by this process is never taken by another
//     of its claims whatever the clock says (Store.Use), so a step of the
//     clock can change when a dead run's lease is taken, never whether two
//     drives of one key run together.
//   - PostgreSQL: the server's clock (serverClock), which every gateway of
//     the journal reads. Gateways whose own clocks differ, or a gateway whose
//     clock steps (NTP, a virtual machine resumed), still agree on when a
//     lease ran out.

// serverClock is the journal server's clock as this gateway reads it: the
// server's time at the last reading, carried forward on this process's
// monotonic clock, so a step of the machine's wall clock moves nothing. It
// is read again every serverClockEvery, so the two clocks' drift never adds
// up; while the server cannot be read, the last reading is carried on.
type serverClock struct {
	at atomic.Pointer[clockReading]
}

// clockReading is the server's time and this process's clock at one instant.
type clockReading struct {
	server time.Time
	local  time.Time // with its monotonic reading
}

// serverClockEvery is how often a gateway reads the server's clock again.
const serverClockEvery = 10 * time.Second

// now is the server's time now.
func (c *serverClock) now() time.Time {
	r := c.at.Load()
	return r.server.Add(time.Since(r.local))
}

// read reads the server's clock; the reading is placed half way through
// the round trip.
func (c *serverClock) read(ctx context.Context, d db) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sent := time.Now()
	var server time.Time
	if err := d.QueryRowContext(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
		return fmt.Errorf("read the journal server's clock: %w", redactErr(err))
	}
	c.at.Store(&clockReading{server: server.UTC(), local: sent.Add(time.Since(sent) / 2)})
	return nil
}

// keep reads the server's clock every serverClockEvery until quit closes.
func (c *serverClock) keep(d db, quit <-chan struct{}) {
	t := time.NewTicker(serverClockEvery)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
			c.read(context.Background(), d) // a failed reading keeps the last
		}
	}
}

// leasesInUse are the leases this process's drives are using, by owner.
type leasesInUse struct {
	mu sync.Mutex
	m  map[string]int
}

// Use marks the lease owner as in use by a drive of this process until the
// returned function is called: from before its claim is written until the
// drive that used it ended. A lease in use is live whatever its time says,
// so no other claim of this process takes it — not an agent's retry, not
// the reconciler — even when the clock stepped past it (the lease's time is
// what other gateways go by).
func (s *Store) Use(owner string) (done func()) {
	u := &s.inUse
	u.mu.Lock()
	if u.m == nil {
		u.m = make(map[string]int)
	}
	u.m[owner]++
	u.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			if u.m[owner]--; u.m[owner] <= 0 {
				delete(u.m, owner)
			}
			u.mu.Unlock()
		})
	}
}

// live reports whether op's lease is held: in use by this process, or not
// run out by the journal's clock.
func (s *Store) live(op Operation, now time.Time) bool {
	if op.LeaseOwner == "" {
		return false
	}
	if op.LeaseUntil.After(now) {
		return true
	}
	u := &s.inUse
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.m[op.LeaseOwner] > 0
}
