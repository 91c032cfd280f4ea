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
// The rows, rules, SQL and write path are the SQLite journal's: writers
// on connections of their own (pgWriters per gateway), group commit with
// a savepoint per write (write.go). What PostgreSQL adds: claims are
// INSERT … ON CONFLICT DO NOTHING then a read FOR UPDATE, so a claim of
// the same key by another gateway waits for this one's batch; every
// status change stays a conditional update under its fence; picking work
// skips rows another gateway has locked; a batch in which a write lost a
// deadlock with another gateway's batch runs again from its start; the batch's
// audit events are chained at its end by the server, under an advisory
// lock (auditLock), in one round trip.
// No transaction spans a call to a target.
//
// What the single-process journal knows from the data directory's lock,
// that every lease not of this run is dead, does not hold here: another
// instance may be alive. A dead instance's leases run out and the
// reconciler of any instance takes those rows (TakeForReconcile); the
// engine asks Shared before it orphans leases.

// IsPostgres reports whether location names a PostgreSQL journal (a
// postgres:// or postgresql:// URL) rather than a SQLite file.
func IsPostgres(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// pgPoolSize bounds one gateway's connections to the journal server.
const pgPoolSize = 32

// pgWriters is how many writers a gateway runs on PostgreSQL, each on its
// own connection taking the next batch that queued. Statements go to the
// server one round trip at a time, so one writer spends most of a batch
// waiting on the network; a second keeps the server busy meanwhile. More
// split the queue into smaller batches, each paying the batch's own round
// trips (BEGIN, the audit chain's append, COMMIT) and contending for the
// chain's lock: measured with the bench's 32
// connections on one machine, two writers made 950–1,040 new operations a
// second, four 755–805 and one 825–835; with two gateways on one journal,
// two writers each 927, four 509. (SQLite has one writer: the file has one
// write lock.) Their batches are ordered where they meet, by the rows'
// locks and the audit chain's lock.
var pgWriters = 2

// pgWriteTimeout bounds one batch's transaction: a server that stops
// answering fails the batch (ErrUnavailable) instead of holding the writer.
const pgWriteTimeout = 10 * time.Second

// postgresBackend is the journal's backend on PostgreSQL.
type postgresBackend struct {
	url   string  // the URL as given (for pg_dump); never logged
	pool  *sql.DB // the writers' and readers' connections
	clock serverClock
}

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
	be := &postgresBackend{url: location, pool: sqldb}
	d := db{DB: sqldb, be: be}
	if err := be.clock.read(ctx, d); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	getOp, err := d.PrepareContext(ctx, getOperationQuery)
	if err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open journal: %w", redactErr(err))
	}
	conns := make([]*sql.Conn, pgWriters)
	for i := range conns {
		if conns[i], err = d.Conn(ctx); err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			getOp.Close()
			sqldb.Close()
			return nil, fmt.Errorf("open journal: %w", redactErr(err))
		}
	}
	s := &Store{be: be, db: d, rdb: d, getOp: getOp, location: Redact(location), Now: be.clock.now, Wall: time.Now, queuedDeliveries: make(chan struct{}, 1),
		writes: make(chan *writeReq), quit: make(chan struct{})}
	for _, c := range conns {
		s.writers.Go(func() { s.writer(c) })
	}
	s.writers.Go(func() { be.clock.keep(d, s.quit) })
	return s, nil
}

// pgSessionDefaults are set on each of a gateway's sessions unless the
// journal URL sets them itself (…?lock_timeout=10s&…), so one gateway
// frozen inside a batch (a stopped process, a paused machine) never holds
// the others up for long. The server ends a session left idle inside a
// transaction, which releases its locks (a business key's, a row's), and
// a batch waits a bounded time for a lock: past it the batch fails
// (ErrUnavailable, 503 with Retry-After), never waits on. A batch of a
// live gateway is never idle for long: it sends its statements one after
// the other and its end in one pipeline; the lock wait outlasts the idle
// limit, so a frozen holder is ended before its waiters give up.
var pgSessionDefaults = map[string]string{
	"idle_in_transaction_session_timeout": "5s",
	"lock_timeout":                        "8s",
}

// pgConfig parses a journal URL, giving it a connect timeout when it has
// none and the session settings of pgSessionDefaults it does not set.
// Errors never repeat the URL: it may hold a password.
func pgConfig(location string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(location)
	if err != nil {
		return nil, errors.New("the journal URL is not a valid postgres:// URL (the URL is not repeated here: it may hold a password)")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	for k, v := range pgSessionDefaults {
		if _, set := cfg.RuntimeParams[k]; !set {
			cfg.RuntimeParams[k] = v
		}
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

func (*postgresBackend) bind(query string) string { return numbered(query) }

// forUpdate: a claim of a key another gateway is claiming waits for that
// one's batch.
func (*postgresBackend) forUpdate() string { return ` FOR UPDATE` }

// skipLocked: rows another gateway is taking are passed over rather than
// waited for.
func (*postgresBackend) skipLocked() string { return ` FOR UPDATE SKIP LOCKED` }

// lock takes an advisory lock held until the transaction ends
// (pg_advisory_xact_lock).
func (*postgresBackend) lock(ctx context.Context, t *txn, keys ...any) error {
	q := `SELECT pg_advisory_xact_lock(?)`
	if len(keys) == 2 {
		q = `SELECT pg_advisory_xact_lock(?, ?)`
	}
	_, err := t.ExecContext(ctx, q, keys...)
	return err
}

// Other gateways may share the journal.
func (*postgresBackend) shared() bool { return true }

// The journal is not a file of this machine's.
func (*postgresBackend) check() error { return nil }

// savepoints: every write has one (once a first run without them
// failed), so a write that fails is undone alone.
func (*postgresBackend) savepoints(int) bool { return true }

// batchContext: a server that stops answering fails the batch instead of
// holding the writer.
func (*postgresBackend) batchContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), pgWriteTimeout)
}

func (*postgresBackend) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, time.Now().Add(pgWriteTimeout))
}

// readContext: a server that stops answering fails the read rather than
// holding the request that made it.
func (*postgresBackend) readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, pgWriteTimeout)
}

// begin starts the batch's transaction. A connection that broke between
// batches (the server restarted, an idle connection was cut) fails at
// BEGIN, before anything was sent, so the batch goes on a new one.
func (b *postgresBackend) begin(ctx context.Context, t *txn) error {
	_, err := t.ExecContext(ctx, `BEGIN`)
	if err != nil && pgFailure(err) && b.replaceConn(t) == nil {
		_, err = t.ExecContext(ctx, `BEGIN`)
	}
	return err
}

// commit: the server chains the events and commits, sent at once. The
// audit chain's lock is the one point every gateway's batches pass
// through; sent one after the other, the lock would be held while the
// answer to the append travelled back and the COMMIT came, and a gateway
// slowed then (by its CPU quota, or a pause of its process) would hold up
// every other. Sent as one pipeline, the server runs both without
// waiting for the gateway. When the append fails, the server skips the
// COMMIT and the transaction is left aborted, for the writer to roll
// back.
func (*postgresBackend) commit(ctx context.Context, t *txn, events []AuditEvent) (string, error) {
	if len(events) == 0 {
		return chainAndCommit(ctx, t, nil) // nothing to chain: a plain COMMIT
	}
	stage := "append audit"
	err := t.conn.Raw(func(dc any) error {
		var b pgx.Batch
		b.Queue(chainAuditCall, chainAuditArgs(events)...)
		// Delivered at the COMMIT to every gateway listening (watch.go).
		for _, keys := range notifyPayloads(changedKeys(events)) {
			b.Queue(`SELECT pg_notify($1, $2)`, changesChannel, keys)
		}
		b.Queue(`COMMIT`)
		r := dc.(*stdlib.Conn).Conn().SendBatch(ctx, &b)
		_, err := r.Exec()
		for i := 1; err == nil && i < b.Len(); i++ {
			if i == b.Len()-1 {
				stage = "commit"
			}
			_, err = r.Exec()
		}
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return stage, err
	}
	return "", nil
}

// conflict: PostgreSQL aborted the write for a conflict with another
// gateway's transaction.
func (*postgresBackend) conflict(err error) bool { return pgConflict(err) }

// failure: the server failing, or a conflict that outlasted its retries.
func (*postgresBackend) failure(err error) bool { return pgFailure(err) || pgConflict(err) }

// afterFailure: the connection may be what failed; the writer checks it
// before the next batch (ready).
func (*postgresBackend) afterFailure(t *txn) { t.broken = true }

// ready makes sure the writer's connection works before its next batch:
// after a batch failed it takes a new one from the pool, once per batch,
// so while the server cannot be reached each batch fails at once.
func (b *postgresBackend) ready(t *txn) error {
	if !t.broken {
		return nil
	}
	return b.replaceConn(t)
}

// replaceConn gives the writer a new, working connection from the pool;
// its kept statements go with the old one.
func (b *postgresBackend) replaceConn(t *txn) error {
	ctx, cancel := context.WithTimeout(context.Background(), pgWriteTimeout)
	defer cancel()
	conn, err := b.pool.Conn(ctx)
	if err != nil {
		return redactErr(err)
	}
	if err := conn.PingContext(ctx); err != nil {
		conn.Close()
		return redactErr(err)
	}
	t.close()
	t.conn.Close()
	t.conn, t.broken = conn, false
	return nil
}

// backup runs pg_dump (backupPostgres).
func (b *postgresBackend) backup(ctx context.Context, _ *Store, path string) error {
	return backupPostgres(ctx, b.url, path)
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
		// idle_in_transaction_session_timeout ended the session;
		// lock_not_available: lock_timeout ran out.
		return pe.Code == "25P03" || pe.Code == "55P03"
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

// changesChannel is the channel a batch notifies the keys it changed on
// (commit), heard by every gateway with someone waiting (listen).
const changesChannel = "oncegate_operation_changes"

// notifyLimit bounds one NOTIFY's payload (the server's limit is 8,000
// bytes): a batch's keys go in as many as they need.
const notifyLimit = 7000

// notifyPayloads splits keys into NOTIFY payloads of at most
// notifyLimit bytes, one key a line. (Keys are at most a few hundred
// bytes and hold no line break.)
func notifyPayloads(keys []string) []string {
	var out []string
	var b strings.Builder
	for _, k := range keys {
		if b.Len() > 0 && b.Len()+1+len(k) > notifyLimit {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// listen holds a connection LISTENing on changesChannel. The connection
// never goes back to the pool: it listens (ErrBadConn has the pool close
// it).
func (b *postgresBackend) listen(ctx context.Context, hearing func(bool), wake func([]string)) error {
	conn, err := b.pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c := dc.(*stdlib.Conn).Conn()
		if _, err := c.Exec(ctx, `LISTEN `+changesChannel); err != nil {
			return errors.Join(err, driver.ErrBadConn)
		}
		hearing(true)
		for {
			n, err := c.WaitForNotification(ctx)
			if err != nil {
				return errors.Join(err, driver.ErrBadConn)
			}
			wake(strings.Split(n.Payload, "\n"))
		}
	})
}
