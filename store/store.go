// Package store is the durable journal of oncegate: operations bound to
// their keys and fingerprints, agent tokens, and everything else that must
// survive a crash. By default it is one SQLite file in WAL mode, each
// write answered after the WAL's fsync that covers it (durable.go),
// written through a single connection and read through
// a small pool (sqlite.go); several gateways share one journal on
// PostgreSQL (postgres.go). The two differ only behind backend
// (backend.go).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/oncegate/oncegate/migrations"
)

// timeFormat is how times are stored: UTC, fixed width, so text order is time order.
const timeFormat = "2006-01-02T15:04:05.000000Z"

// Store is the journal. It is safe for concurrent use.
type Store struct {
	be       backend   // what SQLite and PostgreSQL do differently
	db       db        // SQLite: the one writer connection, held by the writer goroutine; PostgreSQL: the pool
	rdb      db        // readers (PostgreSQL: the same pool)
	getOp    *sql.Stmt // the look-up by key on the readers
	path     string    // SQLite: the journal's file; "" on PostgreSQL
	location string    // the file, or the URL without its password

	// failing is why a batch of the writer last failed; nil again once
	// Ready's probe wrote. probedAt is when Ready last wrote to the journal.
	failing  atomic.Pointer[error]
	probeMu  sync.Mutex
	probedAt time.Time

	// dur is the pipelined commit's bookkeeping (durable.go); nil where a
	// COMMIT returns only once durable.
	dur       *durability
	writes    chan *writeReq
	quit      chan struct{}
	writers   sync.WaitGroup // the writer goroutines
	closeOnce sync.Once

	// Now is the journal's clock (clock.go): on SQLite the machine's wall
	// clock, Wall; on PostgreSQL the server's. Tests pin it.
	Now func() time.Time
	// Wall is the machine's wall clock, which may step; tests step it.
	Wall         func() time.Time
	inUse        leasesInUse                  // Use
	beforeCommit atomic.Pointer[func() error] // SetBeforeCommit
	batches      atomic.Int64                 // batches committed or failed
	batched      atomic.Int64                 // writes those batches held
	reruns       atomic.Int64                 // batches run again with savepoints
	queued       atomic.Int64                 // writes waiting for the writer
	watch        watchers                     // Watch
	outbox       atomic.Pointer[Outbox]       // SetOutbox
	notify       atomic.Pointer[notifyHook]   // SetNotifier
	// queuedDeliveries receives when a batch wrote deliveries.
	queuedDeliveries chan struct{}
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

// Close stops the writer after its batch and closes the journal. Writes
// after Close fail with ErrClosed.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.quit)
		s.writers.Wait()
		err = s.getOp.Close()
		if s.rdb.DB != s.db.DB {
			err = errors.Join(err, s.rdb.Close())
		}
		// The writer's connection closes last: on SQLite, the last
		// connection checkpoints the WAL into the file.
		err = errors.Join(err, s.db.Close())
	})
	return err
}

// Path is the journal's file; "" for a journal on PostgreSQL.
func (s *Store) Path() string { return s.path }

// Shared reports whether other gateways may be writing the journal
// beside this one (PostgreSQL): then a lease this gateway does not know
// may be a live gateway's.
func (s *Store) Shared() bool { return s.be.shared() }

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
	if err := s.be.check(); err != nil {
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
	return migrateSQLite(ctx, location, direction)
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

// stored is t as the journal gives it back: UTC, to the microsecond.
func stored(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

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
