package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// The pipelined commit (SQLite, where the WAL can be synced apart: not on
// Windows). The writer's connection runs at synchronous=NORMAL: a COMMIT
// writes the batch's frames to the WAL and returns without an fsync. The
// syncer then fsyncs the WAL — while the writer already runs the next
// batch — and only after that fsync returned does it answer the batch's
// writes. So a write is still answered only once it is on disk, and a
// target is still called only after the record of what is sent is; what
// changed is that the disk's wait no longer stalls the writer.
//
// Readers see a commit as soon as it is made, before its fsync. An answer
// made from a read must wait too: a request that read the journal
// (MarkReads) is held before its answer until everything committed by
// then is durable (Settle). Checkpoints stay SQLite's: at NORMAL it syncs
// the WAL before copying it into the file, and the file after.
//
// An fsync that fails leaves the journal's state unknown: the store
// stops taking writes and holding answers fails, until a restart reads
// the journal from the disk again.

// durability counts commits made and commits on disk.
type durability struct {
	committed atomic.Uint64 // batches committed (visible to readers)
	durable   atomic.Uint64 // of those, covered by an fsync that returned
	failed    atomic.Pointer[error]

	mu       sync.Mutex
	advanced chan struct{} // closed when durable moves or the store fails

	walPath string
	wal     *os.File // opened at the first sync, reopened if the file was replaced
	queue   chan synced
	// hook, when set, is called for the WAL's fsync with the real one
	// (SetSyncHook).
	hook atomic.Pointer[func(sync func() error) error]
}

// synced is a batch's answers, released once commits up to seq are
// durable.
type synced struct {
	batch []*writeReq
	errs  []error
	seq   uint64
}

func newDurability(walPath string) *durability {
	return &durability{walPath: walPath, advanced: make(chan struct{}), queue: make(chan synced, 4*maxBatch)}
}

// syncWAL fsyncs the journal's WAL file.
func (d *durability) syncWAL() error {
	if d.wal != nil {
		now, err1 := os.Stat(d.walPath)
		was, err2 := d.wal.Stat()
		if err1 != nil || err2 != nil || !os.SameFile(now, was) {
			d.wal.Close()
			d.wal = nil
		}
	}
	if d.wal == nil {
		f, err := os.OpenFile(d.walPath, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("open the WAL to sync it: %w", err)
		}
		d.wal = f
	}
	return d.wal.Sync()
}

// release hands a batch's answers to the syncer: they wait for every
// commit made so far, the batch's own included.
func (s *Store) release(batch []*writeReq, errs []error) {
	d := s.dur
	if d == nil {
		for i, r := range batch {
			r.done <- errs[i]
		}
		return
	}
	d.queue <- synced{batch: batch, errs: errs, seq: d.committed.Load()}
}

// syncer answers the batches the writer released, each after the fsync
// that covers it, until the writer closed the queue.
func (s *Store) syncer() {
	d := s.dur
	defer func() {
		if d.wal != nil {
			d.wal.Close()
		}
	}()
	for first := range d.queue {
		items := []synced{first}
	more:
		for {
			select {
			case it, ok := <-d.queue:
				if !ok {
					break more
				}
				items = append(items, it)
			default:
				break more
			}
		}
		need := uint64(0)
		for _, it := range items {
			need = max(need, it.seq)
		}
		if answerBeforeSync {
			d.answer(items, nil)
		}
		var err error
		if need > d.durable.Load() && d.failed.Load() == nil {
			// Every commit counted before the fsync began had written its
			// frames: the fsync covers them all.
			upTo := d.committed.Load()
			sync := d.syncWAL
			if h := d.hook.Load(); h != nil {
				sync = func() error { return (*h)(d.syncWAL) }
			}
			if err = sync(); err != nil {
				err = fmt.Errorf("%w: the WAL could not be synced: %w", ErrUnavailable, err)
				d.failed.CompareAndSwap(nil, &err)
				s.failing.Store(&err)
			} else {
				d.durable.Store(upTo)
			}
			d.mu.Lock()
			close(d.advanced)
			d.advanced = make(chan struct{})
			d.mu.Unlock()
		}
		if !answerBeforeSync {
			d.answer(items, d.failed.Load())
		}
	}
}

// answer answers the writes of items: with their own outcome, or, when
// the journal failed to make them durable, with that failure.
func (d *durability) answer(items []synced, failed *error) {
	for _, it := range items {
		for i, r := range it.batch {
			err := it.errs[i]
			if failed != nil && it.seq > d.durable.Load() {
				err = *failed
			}
			r.done <- err
		}
	}
}

// committedBatch counts a batch whose COMMIT returned.
func (s *Store) committedBatch() {
	if s.dur != nil {
		s.dur.committed.Add(1)
	}
}

// Pipelined reports whether answers made from reads must wait for the
// disk (Settle): commits here return before their fsync.
func (s *Store) Pipelined() bool { return s.dur != nil }

// readsKey marks a context whose request read the journal.
type readsKey struct{}

// MarkReads returns ctx marked so that the journal notes reads made
// under it; Settle then holds the answer until what they could have seen
// is on disk.
func MarkReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, readsKey{}, new(atomic.Bool))
}

// AnswerReadsNothing says the answer to ctx's request rests on nothing
// it read (that the journal cannot be read or written): Settle lets it
// go at once, where an answer made from a read waits for that read to be
// on disk.
func AnswerReadsNothing(ctx context.Context) {
	if b, ok := ctx.Value(readsKey{}).(*atomic.Bool); ok {
		b.Store(false)
	}
}

// NoteRead notes under ctx an answer made from what the journal held,
// read earlier and kept in memory (a replay from the cache): Settle then
// holds it as it would a read. The journal's own reads note themselves.
func NoteRead(ctx context.Context) { noteRead(ctx) }

// SetSyncHook makes every fsync of the WAL go through hook, which gets the
// real fsync to call (or not); nil restores it. Tests hold or fail the
// WAL's fsync with it. It does nothing where commits are not pipelined.
func (s *Store) SetSyncHook(hook func(sync func() error) error) {
	d := s.dur
	if d == nil {
		return
	}
	if hook == nil {
		d.hook.Store(nil)
		return
	}
	d.hook.Store(&hook)
}

// noteRead notes a read of the journal under ctx.
func noteRead(ctx context.Context) {
	if b, ok := ctx.Value(readsKey{}).(*atomic.Bool); ok {
		b.Store(true)
	}
}

// Settle waits, when ctx (MarkReads) read the journal, until every commit
// made so far is on disk, so nothing read is answered before a power loss
// could take it back. It returns at once on a journal whose commits are
// durable when they return (PostgreSQL, SQLite on Windows) or when
// nothing was read.
func (s *Store) Settle(ctx context.Context) error {
	d := s.dur
	if d == nil {
		return nil
	}
	if b, ok := ctx.Value(readsKey{}).(*atomic.Bool); !ok || !b.Load() {
		return nil
	}
	need := d.committed.Load()
	for {
		if d.durable.Load() >= need {
			return nil
		}
		if err := d.failed.Load(); err != nil {
			return *err
		}
		d.mu.Lock()
		ch := d.advanced
		d.mu.Unlock()
		if d.durable.Load() >= need {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return errors.Join(ErrUnavailable, ctx.Err())
		}
	}
}
