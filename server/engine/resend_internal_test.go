package engine

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// ykEngine is an engine over a new journal whose payments target is the
// YooKassa adapter at a simulator on loopback; its workers do not run.
func ykEngine(t *testing.T) (*Engine, *store.Store, *sim.Server) {
	t.Helper()
	s := sim.New()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	pay, err := yookassa.New(yookassa.Config{BaseURL: hs.URL + "/yookassa/v3", ShopID: "demo-shop", SecretKey: sim.YooKassaSecret(), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t)
	cfg := testConfig()
	cfg.Retry = adapters.RetryPolicy{MaxAttempts: 2, InitialDelay: 10 * time.Millisecond, Multiplier: 1, MaxDelay: time.Second}
	cfg.Targets["payments"] = TargetConfig{Timeout: time.Second}
	e := New(cfg, st, map[string]adapters.Target{"payments": pay}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return e, st, s
}

// sentCharge claims a charge and drives it once, as the executor does
// after its approval, and returns the row it rests in.
func sentCharge(t *testing.T, e *Engine, st *store.Store, key string) store.Operation {
	t.Helper()
	ctx := context.Background()
	d, op, err := st.Claim(ctx, store.ClaimRequest{
		Key: key, Intent: yookassa.IntentCharge, Fingerprint: strings.Repeat("cd", 32), TargetSystem: "payments", Agent: "agent-a",
		Payload: []byte(`{"account_id":"merchant-account-17","amount_minor":125000,"currency":"RUB","order_id":"order-48291"}`),
		Owner:   e.leaseOwner(), Lease: e.lease("payments"),
	})
	if err != nil {
		t.Fatal(err)
	}
	row, _, err := e.drive(ctx, d, op)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// A payment whose answer was lost, in a shop busy enough that a scan of
// its payments from the present cannot reach it, is found by sending the
// same request again under the same key, as YooKassa documents: one
// payment, the operation succeeded, the send journaled as an attempt.
func TestReconcileResendsByKey(t *testing.T) {
	t.Parallel()
	e, st, s := ykEngine(t)
	ctx := context.Background()
	const key = "test:payment.charge:lost-answer:v1"
	if err := s.Inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultDropResponse}); err != nil {
		t.Fatal(err)
	}
	row := sentCharge(t, e, st, key)
	if row.Status != store.StatusUnknown {
		t.Fatalf("after the lost answer: %+v", row)
	}
	if wait := row.NextCheckAt.Sub(time.Now()); wait > 2*e.cfg.ReconcileInterval {
		t.Fatalf("checked again in %v, want at once (the reconciler's next pass)", wait)
	}
	s.YooKassaBusy(21 * 100) // more payments since than a look-up's pages hold
	e.reconcileOne(ctx, row)
	row, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	idem := yookassa.IdempotenceKey(key)
	if row.Status != store.StatusSucceeded || row.TargetObjectID == "" || row.AttemptCount != 2 {
		t.Fatalf("after the reconciler: %+v", row)
	}
	if got := s.Effects(sim.YooKassa, idem); got != 1 {
		t.Fatalf("payments made: %d, want 1", got)
	}
	if got := s.Calls(sim.YooKassa, idem); got != 2 {
		t.Fatalf("requests sent: %d, want 2 (the first and the repeat)", got)
	}
}

// Past the key window the reconciler only looks up: a repeat there could
// make a second payment.
func TestReconcileNoResendPastKeyWindow(t *testing.T) {
	t.Parallel()
	e, st, _ := ykEngine(t)
	op := store.Operation{TargetSystem: "payments", AttemptCount: 1, LastAttemptAt: time.Now(), CreatedAt: time.Now()}
	if !e.resends(op) {
		t.Fatal("a fresh unknown charge is not sent again by key")
	}
	op.CreatedAt = time.Now().Add(-yookassa.KeyWindow + keyWindowMargin/2)
	if e.resends(op) {
		t.Fatal("a charge near the end of its key window is sent again")
	}
	op.CreatedAt, op.TargetObjectID = time.Now(), "pay-1"
	if e.resends(op) {
		t.Fatal("a charge whose payment id is known is sent again instead of read")
	}
	op.TargetObjectID, op.AttemptCount, op.LastAttemptAt = "", 0, time.Time{}
	if e.resends(op) {
		t.Fatal("a charge never sent is sent by the reconciler")
	}
	_ = st
}

// A payment pending at the provider is an answer, not a failed look-up:
// checked again and again, it stays unknown, says pending, keeps its id
// and is never flagged for a person's review.
func TestPendingIsNotFlagged(t *testing.T) {
	t.Parallel()
	e, st, s := ykEngine(t)
	ctx := context.Background()
	s.SetYooKassaMode(sim.YooKassaMode{PendingMS: int(time.Hour.Milliseconds())})
	const key = "test:payment.charge:pending-long:v1"
	row := sentCharge(t, e, st, key)
	if row.Status != store.StatusUnknown || row.TargetObjectID == "" {
		t.Fatalf("after a pending answer: %+v", row)
	}
	for i := range e.cfg.ReviewAfter + 2 {
		e.reconcileOne(ctx, row)
		var err error
		if row, err = st.Get(ctx, key); err != nil {
			t.Fatal(err)
		}
		if row.Status != store.StatusUnknown || row.NeedsReview || row.LookupFailures != 0 || !strings.HasPrefix(row.ErrorMessage, "pending") {
			t.Fatalf("after check %d: %+v", i+1, row)
		}
	}
	if got := s.Effects(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 1 {
		t.Fatalf("payments made: %d, want 1", got)
	}
}

// A pending effect is polled with gaps growing with its age, between the
// reconciler's interval and max_backoff_ms.
func TestPendingGap(t *testing.T) {
	t.Parallel()
	e, st, _ := ykEngine(t)
	sent := time.Now()
	op := store.Operation{TargetSystem: "payments", LastAttemptAt: sent}
	for _, c := range []struct{ age, want time.Duration }{
		{0, time.Second}, {4 * time.Second, 2 * time.Second}, {2 * time.Minute, time.Minute}, {24 * time.Hour, 300 * time.Second},
	} {
		now := sent.Add(c.age)
		st.Now = func() time.Time { return now }
		if got := e.pendingGap(op); got != c.want {
			t.Errorf("gap at age %v = %v, want %v", c.age, got, c.want)
		}
	}
}
