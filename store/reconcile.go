package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// dueQuery finds the operations due for the reconciler among the started
// and unknown rows, read through the index by status, so its cost follows
// the live operations, not the journal's size.
const dueQuery = `SELECT ` + operationColumns + ` FROM operations
	WHERE (status = 'unknown' AND (next_check_at IS NULL OR next_check_at <= ?))
	   OR (status = 'started' AND lease_until <= ?)
	ORDER BY coalesce(next_check_at, lease_until) LIMIT ?`

// DueForReconcile returns up to limit operations whose outcome must be
// established at the target: unknown rows whose next check is due, and
// started rows whose lease has expired (their holder is gone).
func (s *Store) DueForReconcile(ctx context.Context, limit int) ([]Operation, error) {
	now := formatTime(s.now())
	ops, err := s.queryOperations(ctx, dueQuery, now, now, limit)
	if err != nil {
		return nil, fmt.Errorf("due for reconcile: %w", err)
	}
	return ops, nil
}

// TakeForReconcile takes the lease of an operation that DueForReconcile
// returned, if it is still as it was read. ErrLeaseLost when it moved on.
func (s *Store) TakeForReconcile(ctx context.Context, op Operation, owner string, lease time.Duration) (Operation, error) {
	var r0 Operation
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		r0, err = s.takeForReconcileTx(ctx, tx, op, owner, lease)
		return err
	})
	return r0, err
}

func (s *Store) takeForReconcileTx(ctx context.Context, tx *txn, op Operation, owner string, lease time.Duration) (Operation, error) {
	cur, err := getOperation(ctx, tx, op.Key)
	if err != nil {
		return Operation{}, fmt.Errorf("take for reconcile: %w", err)
	}
	if cur.Status != op.Status || cur.UpdatedAt != op.UpdatedAt || s.live(cur, s.now()) {
		return Operation{}, fmt.Errorf("take for reconcile %q: %w", op.Key, ErrLeaseLost)
	}
	if cur, err = s.takeLease(ctx, tx, cur, owner, lease); err != nil {
		return Operation{}, fmt.Errorf("take for reconcile: %w", err)
	}
	return cur, nil
}

// LookupFailed puts an operation whose lookup failed back to unknown,
// counts the failure, schedules the next check, and flags the row for a
// person's review once failures reach reviewAfter. objectID, when the
// target named one (a payment not final yet), is kept. answer is what the
// target said, already made safe to show (redacted, cut short): the audit
// event keeps it, so whoever reviews the operation reads why the last
// look-up failed. It reports whether the row is now flagged.
func (s *Store) LookupFailed(ctx context.Context, key, owner, objectID, answer string, reviewAfter int, next time.Time) (bool, error) {
	now := formatTime(s.now())
	// The row is leased by owner, so it cannot change between this read
	// and the update: the failure that flags it is audited as such.
	before, err := s.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("lookup failed: %w", err)
	}
	event := "operation.lookup_failed"
	if !before.NeedsReview && before.LookupFailures+1 >= reviewAfter {
		event = "operation.flagged_for_review"
	}
	detail := map[string]any{"next_check_at": formatTime(next), "lookup_failures": before.LookupFailures + 1}
	if answer != "" {
		detail["answer"] = answer
	}
	err = s.transition(ctx, event, key, detail, `
		UPDATE operations
		SET status = 'unknown', lookup_failures = lookup_failures + 1,
			target_object_id = coalesce(?, target_object_id),
			needs_review = CASE WHEN lookup_failures + 1 >= ? THEN 1 ELSE needs_review END,
			lease_owner = NULL, lease_until = NULL, next_check_at = ?, updated_at = ?
		WHERE operation_key = ? AND status = 'started' AND lease_owner = ?`,
		nullString(objectID), reviewAfter, formatTime(next), now, key, owner)
	if err != nil {
		return false, err
	}
	op, err := s.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("lookup failed: %w", err)
	}
	return op.NeedsReview, nil
}

// PurgeTerminal deletes up to batch succeeded or failed_final operations
// of the target system completed before cutoff, oldest first, and returns
// how many it deleted. Non-terminal rows are never deleted. Each call is
// one short transaction, so a purge in a loop of calls never holds the
// writer for long. A batch that deletes anything is audited as one
// retention.purged event with its count and its oldest and newest keys (by
// completion), so an operator can tell a purged key from one never used.
func (s *Store) PurgeTerminal(ctx context.Context, system string, cutoff time.Time, batch int) (int, error) {
	var r0 int
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		r0, err = s.purgeTerminalTx(ctx, tx, system, cutoff, batch)
		return err
	})
	return r0, err
}

func (s *Store) purgeTerminalTx(ctx context.Context, tx *txn, system string, cutoff time.Time, batch int) (int, error) {
	rows, err := tx.QueryContext(ctx, `
		DELETE FROM operations WHERE operation_key IN (
			SELECT operation_key FROM operations
			WHERE status IN ('succeeded', 'failed_final') AND completed_at < ? AND target_system = ?
			ORDER BY completed_at, operation_key LIMIT ?)
		RETURNING operation_key, completed_at`, formatTime(cutoff), system, batch)
	if err != nil {
		return 0, fmt.Errorf("purge operations: %w", err)
	}
	// The rows come back in no particular order: the oldest and newest
	// are found by completion time, then key.
	type purged struct{ completed, key string }
	var n int
	var oldest, newest purged
	for rows.Next() {
		var p purged
		if err := rows.Scan(&p.key, &p.completed); err != nil {
			rows.Close()
			return 0, fmt.Errorf("purge operations: %w", err)
		}
		if n == 0 || p.completed < oldest.completed || (p.completed == oldest.completed && p.key < oldest.key) {
			oldest = p
		}
		if n == 0 || p.completed > newest.completed || (p.completed == newest.completed && p.key > newest.key) {
			newest = p
		}
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("purge operations: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	detail := map[string]any{
		"target": system, "count": n, "completed_before": formatTime(cutoff),
		"oldest_key": oldest.key, "oldest_completed_at": oldest.completed,
		"newest_key": newest.key, "newest_completed_at": newest.completed,
	}
	if err := s.appendAudit(ctx, tx, "retention.purged", "", detail); err != nil {
		return 0, err
	}
	return n, nil
}

// Resolution is a person's word on an unknown operation.
type Resolution struct {
	// Found says the effect is at the target; ObjectID is its id there,
	// required when Found.
	Found    bool
	ObjectID string
	// Result is what the target answered for that object when it was
	// checked there: the agent's result, as a look-up would have given it.
	Result json.RawMessage
	// Checked says the target confirmed the object can be the effect;
	// Unchecked, when it did not, says why it could not tell (in words
	// safe to show), so the trail says the id stands on a person's word.
	Checked   bool
	Unchecked string
	// Reason is the person's own, mandatory.
	Reason string
}

// ResolveByHand settles an unknown operation on a person's word, with a
// mandatory reason: found at the target (an object id required) makes it
// succeeded with the result the target confirmed, if it was checked; not
// there makes it failed_retryable, safe for the agent to send again. Only
// an unknown row whose lease is free can be resolved.
func (s *Store) ResolveByHand(ctx context.Context, key string, r Resolution) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.resolveByHandTx(ctx, tx, key, r)
	})
}

func (s *Store) resolveByHandTx(ctx context.Context, tx *txn, key string, r Resolution) error {
	var err error
	if r.Reason == "" {
		return fmt.Errorf("resolve by hand: %w: a reason is required", ErrInvalid)
	}
	if r.Found && r.ObjectID == "" {
		return fmt.Errorf("resolve by hand: %w: the target's object id is required", ErrInvalid)
	}
	now := formatTime(s.now())
	var res sql.Result
	detail := map[string]any{"found": r.Found, "object_id": r.ObjectID, "reason": r.Reason}
	if r.Found {
		res, err = tx.ExecContext(ctx, `
			UPDATE operations SET status = 'succeeded', target_object_id = ?, result = ?,
				error_code = NULL, error_field = NULL, error_message = NULL, needs_review = 0,
				next_check_at = NULL, updated_at = ?, completed_at = ?
			WHERE operation_key = ? AND status = 'unknown' AND lease_owner IS NULL`, r.ObjectID, nullJSON(r.Result), now, now, key)
		detail["checked"] = r.Checked
		if !r.Checked && r.Unchecked != "" {
			detail["check"] = r.Unchecked
		}
	} else {
		res, err = tx.ExecContext(ctx, `
			UPDATE operations SET status = 'failed_retryable', error_code = 'TARGET_UNAVAILABLE',
				error_message = 'a person found no effect at the target; send the same request again to execute it',
				needs_review = 0, next_check_at = NULL, updated_at = ?
			WHERE operation_key = ? AND status = 'unknown' AND lease_owner IS NULL`, now, key)
	}
	if err != nil {
		return fmt.Errorf("resolve by hand: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("resolve by hand %q: %w: the operation is not unknown (or is being reconciled right now)", key, ErrConflict)
	}
	return s.appendAudit(ctx, tx, "operation.resolved_by_hand", key, detail)
}

// Holds reports ErrLeaseLost unless owner still holds key's lease: the
// row is started under it. Another claim takes a lease only by writing its
// own owner, so a row still under owner's has not been taken, however late
// its time.
func (s *Store) Holds(ctx context.Context, key, owner string) error {
	var n int
	err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM operations
		WHERE operation_key = ? AND status = 'started' AND lease_owner = ?`, key, owner).Scan(&n)
	if err != nil {
		return fmt.Errorf("check lease of %q: %w", key, errors.Join(ErrUnavailable, err))
	}
	if n != 1 {
		return fmt.Errorf("check lease of %q: %w", key, ErrLeaseLost)
	}
	return nil
}
