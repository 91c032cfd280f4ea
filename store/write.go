package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Group commit. Every write of the journal is a function run by one
// writer goroutine on the one write connection (on PostgreSQL: a few per
// gateway, pgWriters, each on a connection of its own). The writer takes
// what has queued while the previous batch was being made durable and
// runs it as one transaction, one fsync: each write inside its own
// savepoint, so one that fails (a claim that finds its key taken, a
// transition whose lease was lost) is undone alone, with its audit
// events, and the others stay. A caller learns its write's outcome only
// after the COMMIT that holds it returned, so nothing is answered from a
// write a power loss could take back. Writes run in the order they
// queued; their audit events are chained in that order at the batch's
// end.

// maxBatch bounds one transaction, so a burst does not hold readers'
// checkpoints back for long.
const maxBatch = 256

// ErrUnavailable: the journal could not make a write durable (its
// transaction could not start or commit: a disk error, a full disk, the
// write lock held elsewhere past the busy timeout). Nothing of the write
// is in the journal; the same call can be tried again later.
var ErrUnavailable = errors.New("journal unavailable")

// ErrClosed: the store was closed.
var ErrClosed = errors.New("journal closed")

// txFunc is one write: it runs inside the batch's transaction. Its ctx
// carries the caller's values (the actor) but not its cancellation: a
// statement interrupted half-way would roll back the whole batch. A write
// may run more than once (its batch is run again when another write in it
// fails, or a PostgreSQL conflict is retried): it sets what it returns,
// never adds to it.
type txFunc func(ctx context.Context, tx *txn) error

type writeReq struct {
	ctx  context.Context
	fn   txFunc
	conn func(ctx context.Context, c *sql.Conn) error // instead of fn: run alone, outside a transaction
	done chan error
}

// write runs fn in the next batch and returns its error, or the batch's
// when the batch did not commit. It waits for the batch even when ctx is
// done meanwhile: a write that may have landed is never reported as not.
func (s *Store) write(ctx context.Context, fn txFunc) error {
	return s.submit(ctx, &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1)})
}

// exclusive runs fn on the write connection between batches, outside any
// transaction (VACUUM INTO cannot run inside one).
func (s *Store) exclusive(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	return s.submit(ctx, &writeReq{ctx: ctx, conn: fn, done: make(chan error, 1)})
}

// queueWait bounds how long a write waits for a writer to take it: a
// journal that takes nothing for that long (a disk that stalls, a server
// that stops answering) fails the write, nothing of it written.
const queueWait = 15 * time.Second

func (s *Store) submit(ctx context.Context, r *writeReq) error {
	s.queued.Add(1)
	select {
	case s.writes <- r:
		return <-r.done
	default:
	}
	wait := time.NewTimer(queueWait)
	defer wait.Stop()
	select {
	case s.writes <- r:
	case <-wait.C:
		s.queued.Add(-1)
		return fmt.Errorf("%w: no writer took the write within %v", ErrUnavailable, queueWait)
	case <-ctx.Done():
		s.queued.Add(-1)
		return fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
	case <-s.quit:
		s.queued.Add(-1)
		return ErrClosed
	}
	return <-r.done
}

// SetBeforeCommit makes fn run before each batch's COMMIT; an error from
// it fails the batch as a failed disk write would. Tests inject faults
// with it; nil removes it.
func (s *Store) SetBeforeCommit(fn func() error) {
	if fn == nil {
		s.beforeCommit.Store(nil)
		return
	}
	s.beforeCommit.Store(&fn)
}

// WriteStats is what the writer has done since the store opened.
type WriteStats struct {
	Batches int64 // transactions run (committed or failed)
	Writes  int64 // writes those transactions held
	Queued  int64 // writes waiting for the writer now
	// Reruns are the batches that ran again, each write in a savepoint
	// of its own, because a write in them failed.
	Reruns int64
}

// WriteStats reports the writer's counts.
func (s *Store) WriteStats() WriteStats {
	return WriteStats{Batches: s.batches.Load(), Writes: s.batched.Load(), Queued: s.queued.Load(), Reruns: s.reruns.Load()}
}

// writer runs the batches until the store closes.
func (s *Store) writer(conn *sql.Conn) {
	t := newTxn(conn, s.be)
	defer func() {
		if s.dur != nil {
			close(s.dur.queue) // the syncer answers what it holds, then ends
		}
		t.close()
		t.conn.Close() // back to the pool, which Close then closes (the last connection checkpoints)
	}()
	for {
		var first *writeReq
		select {
		case first = <-s.writes:
			s.queued.Add(-1)
		case <-s.quit:
			return
		}
		if err := s.be.ready(t); err != nil {
			// The journal's server cannot be reached: the write fails at
			// once, nothing of it written, rather than waiting for as long
			// as the outage lasts; the next write tries a connection again.
			first.done <- fmt.Errorf("%w: the journal cannot be reached: %w", ErrUnavailable, err)
			continue
		}
		if first.conn != nil {
			first.done <- s.runExclusive(t.conn, first)
			continue
		}
		batch := []*writeReq{first}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-s.writes:
				s.queued.Add(-1)
				if r.conn != nil {
					s.commit(t, batch)
					r.done <- s.runExclusive(t.conn, r)
					batch = nil
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		if len(batch) > 0 {
			if held := s.commit(t, batch); held != nil {
				held.done <- s.runExclusive(t.conn, held)
			}
		}
	}
}

func (s *Store) runExclusive(conn *sql.Conn, r *writeReq) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	return r.conn(context.WithoutCancel(r.ctx), conn)
}

// commit runs one batch as one transaction and answers each write, after
// the COMMIT that holds it returned. Where commits are pipelined the batch
// may grow while it runs (gather); an exclusive call it met meanwhile is
// returned, to be run once the batch is done.
func (s *Store) commit(t *txn, batch []*writeReq) (held *writeReq) {
	s.batches.Add(1)
	s.batched.Add(int64(len(batch)))
	errs := make([]error, len(batch))
	// Answered once what the batch wrote, or read, is on disk.
	defer func() { s.release(batch, errs) }()
	// abort ends the transaction unsaved: every write that had not failed
	// on its own (landed, or not run yet) gets the batch's error.
	abort := func(stage string, err error) {
		t.rollback()
		s.be.afterFailure(t)
		failed := fmt.Errorf("%s: %w", stage, err)
		s.failing.Store(&failed)
		for i := range errs {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("%w: %s: %w", ErrUnavailable, stage, err)
			}
		}
	}

	// A journal that can take no writes (its file deleted or replaced
	// under the gateway, or its WAL failed to sync) is not tried.
	err := s.be.check()
	if s.dur != nil && err == nil {
		if failed := s.dur.failed.Load(); failed != nil {
			err = *failed
		}
	}
	if err != nil {
		s.failing.Store(&err)
		for i := range errs {
			errs[i] = err
		}
		return
	}
	bg, cancel := s.be.batchContext()
	defer cancel()
	if err := s.be.begin(bg, t); err != nil {
		abort("begin", err)
		return
	}
	// Each write runs in its savepoint, so one that fails is undone alone.
	// Most batches hold no write that fails: they run first without
	// savepoints (on PostgreSQL, two round trips fewer per write); when one
	// fails, the transaction is rolled back and the batch runs again, each
	// write in its savepoint. A write alone needs none: its failure is its
	// outcome, and the transaction is rolled back.
	landed, failed := s.runPlain(t, batch, errs)
	if failed < 0 && s.dur != nil {
		batch, errs, landed, failed, held = s.gather(t, batch, errs, landed)
	}
	switch {
	case failed < 0:
		s.finish(bg, t, errs, landed, abort)
		return held
	case !s.be.savepoints(len(batch)):
		if s.be.failure(errs[failed]) {
			errs[failed] = fmt.Errorf("%w: %w", ErrUnavailable, errs[failed])
		}
		s.finish(bg, t, errs, 0, abort)
		return held
	}
	// rerun rolls the transaction back and begins it again for the batch
	// to run anew; false when it could not begin (the batch is aborted).
	rerun := func() bool {
		t.rollback()
		clear(errs)
		s.reruns.Add(1)
		if err := s.be.begin(bg, t); err != nil {
			abort("begin", err)
			return false
		}
		return true
	}
	if !rerun() {
		return held
	}
	for attempt := 1; ; attempt++ {
		landed, stage, err := s.runEach(bg, t, batch, errs, true, attempt < conflictAttempts)
		switch {
		case err == nil:
			s.finish(bg, t, errs, landed, abort)
			return held
		case stage != stageConflict:
			abort(stage, err)
			return held
		}
		// A write lost a deadlock with another gateway's batch. Rolled
		// back to its savepoint, it would meet the same batch again: the
		// locks this batch's earlier writes took are still held, and only
		// the end of the transaction lets them go. The batch runs again
		// from its start, after the other committed.
		if !rerun() {
			return held
		}
	}
}

// gather grows a batch whose writes ran without a failure while the
// previous commit's fsync is still running: the writes that queue
// meanwhile run in the same transaction, which commits when that fsync
// returned (or the batch is full). Committing each at once would not
// answer them sooner — their answers wait for the fsync after this one
// either way — but would write the pages they share (an index's leaf, the
// chain's head) to the WAL once per commit instead of once. It returns
// the batch and its errors, how many landed, the index of a write that
// failed (-1 for none; the batch is then to run again in savepoints), and
// an exclusive call met, which ends the gathering.
func (s *Store) gather(t *txn, batch []*writeReq, errs []error, landed int) ([]*writeReq, []error, int, int, *writeReq) {
	d := s.dur
	for len(batch) < maxBatch {
		d.mu.Lock()
		advanced := d.advanced
		d.mu.Unlock()
		if d.durable.Load() >= d.committed.Load() || d.failed.Load() != nil {
			break // nothing is being synced: commit now
		}
		var r *writeReq
		select {
		case r = <-s.writes:
			s.queued.Add(-1)
		case <-advanced:
			continue
		case <-s.quit:
			return batch, errs, landed, -1, nil
		}
		if r.conn != nil {
			return batch, errs, landed, -1, r
		}
		s.batched.Add(1)
		batch, errs = append(batch, r), append(errs, nil)
		n, failed := s.runPlain(t, batch[len(batch)-1:], errs[len(errs)-1:])
		landed += n
		if failed >= 0 {
			return batch, errs, landed, len(batch) - 1, nil
		}
	}
	return batch, errs, landed, -1, nil
}

// conflictAttempts is how often a batch in which a write lost a conflict
// with another gateway's transaction (a deadlock) is run; at the last, the
// write that loses fails as unavailable and the others land.
const conflictAttempts = 5

// stageConflict is runEach's stage when a write lost a conflict and the
// batch is to run again.
const stageConflict = "conflict"

// runEach runs the batch's writes in the open transaction, each in its
// savepoint when the batch has them, and reports how many landed. When
// the transaction broke, or a write lost a conflict and rerun allows the
// batch to run again, it stops and says at which stage and why.
func (s *Store) runEach(bg context.Context, t *txn, batch []*writeReq, errs []error, savepoints, rerun bool) (landed int, stage string, broken error) {
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err // given up before it ran: nothing written
			continue
		}
		errs[i], stage, broken = s.run(bg, t, r, savepoints, rerun)
		if broken != nil {
			return landed, stage, broken
		}
		if errs[i] == nil {
			landed++
		}
	}
	return landed, "", nil
}

// runPlain runs the batch's writes in the open transaction without
// savepoints, until one fails: it reports how many landed and the index
// of the one that failed, its error in errs (-1 when none did). A write
// given up before it ran gets its context's error and did not land.
func (s *Store) runPlain(t *txn, batch []*writeReq, errs []error) (landed, failed int) {
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			errs[i] = err // given up before it ran: nothing written
			continue
		}
		wctx, cancel := s.be.writeContext(context.WithoutCancel(r.ctx))
		errs[i] = r.fn(wctx, t)
		cancel()
		if errs[i] != nil {
			return landed, i
		}
		landed++
	}
	return landed, -1
}

// finish ends a batch whose writes ran, landed of them without an error:
// it commits them with their audit events, or rolls back when none
// landed.
func (s *Store) finish(bg context.Context, t *txn, errs []error, landed int, abort func(string, error)) {
	if landed == 0 {
		t.rollback()
		for _, err := range errs {
			if errors.Is(err, ErrUnavailable) {
				s.failing.Store(&err)
				break
			}
		}
		return
	}
	queued := false
	if o := s.outbox.Load(); o != nil && len(t.audit) > 0 {
		var err error
		if queued, err = s.queueDeliveries(bg, t, o); err != nil {
			abort("outbox", err)
			return
		}
	}
	noticed, err := s.queueNotices(bg, t)
	if err != nil {
		abort("notices", err)
		return
	}
	if hook := s.beforeCommit.Load(); hook != nil {
		if err := (*hook)(); err != nil {
			abort("commit", err)
			return
		}
	}
	// The batch's audit events are chained last, with the COMMIT: one
	// read of the chain's head per batch, and on PostgreSQL the chain's
	// lock is held from the append to the end of the COMMIT, both sent at
	// once.
	if stage, err := s.be.commit(bg, t, t.audit); err != nil {
		// A COMMIT that failed may leave the transaction open on the
		// connection; abort ends it so the next batch can begin.
		abort(stage, err)
		return
	}
	if s.watch.active() {
		s.watch.wake(changedKeys(t.audit), false)
	}
	t.audit = t.audit[:0]
	s.committedBatch()
	if queued {
		s.deliveriesQueued()
	}
	if noticed {
		s.wakeNotices()
	}
	// A batch that committed does not clear failing: one that changed
	// nothing (a claim finding its key in progress) commits on a full
	// disk too. Only Ready's probe, a real write, says the journal writes
	// again.
}

// run runs one write of a batch, in a savepoint of its own when the
// batch has them. It returns the write's error; and when the transaction
// itself broke (nothing in it lands), or the write lost a conflict and
// rerun allows the batch to run again (stageConflict), the stage and why.
func (s *Store) run(bg context.Context, t *txn, r *writeReq, savepoint, rerun bool) (werr error, stage string, broken error) {
	wctx, cancel := s.be.writeContext(context.WithoutCancel(r.ctx))
	defer cancel()
	if savepoint {
		if _, err := t.ExecContext(bg, `SAVEPOINT w`); err != nil {
			return nil, "savepoint", err
		}
	}
	mark := len(t.audit)
	werr = r.fn(wctx, t)
	if werr != nil {
		t.audit = t.audit[:mark] // undone with the write
	}
	if rerun && s.be.conflict(werr) {
		return nil, stageConflict, werr
	}
	if s.be.failure(werr) {
		werr = fmt.Errorf("%w: %w", ErrUnavailable, werr)
	}
	if werr != nil && savepoint {
		if _, err := t.ExecContext(bg, `ROLLBACK TO w`); err != nil {
			// The transaction is gone (SQLite rolls it back itself
			// on some I/O errors; the connection to PostgreSQL
			// broke): nothing in it landed.
			return werr, "rollback to savepoint", err
		}
	}
	if savepoint {
		if _, err := t.ExecContext(bg, `RELEASE w`); err != nil {
			return werr, "release", err
		}
	}
	return werr, "", nil
}

// exec runs one statement as a write of its own.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}
