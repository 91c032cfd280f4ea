package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
)

// The journal's SQL is written once, in the dialect both backends share:
// "?" placeholders, ON CONFLICT DO NOTHING, RETURNING, conditional
// updates. Where PostgreSQL needs its own words (row locks, "$n"
// placeholders) the backend supplies them; nothing else knows which one
// it has.

// db is a pool of the journal's connections that binds "?" placeholders
// the way its backend wants them.
type db struct {
	*sql.DB
	pg bool
}

func (d db) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return d.DB.ExecContext(ctx, d.bind(query), args...)
}

func (d db) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return d.DB.QueryContext(ctx, d.bind(query), args...)
}

func (d db) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return d.DB.QueryRowContext(ctx, d.bind(query), args...)
}

func (d db) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return d.DB.PrepareContext(ctx, d.bind(query))
}

func (d db) bind(query string) string {
	if !d.pg {
		return query
	}
	return numbered(query)
}

// numbered rewrites "?" placeholders as PostgreSQL's $1, $2, …, leaving
// quoted text alone. The journal's queries are constants, so each is
// rewritten once.
func numbered(query string) string {
	if q, ok := numberedCache.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n, quoted := 0, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	q := b.String()
	numberedCache.Store(query, q)
	return q
}

var numberedCache sync.Map // query → numbered query

// forUpdate is the clause that locks the rows a read in a write
// transaction returns until the transaction ends: PostgreSQL's FOR
// UPDATE. SQLite's writer holds the whole journal's write lock already.
func (t *txn) forUpdate() string {
	if t.pg {
		return ` FOR UPDATE`
	}
	return ``
}

// skipLocked is forUpdate for picking work: rows another instance is
// taking are passed over rather than waited for.
func (t *txn) skipLocked() string {
	if t.pg {
		return ` FOR UPDATE SKIP LOCKED`
	}
	return ``
}
