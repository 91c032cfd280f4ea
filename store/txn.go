package store

import (
	"context"
	"database/sql"
)

// txn is the writer's transaction on the write connection. Its statements
// are prepared once and kept for the life of the connection: preparing
// (parsing and planning) was a good part of every write's time.
type txn struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	be    backend
	// broken: a batch failed on PostgreSQL; the writer checks the
	// connection before the next (reconnect).
	broken bool

	// audit holds the events of the batch's writes until the commit
	// chains them, so the chain's head is read, and on PostgreSQL locked,
	// last.
	audit []AuditEvent
}

// maxStmts bounds the kept statements; the journal's writes use a few
// dozen distinct ones.
const maxStmts = 512

func newTxn(conn *sql.Conn, be backend) *txn {
	return &txn{conn: conn, stmts: map[string]*sql.Stmt{}, be: be}
}

func (t *txn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	st, err := t.conn.PrepareContext(ctx, t.be.bind(query))
	if err != nil {
		return nil, err
	}
	if len(t.stmts) >= maxStmts {
		t.close()
	}
	t.stmts[query] = st
	return st, nil
}

// close closes the kept statements.
func (t *txn) close() {
	for q, st := range t.stmts {
		st.Close()
		delete(t.stmts, q)
	}
}

func (t *txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return t.conn.QueryRowContext(ctx, t.be.bind(query), args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// rollback ends the transaction, if one is open, discarding it.
func (t *txn) rollback() {
	t.audit = t.audit[:0]
	t.conn.ExecContext(context.Background(), `ROLLBACK`)
}

// forUpdate is the clause that locks the rows a read returns until the
// transaction ends (backend.forUpdate).
func (t *txn) forUpdate() string { return t.be.forUpdate() }

// skipLocked is forUpdate for picking work (backend.skipLocked).
func (t *txn) skipLocked() string { return t.be.skipLocked() }

// lock takes a lock on keys until the transaction ends (backend.lock).
func (t *txn) lock(ctx context.Context, keys ...any) error { return t.be.lock(ctx, t, keys...) }
