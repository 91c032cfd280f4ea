package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/oncegate/oncegate/server/engine/enginetest"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// The background workers — the reconciler, the executor of approved
// operations and retention — driven through the engine itself, on each
// journal (storetest.Each: SQLite and PostgreSQL).

// workers is an engine over a new journal with its workers running,
// driving the three targets at the simulators.
type workers struct {
	t       testing.TB
	e       *engine.Engine
	st      *store.Store
	sims    adapterstest.Simulated
	signals *engine.TestSignals
	agent   store.Token // scopes read, draft, write, post
	payer   store.Token // scope pay
	// stop stops the workers and waits for the operations in flight.
	stop func()
}

// fastConfig is the engine's part of the default configuration with
// call timeouts, retry delays and reconciler passes short enough for
// tests: 1C and YooKassa calls time out after 300 ms, Bitrix24's after a
// second; the reconciler runs every 50 ms and asks a person after two
// failed look-ups.
func fastConfig() engine.Config {
	return engine.Config{
		Contour: "test",
		Retry:   adapters.RetryPolicy{MaxAttempts: 4, InitialDelay: 10 * time.Millisecond, Multiplier: 2, MaxDelay: 40 * time.Millisecond, Jitter: true},
		Targets: map[string]engine.TargetConfig{
			"onec":     {Timeout: 300 * time.Millisecond},
			"crm":      {Timeout: time.Second, Settle: 30 * time.Second},
			"payments": {Timeout: 300 * time.Millisecond, Settle: time.Minute},
		},
		Retention:         720 * time.Hour,
		ReconcileInterval: 50 * time.Millisecond,
		MaxBackoff:        100 * time.Millisecond,
		ReviewAfter:       2,
		ApprovalTTL:       24 * time.Hour,
	}
}

// runWorkers starts the engine with cfg over a new journal of j.
func runWorkers(tb testing.TB, j storetest.Journal, cfg engine.Config) *workers {
	tb.Helper()
	return runWorkersOver(tb, cfg, j.Open(tb))
}

// runWorkersOver starts the engine with cfg over the journal st, as serve
// does: its catalog is the built-in intents bound to the targets.
func runWorkersOver(tb testing.TB, cfg engine.Config, st *store.Store) *workers {
	tb.Helper()
	ctx := context.Background()
	timeout := func(system string) time.Duration { return cfg.Targets[system].Timeout }
	sims := adapterstest.Start(tb, adapterstest.Timeouts{OneC: timeout("onec"), CRM: timeout("crm"), Payments: timeout("payments")})
	catalog, err := intent.Load(intent.Options{Targets: slices.Collect(maps.Keys(sims.Targets))})
	if err != nil {
		tb.Fatal(err)
	}
	if err := catalog.Bind(sims.Targets); err != nil {
		tb.Fatal(err)
	}
	cfg.Catalog = catalog
	e := engine.New(cfg, st, sims.Targets, slog.New(slog.NewTextHandler(io.Discard, nil)))
	w := &workers{t: tb, e: e, st: st, sims: sims, signals: e.InitTestSignals()}
	if err := e.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	wait := e.Run(runCtx)
	stopped := false
	w.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			wait()
			e.Drain()
		}
	}
	tb.Cleanup(w.stop)
	if _, w.agent, err = st.CreateToken(ctx, "agent-a", []string{"read", "draft", "write", "post"}); err != nil {
		tb.Fatal(err)
	}
	if _, w.payer, err = st.CreateToken(ctx, "agent-pay", []string{"pay"}); err != nil {
		tb.Fatal(err)
	}
	return w
}

// submit sends the envelope under key as tok's agent, as the API does.
func (w *workers) submit(tok store.Token, key string, envelope map[string]any) (engine.Outcome, error) {
	w.t.Helper()
	body, err := json.Marshal(envelope)
	if err != nil {
		w.t.Fatal(err)
	}
	return w.e.Submit(context.Background(), engine.Submission{Token: tok, KeyHeader: key, HasKeyHeader: true, Body: body})
}

// charge submits a payment.charge of amount for order as the payer.
func (w *workers) charge(key, order string, amount int) (engine.Outcome, error) {
	w.t.Helper()
	return w.submit(w.payer, key, map[string]any{
		"schema_version": "1.0", "intent": "payment.charge",
		"payload": map[string]any{"account_id": "merchant-account-17", "order_id": order, "amount_minor": amount, "currency": "RUB"},
	})
}

// invoice submits an invoice.create for order as the agent.
func (w *workers) invoice(key, order string) (engine.Outcome, error) {
	w.t.Helper()
	return w.submit(w.agent, key, map[string]any{"schema_version": "1.0", "intent": "invoice.create", "actor_id": "user-42",
		"payload": adapterstest.InvoicePayload(order, 1)})
}

// row reads the journal row of key.
func (w *workers) row(key string) store.Operation {
	w.t.Helper()
	op, err := w.st.Get(context.Background(), key)
	if err != nil {
		w.t.Fatalf("journal row %s: %v", key, err)
	}
	return op
}

func (w *workers) approval(key string) store.Approval {
	w.t.Helper()
	a, err := w.st.ApprovalByKey(context.Background(), key)
	if err != nil {
		w.t.Fatal(err)
	}
	return a
}

// decide records a person's decision on key's approval and wakes the
// executor, as the admin pages do.
func (w *workers) decide(key string, approve bool, user, comment string) {
	w.t.Helper()
	if err := w.st.DecideApproval(context.Background(), w.approval(key).ID, approve, user, comment); err != nil {
		w.t.Fatal(err)
	}
	w.e.Wake()
}

// want asserts that a submission was answered with its operation in
// status, recording code as its error ("" for none).
func want(tb testing.TB, out engine.Outcome, err error, status store.Status, code string) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("refused: %v, want an operation %s %q", err, status, code)
	}
	if out.Kind != engine.KindOperation || out.Op.Status != status || out.Op.ErrorCode != code {
		tb.Fatalf("operation %s %q, want %s %q: %+v", out.Op.Status, out.Op.ErrorCode, status, code, out.Op)
	}
}

// wantRefused asserts that a submission was refused with code.
func wantRefused(tb testing.TB, err error, code string) {
	tb.Helper()
	var r *codes.Refusal
	if !errors.As(err, &r) || r.Code != code {
		tb.Fatalf("answer %v, want refused %s", err, code)
	}
}

// await waits for cond to hold, checking it at each event a worker
// reports on sig, and fails after 10 s of events that did not make it
// hold.
func await[T any](tb testing.TB, what string, sig <-chan T, cond func() bool) {
	tb.Helper()
	timeout := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-sig:
		case <-timeout:
			tb.Fatalf("timed out waiting for %s", what)
		}
	}
}

// An approved charge runs once through the executor; the agent's retry
// gets the payment, replayed; a second decision is refused.
func TestApprovedChargeRunsOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		w := runWorkers(t, j, fastConfig())
		const key = "test:payment.charge:order-7001:v1"
		out, err := w.charge(key, "order-7001", 125000)
		want(t, out, err, store.StatusAwaitingApproval, "")
		a := w.approval(key)
		if a.Status != store.ApprovalPending || a.Fingerprint != w.row(key).Fingerprint {
			t.Fatalf("approval = %+v", a)
		}
		// Nothing reaches the provider before a person decides.
		if got := w.sims.Sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 0 {
			t.Fatalf("calls before approval = %d", got)
		}
		w.decide(key, true, "accountant-1", "ok")
		await(t, "the executor to charge", w.signals.Executed, func() bool { return w.row(key).Status == store.StatusSucceeded })

		out, err = w.charge(key, "order-7001", 125000)
		want(t, out, err, store.StatusSucceeded, "")
		if out.Op.TargetObjectID == "" || !out.Replayed {
			t.Fatalf("retry after approval: %+v (replayed %v)", out.Op, out.Replayed)
		}
		if got := w.sims.Sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 1 {
			t.Fatalf("payments made = %d, want 1", got)
		}
		err = w.st.DecideApproval(context.Background(), a.ID, true, "accountant-2", "")
		if !errors.Is(err, store.ErrApprovalDecided) {
			t.Fatalf("second approval: %v, want ErrApprovalDecided", err)
		}
		// A changed amount is a new fingerprint: refused under this key.
		_, err = w.charge(key, "order-7001", 125001)
		wantRefused(t, err, codes.KeyMismatch)
	})
}

func TestDeniedCharge(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		w := runWorkers(t, j, fastConfig())
		const key = "test:payment.charge:order-7002:v1"
		out, err := w.charge(key, "order-7002", 5000)
		want(t, out, err, store.StatusAwaitingApproval, "")
		w.decide(key, false, "accountant-1", "not ours")
		out, err = w.charge(key, "order-7002", 5000)
		want(t, out, err, store.StatusFailedFinal, codes.ApprovalDenied)
		if got := w.sims.Sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 0 {
			t.Fatalf("a denied charge reached the provider %d times", got)
		}
	})
}

func TestExpiredApproval(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		cfg := fastConfig()
		cfg.ApprovalTTL = 200 * time.Millisecond
		w := runWorkers(t, j, cfg)
		const key = "test:payment.charge:order-7003:v1"
		out, err := w.charge(key, "order-7003", 5000)
		want(t, out, err, store.StatusAwaitingApproval, "")
		id := w.approval(key).ID
		await(t, "the approval to expire", w.signals.Expired, func() bool { return w.row(key).Status == store.StatusFailedFinal })
		out, err = w.charge(key, "order-7003", 5000)
		want(t, out, err, store.StatusFailedFinal, codes.ApprovalExpired)
		if err := w.st.DecideApproval(context.Background(), id, true, "late", ""); !errors.Is(err, store.ErrApprovalExpired) {
			t.Fatalf("approve after expiry: %v, want ErrApprovalExpired", err)
		}
		if got := w.sims.Sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 0 {
			t.Fatalf("an expired charge reached the provider %d times", got)
		}
	})
}

// The reconciler resolves an unknown outcome without any agent retry.
func TestReconcilerFindsEffect(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		w := runWorkers(t, j, fastConfig())
		const key = "test:invoice.create:order-rec-1:v1"
		w.sims.Inject(t, sim.Fault{Target: sim.OneC, Fault: sim.FaultDropResponse, Times: 1})
		out, err := w.invoice(key, "order-rec-1")
		want(t, out, err, store.StatusUnknown, codes.OutcomeUnknown)
		await(t, "the reconciler to find the effect", w.signals.Reconciled, func() bool { return w.row(key).Status == store.StatusSucceeded })
		if got := w.sims.Sim.Calls(sim.OneC, key); got != 1 {
			t.Fatalf("execute calls = %d, want 1", got)
		}
		out, err = w.invoice(key, "order-rec-1")
		want(t, out, err, store.StatusSucceeded, "")
	})
}

// An operation whose holder died before sending: the reconciler finds
// nothing at the target and marks it safe to retry, sending nothing.
func TestReconcilerNothingThere(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		w := runWorkers(t, j, fastConfig())
		const key = "test:invoice.create:order-rec-2:v1"
		// Register the operation as a dead run would have left it.
		body, _ := json.Marshal(adapterstest.InvoicePayload("order-rec-2", 1))
		_, _, err := w.st.Claim(context.Background(), store.ClaimRequest{
			Key: key, Intent: "invoice.create", Fingerprint: "0000000000000000000000000000000000000000000000000000000000000001",
			TargetSystem: "onec", Agent: "agent-a", Payload: body, Owner: "dead-run", Lease: time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		await(t, "the reconciler to mark it retryable", w.signals.Reconciled, func() bool { return w.row(key).Status == store.StatusFailedRetryable })
		if got := w.sims.Sim.Calls(sim.OneC, key); got != 0 {
			t.Fatalf("the reconciler executed: %d calls", got)
		}
		if op, err := w.e.Operation(context.Background(), "agent-a", key); err != nil || op.Status != store.StatusFailedRetryable || op.ErrorCode != codes.TargetUnavailable {
			t.Fatalf("the agent reads %+v, %v; want failed_retryable %s", op, err, codes.TargetUnavailable)
		}
	})
}

// Look-ups that keep failing flag the operation for a person.
func TestReconcilerFlagsForReview(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		w := runWorkers(t, j, fastConfig())
		const key = "test:invoice.create:order-rec-3:v1"
		w.sims.Inject(t, sim.Fault{Target: sim.OneC, Fault: sim.FaultDropResponse, Times: 1})
		w.sims.Inject(t, sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: 503, Times: 1000, On: sim.OnLookup})
		out, err := w.invoice(key, "order-rec-3")
		want(t, out, err, store.StatusUnknown, codes.OutcomeUnknown)
		await(t, "the review flag", w.signals.Reconciled, func() bool { return w.row(key).NeedsReview })
		if op := w.row(key); op.Status != store.StatusUnknown || op.LookupFailures < 2 {
			t.Fatalf("row = %+v", op)
		}
	})
}

// An approved charge whose response is lost is found by the reconciler by
// its key at YooKassa; one whose provider is down ends failed_retryable
// and the agent's retry pays once.
func TestApprovedChargeUnderFaults(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		w := runWorkers(t, j, fastConfig())

		const lost = "test:payment.charge:order-7101:v1"
		out, err := w.charge(lost, "order-7101", 5000)
		want(t, out, err, store.StatusAwaitingApproval, "")
		w.sims.Inject(t, sim.Fault{Target: sim.YooKassa, Fault: sim.FaultDropResponse, Times: 1})
		w.decide(lost, true, "anna", "")
		await(t, "the reconciler to find the payment", w.signals.Reconciled, func() bool { return w.row(lost).Status == store.StatusSucceeded })
		out, err = w.charge(lost, "order-7101", 5000)
		want(t, out, err, store.StatusSucceeded, "")
		if got := w.sims.Sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(lost)); got != 1 {
			t.Fatalf("payments = %d, want 1", got)
		}

		const down = "test:payment.charge:order-7102:v1"
		out, err = w.charge(down, "order-7102", 5000)
		want(t, out, err, store.StatusAwaitingApproval, "")
		w.sims.Inject(t, sim.Fault{Target: sim.YooKassa, Fault: sim.FaultStatus, Status: 503, Times: 4})
		w.decide(down, true, "anna", "")
		await(t, "the executor to give up for now", w.signals.Executed, func() bool { return w.row(down).Status == store.StatusFailedRetryable })
		out, err = w.charge(down, "order-7102", 5000)
		want(t, out, err, store.StatusSucceeded, "")
		if got := w.sims.Sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(down)); got != 1 {
			t.Fatalf("payments = %d, want 1", got)
		}
	})
}

// Retention purges each target's final operations by that target's own
// retention, and never a row that is not final.
func TestRetentionPerTarget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		st := j.Open(t)
		claim := func(key, intent, system string, at time.Time, final bool) {
			st.Now = func() time.Time { return at }
			req := store.ClaimRequest{Key: key, Intent: intent, Fingerprint: fmt.Sprintf("%x", sha256.Sum256([]byte(key))), TargetSystem: system,
				Agent: "agent-a", Payload: json.RawMessage(`{}`), Owner: "run-old", Lease: time.Minute}
			if _, _, err := st.Claim(ctx, req); err != nil {
				t.Fatal(err)
			}
			if final {
				if err := st.Complete(ctx, key, "run-old", "OBJ-"+key, nil); err != nil {
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

		cfg := fastConfig()
		cfg.ReconcileInterval = time.Second
		onec := cfg.Targets["onec"]
		onec.Timeout, onec.Retention = time.Second, 48*time.Hour // the default stays 720h
		cfg.Targets["onec"] = onec
		w := runWorkersOver(t, cfg, st)

		// Retention runs as the workers start.
		await(t, "retention to purge the old 1C operation", w.signals.Purged, func() bool {
			_, err := st.Get(ctx, "test:invoice.create:ret-old:v1")
			return errors.Is(err, store.ErrNotFound)
		})
		for _, key := range []string{"test:invoice.create:ret-recent:v1", "test:invoice.create:ret-open:v1", "test:crm.callback:create:ret-old:v1"} {
			if _, err := st.Get(ctx, key); err != nil {
				t.Errorf("%s was purged: %v", key, err)
			}
		}
	})
}

// A request 1C is still committing when the reconciler first asks is not
// "no effect": the row stays unknown until every send could have landed,
// then finds the document. It never says failed_retryable on the way.
func TestReconcilerWaitsForSlowCommit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		cfg := fastConfig()
		cfg.Retry.MaxAttempts = 1
		w := runWorkers(t, j, cfg)
		const key = "test:invoice.create:slow-commit:v1"
		// 1C commits 700 ms after the request, well after the 300 ms timeout
		// (late_commit: its module refuses a plain late commit, but a clock
		// behind the gateway's lets this one land).
		w.sims.Inject(t, sim.Fault{Target: sim.OneC, Fault: sim.FaultLateCommit, DelayMS: 700, Times: 1})
		out, err := w.invoice(key, "slow-commit")
		want(t, out, err, store.StatusUnknown, codes.OutcomeUnknown)
		seen := map[store.Status]bool{}
		await(t, "the slow document found", w.signals.Reconciled, func() bool {
			op := w.row(key)
			seen[op.Status] = true
			return op.Status == store.StatusSucceeded
		})
		if seen[store.StatusFailedRetryable] {
			t.Fatalf("the row said failed_retryable (no effect) while 1C was committing: %v", seen)
		}
		if n := w.sims.Sim.Effects(sim.OneC, key); n != 1 {
			t.Fatalf("effects = %d, want 1", n)
		}
	})
}

// Bitrix24 does not dedupe: an agent's retry soon after an add timed out
// finds nothing yet, and must not send the add again while the first may
// still land. It waits (unknown) and then finds the one activity.
func TestBitrixRetryWaitsForInFlightAdd(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		cfg := fastConfig()
		// settle_ms covers the portal's lag with room for a loaded machine,
		// as a firm's setting must: the add lands 300 ms after the wait.
		cfg.Targets["crm"] = engine.TargetConfig{Timeout: 300 * time.Millisecond, Settle: time.Second}
		cfg.Retry.MaxAttempts = 1
		w := runWorkers(t, j, cfg)
		const key = "test:crm.callback:create:in-flight:v1"
		body := map[string]any{"schema_version": "1.0", "intent": "crm.callback.create",
			"payload": map[string]any{"customer_id": "customer-1042", "due_at": "2026-12-03T10:00:00+03:00"}}
		// The portal commits the add 600 ms after it arrives; the gateway
		// stops waiting after 300.
		w.sims.Inject(t, sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultDelay, DelayMS: 600, Times: 1})
		sent := time.Now()
		out, err := w.submit(w.agent, key, body)
		want(t, out, err, store.StatusUnknown, codes.OutcomeUnknown)
		enginetest.Eventually(t, "the retried callback settles", func() bool {
			out, err := w.submit(w.agent, key, body)
			return err == nil && out.Op.Status == store.StatusSucceeded
		})
		// Count once the delayed add has had its time to land.
		time.Sleep(time.Until(sent.Add(900 * time.Millisecond)))
		if n := w.sims.Sim.Effects(sim.Bitrix24, key); n != 1 {
			t.Fatalf("the CRM has %d activities for the key, want 1", n)
		}
	})
}

// A charge the provider declines ends failed_final and keeps the
// provider's payment id: the accountant can find it at YooKassa.
func TestDeclinedChargeKeepsPaymentID(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		w := runWorkers(t, j, fastConfig())
		const key = "test:payment.charge:declined:v1"
		out, err := w.charge(key, "declined", sim.YooKassaInsufficientFundsMinor)
		want(t, out, err, store.StatusAwaitingApproval, "")
		w.decide(key, true, "accountant-1", "")
		await(t, "the executor to charge", w.signals.Executed, func() bool { return w.row(key).Status == store.StatusFailedFinal })
		out, err = w.charge(key, "declined", sim.YooKassaInsufficientFundsMinor)
		want(t, out, err, store.StatusFailedFinal, codes.InsufficientFunds)
		if id := w.row(key).TargetObjectID; id == "" || out.Op.TargetObjectID != id {
			t.Fatalf("the declined payment's id: journal %q, answer %q", id, out.Op.TargetObjectID)
		}
	})
}

// A look-up that must page through the provider's list gets a call
// timeout per page it may read, not one for the whole look-up: a charge
// made before 250 others is on the third page of YooKassa's payments,
// and each page takes most of a timeout to come.
func TestLookupPagesOnSlowTarget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		cfg := fastConfig()
		payments := cfg.Targets["payments"]
		payments.Timeout = time.Second
		cfg.Targets["payments"] = payments
		w := runWorkers(t, j, cfg)
		ctx := context.Background()
		provider, err := yookassa.New(yookassa.Config{BaseURL: w.sims.URL + "/yookassa/v3", ShopID: adapterstest.ShopID, SecretKey: sim.YooKassaSecret()})
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
		_, claim, err := w.st.Claim(ctx, store.ClaimRequest{
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
		if err := w.st.MarkUnknown(ctx, key, claim.LeaseOwner, "", store.Failure{Code: "OUTCOME_UNKNOWN"}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		// The shop's other payments since, newest first in its list.
		for i := range 250 {
			other := fmt.Sprintf("order-pages-%d", i)
			if _, err := provider.Execute(ctx, chargeOp("test:payment.charge:"+other+":v1", other)); err != nil {
				t.Fatal(err)
			}
		}
		w.sims.Inject(t, sim.Fault{Target: sim.YooKassa, Fault: sim.FaultDelay, DelayMS: 600, Times: 3, On: sim.OnLookup})

		row, err := w.e.ReconcileNow(store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: "operator-1"}), key)
		if err != nil {
			t.Fatal(err)
		}
		if row.Status != store.StatusSucceeded || row.TargetObjectID != made.ObjectID || row.LookupFailures != 0 {
			t.Fatalf("row after the look-up: %+v, want succeeded with %s", row, made.ObjectID)
		}
	})
}
