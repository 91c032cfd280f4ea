package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/oncegate/oncegate/migrations"
)

// The journal on SQLite, the default: one file in WAL mode, its writes
// answered after the WAL's fsync (durable.go; synchronous=FULL on
// Windows), written by one writer on the one write connection
// (the file has one write lock) and read through a small pool. What it
// knows that PostgreSQL's does not: one gateway writes it (serve holds
// the data directory's lock), and the journal is a file that can be
// deleted or replaced under it.

// sqliteBackend is the journal's backend on SQLite.
type sqliteBackend struct {
	path string
	// file is the journal's file as opened, and lost why it is no longer
	// the file at path (check).
	file os.FileInfo
	lost atomic.Pointer[error]
}

// dsn builds the connection string with every pragma set per connection;
// busyMS is how long a statement waits for a lock another process holds.
func dsn(path string, readOnly bool, busyMS int) string {
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyMS))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "temp_store(MEMORY)")
	if readOnly {
		// mode=ro: a reader opened where the journal was deleted finds
		// nothing instead of making an empty database in its place.
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

// writerCacheKiB is the writer's page cache, in KiB; it fills only as a
// journal grows.
const writerCacheKiB = 8 << 10

func openSQLite(ctx context.Context, path string) (*Store, error) {
	if _, err := Migrate(ctx, path, "up"); err != nil {
		return nil, err
	}
	be := &sqliteBackend{path: path}
	// The writer waits for the lock itself (lockWait), so its
	// connection's busy handler gives up at once.
	wdb, err := sql.Open("sqlite", dsn(path, false, 0))
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	w := db{DB: wdb, be: be}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	rsql, err := sql.Open("sqlite", dsn(path, true, 5000))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open journal readers: %w", err)
	}
	rdb := db{DB: rsql, be: be}
	rdb.SetMaxOpenConns(4)
	rdb.SetMaxIdleConns(4)
	// The look-up of a row by key runs twice for every new operation;
	// prepared once, each reader connection parses it once.
	getOp, err := rdb.PrepareContext(ctx, getOperationQuery)
	if err != nil {
		rdb.Close()
		w.Close()
		return nil, fmt.Errorf("open journal readers: %w", err)
	}
	conn, err := w.Conn(ctx)
	if err != nil {
		rdb.Close()
		w.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	// Checkpoints (copying the WAL's pages into the file, and its fsync)
	// run beside the writer on a connection of their own, so a batch's
	// COMMIT never waits for one (checkpointer).
	ck, err := sql.Open("sqlite", dsn(path, false, 0))
	if err == nil {
		ck.SetMaxOpenConns(1)
		_, err = conn.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`)
	}
	pipelined := runtime.GOOS != "windows"
	if err == nil && pipelined {
		// The WAL's fsync is the syncer's, beside the next batch
		// (durable.go).
		_, err = conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`)
	}
	if err == nil {
		// Each new operation adds to indexes keyed by what agents choose
		// (keys, orders, objects), at random places: with their inner
		// pages kept, an insert into a large journal reads one page from
		// the file, not one per level.
		_, err = conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA cache_size = %d`, -writerCacheKiB))
	}
	if err != nil {
		conn.Close()
		rdb.Close()
		w.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if be.file, err = os.Stat(path); err != nil {
		conn.Close()
		rdb.Close()
		w.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	s := &Store{be: be, db: w, rdb: rdb, getOp: getOp, path: path, location: path, Wall: time.Now, queuedDeliveries: make(chan struct{}, 1),
		writes: make(chan *writeReq), quit: make(chan struct{})}
	s.Now = func() time.Time { return s.Wall() }
	if pipelined {
		s.dur = newDurability(path + "-wal")
		s.writers.Go(s.syncer)
	}
	s.writers.Go(func() { s.writer(conn) })
	s.writers.Go(func() { s.checkpointer(ck) })
	return s, nil
}

// checkpointEvery is how often the checkpointer copies what the batches
// since its last run wrote to the WAL into the journal's file: about as
// often as SQLite's own automatic checkpoint would under load.
const checkpointEvery = 200 * time.Millisecond

// checkpointer runs a passive checkpoint after the writer committed, at
// most every checkpointEvery, until the store closes, then closes ck.
// A passive checkpoint waits for no one: the writer goes on appending to
// the WAL, and frames a reader still uses are left for the next one.
//
// The WAL starts again from its beginning only when a write transaction
// begins with every frame checkpointed; under steady writes the writer
// has always committed more while ck copied, so the file would grow for
// as long as the load lasts (tens of MB a second at full load, all read
// again at the next start). So after ck has copied the bulk, the writer
// copies the few frames committed since, between two batches: its next
// batch then writes the WAL from the start, into the file's blocks.
func (s *Store) checkpointer(ck *sql.DB) {
	defer ck.Close()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		if n := s.batches.Load(); n != last {
			last = n
			ck.Exec(`PRAGMA wal_checkpoint(PASSIVE)`) // a failure only leaves the WAL longer
			s.exclusive(context.Background(), func(ctx context.Context, c *sql.Conn) error {
				_, err := c.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
				return err
			})
		}
	}
}

// migrateSQLite is Migrate for a SQLite journal.
func migrateSQLite(ctx context.Context, path, direction string) (uint, error) {
	db, err := sql.Open("sqlite", dsn(path, false, 5000))
	if err != nil {
		return 0, fmt.Errorf("open journal for migration: %w", err)
	}
	db.SetMaxOpenConns(1)
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		db.Close()
		return 0, fmt.Errorf("read migrations: %w", err)
	}
	drv, err := migratesqlite.WithInstance(db, &migratesqlite.Config{})
	if err != nil {
		db.Close()
		return 0, fmt.Errorf("migrate journal: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite", drv)
	if err != nil {
		drv.Close()
		return 0, fmt.Errorf("migrate journal: %w", err)
	}
	defer m.Close() // closes the driver and with it db
	return runMigration(m, direction)
}

func (*sqliteBackend) bind(query string) string { return query }

// The writer holds the whole journal's write lock already: no row or key
// needs one of its own.
func (*sqliteBackend) forUpdate() string  { return `` }
func (*sqliteBackend) skipLocked() string { return `` }

// listen: no other gateway writes a SQLite journal (not shared).
func (*sqliteBackend) listen(ctx context.Context, _ func(bool), _ func([]string)) error {
	<-ctx.Done()
	return ctx.Err()
}
func (*sqliteBackend) lock(context.Context, *txn, ...any) error { return nil }
func (*sqliteBackend) ready(*txn) error                         { return nil }

// readContext: a read of the file is bounded by SQLite's busy timeout.
func (*sqliteBackend) readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return ctx, func() {}
}

func (*sqliteBackend) afterFailure(*txn)   {}
func (*sqliteBackend) conflict(error) bool { return false }
func (*sqliteBackend) shared() bool        { return false }

// commit: the one writer chains the events itself, then commits; there
// are no round trips to save.
func (*sqliteBackend) commit(ctx context.Context, t *txn, events []AuditEvent) (string, error) {
	return chainAndCommit(ctx, t, events)
}

// chainAndCommit chains events in the gateway (chainAudit) and commits
// t's transaction, reporting the stage that failed.
func chainAndCommit(ctx context.Context, t *txn, events []AuditEvent) (string, error) {
	if len(events) > 0 {
		if err := chainAudit(ctx, t, events); err != nil {
			return "append audit", err
		}
	}
	if _, err := t.ExecContext(ctx, `COMMIT`); err != nil {
		return "commit", err
	}
	return "", nil
}

func (*sqliteBackend) batchContext() (context.Context, context.CancelFunc) {
	return context.Background(), func() {}
}
func (*sqliteBackend) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return ctx, func() {}
}

// savepoints: a write alone needs none, its failure rolls back the
// transaction.
func (*sqliteBackend) savepoints(n int) bool { return n > 1 }

// check reports ErrUnavailable once the journal's file is no longer the
// one this store opened: deleted, moved or replaced under the running
// gateway. Writes would go to a file nobody will open again, and a
// restart would find no journal, so from then on every write fails; it
// never comes back, for the file put back is not the one whose leases and
// keys this gateway holds.
func (b *sqliteBackend) check() error {
	if lost := b.lost.Load(); lost != nil {
		return *lost
	}
	fi, err := os.Stat(b.path)
	if err == nil && os.SameFile(fi, b.file) {
		return nil
	}
	lost := fmt.Errorf("%w: JOURNAL FILE GONE: %s was deleted, moved or replaced while the gateway was running; it accepts no more work: stop it and put the journal back (oncegate restore BACKUP)", ErrUnavailable, b.path)
	b.lost.CompareAndSwap(nil, &lost)
	return *b.lost.Load()
}

// lockWait is how long a batch waits for the write lock that another
// process (a command beside serve, a second handle) holds.
const lockWait = 5 * time.Second

// begin starts the batch's transaction (BEGIN IMMEDIATE, which takes the
// write lock), trying again every millisecond while another process holds
// the lock. SQLite's own busy handler sleeps ever longer, up to 100 ms
// between tries, so a process that writes beside a busy gateway would
// seldom find the lock free in the moment between two batches; trying
// often, both sides get their turn.
func (*sqliteBackend) begin(ctx context.Context, t *txn) error {
	deadline := time.Now().Add(lockWait)
	for {
		_, err := t.ExecContext(ctx, `BEGIN IMMEDIATE`)
		if err == nil || !IsBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// failure: the disk, the file or its lock.
func (*sqliteBackend) failure(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_BUSY,
		sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CANTOPEN:
		return true
	}
	return false
}

// backup copies the journal with VACUUM INTO on the write connection
// between batches, so the copy is consistent while serve keeps running.
func (*sqliteBackend) backup(ctx context.Context, s *Store, path string) error {
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
		return fmt.Errorf("backup: directory %s does not exist", filepath.Dir(path))
	}
	// The copy holds password and token hashes: it is its owner's from the
	// first byte. VACUUM INTO fills an empty file.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("backup: %s already exists", path)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	f.Close()
	err = s.exclusive(ctx, func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `VACUUM INTO ?`, path)
		return err
	})
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}
