package store_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// A journal URL is shown without its password, wherever it is.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://og:s3cret@db:5432/og?sslmode=require": "postgres://og:xxxxx@db:5432/og?sslmode=require",
		"postgresql://db/og?password=s3cret&sslmode=off":  "postgresql://db/og?password=xxxxx&sslmode=off",
		"postgres://og@db/og":                             "postgres://og@db/og",
		"/var/lib/oncegate/journal.db":                    "/var/lib/oncegate/journal.db",
	} {
		if got := store.Redact(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// The connections to the journal's server break between batches (a
// restart, an idle connection cut): the writers find out at their next
// BEGIN, before anything is sent, and go on with new connections, so no
// write fails; the audit chain stays whole.
func TestWritersReconnect(t *testing.T) {
	t.Parallel()
	// PostgreSQL only: SQLite has no connection to lose.
	j := storetest.PostgreSQL
	ctx := context.Background()
	s := j.Open(t)
	MustClaim(t, s, claimReq("test:invoice.create:before-cut:v1", fp1, "run-1"), store.DecisionExecute)

	u, _ := url.Parse(store.LocationOf(s))
	raw := store.RawDB(t, s)
	res, err := raw.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ? AND pid <> pg_backend_pid()`, u.Query().Get("application_name"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("no connection of the store was cut")
	}

	landed, failed := 0, 0
	for i := 0; landed < 10; i++ {
		key := fmt.Sprintf("test:invoice.create:after-cut-%d:v1", i)
		_, _, err := s.Claim(ctx, claimReq(key, fp1, "run-1"))
		switch {
		case err == nil:
			landed++
		case errors.Is(err, store.ErrUnavailable):
			failed++
			if _, gerr := s.Get(ctx, key); !errors.Is(gerr, store.ErrNotFound) {
				t.Fatalf("%s failed as unavailable but is in the journal: %v", key, gerr)
			}
			if i > 20 {
				t.Fatalf("the writers did not come back: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		default:
			t.Fatalf("claim after the cut: %v, want success or ErrUnavailable", err)
		}
	}
	if failed != 0 {
		t.Fatalf("%d writes failed after a cut between batches, want none", failed)
	}
	if rep, err := s.VerifyAudit(ctx); err != nil || rep.BrokenAt != 0 {
		t.Fatalf("audit chain after the cut: %+v, %v", rep, err)
	}
}

// Two gateways' batches deadlock over locks that earlier writes of the
// batches took. Rolling the losing write back to its savepoint keeps those
// locks, so it would lose again and again; the losing batch is run again
// from its start instead, and every write lands once the other batch
// committed. The batch here runs in savepoints (one of its writes fails on
// its own), as a batch that lost a deadlock once does.
func TestBatchLosingDeadlockRunsAgain(t *testing.T) {
	// PostgreSQL only: SQLite has one writer.
	j := storetest.PostgreSQL
	store.OneWriter(t) // so the writes queued together go as one batch
	ctx := context.Background()
	a := j.Open(t)
	b, err := store.Open(ctx, store.LocationOf(a))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	const lock1, lock2 = 7101, 7102
	aHas1, bHas2 := make(chan struct{}), make(chan struct{})
	lock := func(exec func(string, ...any) error, key int) error {
		return exec(`SELECT pg_advisory_xact_lock(?)`, key)
	}
	refused := errors.New("refused by its own rule")
	// batch sends s three writes that go as one batch: one that fails on
	// its own, one that takes lock first and says so on took, one that
	// waits for other to be taken and then wants lock second.
	var wg sync.WaitGroup
	batch := func(s *store.Store, first, second int, took, other chan struct{}) []error {
		signal := sync.OnceFunc(func() { close(took) })
		writes := []func(exec func(string, ...any) error) error{
			func(func(string, ...any) error) error { return refused },
			func(exec func(string, ...any) error) error {
				err := lock(exec, first)
				signal()
				return err
			},
			func(exec func(string, ...any) error) error {
				<-other
				return lock(exec, second)
			},
		}
		// The writer is held by a write of its own while the three queue.
		release, blocker := make(chan struct{}), make(chan error, 1)
		go func() {
			blocker <- store.WriteSQL(ctx, s, func(func(string, ...any) error) error { <-release; return nil })
		}()
		time.Sleep(50 * time.Millisecond)
		errs := make([]error, len(writes))
		for i, w := range writes {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = store.WriteSQL(ctx, s, w) }()
			waitQueued(t, s, int64(i+1))
		}
		close(release)
		if err := <-blocker; err != nil {
			t.Fatal(err)
		}
		return errs
	}
	errs := batch(a, lock1, lock2, aHas1, bHas2)
	errsB := batch(b, lock2, lock1, bHas2, aHas1)
	wg.Wait()

	for name, es := range map[string][]error{"A": errs, "B": errsB} {
		if !errors.Is(es[0], refused) {
			t.Errorf("%s's refused write: %v, want its own error", name, es[0])
		}
		for i, err := range es[1:] {
			if err != nil {
				t.Errorf("%s's write %d: %v, want it landed", name, i+2, err)
			}
		}
	}
	if a.WriteStats().Reruns+b.WriteStats().Reruns < 3 {
		t.Errorf("reruns: %d + %d, want the losing batch run again", a.WriteStats().Reruns, b.WriteStats().Reruns)
	}
}

// The audit chain's lock is the one point every gateway's batches pass
// through, held from a batch's audit append to the end of its COMMIT: the
// two leave the gateway together, so the lock is never held while the
// server waits for the gateway (a gateway slowed by its CPU quota would
// hold up every other).
func TestAuditAppendAndCommitSentTogether(t *testing.T) {
	t.Parallel()
	// PostgreSQL only: SQLite's writer has no round trips.
	j := storetest.PostgreSQL
	s := j.Open(t)
	for _, n := range []int{1, 3} {
		sends, err := store.CommitSends(context.Background(), s, n)
		if err != nil {
			t.Fatal(err)
		}
		if sends != 1 {
			t.Errorf("%d audit events and the COMMIT took %d sends to the server, want 1", n, sends)
		}
	}
	if rep, err := s.VerifyAudit(context.Background()); err != nil || rep.BrokenAt != 0 || rep.Events != 2*(1+3) {
		t.Errorf("audit after the commits: %+v, %v; want %d events, whole", rep, err, 2*(1+3))
	}
}

// While the journal's server cannot be reached, every write fails at once
// with ErrUnavailable, nothing of it written, however many come: none waits
// for the server to come back. Once it is back, writes land again.
func TestWritesFailFastWhileServerUnreachable(t *testing.T) {
	t.Parallel()
	proxy, location := storetest.NewProxy(t, storetest.Database(t))
	s, err := store.Open(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	MustClaim(t, s, claimReq("test:invoice.create:before-outage:v1", fp1, "run-1"), store.DecisionExecute)

	proxy.Cut()
	ctx := context.Background()
	for i := range 8 {
		key := fmt.Sprintf("test:invoice.create:during-outage-%d:v1", i)
		done := make(chan error, 1)
		go func() { _, _, err := s.Claim(ctx, claimReq(key, fp1, "run-1")); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("write %d during the outage: %v, want ErrUnavailable", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("write %d during the outage got no answer in 30 s", i)
		}
	}

	proxy.Restore()
	landed := false
	for i := 0; i < 50 && !landed; i++ {
		_, _, err := s.Claim(ctx, claimReq("test:invoice.create:after-outage:v1", fp1, "run-1"))
		landed = err == nil
		if !landed {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !landed {
		t.Fatal("no write landed once the server was back")
	}
	for i := range 8 {
		if _, err := s.Get(ctx, fmt.Sprintf("test:invoice.create:during-outage-%d:v1", i)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a write refused during the outage is in the journal: %v", err)
		}
	}
}

// A gateway frozen inside a batch, holding a business key's lock, does not
// hold up another gateway's claim of that business key for long: the
// server ends the frozen session once it sat idle in its transaction past
// the limit every gateway's sessions carry, its lock goes with it, and the
// waiting claim lands (before the waiting batch's own deadline, where
// without the limit it failed).
func TestFrozenGatewayReleasesItsLocks(t *testing.T) {
	t.Parallel()
	// PostgreSQL only: SQLite has one gateway.
	j := storetest.PostgreSQL
	s := j.Open(t)
	frozen, err := store.Open(context.Background(), store.LocationOf(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { frozen.Close() })
	bk := strings.Repeat("cd", 32)
	store.FreezeHoldingBusinessKey(t, frozen, bk)

	req := claimReq("test:invoice.create:behind-frozen:v1", fp1, "run-1")
	req.Duplicates = &store.DuplicateCheck{BusinessKey: bk, Window: time.Hour, Action: store.DuplicateWarn}
	if _, _, err := s.Claim(context.Background(), req); err != nil {
		t.Fatalf("a claim behind a frozen gateway's lock: %v, want it to land once the frozen session is ended", err)
	}
}
