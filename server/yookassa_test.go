package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/store"
)

// YooKassa through the whole gateway: the engine sees the adapter behind
// the server's instrumentation, and still treats it as a target whose key
// holds for 24 hours.

// A charge whose answer was lost is settled by the reconciler sending the
// same request again under the same key at once (not after settle_ms, 60 s
// by default): one payment, two requests, attempt 2 journaled.
func TestYooKassaLostAnswerSentAgain(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig())
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-7201:v1"
	expect(t, g.charge(payer, key, "order-7201", 5000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	g.inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultDropResponse, Times: 1})
	if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, true, "anna", ""); err != nil {
		t.Fatal(err)
	}
	g.srv.Wake()
	await(t, "the reconciler to settle the charge", g.reconciled, func() bool { return g.row(key).Status == store.StatusSucceeded })
	idem := yookassa.IdempotenceKey(key)
	if calls, effects, row := g.sim.Calls(sim.YooKassa, idem), g.sim.Effects(sim.YooKassa, idem), g.row(key); calls != 2 || effects != 1 || row.AttemptCount != 2 {
		t.Fatalf("requests %d, payments %d, attempts %d; want 2, 1, 2", calls, effects, row.AttemptCount)
	}
	expect(t, g.charge(payer, key, "order-7201", 5000), http.StatusOK, "succeeded", "")
}

// A charge pending at the provider stays unknown to the agent (202,
// OUTCOME_UNKNOWN) with a message saying pending, and however often the
// reconciler checks it, it is never flagged for review.
func TestYooKassaPendingNotFlagged(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig()) // review after 2 failed look-ups
	g.sim.SetYooKassaMode(sim.YooKassaMode{PendingMS: int(time.Hour.Milliseconds())})
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-7202:v1"
	expect(t, g.charge(payer, key, "order-7202", 5000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, true, "anna", ""); err != nil {
		t.Fatal(err)
	}
	g.srv.Wake()
	checks := 0
	await(t, "four checks of the pending charge", g.reconciled, func() bool {
		if g.row(key).Status == store.StatusUnknown {
			checks++ // one per reconciler pass once the executor is done
		}
		return checks > 4
	})
	row := g.row(key)
	if row.Status != store.StatusUnknown || row.NeedsReview || row.LookupFailures != 0 || row.TargetObjectID == "" {
		t.Fatalf("row = %+v", row)
	}
	r := g.charge(payer, key, "order-7202", 5000)
	expect(t, r, http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	if r.Body["needs_review"] == true || !strings.Contains(r.Raw, "pending") {
		t.Fatalf("answer = %s", r.Raw)
	}
}
