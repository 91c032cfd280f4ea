// Package store is the durable journal of oncegate: operations bound to
// their keys and fingerprints, agent tokens, and everything else that must
// survive a crash. By default it is one SQLite file in WAL mode with
// synchronous=FULL, written through a single connection and read through
// a small pool; several gateways share one journal on PostgreSQL
// (postgres.go).
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/oncegate/oncegate/migrations"
)

// timeFormat is how times are stored: UTC, fixed width, so text order is time order.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// Store is the journal. It is safe for concurrent use.
type Store struct {
	db       db        // SQLite: the one writer connection, held by the writer goroutine; PostgreSQL: the pool
	rdb      db        // readers (PostgreSQL: the same pool)
	getOp    *sql.Stmt // the look-up by key on the readers
	pg       bool      // the journal is on PostgreSQL
	path     string    // SQLite: the journal's file
	location string    // the file, or the URL without its password
	url      string    // PostgreSQL: the URL as given (for pg_dump); never logged

	// SQLite: the journal's file as opened, and why it is no longer the
	// file at path (checkFile).
	file os.FileInfo
	lost atomic.Pointer[error]
	// failing is why a batch of the writer last failed; nil again once
	// Ready's probe wrote. probedAt is when Ready last wrote to the journal.
	failing  atomic.Pointer[error]
	probeMu  sync.Mutex
	probedAt time.Time

	writes    chan *writeReq
	quit      chan struct{}
	writers   sync.WaitGroup // the writer goroutines
	closeOnce sync.Once

	// Now is the clock; tests pin it.
	Now          func() time.Time
	beforeCommit atomic.Pointer[func() error] // SetBeforeCommit
	batches      atomic.Int64                 // batches committed or failed
	batched      atomic.Int64                 // writes those batches held
	queued       atomic.Int64                 // writes waiting for the writer
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

// Open opens (creating if needed) the journal at location and applies
// pending migrations. location is a SQLite file's path, or a postgres://
// URL (IsPostgres).
func Open(ctx context.Context, location string) (*Store, error) {
	if IsPostgres(location) {
		return openPostgres(ctx, location)
	}
	return openSQLite(ctx, location)
}

func openSQLite(ctx context.Context, path string) (*Store, error) {
	if _, err := Migrate(ctx, path, "up"); err != nil {
		return nil, err
	}
	// The writer waits for the lock itself (lockWait), so its
	// connection's busy handler gives up at once.
	wdb, err := sql.Open("sqlite", dsn(path, false, 0))
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	w := db{DB: wdb}
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
	rdb := db{DB: rsql}
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
	file, err := os.Stat(path)
	if err != nil {
		conn.Close()
		rdb.Close()
		w.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	s := &Store{db: w, rdb: rdb, getOp: getOp, path: path, file: file, location: path, Now: time.Now,
		writes: make(chan *writeReq), quit: make(chan struct{})}
	s.writers.Go(func() { s.writer(conn) })
	return s, nil
}

// Close stops the writer after its batch and closes the journal. Writes
// after Close fail with ErrClosed.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.quit)
		s.writers.Wait()
		if s.pg {
			err = errors.Join(s.getOp.Close(), s.db.Close())
			return
		}
		err = errors.Join(s.getOp.Close(), s.rdb.Close(), s.db.Close())
	})
	return err
}

// Path is the journal's file; "" for a journal on PostgreSQL.
func (s *Store) Path() string { return s.path }

// Location names the journal for logs and messages: its file, or its URL
// without the password.
func (s *Store) Location() string { return s.location }

// probeEvery bounds how often Ready writes to the journal; between its
// writes it reports whether a write failed since the last one.
const probeEvery = time.Second

// Ready reports an error unless the journal is writable and its schema is
// the one this binary expects. Writable is what the writer last found:
// its last batch failed (a full disk, a read-only file, a lost server)
// and the journal is not ready; and at most once a second Ready writes
// itself, rewriting the schema version's row, so a journal that has
// stopped taking writes is found out even when nothing else writes.
func (s *Store) Ready(ctx context.Context) error {
	var version int
	var dirty bool
	if err := s.rdb.QueryRowContext(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&version, &dirty); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if want := LatestVersion(); version != want || dirty {
		return fmt.Errorf("journal schema is at version %d (dirty %v), this binary needs %d", version, dirty, want)
	}
	if err := s.checkFile(); err != nil {
		return err
	}
	s.probeMu.Lock()
	defer s.probeMu.Unlock()
	failed := s.failing.Load()
	if time.Since(s.probedAt) < probeEvery {
		if failed != nil {
			return fmt.Errorf("journal not writable: a write failed: %w", *failed)
		}
		return nil
	}
	s.probedAt = time.Now()
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		_, err := tx.ExecContext(ctx, `UPDATE schema_migrations SET version = version`)
		return err
	})
	if err != nil {
		return fmt.Errorf("journal not writable: %w", err)
	}
	// The journal wrote: a failure before this probe is over (one since
	// stays, for the next probe to clear).
	s.failing.CompareAndSwap(failed, nil)
	return nil
}

// checkFile reports ErrUnavailable once the journal's file is no longer
// the one this store opened: deleted, moved or replaced under the running
// gateway. Writes would go to a file nobody will open again, and a
// restart would find no journal, so from then on every write fails; it
// never comes back, for the file put back is not the one whose leases and
// keys this gateway holds.
func (s *Store) checkFile() error {
	if s.pg {
		return nil
	}
	if lost := s.lost.Load(); lost != nil {
		return *lost
	}
	fi, err := os.Stat(s.path)
	if err == nil && os.SameFile(fi, s.file) {
		return nil
	}
	lost := fmt.Errorf("%w: JOURNAL FILE GONE: %s was deleted, moved or replaced while the gateway was running; it accepts no more work: stop it and put the journal back (oncegate restore BACKUP)", ErrUnavailable, s.path)
	s.lost.CompareAndSwap(nil, &lost)
	return *s.lost.Load()
}

// now returns the store's clock in UTC.
func (s *Store) now() time.Time { return s.Now().UTC() }

// Migrate applies the journal's migrations at location (a SQLite file or
// a postgres:// URL) in direction "up" or "down" (one step), or only
// reports the version for "version". It returns the schema version after
// the change. A journal whose schema is newer than this binary's is
// refused, not changed.
func Migrate(ctx context.Context, location, direction string) (uint, error) {
	if IsPostgres(location) {
		return migratePostgres(ctx, location, direction)
	}
	path := location
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

// runMigration moves m's journal one way and reports where it ends.
func runMigration(m *migrate.Migrate, direction string) (uint, error) {
	if v, _, err := m.Version(); err == nil && int(v) > LatestVersion() && direction != "version" {
		return v, fmt.Errorf("the journal's schema is at version %d, newer than this oncegate's (%d): run the newer oncegate, or its migrate down, first", v, LatestVersion())
	}
	var err error
	switch direction {
	case "up":
		err = m.Up()
	case "down":
		err = m.Steps(-1)
		if errors.Is(err, fs.ErrNotExist) {
			// golang-migrate's answer for "no migration below this one".
			return 0, errors.New("migrate journal down: the journal has no schema to undo (version 0)")
		}
	case "version":
	default:
		return 0, fmt.Errorf("migrate: unknown direction %q (want up, down or version)", direction)
	}
	if err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return 0, fmt.Errorf("migrate journal %s: %w", direction, err)
	}
	v, dirty, err := m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if dirty {
		return v, fmt.Errorf("journal schema version %d is dirty: a migration failed half-way", v)
	}
	return v, nil
}

// LatestVersion is the schema version this binary's migrations end at.
func LatestVersion() int {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return 0
	}
	defer src.Close()
	v, err := src.First()
	if err != nil {
		return 0
	}
	for {
		next, err := src.Next(v)
		if err != nil {
			return int(v)
		}
		v = next
	}
}

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return formatTime(t)
}

func parseTime(s sql.NullString) time.Time {
	if !s.Valid {
		return time.Time{}
	}
	t, _ := time.Parse(timeFormat, s.String)
	return t
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Backup writes a consistent copy of the journal to path, which must not
// exist yet; serve may keep running meanwhile. A journal on PostgreSQL is
// dumped by pg_dump (custom format, for pg_restore) when it is installed.
func (s *Store) Backup(ctx context.Context, path string) error {
	if s.pg {
		return backupPostgres(ctx, s.url, path)
	}
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
