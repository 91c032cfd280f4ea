package store

import (
	"context"
	"database/sql"
)

// txn is one write's transaction. On SQLite it is the writer's
// transaction on the write connection, whose statements are prepared once
// and kept for the life of the connection (preparing was a good part of
// every write's time). On PostgreSQL it is a transaction of its own on a
// pooled connection (the driver keeps the prepared statements).
type txn struct {
	conn  *sql.Conn // SQLite
	stmts map[string]*sql.Stmt
	tx    *sql.Tx // PostgreSQL
	pg    bool

	// audit holds the write's audit events until it is done (flushAudit),
	// so the chain's head is read, and on PostgreSQL locked, last.
	audit []AuditEvent
}

// maxStmts bounds the kept statements; the journal's writes use a few
// dozen distinct ones.
const maxStmts = 512

func newTxn(conn *sql.Conn) *txn { return &txn{conn: conn, stmts: map[string]*sql.Stmt{}} }

func (t *txn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	st, err := t.conn.PrepareContext(ctx, query)
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
	if t.tx != nil {
		return t.tx.ExecContext(ctx, numbered(query), args...)
	}
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t *txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if t.tx != nil {
		return t.tx.QueryContext(ctx, numbered(query), args...)
	}
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t *txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if t.tx != nil {
		return t.tx.QueryRowContext(ctx, numbered(query), args...)
	}
	st, err := t.stmt(ctx, query)
	if err != nil {
		return t.conn.QueryRowContext(ctx, query, args...) // reports the same error
	}
	return st.QueryRowContext(ctx, args...)
}

// rollback ends the transaction, if one is open, discarding it.
func (t *txn) rollback() {
	t.audit = t.audit[:0]
	if t.tx != nil {
		t.tx.Rollback()
		return
	}
	t.conn.ExecContext(context.Background(), `ROLLBACK`)
}
