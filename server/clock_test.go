package server_test

import (
	"context"
	"github.com/oncegate/oncegate/server/engine/enginetest"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// steppedClock is a machine's wall clock that a test steps.
type steppedClock struct{ step atomic.Int64 }

func (c *steppedClock) now() time.Time {
	return time.Now().Add(time.Duration(c.step.Load()))
}

// stepTo sets the clock d away from the true time.
func (c *steppedClock) stepTo(d time.Duration) { c.step.Store(int64(d)) }

// journals are the journals a clock test runs on: the embedded one, and
// one on PostgreSQL (skipped with a message where no server is given,
// failing in CI).
var journals = []struct {
	name string
	open func(testing.TB) *store.Store
}{
	{"SQLite", openJournal},
	{"PostgreSQL", func(tb testing.TB) *store.Store {
		st, err := store.Open(context.Background(), storetest.Database(tb))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		return st
	}},
}

// stepped opens a journal with open whose machine's wall clock the test
// steps.
func stepped(tb testing.TB, open func(testing.TB) *store.Store) (*store.Store, *steppedClock) {
	tb.Helper()
	st := open(tb)
	c := &steppedClock{}
	st.Wall = c.now
	return st, c
}

// A Bitrix24 activity is the target that makes a second effect of a second
// send: it does not recognise keys.
func callbackKey(name string) string { return "test:crm.callback:create:" + name + ":v1" }

// awaitStarted waits until key's claim is journaled and its send on its way.
func awaitStarted(tb testing.TB, g *gateway, key string) {
	tb.Helper()
	enginetest.Eventually(tb, key+" started", func() bool {
		op, err := g.store.Get(context.Background(), key)
		return err == nil && op.Status == store.StatusStarted
	})
}

// A step of the wall clock while a send is in flight never lets another
// request of the same key send again: the send in flight in this process
// holds its lease whatever the clock says, and the request is told it is in
// progress. Forward (an NTP step, a resumed virtual machine) and back.
func TestClockStepDuringSend(t *testing.T) {
	t.Parallel()
	for _, j := range journals {
		for _, step := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
			t.Run(j.name+"/"+step.String(), func(t *testing.T) {
				t.Parallel()
				clockStepDuringSend(t, j.open, step)
			})
		}
	}
}

func clockStepDuringSend(t *testing.T, open func(testing.TB) *store.Store, step time.Duration) {
	cfg := testConfig()
	cfg.Targets["crm"].TimeoutMS = 5000
	st, clock := stepped(t, open)
	g := serveOver(t, cfg, st)
	key := callbackKey("step-during-" + step.String())
	g.inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDelay, DelayMS: 1500, Times: 1})

	first := make(chan reply, 1)
	go func() { first <- g.post(key, callback("customer-1042")) }()
	awaitStarted(t, g, key)
	clock.stepTo(step)
	expect(t, g.post(key, callback("customer-1042")), http.StatusConflict, "started", "IDEMPOTENCY_KEY_IN_USE")

	expect(t, <-first, http.StatusOK, "succeeded", "")
	expect(t, g.post(key, callback("customer-1042")), http.StatusOK, "succeeded", "")
	if n := g.sim.Effects(sim.Bitrix24, key); n != 1 {
		t.Fatalf("%d activities at Bitrix24 for one key, want 1", n)
	}
}

// A send whose answer did not come in time leaves the outcome unknown. A
// step of the wall clock right after never makes the retry's "not found"
// trusted before the send could have landed: the wait for it runs on the
// process's monotonic clock. Once the late send landed, the retry finds it.
func TestClockStepAfterTimeout(t *testing.T) {
	t.Parallel()
	for _, j := range journals {
		t.Run(j.name, func(t *testing.T) {
			t.Parallel()
			clockStepAfterTimeout(t, j.open)
		})
	}
}

func clockStepAfterTimeout(t *testing.T, open func(testing.TB) *store.Store) {
	cfg := testConfig()
	// The calls before the send (a contact's look-up) must not time out on
	// a loaded machine; the send itself is held past the timeout.
	cfg.Targets["crm"].TimeoutMS = 1500
	cfg.Targets["crm"].SettleMS = 5000
	st, clock := stepped(t, open)
	g := serveOver(t, cfg, st)
	key := callbackKey("step-after-timeout")
	g.inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDelay, DelayMS: 3500, Times: 1})

	expect(t, g.post(key, callback("customer-1042")), http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	clock.stepTo(10 * time.Minute)
	// The send is still on its way: no retry sends again meanwhile, whether
	// the agent's or the reconciler's.
	for range 3 {
		r := g.post(key, callback("customer-1042"))
		if r.Code == http.StatusOK {
			break
		}
		expect(t, r, http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
		time.Sleep(200 * time.Millisecond)
	}
	enginetest.Eventually(t, "the late send lands and is found", func() bool {
		return g.post(key, callback("customer-1042")).Code == http.StatusOK
	})
	time.Sleep(3600 * time.Millisecond) // any second send made would have landed by now
	if n := g.sim.Effects(sim.Bitrix24, key); n != 1 {
		t.Fatalf("%d activities at Bitrix24 for one key, want 1", n)
	}
}

// Two gateways on one PostgreSQL journal whose machines' clocks are five
// minutes apart agree on leases and in-flight windows (both read the
// journal server's clock): the one whose clock is ahead never takes the
// other's lease while its send is in flight, nor the other way round.
func TestClocksApartOnSharedJournal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		ahead bool // the sending gateway's clock is the one ahead
	}{{"BehindSends", false}, {"AheadSends", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			cfg.Targets["crm"].TimeoutMS = 5000
			loc := storetest.Database(t)
			open := func(skew time.Duration) *store.Store {
				st, err := store.Open(context.Background(), loc)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				st.Wall = func() time.Time { return time.Now().Add(skew) }
				return st
			}
			sims := simulated(t, cfg)
			behind, ahead := serveAt(t, cfg, open(0), sims), serveAt(t, cfg, open(5*time.Minute), sims)
			sender, other := behind, ahead
			if c.ahead {
				sender, other = ahead, behind
			}
			other.token = sender.token // one agent, two gateways behind a balancer
			key := callbackKey("apart-" + c.name)
			sender.inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDelay, DelayMS: 1500, Times: 1})

			first := make(chan reply, 1)
			go func() { first <- sender.post(key, callback("customer-1042")) }()
			awaitStarted(t, sender, key)
			expect(t, other.post(key, callback("customer-1042")), http.StatusConflict, "started", "IDEMPOTENCY_KEY_IN_USE")
			expect(t, <-first, http.StatusOK, "succeeded", "")
			expect(t, other.post(key, callback("customer-1042")), http.StatusOK, "succeeded", "")
			if n := sims.Sim.Effects(sim.Bitrix24, key); n != 1 {
				t.Fatalf("%d activities at Bitrix24 for one key, want 1", n)
			}
		})
	}
}
