package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
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

// scriptedServer is a gateway over a new journal whose payments target
// is scripted; its workers do not run.
func scriptedServer(t *testing.T, target *scripted) (*Server, *store.Store) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := DefaultConfig()
	cfg.Reconciler.ReviewAfter = 3
	s := New(cfg, st, map[string]adapters.Target{"payments": target}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return s, st
}

// claimed journals a charge that was sent and is now held by s.
func claimed(t *testing.T, s *Server, st *store.Store, key string) store.Operation {
	t.Helper()
	_, op, err := st.Claim(context.Background(), store.ClaimRequest{
		Key: key, Intent: "payment.charge", Fingerprint: strings.Repeat("ab", 32), TargetSystem: "payments",
		Agent: "agent-a", Payload: []byte(`{}`), Owner: s.leaseOwner(), Lease: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// A payment the look-up finds but not final yet keeps the provider's
// payment id; the look-ups are counted all the same, so one that stays
// pending reaches a person instead of being polled forever.
func TestLookUpPendingKeepsObject(t *testing.T) {
	t.Parallel()
	target := &scripted{lookup: func() (adapters.Result, error) {
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: adapters.CodeOutcomeUnknown, ObjectID: "pay-17", Message: "not final yet"}
	}}
	s, st := scriptedServer(t, target)
	const key = "test:payment.charge:pending:v1"
	op := claimed(t, s, st, key)
	ctx := context.Background()
	for i := 1; i <= s.cfg.Reconciler.ReviewAfter; i++ {
		if _, _, err := s.lookUp(ctx, ctx, op, false); err != nil {
			t.Fatal(err)
		}
		row, _ := st.Get(ctx, key)
		if row.Status != store.StatusUnknown || row.TargetObjectID != "pay-17" || row.LookupFailures != i || row.NeedsReview != (i == s.cfg.Reconciler.ReviewAfter) {
			t.Fatalf("row after pending look-up %d: %+v", i, row)
		}
		var err error
		if op, err = st.TakeForReconcile(ctx, row, s.leaseOwner(), time.Minute); err != nil {
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
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: adapters.CodeOutcomeUnknown, Message: "too many payments to scan"}
	}}
	s, st := scriptedServer(t, target)
	ctx := context.Background()
	const key = "test:payment.charge:cannot-tell:v1"
	first := claimed(t, s, st, key)
	if err := st.Fail(ctx, key, first.LeaseOwner, false, store.Failure{Code: CodeTargetUnavailable}); err != nil {
		t.Fatal(err)
	}
	row, _ := st.Get(ctx, key)
	op := claimed(t, s, st, key) // the agent's retry resumes it
	if op.ResumedFrom != store.StatusFailedRetryable {
		t.Fatalf("resumed from %s, want failed_retryable (row %+v)", op.ResumedFrom, row)
	}
	if _, _, err := s.lookUp(ctx, ctx, op, true); err != nil {
		t.Fatal(err)
	}
	row, _ = st.Get(ctx, key)
	if row.Status != store.StatusUnknown || row.LookupFailures != 1 {
		t.Fatalf("row after a look-up that could not tell: %+v", row)
	}

	// Unavailable is another matter: back to failed_retryable, uncounted.
	target.mu.Lock()
	target.lookup = func() (adapters.Result, error) {
		return adapters.Result{}, &adapters.Error{Class: adapters.Retry, Code: adapters.CodeTargetUnavailable, Message: "down"}
	}
	target.mu.Unlock()
	const down = "test:payment.charge:down:v1"
	first = claimed(t, s, st, down)
	st.Fail(ctx, down, first.LeaseOwner, false, store.Failure{Code: CodeTargetUnavailable})
	op = claimed(t, s, st, down)
	if _, _, err := s.lookUp(ctx, ctx, op, true); err != nil {
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
	s, st := scriptedServer(t, &scripted{lookup: func() (adapters.Result, error) { return adapters.Result{}, adapters.ErrNotFound }})
	ctx := context.Background()
	const key = "test:payment.charge:fenced:v1"
	first := claimed(t, s, st, key) // a one-minute lease
	// The first driver is still out when its lease runs out (a paused VM,
	// a clock step); the reconciler of the same run takes the row.
	later := time.Now().Add(2 * time.Minute)
	st.Now = func() time.Time { return later }
	row, _ := st.Get(ctx, key)
	second, err := st.TakeForReconcile(ctx, row, s.leaseOwner(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if second.LeaseOwner == first.LeaseOwner || !strings.HasPrefix(second.LeaseOwner, s.Owner()+"/") {
		t.Fatalf("owners %q and %q", first.LeaseOwner, second.LeaseOwner)
	}
	// The first driver comes back late with its outcome.
	if err := s.complete(ctx, first, adapters.Result{ObjectID: "pay-late"}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("a stale driver's completion: %v, want ErrLeaseLost", err)
	}
	if err := s.complete(ctx, second, adapters.Result{ObjectID: "pay-1"}); err != nil {
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
	cfg := DefaultConfig()
	targets, err := BuildTargets(cfg, Simulators{URL: "http://127.0.0.1:9", YooKassaSecret: sim.YooKassaSecret()}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg, nil, targets, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for system, pages := range map[string]int{"onec": 1, "crm": 20, "payments": 20} {
		timeout := s.timeout(system)
		if got, want := s.lookupBudget(system), time.Duration(pages)*timeout; got != want {
			t.Errorf("%s: look-up budget %v, want %v", system, got, want)
		}
		attempts := time.Duration(s.policy.MaxAttempts)*timeout + s.policy.MaxTotalDelay()
		if got, want := s.budget(system), time.Duration(pages)*timeout+attempts; got != want {
			t.Errorf("%s: budget %v, want %v", system, got, want)
		}
		if s.lease(system) <= s.budget(system) {
			t.Errorf("%s: lease %v does not outlast the budget %v", system, s.lease(system), s.budget(system))
		}
	}
}
