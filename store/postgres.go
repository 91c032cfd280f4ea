package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/oncegate/oncegate/migrations"
)

// The journal on PostgreSQL, for several gateways sharing one journal.
// The rows, rules and SQL are the SQLite journal's; what differs is the
// write path. Each write is a short transaction of its own on a pooled
// connection (PostgreSQL orders concurrent writers itself, so there is no
// writer goroutine and no group commit); claims are INSERT … ON CONFLICT
// DO NOTHING then a read FOR UPDATE; every status change stays a
// conditional update under its fence; picking work skips rows another
// instance has locked; the audit chain's appends are serialized by an
// advisory lock (auditLock). No transaction spans a call to a target.
//
// What the single-process journal knows from the data directory's lock,
// that every lease not of this run is dead, does not hold here: another
// instance may be alive. A dead instance's leases run out and the
// reconciler of any instance takes those rows (TakeForReconcile), so
// OrphanLeases does nothing on PostgreSQL.

// IsPostgres reports whether location names a PostgreSQL journal (a
// postgres:// or postgresql:// URL) rather than a SQLite file.
func IsPostgres(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// pgPoolSize bounds one instance's connections to the journal server.
const pgPoolSize = 32

// pgWriteTimeout bounds one write's transaction: a server that stops
// answering fails the write (ErrUnavailable) instead of holding its caller.
const pgWriteTimeout = 10 * time.Second

// pgWriteAttempts is how often a write that PostgreSQL aborted for a
// conflict of concurrent transactions (a deadlock, a serialization
// failure) is run again from the start before it fails as unavailable.
const pgWriteAttempts = 5

func openPostgres(ctx context.Context, location string) (*Store, error) {
	if _, err := migratePostgres(ctx, location, "up"); err != nil {
		return nil, err
	}
	cfg, err := pgConfig(location)
	if err != nil {
		return nil, err
	}
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(pgPoolSize)
	sqldb.SetMaxIdleConns(pgPoolSize)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open journal: %w", redactErr(err))
	}
	d := db{DB: sqldb, pg: true}
	getOp, err := d.PrepareContext(ctx, getOperationQuery)
	if err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open journal: %w", redactErr(err))
	}
	return &Store{db: d, rdb: d, getOp: getOp, pg: true, location: Redact(location), url: location, Now: time.Now,
		quit: make(chan struct{})}, nil
}

// pgConfig parses a journal URL, giving it a connect timeout when it has
// none. Errors never repeat the URL: it may hold a password.
func pgConfig(location string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(location)
	if err != nil {
		return nil, errors.New("the journal URL is not a valid postgres:// URL (the URL is not repeated here: it may hold a password)")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	return cfg, nil
}

// Redact returns location fit for logs: a URL without its password.
func Redact(location string) string {
	if !IsPostgres(location) {
		return location
	}
	u, err := url.Parse(location)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactErr keeps a driver's error from carrying the connection string.
func redactErr(err error) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("cannot connect to the journal's PostgreSQL server: %w", errors.Unwrap(ce))
	}
	return err
}

// writePG runs fn as one transaction, again from the start when
// PostgreSQL aborted it for a conflict with another transaction. It waits
// for the transaction's end even when ctx is done meanwhile. A COMMIT
// whose answer was lost (the connection broke) may have landed although
// it reports ErrUnavailable; the journal's rules make that safe: a claim
// that landed holds a lease that runs out and is reconciled by key, a
// completion that landed is what a retry finds.
func (s *Store) writePG(ctx context.Context, fn txFunc) error {
	for attempt := 1; ; attempt++ {
		select {
		case <-s.quit:
			return ErrClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		err := s.writePGOnce(ctx, fn)
		if !pgConflict(err) {
			return err
		}
		if attempt == pgWriteAttempts {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		time.Sleep(time.Duration(attempt) * time.Millisecond)
	}
}

func (s *Store) writePGOnce(ctx context.Context, fn txFunc) error {
	s.batches.Add(1)
	s.batched.Add(1)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pgWriteTimeout)
	defer cancel()
	tx, err := s.db.BeginTx(wctx, nil)
	if err != nil {
		return fmt.Errorf("%w: begin: %w", ErrUnavailable, redactErr(err))
	}
	t := &txn{tx: tx, pg: true}
	err = fn(wctx, t)
	if err == nil {
		err = s.flushAudit(wctx, t)
	}
	if err == nil {
		if hook := s.beforeCommit.Load(); hook != nil {
			if herr := (*hook)(); herr != nil {
				err = fmt.Errorf("%w: commit: %w", ErrUnavailable, herr)
			}
		}
	}
	if err != nil {
		tx.Rollback()
		if !errors.Is(err, ErrUnavailable) && !pgConflict(err) && pgFailure(err) {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		if pgConflict(err) {
			return err
		}
		return fmt.Errorf("%w: commit: %w", ErrUnavailable, err)
	}
	return nil
}

// pgConflict reports whether PostgreSQL aborted a transaction for a
// conflict with a concurrent one, so running it again may succeed.
func pgConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// pgFailure reports whether err is the journal's server failing (its
// connection, its resources, its shutdown) rather than a rule refusing a
// write.
func pgFailure(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "08", "53", "57", "58", "XX":
			return true
		}
		return false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// migratePostgres is Migrate for a PostgreSQL journal. golang-migrate
// holds an advisory lock while it migrates, so instances starting
// together apply each migration once.
func migratePostgres(ctx context.Context, location, direction string) (uint, error) {
	cfg, err := pgConfig(location)
	if err != nil {
		return 0, err
	}
	sqldb := stdlib.OpenDB(*cfg)
	sqldb.SetMaxOpenConns(1)
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return 0, fmt.Errorf("open journal for migration: %w", redactErr(err))
	}
	src, err := iofs.New(migrations.PostgresFS, "postgres")
	if err != nil {
		sqldb.Close()
		return 0, fmt.Errorf("read migrations: %w", err)
	}
	drv, err := migratepgx.WithInstance(sqldb, &migratepgx.Config{})
	if err != nil {
		sqldb.Close()
		return 0, fmt.Errorf("migrate journal: %w", redactErr(err))
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		drv.Close()
		return 0, fmt.Errorf("migrate journal: %w", err)
	}
	defer m.Close()
	return runMigration(m, direction)
}

// backupPostgres runs pg_dump when it is installed: a journal on a
// database server is backed up with the server's own tool, which also
// restores it (pg_restore).
func backupPostgres(ctx context.Context, location, path string) error {
	dump, err := exec.LookPath("pg_dump")
	if err != nil {
		return fmt.Errorf("backup: the journal is in PostgreSQL (%s); back it up with pg_dump --format=custom, which is not installed here", Redact(location))
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("backup: %s already exists", path)
	}
	// The password goes to pg_dump through its environment, not its
	// command line, which other users of the machine can read.
	u, err := url.Parse(location)
	if err != nil {
		return errors.New("backup: the journal URL is not a valid postgres:// URL")
	}
	env := os.Environ()
	if pw, has := u.User.Password(); has {
		env = append(env, "PGPASSWORD="+pw)
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if pw := q.Get("password"); pw != "" {
		env = append(env, "PGPASSWORD="+pw)
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	cmd := exec.CommandContext(ctx, dump, "--format=custom", "--no-owner", "--file="+path, "--dbname="+u.String())
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(path)
		return fmt.Errorf("backup: pg_dump: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return os.Chmod(path, 0o600)
}
