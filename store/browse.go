package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// OperationFilter selects operations for the browser. Zero fields select
// everything.
type OperationFilter struct {
	Status    Status
	Intent    string
	Target    string
	Agent     string
	KeyPrefix string
	// Search finds the operations of an order (its request's top-level
	// order_id), of an object at a target (INV-…, a payment id, a
	// Ref_Key) or of a key, each matched whole, each by its own index.
	Search      string
	NeedsReview bool // only rows flagged for a person
	From, To    time.Time
	// Keyset pagination: rows strictly older than (BeforeCreated, BeforeKey).
	BeforeCreated time.Time
	BeforeKey     string
	Limit         int // default 50, at most 500
}

// ListOperations returns operations matching f, newest first. Pages are
// keyset-based (never OFFSET), so every page costs the same.
func (s *Store) ListOperations(ctx context.Context, f OperationFilter) ([]Operation, error) {
	q, args := operationQuery(f)
	ops, err := s.queryOperations(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list operations: %w", err)
	}
	return ops, nil
}

// operationQuery is ListOperations' query for f and its arguments.
func operationQuery(f OperationFilter) (string, []any) {
	q := `SELECT ` + operationColumns + ` FROM operations WHERE 1=1`
	var args []any
	if f.Search != "" {
		// The matches are few and found first, each by its own index (a
		// cross join keeps SQLite from starting at another filter's); the
		// other filters then only sift them.
		q = `SELECT ` + operationColumns + ` FROM (SELECT CAST(? AS TEXT) AS k UNION
			SELECT operation_key FROM operations WHERE target_object_id = ? UNION
			SELECT operation_key FROM operations WHERE order_id = ?) AS m
			CROSS JOIN operations WHERE operation_key = m.k`
		args = append(args, f.Search, f.Search, f.Search)
	}
	add := func(clause string, a ...any) { q += " AND " + clause; args = append(args, a...) }
	if f.Status != "" {
		add(`status = ?`, f.Status)
	}
	if f.Intent != "" {
		add(`intent = ?`, f.Intent)
	}
	if f.Target != "" {
		add(`target_system = ?`, f.Target)
	}
	if f.Agent != "" {
		add(`agent = ?`, f.Agent)
	}
	if f.KeyPrefix != "" {
		add(`operation_key >= ? AND operation_key < ?`, f.KeyPrefix, f.KeyPrefix+"\U0010FFFF")
	}
	if f.NeedsReview {
		add(`needs_review = 1`)
	}
	if !f.From.IsZero() {
		add(`created_at >= ?`, formatTime(f.From))
	}
	if !f.To.IsZero() {
		add(`created_at < ?`, formatTime(f.To))
	}
	if !f.BeforeCreated.IsZero() {
		c := formatTime(f.BeforeCreated)
		add(`(created_at < ? OR (created_at = ? AND operation_key < ?))`, c, c, f.BeforeKey)
	}
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q += ` ORDER BY created_at DESC, operation_key DESC LIMIT ?`
	args = append(args, min(f.Limit, 500))
	return q, args
}

// Unfinished returns every operation not yet final (succeeded or
// failed_final), oldest first: what may still run under the definition
// it was accepted with.
func (s *Store) Unfinished(ctx context.Context) ([]Operation, error) {
	ops, err := s.queryOperations(ctx, `SELECT `+operationColumns+` FROM operations
		WHERE status NOT IN ('succeeded', 'failed_final') ORDER BY created_at, operation_key`)
	if err != nil {
		return nil, fmt.Errorf("unfinished operations: %w", err)
	}
	return ops, nil
}

// queryOperations runs a query selecting operationColumns on a reader.
func (s *Store) queryOperations(ctx context.Context, q string, args ...any) ([]Operation, error) {
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Operation
	for rows.Next() {
		op, err := scanOperation(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	return out, rows.Err()
}

// Summary is what the dashboard shows.
type Summary struct {
	ByStatus         map[Status]int
	ApprovalsWaiting int
	NeedsReview      int
	OldestUnresolved time.Time // creation of the oldest non-terminal operation; zero if none
}

// Summarize counts operations by status and what waits for people.
func (s *Store) Summarize(ctx context.Context) (Summary, error) {
	sum := Summary{ByStatus: map[Status]int{}}
	rows, err := s.rdb.QueryContext(ctx, `SELECT status, count(*) FROM operations GROUP BY status`)
	if err != nil {
		return Summary{}, fmt.Errorf("summarize: %w", err)
	}
	for rows.Next() {
		var st Status
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			rows.Close()
			return Summary{}, fmt.Errorf("summarize: %w", err)
		}
		sum.ByStatus[st] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return Summary{}, fmt.Errorf("summarize: %w", err)
	}
	var oldest sql.NullString
	err = s.rdb.QueryRowContext(ctx, `
		SELECT (SELECT count(*) FROM approvals WHERE status = 'pending'),
		       (SELECT count(*) FROM operations WHERE needs_review = 1),
		       (SELECT min(created_at) FROM operations WHERE status NOT IN ('succeeded', 'failed_final'))`).
		Scan(&sum.ApprovalsWaiting, &sum.NeedsReview, &oldest)
	if err != nil {
		return Summary{}, fmt.Errorf("summarize: %w", err)
	}
	sum.OldestUnresolved = parseTime(oldest)
	return sum, nil
}
