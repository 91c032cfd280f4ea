package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// holdWriter makes the writer stop before its next COMMIT until the
// returned release is called, so the writes sent meanwhile queue up and
// go as one batch. held is closed once the writer waits.
func holdWriter(s *store.Store) (held <-chan struct{}, release func()) {
	h, r := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.SetBeforeCommit(func() error {
		once.Do(func() { close(h); <-r })
		return nil
	})
	return h, sync.OnceFunc(func() { close(r) })
}

// waitQueued waits until n writes wait for the writer.
func waitQueued(tb testing.TB, s *store.Store, n int64) {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if s.WriteStats().Queued >= n {
			return
		}
	}
	tb.Fatalf("%d writes queued, want %d", s.WriteStats().Queued, n)
}

// Writes that queue while a batch is on its way to disk go together as
// the next batch, one transaction: each keeps its own outcome (a claim of
// a taken key, a transition whose lease is lost fail alone), claims of
// one key are decided in order, and the audit chain stays whole.
func TestGroupCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		store.OneWriter(t) // how one writer batches; PostgreSQL runs several
		s := j.Open(t)
		ctx := context.Background()
		MustClaim(t, s, claimReq("test:invoice.create:held:v1", fp1, "run-1"), store.DecisionExecute)

		held, release := holdWriter(s)
		first := make(chan error, 1)
		go func() {
			_, _, err := s.Claim(ctx, claimReq("test:invoice.create:first:v1", fp1, "run-1"))
			first <- err
		}()
		<-held
		before := s.WriteStats()

		const n = 40
		type result struct {
			d   store.Decision
			err error
		}
		results := make([]result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				switch {
				case i < 30: // new keys
					d, _, err := s.Claim(ctx, claimReq(fmt.Sprintf("test:invoice.create:batch-%d:v1", i), fp1, "run-1"))
					results[i] = result{d, err}
				case i < 35: // one key five times: the first executes, the others find it held
					d, _, err := s.Claim(ctx, claimReq("test:invoice.create:same:v1", fp1, "run-1"))
					results[i] = result{d, err}
				case i < 38: // a lease this caller does not hold
					results[i] = result{0, s.Complete(ctx, "test:invoice.create:held:v1", "run-2", "INV-X", nil)}
				default: // the same key with other data
					d, _, err := s.Claim(ctx, claimReq("test:invoice.create:same:v1", fp2, "run-1"))
					results[i] = result{d, err}
				}
			})
		}
		waitQueued(t, s, n)
		release()
		wg.Wait()
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if after := s.WriteStats(); after.Batches-before.Batches != 1 || after.Writes-before.Writes != n {
			t.Errorf("%d queued writes took %d batches holding %d writes, want 1 holding %d", n, after.Batches-before.Batches, after.Writes-before.Writes, n)
		} else if after.Reruns-before.Reruns != 1 {
			t.Errorf("the batch with failing writes ran %d more times, want once more, each write in its savepoint", after.Reruns-before.Reruns)
		}

		executes, held2, mismatches := 0, 0, 0
		for i, r := range results {
			switch {
			case i < 30:
				if r.err != nil || r.d != store.DecisionExecute {
					t.Errorf("write %d: %v, %v; want execute", i, r.d, r.err)
				}
			case i < 38 && i >= 35:
				if !errors.Is(r.err, store.ErrLeaseLost) {
					t.Errorf("write %d: %v, want ErrLeaseLost", i, r.err)
				}
			default:
				if r.err != nil {
					t.Errorf("write %d: %v", i, r.err)
				}
				switch r.d {
				case store.DecisionExecute:
					executes++
				case store.DecisionInProgress:
					held2++
				case store.DecisionMismatch:
					mismatches++
				}
			}
		}
		// The mismatches may be decided before the first claim of the key
		// (then one of them executes and the fp1 claims mismatch) or after.
		if executes != 1 || held2+mismatches != 6 {
			t.Errorf("one key, seven claims: %d execute, %d in progress, %d mismatch; want 1 execute", executes, held2, mismatches)
		}
		for i := range 30 {
			if op, err := s.Get(ctx, fmt.Sprintf("test:invoice.create:batch-%d:v1", i)); err != nil || op.Status != store.StatusStarted {
				t.Fatalf("batch-%d: %+v, %v", i, op, err)
			}
		}
		if op, _ := s.Get(ctx, "test:invoice.create:held:v1"); op.Status != store.StatusStarted || op.LeaseOwner != "run-1" {
			t.Errorf("a refused transition changed the row: %+v", op)
		}
		rep, err := s.VerifyAudit(ctx)
		if err != nil || rep.BrokenAt != 0 {
			t.Fatalf("audit chain after a batch: %+v, %v", rep, err)
		}
	})
}

// A batch that fails to commit (the disk refuses it) answers every write
// in it ErrUnavailable, and none of them is in the journal; the same
// writes succeed once the disk works again.
func TestBatchCommitFails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		store.OneWriter(t) // how one writer batches; PostgreSQL runs several
		s := j.Open(t)
		ctx := context.Background()
		h, r := make(chan struct{}), make(chan struct{})
		var once sync.Once
		diskErr := errors.New("disk I/O error (injected)")
		s.SetBeforeCommit(func() error {
			once.Do(func() { close(h); <-r })
			return diskErr
		})
		before, err := s.VerifyAudit(ctx)
		if err != nil {
			t.Fatal(err)
		}

		const n = 10
		errs := make([]error, n+1)
		var wg sync.WaitGroup
		wg.Go(func() { _, _, errs[n] = s.Claim(ctx, claimReq("test:invoice.create:lost-first:v1", fp1, "run-1")) })
		<-h
		for i := range n {
			wg.Go(func() {
				_, _, errs[i] = s.Claim(ctx, claimReq(fmt.Sprintf("test:invoice.create:lost-%d:v1", i), fp1, "run-1"))
			})
		}
		waitQueued(t, s, n)
		close(r)
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("write %d: %v, want ErrUnavailable", i, err)
			}
		}
		for i := range n {
			if _, err := s.Get(ctx, fmt.Sprintf("test:invoice.create:lost-%d:v1", i)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("lost-%d is in the journal after its batch failed: %v", i, err)
			}
		}
		after, err := s.VerifyAudit(ctx)
		if err != nil || after.Events != before.Events {
			t.Errorf("audit events %d → %d (%v): a failed batch left events", before.Events, after.Events, err)
		}

		s.SetBeforeCommit(nil)
		for i := range n {
			MustClaim(t, s, claimReq(fmt.Sprintf("test:invoice.create:lost-%d:v1", i), fp1, "run-1"), store.DecisionExecute)
		}
		if rep, err := s.VerifyAudit(ctx); err != nil || rep.BrokenAt != 0 {
			t.Fatalf("audit chain: %+v, %v", rep, err)
		}
	})
}

// A write whose caller gave up before the writer reached it is not
// written.
func TestWriteGivenUpBeforeItRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		store.OneWriter(t) // how one writer batches; PostgreSQL runs several
		s := j.Open(t)
		held, release := holdWriter(s)
		defer release()
		go s.Audit(context.Background(), "test.hold", "", nil)
		<-held
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, _, err := s.Claim(ctx, claimReq("test:invoice.create:given-up:v1", fp1, "run-1"))
			done <- err
		}()
		waitQueued(t, s, 1)
		cancel()
		release()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("claim: %v, want context.Canceled", err)
		}
		if _, err := s.Get(context.Background(), "test:invoice.create:given-up:v1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a write given up was written: %v", err)
		}
	})
}

// A second handle on the journal (a command run beside serve, an
// accountant's tool) gets its writes through while the first writes
// without pause: each waits for the lock, never long enough to give up.
func TestSecondWriterGetsItsTurn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		path := j.Location(t)
		busy, err := store.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		other, err := store.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()

		var stop atomic.Bool
		var n atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for !stop.Load() {
					key := fmt.Sprintf("test:invoice.create:busy-%d:v1", n.Add(1))
					if _, _, err := busy.Claim(context.Background(), claimReq(key, fp1, "run-1")); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		for i := range 20 {
			if err := other.Audit(context.Background(), "test.beside", "", map[string]any{"i": i}); err != nil {
				t.Errorf("write %d of the second handle beside a busy one: %v", i, err)
			}
		}
		stop.Store(true)
		wg.Wait()
		if rep, err := other.VerifyAudit(context.Background()); err != nil || rep.BrokenAt != 0 {
			t.Fatalf("audit chain with two writers: %+v, %v", rep, err)
		}
		t.Logf("%d claims beside 20 writes of a second handle", n.Load())
	})
}

// A batch in which no write fails runs once, without a savepoint per
// write: on PostgreSQL each savepoint costs two round trips.
func TestGroupCommitWithoutFailures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		store.OneWriter(t)
		s := j.Open(t)
		ctx := context.Background()
		held, release := holdWriter(s)
		first := make(chan error, 1)
		go func() {
			_, _, err := s.Claim(ctx, claimReq("test:invoice.create:first:v1", fp1, "run-1"))
			first <- err
		}()
		<-held
		before := s.WriteStats()
		const n = 20
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				_, _, errs[i] = s.Claim(ctx, claimReq(fmt.Sprintf("test:invoice.create:plain-%d:v1", i), fp1, "run-1"))
			})
		}
		waitQueued(t, s, n)
		release()
		wg.Wait()
		if err := errors.Join(append(errs, <-first)...); err != nil {
			t.Fatal(err)
		}
		after := s.WriteStats()
		if after.Batches-before.Batches != 1 || after.Reruns != before.Reruns {
			t.Errorf("%d good writes: %d batches, %d run again; want 1 batch, run once", n, after.Batches-before.Batches, after.Reruns-before.Reruns)
		}
		for i := range n {
			if op, err := s.Get(ctx, fmt.Sprintf("test:invoice.create:plain-%d:v1", i)); err != nil || op.Status != store.StatusStarted {
				t.Fatalf("plain-%d: %+v, %v", i, op, err)
			}
		}
		if rep, err := s.VerifyAudit(ctx); err != nil || rep.BrokenAt != 0 {
			t.Fatalf("audit chain: %+v, %v", rep, err)
		}
	})
}

// The writer keeps more of the journal's pages than SQLite's default 2 MB:
// on a journal of millions of operations, each new one adds entries at
// random places in the indexes keyed by keys, orders and objects, and with
// their inner pages cached an insert reads one page from the file, not one
// per level (docs/performance.md has the figures).
func TestWriterKeepsIndexPages(t *testing.T) {
	t.Parallel()
	// SQLite only: the page cache of the SQLite writer.
	j := storetest.SQLite
	s := j.Open(t)
	got, err := store.WriterCacheKiB(context.Background(), s)
	if err != nil || got < 8<<10 {
		t.Fatalf("the writer's page cache is %d KiB (%v), want at least 8 MiB", got, err)
	}
}

// When a batch's audit events cannot be written, the batch does not
// commit: its writes fail as unavailable and none is in the journal (on
// PostgreSQL the COMMIT sent with the append is skipped, and the aborted
// transaction rolled back); the batches after it commit.
func TestAuditAppendFails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		s := j.Open(t)
		ctx := context.Background()
		raw := store.RawDB(t, s)
		refuse, allow := []string{
			`CREATE TRIGGER audit_refused BEFORE INSERT ON audit_events BEGIN SELECT RAISE(ABORT, 'audit refused (injected)'); END`,
		}, []string{`DROP TRIGGER audit_refused`}
		if j.Postgres() {
			refuse = []string{
				`CREATE FUNCTION audit_refused() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused (injected)'; END $$`,
				`CREATE TRIGGER audit_refused BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_refused()`,
			}
			allow = []string{`DROP TRIGGER audit_refused ON audit_events`, `DROP FUNCTION audit_refused()`}
		}
		for _, q := range refuse {
			if _, err := raw.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		const key = "test:invoice.create:audit-refused:v1"
		if _, _, err := s.Claim(ctx, claimReq(key, fp1, "run-1")); !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("claim with the audit refused: %v, want ErrUnavailable", err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the claim is in the journal though its audit event was refused: %v", err)
		}
		for _, q := range allow {
			if _, err := raw.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
		for i := range 4 {
			MustClaim(t, s, claimReq(fmt.Sprintf("test:invoice.create:audit-after-%d:v1", i), fp1, "run-1"), store.DecisionExecute)
		}
		if rep, err := s.VerifyAudit(ctx); err != nil || rep.BrokenAt != 0 || rep.Events == 0 {
			t.Errorf("audit after the refused batch: %+v, %v", rep, err)
		}
	})
}
