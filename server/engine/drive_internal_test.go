package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// scripted is a target whose look-ups answer what the test says; it is
// never asked to execute.
type scripted struct {
	mu     sync.Mutex
	lookup func() (adapters.Result, error)
}

func (t *scripted) Name() string { return "scripted" }

func (t *scripted) Execute(context.Context, adapters.Op) (adapters.Result, error) {
	panic("the scripted target was asked to execute")
}

func (t *scripted) Lookup(context.Context, adapters.Op) (adapters.Result, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lookup()
}

// testConfig is the engine's part of the gateway's default configuration.
func testConfig() Config {
	return Config{
		Contour: "test",
		Retry:   adapters.RetryPolicy{MaxAttempts: 4, InitialDelay: 500 * time.Millisecond, Multiplier: 2, MaxDelay: 5 * time.Second, Jitter: true},
		Targets: map[string]TargetConfig{
			"onec":     {Timeout: 5 * time.Second},
			"crm":      {Timeout: 5 * time.Second, Settle: 30 * time.Second},
			"payments": {Timeout: 5 * time.Second},
		},
		Retention:         720 * time.Hour,
		ReconcileInterval: time.Second,
		MaxBackoff:        300 * time.Second,
		ReviewAfter:       5,
		ApprovalTTL:       24 * time.Hour,
		Catalog:           intent.Builtin(),
	}
}

// scriptedEngine is an engine over a new journal of j whose payments target
// is scripted; its workers do not run.
func scriptedEngine(t *testing.T, j storetest.Journal, target *scripted) (*Engine, *store.Store) {
	t.Helper()
	st := j.Open(t)
	cfg := testConfig()
	cfg.ReviewAfter = 3
	e := New(cfg, st, map[string]adapters.Target{"payments": target}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return e, st
}

// claimed journals a charge that was sent and is now held by e.
func claimed(t *testing.T, e *Engine, st *store.Store, key string) store.Operation {
	t.Helper()
	_, op, err := st.Claim(context.Background(), store.ClaimRequest{
		Key: key, Intent: "payment.charge", Fingerprint: strings.Repeat("ab", 32), TargetSystem: "payments",
		Agent: "agent-a", Payload: []byte(`{}`), Owner: e.leaseOwner(), Lease: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A look-up that cannot tell but names the provider's object keeps its
// id; the look-ups are counted, so one that never tells reaches a person
// instead of being polled forever. (A look-up that finds the effect
// pending is an answer: TestPendingIsNotFlagged.)
func TestLookUpPendingKeepsObject(t *testing.T) {
	t.Parallel()
	target := &scripted{lookup: func() (adapters.Result, error) {
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, ObjectID: "pay-17", Message: "not final yet"}
	}}
	e, st := scriptedEngine(t, storetest.SQLite, target)
	const key = "test:payment.charge:pending:v1"
	op := claimed(t, e, st, key)
	ctx := context.Background()
	for i := 1; i <= e.cfg.ReviewAfter; i++ {
		if _, _, err := e.lookUp(ctx, ctx, op, false); err != nil {
			t.Fatal(err)
		}
		row, _ := st.Get(ctx, key)
		if row.Status != store.StatusUnknown || row.TargetObjectID != "pay-17" || row.LookupFailures != i || row.NeedsReview != (i == e.cfg.ReviewAfter) {
			t.Fatalf("row after pending look-up %d: %+v", i, row)
		}
		var err error
		if op, err = st.TakeForReconcile(ctx, row, e.leaseOwner(), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

// A retried row whose look-up cannot tell, for a reason other than the
// target being down, goes the way of failed look-ups (unknown, counted,
// then a person), instead of back to failed_retryable on every retry.
func TestLookUpThatCannotTellIsCounted(t *testing.T) {
	t.Parallel()
	target := &scripted{lookup: func() (adapters.Result, error) {
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown, Message: "too many payments to scan"}
	}}
	e, st := scriptedEngine(t, storetest.SQLite, target)
	ctx := context.Background()
	const key = "test:payment.charge:cannot-tell:v1"
	first := claimed(t, e, st, key)
	if err := st.Fail(ctx, key, first.LeaseOwner, false, store.Failure{Code: codes.TargetUnavailable}); err != nil {
		t.Fatal(err)
	}
	row, _ := st.Get(ctx, key)
	op := claimed(t, e, st, key) // the agent's retry resumes it
	if op.ResumedFrom != store.StatusFailedRetryable {
		t.Fatalf("resumed from %s, want failed_retryable (row %+v)", op.ResumedFrom, row)
	}
	if _, _, err := e.lookUp(ctx, ctx, op, true); err != nil {
		t.Fatal(err)
	}
	row, _ = st.Get(ctx, key)
	if row.Status != store.StatusUnknown || row.LookupFailures != 1 {
		t.Fatalf("row after a look-up that could not tell: %+v", row)
	}

	// Unavailable is another matter: back to failed_retryable, uncounted.
	target.mu.Lock()
	target.lookup = func() (adapters.Result, error) {
		return adapters.Result{}, &adapters.Error{Class: adapters.Retry, Code: codes.TargetUnavailable, Message: "down"}
	}
	target.mu.Unlock()
	const down = "test:payment.charge:down:v1"
	first = claimed(t, e, st, down)
	st.Fail(ctx, down, first.LeaseOwner, false, store.Failure{Code: codes.TargetUnavailable})
	op = claimed(t, e, st, down)
	if _, _, err := e.lookUp(ctx, ctx, op, true); err != nil {
		t.Fatal(err)
	}
	if row, _ := st.Get(ctx, down); row.Status != store.StatusFailedRetryable || row.LookupFailures != 0 {
		t.Fatalf("row after an unavailable look-up: %+v", row)
	}
}

// Journal writes of a drive outlast its target calls by 30 s, however long
// the configured calls may take.
func TestJournalContextOutlastsCalls(t *testing.T) {
	t.Parallel()
	for _, calls := range []time.Duration{time.Second, 95 * time.Second} {
		ctx, cancel := journalCtx(context.Background(), calls)
		deadline, ok := ctx.Deadline()
		cancel()
		if left := time.Until(deadline); !ok || left < calls+29*time.Second {
			t.Fatalf("calls of %v: the journal has %v", calls, left)
		}
	}
}

// Every claim of a lease has its own owner: a driver of this run whose
// lease expired and was taken again, even by another driver of the same
// run, can no longer change the row.
func TestLeasePerClaim(t *testing.T) {
	t.Parallel()
	e, st := scriptedEngine(t, storetest.SQLite, &scripted{lookup: func() (adapters.Result, error) { return adapters.Result{}, adapters.ErrNotFound }})
	ctx := context.Background()
	const key = "test:payment.charge:fenced:v1"
	first := claimed(t, e, st, key) // a one-minute lease
	// The first driver is still out when its lease runs out (a paused VM,
	// a clock step); the reconciler of the same run takes the row.
	later := time.Now().Add(2 * time.Minute)
	st.Now = func() time.Time { return later }
	row, _ := st.Get(ctx, key)
	second, err := st.TakeForReconcile(ctx, row, e.leaseOwner(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if second.LeaseOwner == first.LeaseOwner || !strings.HasPrefix(second.LeaseOwner, e.Owner()+"/") {
		t.Fatalf("owners %q and %q", first.LeaseOwner, second.LeaseOwner)
	}
	// The first driver comes back late with its outcome.
	if err := e.complete(ctx, first, adapters.Result{ObjectID: "pay-late"}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a stale driver's completion: %v, want ErrLeaseLost", err)
	}
	if err := e.complete(ctx, second, adapters.Result{ObjectID: "pay-1"}); err != nil {
		t.Fatal(err)
	}
	if row, _ := st.Get(ctx, key); row.TargetObjectID != "pay-1" {
		t.Fatalf("row %+v", row)
	}
}

// A drive's budget, and so its lease, covers a look-up that reads every
// page it may (a call timeout each) before the retry policy's attempts.
func TestBudgetCoversLookupPages(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	targets := adapterstest.Start(t, adapterstest.Timeouts{OneC: cfg.Targets["onec"].Timeout, CRM: cfg.Targets["crm"].Timeout, Payments: cfg.Targets["payments"].Timeout}).Targets
	e := New(cfg, nil, targets, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// Look-up calls: crm checks user.admin, then reads up to 20 pages.
	for system, pages := range map[string]int{"onec": 1, "crm": 21, "payments": 20} {
		timeout := e.timeout(system)
		if got, want := e.lookupBudget(system), time.Duration(pages)*timeout; got != want {
			t.Errorf("%s: look-up budget %v, want %v", system, got, want)
		}
		attempts := time.Duration(e.policy.MaxAttempts)*timeout + e.policy.MaxTotalDelay()
		if got, want := e.budget(system), time.Duration(pages)*timeout+attempts; got != want {
			t.Errorf("%s: budget %v, want %v", system, got, want)
		}
		if e.lease(system) <= e.budget(system) {
			t.Errorf("%s: lease %v does not outlast the budget %v", system, e.lease(system), e.budget(system))
		}
	}
}
