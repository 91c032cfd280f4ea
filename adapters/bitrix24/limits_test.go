package bitrix24_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

// portalClient serves simulators with the Bitrix24 portal p (its webhook
// the tests' own) and returns them with a client of rate r.
func portalClient(t *testing.T, p sim.Bitrix24Portal, r adapters.Rate) (*sim.Server, *bitrix24.Client) {
	t.Helper()
	p.WebhookUser, p.WebhookSecret = testUser, secret
	s := sim.New()
	s.SetBitrix24Portal(p)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/bitrix24/rest/7/" + secret + "/", Timeout: 2 * time.Second, Rate: r})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// Calls queue for their turn under the portal's rate instead of being
// refused: many at once, none refused with QUERY_LIMIT_EXCEEDED.
func TestPacing(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.Admins = []int{testUser}
	// The portal's bucket is deeper than the pacer's burst, as a real
	// portal's is (50 at 2 a second): the pacer's share of it absorbs
	// calls that a loaded machine delivers bunched. Forty at once, unpaced,
	// would still overflow it.
	p.PerSecond, p.Bucket = 50, 20
	s, c := portalClient(t, p, adapters.Rate{PerSecond: 50, Burst: 5})
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for range 40 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := c.Validate(ctx, newOp(t, "customer-1042")); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("validate: %v", err)
	}
	if n := s.Bitrix24Refusals()["QUERY_LIMIT_EXCEEDED"]; n != 0 {
		t.Fatalf("the portal refused %d calls for their rate", n)
	}
}

// The portal's limits refuse before anything runs: Retry, with when to
// come back; a method blocked for its execution time is not called again
// before the time the portal announced.
func TestLimits(t *testing.T) {
	t.Parallel()
	t.Run("QueryLimitExceeded", func(t *testing.T) {
		t.Parallel()
		p := sim.DefaultBitrix24Portal()
		p.Admins = []int{testUser}
		p.PerSecond, p.Bucket = 0.001, 1
		s, c := portalClient(t, p, adapters.Rate{}) // not paced: the portal refuses
		c.Validate(context.Background(), newOp(t, "customer-1042"))
		op := newOp(t, "customer-1042")
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
		if n := s.Calls(sim.Bitrix24, op.Key); n != 0 {
			t.Fatalf("the add was sent %d times", n)
		}
	})
	t.Run("OperationTimeLimit", func(t *testing.T) {
		t.Parallel()
		p := sim.DefaultBitrix24Portal()
		p.Admins = []int{testUser}
		p.PerSecond = 0
		p.OperatingBudget, p.OperatingWindow, p.OperatingPerCall = time.Second, time.Hour, 600*time.Millisecond
		s, c := portalClient(t, p, adapters.Rate{})
		// Each Execute resolves the customer (crm.contact.list), then adds:
		// after two, 1.2 s of each method is counted, and the next call of
		// crm.contact.list is blocked.
		for range 2 {
			if _, err := c.Execute(context.Background(), newOp(t, "customer-1042")); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.Execute(ctx, newOp(t, "customer-1042"))
		e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
		if e.RetryAfter < 3000 {
			t.Fatalf("RetryAfter = %d s, want until the portal's operating_reset_at, an hour on", e.RetryAfter)
		}
		// Not called again before then: the portal counts no second refusal.
		op := newOp(t, "customer-1042")
		_, err = c.Execute(ctx, op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
		if got := s.Bitrix24Refusals()["OPERATION_TIME_LIMIT"]; got != 1 {
			t.Fatalf("the blocked method was called %d times, want 1", got)
		}
		if n := s.Calls(sim.Bitrix24, op.Key); n != 0 {
			t.Fatalf("the add was sent %d times while blocked", n)
		}
		// Other methods go on.
		if _, err := c.Lookup(ctx, op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("look-up while crm.contact.list is blocked: %v", err)
		}
	})
}

// A webhook user who is not an administrator may not see an activity it
// made once its contact went to another manager: the look-up must not
// call that "not found", so the activity is not added a second time.
func TestLookup_HiddenByRights(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.PerSecond = 0
	p.Admins, p.Teams = []int{1}, map[int][]int{testUser: {8}}
	s, c := portalClient(t, p, adapters.Rate{})
	s.AssignBitrix24Contact("customer-1042", 8)
	op := newOp(t, "customer-1042")
	inject(t, s, sim.Fault{Fault: sim.FaultDropResponse})
	_, err := c.Execute(context.Background(), op)
	adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
	s.AssignBitrix24Contact("customer-1042", 9) // out of the webhook user's view

	// The gateway's rule: only "not found" lets the key be sent again.
	_, err = c.Lookup(context.Background(), op)
	if errors.Is(err, adapters.ErrNotFound) {
		op.Attempt++
		c.Execute(context.Background(), op)
	}
	if n := s.Effects(sim.Bitrix24, op.Key); n != 1 {
		t.Fatalf("the key has %d activities, want 1", n)
	}
	e := adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
	if !strings.Contains(e.Message, "administrator") {
		t.Fatalf("the message does not say how to fix it: %q", e.Message)
	}
}

func TestProbe_NotAdmin(t *testing.T) {
	t.Parallel()
	p := sim.DefaultBitrix24Portal()
	p.PerSecond = 0
	p.Admins = []int{1}
	_, c := portalClient(t, p, adapters.Rate{})
	_, err := c.Probe(context.Background())
	e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetPermissionDenied, "", secret)
	if !strings.Contains(e.Message, "administrator") {
		t.Fatalf("the probe does not say how to set the webhook up: %q", e.Message)
	}
}
