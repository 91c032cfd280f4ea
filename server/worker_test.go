package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// fastConfig makes the background workers and timeouts quick.
func fastConfig() config.Config {
	cfg := testConfig()
	cfg.Targets["onec"].TimeoutMS = 300
	cfg.Targets["payments"].TimeoutMS = 300
	cfg.Reconciler.IntervalMS = 50
	cfg.Reconciler.MaxBackoffMS = 100
	cfg.Reconciler.ReviewAfter = 2
	return cfg
}

// eventually polls cond until it holds or the time is up, for what no
// worker reports (await waits for a worker).
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func charge(order string, amount int) []byte {
	b, _ := json.Marshal(map[string]any{
		"schema_version": "1.0", "intent": "payment.charge",
		"payload": map[string]any{"account_id": "merchant-account-17", "order_id": order, "amount_minor": amount, "currency": "RUB"},
	})
	return b
}

// payer submits a charge with a pay token.
func (g *gateway) charge(token, key, order string, amount int) reply {
	g.t.Helper()
	return g.do("POST", "/v1/operations", token, map[string]string{"Idempotency-Key": key}, charge(order, amount))
}

func (g *gateway) approval(key string) store.Approval {
	g.t.Helper()
	a, err := g.store.ApprovalByKey(context.Background(), key)
	if err != nil {
		g.t.Fatal(err)
	}
	return a
}

// An approved charge runs once through the executor; the agent's retry
// gets 200 with the payment id; a second decision is refused.
func TestApprovedChargeRunsOnce(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig())
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-7001:v1"
	expect(t, g.charge(payer, key, "order-7001", 125000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	a := g.approval(key)
	if a.Status != store.ApprovalPending || a.Fingerprint != g.row(key).Fingerprint {
		t.Fatalf("approval = %+v", a)
	}
	// Nothing reaches the provider before a person decides.
	if got := g.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 0 {
		t.Fatalf("calls before approval = %d", got)
	}
	if err := g.store.DecideApproval(context.Background(), a.ID, true, "accountant-1", "ok"); err != nil {
		t.Fatal(err)
	}
	g.srv.Wake()
	await(t, "the executor to charge", g.executed, func() bool { return g.row(key).Status == store.StatusSucceeded })

	r := g.charge(payer, key, "order-7001", 125000)
	expect(t, r, http.StatusOK, "succeeded", "")
	if r.str("target_object_id") == "" || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after approval: %s", r.Raw)
	}
	if got := g.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 1 {
		t.Fatalf("payments made = %d, want 1", got)
	}
	err := g.store.DecideApproval(context.Background(), a.ID, true, "accountant-2", "")
	if !errors.Is(err, store.ErrApprovalDecided) {
		t.Fatalf("second approval: %v, want ErrApprovalDecided", err)
	}
	// A changed amount is a new fingerprint: refused under this key.
	expect(t, g.charge(payer, key, "order-7001", 125001), http.StatusUnprocessableEntity, "rejected", "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH")
}

func TestDeniedCharge(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig())
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-7002:v1"
	expect(t, g.charge(payer, key, "order-7002", 5000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, false, "accountant-1", "not ours"); err != nil {
		t.Fatal(err)
	}
	r := g.charge(payer, key, "order-7002", 5000)
	expect(t, r, http.StatusUnprocessableEntity, "failed_final", "APPROVAL_DENIED")
	if got := g.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 0 {
		t.Fatalf("a denied charge reached the provider %d times", got)
	}
}

func TestExpiredApproval(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.Approval.TTL = config.Duration(200 * time.Millisecond)
	g := setupWith(t, cfg)
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-7003:v1"
	expect(t, g.charge(payer, key, "order-7003", 5000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	id := g.approval(key).ID
	await(t, "the approval to expire", g.expired, func() bool { return g.row(key).Status == store.StatusFailedFinal })
	expect(t, g.charge(payer, key, "order-7003", 5000), http.StatusUnprocessableEntity, "failed_final", "APPROVAL_EXPIRED")
	if err := g.store.DecideApproval(context.Background(), id, true, "late", ""); !errors.Is(err, store.ErrApprovalExpired) {
		t.Fatalf("approve after expiry: %v, want ErrApprovalExpired", err)
	}
	if got := g.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 0 {
		t.Fatalf("an expired charge reached the provider %d times", got)
	}
}

// The reconciler resolves an unknown outcome without any agent retry.
func TestReconcilerFindsEffect(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig())
	const key = "test:invoice.create:order-rec-1:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDropResponse, Times: 1})
	expect(t, g.post(key, invoice("order-rec-1", 1)), http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	await(t, "the reconciler to find the effect", g.reconciled, func() bool { return g.row(key).Status == store.StatusSucceeded })
	if got := g.sim.Calls(sim.OneC, key); got != 1 {
		t.Fatalf("execute calls = %d, want 1", got)
	}
	r := g.post(key, invoice("order-rec-1", 1))
	expect(t, r, http.StatusOK, "succeeded", "")
}

// An operation whose holder died before sending: the reconciler finds
// nothing at the target and marks it safe to retry; the agent's retry then
// executes it once.
func TestReconcilerNothingThere(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig())
	const key = "test:invoice.create:order-rec-2:v1"
	// Register the operation as a dead run would have left it.
	body, _ := json.Marshal(invoice("order-rec-2", 1)["payload"])
	ctx := context.Background()
	_, _, err := g.store.Claim(ctx, store.ClaimRequest{
		Key: key, Intent: "invoice.create", Fingerprint: "0000000000000000000000000000000000000000000000000000000000000001",
		TargetSystem: "onec", Agent: "agent-a", Payload: body, Owner: "dead-run", Lease: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	await(t, "the reconciler to mark it retryable", g.reconciled, func() bool { return g.row(key).Status == store.StatusFailedRetryable })
	if got := g.sim.Calls(sim.OneC, key); got != 0 {
		t.Fatalf("the reconciler executed: %d calls", got)
	}
	r := g.do("GET", "/v1/operations/"+key, g.token, nil, nil)
	if r.errCode() != "TARGET_UNAVAILABLE" || r.str("state") != "failed_retryable" {
		t.Fatalf("GET = %s", r.Raw)
	}
}

// Lookups that keep failing flag the operation for a person, visibly.
func TestReconcilerFlagsForReview(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig())
	const key = "test:invoice.create:order-rec-3:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDropResponse, Times: 1})
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: 503, Times: 1000, On: sim.OnLookup})
	expect(t, g.post(key, invoice("order-rec-3", 1)), http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	await(t, "the review flag", g.reconciled, func() bool { return g.row(key).NeedsReview })
	op := g.row(key)
	if op.Status != store.StatusUnknown || op.LookupFailures < 2 {
		t.Fatalf("row = %+v", op)
	}
	r := g.do("GET", "/v1/operations/"+key, g.token, nil, nil)
	if r.Body["needs_review"] != true || r.str("state") != "unknown" {
		t.Fatalf("GET = %s", r.Raw)
	}
}

// Shutdown lets a request in flight finish and settle its operation.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:order-shutdown:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDelay, DelayMS: 300, Times: 1})
	done := make(chan reply, 1)
	go func() { done <- g.post(key, invoice("order-shutdown", 1)) }()
	eventually(t, "the call to reach the target", func() bool { return g.sim.Calls(sim.OneC, key) == 1 })
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	expect(t, r, http.StatusOK, "succeeded", "")
	if got := g.row(key).Status; got != store.StatusSucceeded {
		t.Fatalf("row after shutdown: %s", got)
	}
}

// An approved charge whose response is lost is found by the reconciler by
// its key at YooKassa; one whose provider is down ends failed_retryable
// and the agent's retry pays once.
func TestApprovedChargeUnderFaults(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig())
	payer := g.MustToken("agent-pay", "pay")
	approve := func(key string) {
		t.Helper()
		if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, true, "anna", ""); err != nil {
			t.Fatal(err)
		}
		g.srv.Wake()
	}

	const lost = "test:payment.charge:order-7101:v1"
	expect(t, g.charge(payer, lost, "order-7101", 5000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	g.inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultDropResponse, Times: 1})
	approve(lost)
	await(t, "the reconciler to find the payment", g.reconciled, func() bool { return g.row(lost).Status == store.StatusSucceeded })
	r := g.charge(payer, lost, "order-7101", 5000)
	expect(t, r, http.StatusOK, "succeeded", "")
	if got := g.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(lost)); got != 1 {
		t.Fatalf("payments = %d, want 1", got)
	}

	const down = "test:payment.charge:order-7102:v1"
	expect(t, g.charge(payer, down, "order-7102", 5000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	g.inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultStatus, Status: 503, Times: 4})
	approve(down)
	await(t, "the executor to give up for now", g.executed, func() bool { return g.row(down).Status == store.StatusFailedRetryable })
	r = g.charge(payer, down, "order-7102", 5000)
	expect(t, r, http.StatusOK, "succeeded", "")
	if got := g.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(down)); got != 1 {
		t.Fatalf("payments = %d, want 1", got)
	}
}

// Retention purges each target's final operations by that target's own
// retention, and never a row that is not final.
func TestRetentionPerTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openJournal(t)
	claim := func(key, intent, system string, at time.Time, final bool) {
		st.Now = func() time.Time { return at }
		req := store.ClaimRequest{Key: key, Intent: intent, Fingerprint: fmt.Sprintf("%x", sha256.Sum256([]byte(key))), TargetSystem: system,
			Agent: "agent-a", Payload: json.RawMessage(`{}`), Owner: "run-old", Lease: time.Minute}
		if _, _, err := st.Claim(ctx, req); err != nil {
			t.Fatal(err)
		}
		if final {
			err := st.Complete(ctx, key, "run-old", "OBJ-"+key, nil)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	old, recent := time.Now().Add(-100*time.Hour), time.Now().Add(-10*time.Hour)
	claim("test:invoice.create:ret-old:v1", "invoice.create", "onec", old, true)
	claim("test:invoice.create:ret-recent:v1", "invoice.create", "onec", recent, true)
	claim("test:invoice.create:ret-open:v1", "invoice.create", "onec", old, false)
	claim("test:crm.callback:create:ret-old:v1", "crm.callback.create", "crm", old, true)
	st.Now = time.Now

	cfg := testConfig()
	cfg.Retention.OneC = config.Duration(48 * time.Hour) // the default stays 720h
	g := serveOver(t, cfg, st)

	// Retention runs as the gateway starts.
	await(t, "retention to purge the old 1C operation", g.purged, func() bool {
		_, err := st.Get(ctx, "test:invoice.create:ret-old:v1")
		return errors.Is(err, store.ErrNotFound)
	})
	for _, key := range []string{"test:invoice.create:ret-recent:v1", "test:invoice.create:ret-open:v1", "test:crm.callback:create:ret-old:v1"} {
		if _, err := st.Get(ctx, key); err != nil {
			t.Errorf("%s was purged: %v", key, err)
		}
	}
}

// A request 1C is still committing when the reconciler first asks is not
// "no effect": the row stays unknown until every send could have landed,
// then finds the document. It never says failed_retryable on the way.
func TestReconcilerWaitsForSlowCommit(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.Retry.MaxAttempts = 1
	g := setupWith(t, cfg)
	const key = "test:invoice.create:slow-commit:v1"
	// 1C commits 700 ms after the request, well after the 300 ms timeout
	// (late_commit: its module refuses a plain late commit, but a clock
	// behind the gateway's lets this one land).
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultLateCommit, DelayMS: 700, Times: 1})
	expect(t, g.post(key, invoice("slow-commit", 1)), http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	seen := map[store.Status]bool{}
	await(t, "the slow document found", g.reconciled, func() bool {
		op := g.row(key)
		seen[op.Status] = true
		return op.Status == store.StatusSucceeded
	})
	if seen[store.StatusFailedRetryable] {
		t.Fatalf("the row said failed_retryable (no effect) while 1C was committing: %v", seen)
	}
	if n := g.sim.Effects(sim.OneC, key); n != 1 {
		t.Fatalf("effects = %d, want 1", n)
	}
}

// Bitrix24 does not dedupe: an agent's retry soon after an add timed out
// finds nothing yet, and must not send the add again while the first may
// still land. It waits (202 unknown) and then finds the one activity.
func TestBitrixRetryWaitsForInFlightAdd(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.Targets["crm"].TimeoutMS = 300
	cfg.Targets["crm"].SettleMS = 100
	cfg.Retry.MaxAttempts = 1
	g := setupWith(t, cfg)
	const key = "test:crm.callback:create:in-flight:v1"
	body := map[string]any{"schema_version": "1.0", "intent": "crm.callback.create",
		"payload": map[string]any{"customer_id": "customer-1042", "due_at": "2026-12-03T10:00:00+03:00"}}
	// The portal commits the add 600 ms after it arrives; the gateway
	// stops waiting after 300.
	g.inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDelay, DelayMS: 600, Times: 1})
	sent := time.Now()
	expect(t, g.post(key, body), http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	eventually(t, "the retried callback settles", func() bool {
		r := g.post(key, body)
		return r.Code == http.StatusOK
	})
	// Count once the delayed add has had its time to land.
	time.Sleep(time.Until(sent.Add(900 * time.Millisecond)))
	if n := g.sim.Effects(sim.Bitrix24, key); n != 1 {
		t.Fatalf("the CRM has %d activities for the key, want 1", n)
	}
}

// A charge the provider declines ends failed_final and keeps the
// provider's payment id: the accountant can find it at YooKassa.
func TestDeclinedChargeKeepsPaymentID(t *testing.T) {
	t.Parallel()
	g := setupWith(t, fastConfig())
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:declined:v1"
	expect(t, g.charge(payer, key, "declined", sim.YooKassaInsufficientFundsMinor), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, true, "accountant-1", ""); err != nil {
		t.Fatal(err)
	}
	g.srv.Wake()
	await(t, "the executor to charge", g.executed, func() bool { return g.row(key).Status == store.StatusFailedFinal })
	r := g.charge(payer, key, "declined", sim.YooKassaInsufficientFundsMinor)
	expect(t, r, http.StatusUnprocessableEntity, "failed_final", "INSUFFICIENT_FUNDS")
	if id := g.row(key).TargetObjectID; id == "" || r.str("target_object_id") != id {
		t.Fatalf("the declined payment's id: journal %q, answer %q", id, r.str("target_object_id"))
	}
}

// A look-up that must page through the provider's list gets a call
// timeout per page it may read, not one for the whole look-up: a charge
// made before 250 others is on the third page of YooKassa's payments,
// and each page takes most of a timeout to come.
func TestLookupPagesOnSlowTarget(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.Targets["payments"].TimeoutMS = 1000
	g := setupWith(t, cfg)
	ctx := context.Background()
	provider, err := yookassa.New(yookassa.Config{BaseURL: g.simURL + "/yookassa/v3", ShopID: "demo-shop", SecretKey: sim.YooKassaSecret()})
	if err != nil {
		t.Fatal(err)
	}
	chargeOp := func(key, order string) adapters.Op {
		payload, _ := json.Marshal(map[string]any{"account_id": "merchant-account-17", "order_id": order, "amount_minor": 5000, "currency": "RUB"})
		return adapters.Op{Key: key, Intent: "payment.charge", Payload: payload, Attempt: 1, CreatedAt: time.Now()}
	}

	// A charge that reached the provider, its answer lost: unknown, and
	// not due for the reconciler's own passes (a person asks below).
	const key = "test:payment.charge:order-pages:v1"
	op := chargeOp(key, "order-pages")
	_, claim, err := g.store.Claim(ctx, store.ClaimRequest{
		Key: key, Intent: op.Intent, Fingerprint: fmt.Sprintf("%x", sha256.Sum256([]byte(key))),
		TargetSystem: "payments", Agent: "agent-pay", Payload: op.Payload, Owner: "run-1", Lease: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	made, err := provider.Execute(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.store.MarkUnknown(ctx, key, claim.LeaseOwner, "", store.Failure{Code: "OUTCOME_UNKNOWN"}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The shop's other payments since, newest first in its list.
	for i := range 250 {
		other := fmt.Sprintf("order-pages-%d", i)
		if _, err := provider.Execute(ctx, chargeOp("test:payment.charge:"+other+":v1", other)); err != nil {
			t.Fatal(err)
		}
	}
	g.inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultDelay, DelayMS: 600, Times: 3, On: sim.OnLookup})

	row, err := g.srv.ReconcileNow(store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: "operator-1"}), key)
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != store.StatusSucceeded || row.TargetObjectID != made.ObjectID || row.LookupFailures != 0 {
		t.Fatalf("row after the look-up: %+v, want succeeded with %s", row, made.ObjectID)
	}
}
