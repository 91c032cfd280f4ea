package store

import (
	"context"
	"database/sql"
)

// backend is what the journal does differently on SQLite (sqlite.go) and
// on PostgreSQL (postgres.go). The SQL, the rules and group commit
// (write.go) are the same on both; a Store knows which backend it has
// only through this.
type backend interface {
	// bind rewrites a query's "?" placeholders the way the driver takes
	// them.
	bind(query string) string
	// forUpdate is the clause that locks the rows a read in a write
	// transaction returns until the transaction ends; skipLocked is the
	// same for picking work, passing over rows another writer is taking.
	forUpdate() string
	skipLocked() string
	// lock takes a lock held until t's transaction ends on keys (one
	// int64, or two int32: a class and a key), for rules that read before
	// they write and must not interleave with another writer's.
	lock(ctx context.Context, t *txn, keys ...any) error
	// commit ends t's transaction: it writes the batch's audit events,
	// chained to the head of the trail, and commits. A failure says its
	// stage: "append audit" or "commit".
	commit(ctx context.Context, t *txn, events []AuditEvent) (stage string, err error)

	// ready readies the writer's connection for its next batch; while it
	// cannot (the server is unreachable), the batch's writes are refused
	// with its error rather than left waiting for the server.
	ready(t *txn) error
	// readContext bounds one read of the journal.
	readContext(ctx context.Context) (context.Context, context.CancelFunc)
	// batchContext bounds one batch's transaction; writeContext one write
	// in it.
	batchContext() (context.Context, context.CancelFunc)
	writeContext(ctx context.Context) (context.Context, context.CancelFunc)
	// check reports ErrUnavailable while the journal can take no writes
	// whatever is tried (its file is gone).
	check() error
	// begin starts the batch's transaction, taking the write lock.
	begin(ctx context.Context, t *txn) error
	// savepoints reports whether a batch of n writes runs each in a
	// savepoint of its own.
	savepoints(n int) bool
	// conflict reports whether err is a write losing a conflict with
	// another gateway's transaction (a deadlock): its batch may run again.
	conflict(err error) bool
	// failure reports whether err is the journal failing (its disk, file,
	// lock or server) rather than a rule refusing the write.
	failure(err error) bool
	// afterFailure is told that t's batch failed.
	afterFailure(t *txn)

	// shared reports whether other gateways may be writing the journal.
	shared() bool
	// listen hears the changes other gateways commit (watch.go): it
	// calls hearing(true) once listening and wake with each batch's keys,
	// until ctx ends or its connection fails. Only where shared.
	listen(ctx context.Context, hearing func(bool), wake func(keys []string)) error
	// backup writes a copy of s's journal to path, which must not exist.
	backup(ctx context.Context, s *Store, path string) error
}

// db is a pool of the journal's connections that binds "?" placeholders
// the way its backend wants them.
type db struct {
	*sql.DB
	be backend
}

func (d db) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, d.be.bind(query), args...)
}

func (d db) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	noteRead(ctx)
	return d.DB.QueryContext(ctx, d.be.bind(query), args...)
}

func (d db) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	noteRead(ctx)
	return d.DB.QueryRowContext(ctx, d.be.bind(query), args...)
}

func (d db) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return d.DB.PrepareContext(ctx, d.be.bind(query))
}
