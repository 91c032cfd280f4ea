package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
)

// Store tests hash with the cheapest parameters: production cost (64 MiB,
// 3 passes) makes every hash take most of a second under -race.
func init() { hashCost = hashParams{memory: 1024, time: 1, threads: 1} }

// HashPasswordWith hashes password with the given argon2id parameters,
// for tests of hashes made with other parameters than the current ones.
func HashPasswordWith(password string, memoryKiB, passes uint32, lanes uint8) string {
	h, err := hashPasswordWith(context.Background(), password, hashParams{memory: memoryKiB, time: passes, threads: lanes})
	if err != nil {
		panic(err)
	}
	return h
}

// LocationOf is where s's journal is, as Open takes it.
func LocationOf(s *Store) string {
	if pg, ok := s.be.(*postgresBackend); ok {
		return pg.url
	}
	return s.path
}

// Raw is a connection to a journal beside its store, for tests that look
// at or edit rows behind the store's back; "?" placeholders are bound for
// the journal's backend.
type Raw struct{ d db }

// RawDB opens s's journal beside s.
func RawDB(tb testing.TB, s *Store) Raw {
	tb.Helper()
	driver, dsn := "sqlite", "file:"+s.path+"?_pragma=busy_timeout(5000)"
	if pg, ok := s.be.(*postgresBackend); ok {
		driver, dsn = "pgx", pg.url
	}
	sqldb, err := sql.Open(driver, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sqldb.Close() })
	return Raw{db{DB: sqldb, be: s.be}}
}

func (r Raw) Exec(q string, args ...any) (sql.Result, error) {
	return r.d.ExecContext(context.Background(), q, args...)
}

func (r Raw) Query(q string, args ...any) (*sql.Rows, error) {
	return r.d.QueryContext(context.Background(), q, args...)
}

func (r Raw) QueryRow(q string, args ...any) *sql.Row {
	return r.d.QueryRowContext(context.Background(), q, args...)
}

func (r Raw) Close() error { return r.d.Close() }

// OneWriter makes the stores tb opens on PostgreSQL run one writer, as
// SQLite's do, for tests of how the writer batches; tb must not run in
// parallel with tests that open stores.
func OneWriter(tb testing.TB) {
	old := pgWriters
	pgWriters = 1
	tb.Cleanup(func() { pgWriters = old })
}

// AuditInOneWrite appends n events in one write, so one batch chains them
// all.
func AuditInOneWrite(ctx context.Context, s *Store, n int) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		for i := range n {
			if err := s.appendAudit(ctx, tx, "note", "", map[string]any{"n": i}); err != nil {
				return err
			}
		}
		return nil
	})
}

// AuditChainedByGateway appends n events chained by the gateway itself,
// as every journal did before PostgreSQL's server chained them (migration
// 0012): under the chain's lock, after the head it reads.
func AuditChainedByGateway(ctx context.Context, s *Store, n int) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		if err := tx.lock(ctx, int64(auditLock)); err != nil {
			return err
		}
		return chainAudit(ctx, tx, notes(ctx, s, "note.before", n))
	})
}

// WriterCacheKiB is the page cache of s's writer connection, in KiB, as
// SQLite reports it (a negative cache_size is KiB).
func WriterCacheKiB(ctx context.Context, s *Store) (int, error) {
	var n int
	err := s.exclusive(ctx, func(ctx context.Context, c *sql.Conn) error {
		return c.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&n)
	})
	return -n, err
}

// WriteSQL runs fn as one write of s's, its statements through exec.
func WriteSQL(ctx context.Context, s *Store, fn func(exec func(query string, args ...any) error) error) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return fn(func(query string, args ...any) error {
			_, err := tx.ExecContext(ctx, query, args...)
			return err
		})
	})
}

// CommitSends ends a transaction of n audit events on s's PostgreSQL
// journal the way a batch does (backend.commit), on a connection of its
// own, and reports how many times the gateway sent to the server for it:
// each send the gateway then waits on is a round trip. The commit is done
// once before it is counted, so statements are prepared as in a writer
// that has run before.
func CommitSends(ctx context.Context, s *Store, n int) (int64, error) {
	pg, ok := s.be.(*postgresBackend)
	if !ok {
		return 0, fmt.Errorf("not a PostgreSQL journal")
	}
	cfg, err := pgConfig(pg.url)
	if err != nil {
		return 0, err
	}
	var sends atomic.Int64
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		return countingConn{c, &sends}, err
	}
	sqldb := stdlib.OpenDB(*cfg)
	defer sqldb.Close()
	conn, err := sqldb.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	t := newTxn(conn, pg)
	defer t.close()
	events := notes(ctx, s, "note", n)
	var counted int64
	for range 2 {
		if err := pg.begin(ctx, t); err != nil {
			return 0, err
		}
		before := sends.Load()
		if stage, err := pg.commit(ctx, t, events); err != nil {
			return 0, fmt.Errorf("%s: %w", stage, err)
		}
		counted = sends.Load() - before
	}
	return counted, nil
}

// countingConn counts the writes on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// notes are n audit events named event, numbered in their details.
func notes(ctx context.Context, s *Store, event string, n int) []AuditEvent {
	events := make([]AuditEvent, n)
	for i := range events {
		events[i] = AuditEvent{At: s.now(), Actor: actorOf(ctx), Event: event, Detail: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	return events
}

// FreezeHoldingBusinessKey stands for a gateway frozen inside a batch (a
// stopped process): a session of s's own pool, with its settings, begins a
// transaction, takes the business key's lock as a claim does, and sends
// nothing more. The session is closed when tb ends, if the server has not
// ended it before.
func FreezeHoldingBusinessKey(tb testing.TB, s *Store, businessKey string) {
	tb.Helper()
	ctx := context.Background()
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		tb.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(businessKeyLockClass), lockHalf(businessKey)); err != nil {
		tb.Fatal(err)
	}
}

// HoldSyncs makes the WAL's fsyncs of s wait until the returned release
// is called; syncs counts those that ran. (SQLite, pipelined only.)
func HoldSyncs(s *Store) (release func(), syncs *atomic.Int64) {
	gate := make(chan struct{})
	syncs = new(atomic.Int64)
	s.SetSyncHook(func(sync func() error) error {
		<-gate
		syncs.Add(1)
		return sync()
	})
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }, syncs
}

// FailSyncs makes every WAL fsync of s fail.
func FailSyncs(s *Store, err error) {
	s.SetSyncHook(func(func() error) error { return err })
}
