package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
)

// ApprovalStatus is the state of an approval: pending until a person
// decides or its time runs out; an approved one is consumed when the
// executor takes its operation.
type ApprovalStatus string

// Approval states.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalDenied   ApprovalStatus = "denied"
	ApprovalExpired  ApprovalStatus = "expired"
	ApprovalConsumed ApprovalStatus = "consumed"
)

// Errors of approval decisions.
var (
	// ErrApprovalExpired: the approval's time ran out before the decision.
	ErrApprovalExpired = errors.New("approval expired")
	// ErrApprovalDecided: the approval was already decided (or consumed).
	ErrApprovalDecided = errors.New("approval already decided")
)

// Approval is a person's decision on one money operation, bound to its
// key and fingerprint.
type Approval struct {
	ID           int64
	OperationKey string
	Fingerprint  string
	Status       ApprovalStatus
	ExpiresAt    time.Time
	DecidedBy    string
	DecidedAt    time.Time
	Comment      string
	CreatedAt    time.Time
	// Kind is ApprovalMoney, or ApprovalDuplicate: a person decides
	// whether a held operation duplicates an earlier one (its
	// Operation.DuplicateOf). ThenMoney: once it is found not to be, the
	// operation still needs its money approval.
	Kind      string
	ThenMoney bool
	Operation Operation // the operation it is for
}

// Approvals returns the approvals in status (all when ""), oldest first,
// each with its operation.
func (s *Store) Approvals(ctx context.Context, status ApprovalStatus, limit int) ([]Approval, error) {
	if limit <= 0 {
		limit = 200
	}
	q := `SELECT a.id, a.operation_key, a.fingerprint, a.status, a.expires_at, a.decided_by, a.decided_at, a.comment, a.created_at, a.kind, a.then_money
		FROM approvals a WHERE (? = '' OR a.status = ?) ORDER BY a.id LIMIT ?`
	rows, err := s.rdb.QueryContext(ctx, q, status, status, limit)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	var out []Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list approvals: %w", err)
		}
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	for i := range out {
		if out[i].Operation, err = s.Get(ctx, out[i].OperationKey); err != nil {
			return nil, fmt.Errorf("list approvals: %w", err)
		}
	}
	return out, nil
}

// ApprovalByID returns the approval with id and its operation, or
// ErrNotFound.
func (s *Store) ApprovalByID(ctx context.Context, id int64) (Approval, error) {
	row := s.rdb.QueryRowContext(ctx, `SELECT id, operation_key, fingerprint, status, expires_at, decided_by, decided_at, comment, created_at, kind, then_money
		FROM approvals WHERE id = ?`, id)
	a, err := scanApproval(row)
	if err != nil {
		return Approval{}, fmt.Errorf("get approval %d: %w", id, interpretError(err))
	}
	if a.Operation, err = s.Get(ctx, a.OperationKey); err != nil {
		return Approval{}, fmt.Errorf("get approval %d: %w", id, err)
	}
	return a, nil
}

// ApprovalByKey returns the approval of an operation, or ErrNotFound.
func (s *Store) ApprovalByKey(ctx context.Context, key string) (Approval, error) {
	row := s.rdb.QueryRowContext(ctx, `SELECT id, operation_key, fingerprint, status, expires_at, decided_by, decided_at, comment, created_at, kind, then_money
		FROM approvals WHERE operation_key = ?`, key)
	a, err := scanApproval(row)
	if err != nil {
		return Approval{}, fmt.Errorf("get approval: %w", interpretError(err))
	}
	return a, nil
}

func scanApproval(sc scanner) (Approval, error) {
	var a Approval
	var expires, created string
	var by, at sql.NullString
	var thenMoney int
	if err := sc.Scan(&a.ID, &a.OperationKey, &a.Fingerprint, &a.Status, &expires, &by, &at, &a.Comment, &created, &a.Kind, &thenMoney); err != nil {
		return Approval{}, err
	}
	a.ThenMoney = thenMoney == 1
	a.ExpiresAt = parseTime(sql.NullString{String: expires, Valid: true})
	a.CreatedAt = parseTime(sql.NullString{String: created, Valid: true})
	a.DecidedBy, a.DecidedAt = by.String, parseTime(at)
	return a, nil
}

// DecideApproval records user's decision on the approval id. The decision
// and the expiry check are one conditional update, so no decision lands
// after the expiry. A denial ends the operation failed_final with
// APPROVAL_DENIED in the same transaction; an approval leaves it for the
// executor (TakeApproved).
func (s *Store) DecideApproval(ctx context.Context, id int64, approve bool, user, comment string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.decideApprovalTx(ctx, tx, id, "", approve, user, comment)
	})
}

// DecideReview is DecideApproval for the review of a suspected duplicate
// only: approve says it is not a duplicate. An approval of another kind —
// a money approval, or the one a review of a money operation turned into
// — is ErrApprovalDecided, in the same conditional update, so a person
// allowed to review duplicates never approves money.
func (s *Store) DecideReview(ctx context.Context, id int64, notDuplicate bool, user, comment string) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.decideApprovalTx(ctx, tx, id, ApprovalDuplicate, notDuplicate, user, comment)
	})
}

func (s *Store) decideApprovalTx(ctx context.Context, tx *txn, id int64, onlyKind string, approve bool, user, comment string) error {
	now := formatTime(s.now())
	status := ApprovalDenied
	if approve {
		status = ApprovalApproved
	}
	res, err := tx.ExecContext(ctx, `
		UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, comment = ?
		WHERE id = ? AND status = 'pending' AND expires_at > ? AND (? = '' OR kind = ?)`,
		status, user, now, comment, id, now, onlyKind, onlyKind)
	if err != nil {
		return fmt.Errorf("decide approval: %w", interpretError(err))
	}
	if n, _ := res.RowsAffected(); n != 1 {
		a, err := scanApproval(tx.QueryRowContext(ctx, `SELECT id, operation_key, fingerprint, status, expires_at, decided_by, decided_at, comment, created_at, kind, then_money FROM approvals WHERE id = ?`, id))
		switch {
		case err != nil:
			return fmt.Errorf("decide approval %d: %w", id, interpretError(err))
		case onlyKind != "" && a.Kind != onlyKind:
			return fmt.Errorf("decide approval %d: %w (it is a %s approval now)", id, ErrApprovalDecided, a.Kind)
		case a.Status == ApprovalPending || a.Status == ApprovalExpired:
			return fmt.Errorf("decide approval %d: %w", id, ErrApprovalExpired)
		default:
			return fmt.Errorf("decide approval %d: %w (%s)", id, ErrApprovalDecided, a.Status)
		}
	}
	var key, kind string
	var thenMoney int
	var created, expires string
	if err := tx.QueryRowContext(ctx, `SELECT operation_key, kind, then_money, created_at, expires_at FROM approvals WHERE id = ?`, id).Scan(&key, &kind, &thenMoney, &created, &expires); err != nil {
		return fmt.Errorf("decide approval: %w", err)
	}
	detail := map[string]any{"approval_id": id, "comment": comment, "kind": kind}
	if err := s.appendAudit(ctx, tx, "approval."+string(status), key, detail); err != nil {
		return err
	}
	switch {
	case !approve && kind == ApprovalDuplicate:
		return s.endAwaiting(ctx, tx, key, codes.DuplicateConfirmed, "a person confirmed this operation duplicates an earlier one")
	case !approve:
		return s.endAwaiting(ctx, tx, key, codes.ApprovalDenied, deniedMessage(comment))
	case kind == ApprovalDuplicate && thenMoney == 1:
		return s.awaitMoney(ctx, tx, id, key, created, expires)
	case kind == ApprovalDuplicate:
		// Not a duplicate: it waits for the executor like an approved
		// money operation; the held code goes.
		if _, err := tx.ExecContext(ctx, `UPDATE operations SET error_code = NULL WHERE operation_key = ? AND status = 'awaiting_approval'`, key); err != nil {
			return fmt.Errorf("decide approval: %w", err)
		}
	}
	return nil
}

// awaitMoney turns the decided review of a suspected duplicate of a money
// operation into its money approval: pending again, of kind money, with
// the review's time to decide counted anew. The review's decision stays
// in the audit trail.
func (s *Store) awaitMoney(ctx context.Context, tx *txn, id int64, key, created, expires string) error {
	now := s.now()
	ttl := parseTime(sql.NullString{String: expires, Valid: true}).Sub(parseTime(sql.NullString{String: created, Valid: true}))
	res, err := tx.ExecContext(ctx, `
		UPDATE approvals SET status = 'pending', kind = 'money', then_money = 0, decided_by = NULL, decided_at = NULL,
			created_at = ?, expires_at = ?
		WHERE id = ? AND status = 'approved'`, formatTime(now), formatTime(now.Add(ttl)), id)
	if err != nil {
		return fmt.Errorf("await money approval: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("await money approval %d: %w", id, ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE operations SET error_code = NULL, updated_at = ? WHERE operation_key = ? AND status = 'awaiting_approval'`, formatTime(now), key); err != nil {
		return fmt.Errorf("await money approval: %w", err)
	}
	return s.appendAudit(ctx, tx, "approval.pending", key, map[string]any{"approval_id": id, "kind": ApprovalMoney})
}

// deniedMessage is what the agent is told of a denial: the person's
// reason (required when deciding in the admin UI) and what it may do.
func deniedMessage(reason string) string {
	msg := "a person denied this operation; it will not run"
	if reason != "" {
		msg = fmt.Sprintf("a person denied this operation, giving the reason %q; it will not run", reason)
	}
	return msg + ". This key stays denied: if what was wrong can be put right, send the corrected request under a new key"
}

// endAwaiting ends an operation awaiting approval as failed_final.
func (s *Store) endAwaiting(ctx context.Context, tx *txn, key, code, msg string) error {
	now := formatTime(s.now())
	res, err := tx.ExecContext(ctx, `
		UPDATE operations SET status = 'failed_final', error_code = ?, error_message = ?, updated_at = ?, completed_at = ?
		WHERE operation_key = ? AND status = 'awaiting_approval'`, code, msg, now, now, key)
	if err != nil {
		return fmt.Errorf("end operation awaiting approval: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("end operation awaiting approval %q: %w", key, ErrConflict)
	}
	return s.appendAudit(ctx, tx, "operation.failed_final", key, map[string]any{"code": code})
}

// ExpireApprovals ends every pending approval whose time ran out: the
// approval becomes expired and its operation failed_final with
// APPROVAL_EXPIRED. It returns the keys it ended.
func (s *Store) ExpireApprovals(ctx context.Context) ([]string, error) {
	var r0 []string
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		r0, err = s.expireApprovalsTx(ctx, tx)
		return err
	})
	return r0, err
}

func (s *Store) expireApprovalsTx(ctx context.Context, tx *txn) ([]string, error) {
	now := formatTime(s.now())
	rows, err := tx.QueryContext(ctx, `SELECT id, operation_key FROM approvals WHERE status = 'pending' AND expires_at <= ? ORDER BY id LIMIT 500`+tx.skipLocked(), now)
	if err != nil {
		return nil, fmt.Errorf("expire approvals: %w", err)
	}
	type due struct {
		id  int64
		key string
	}
	var list []due
	for rows.Next() {
		var d due
		if err := rows.Scan(&d.id, &d.key); err != nil {
			rows.Close()
			return nil, fmt.Errorf("expire approvals: %w", err)
		}
		list = append(list, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("expire approvals: %w", err)
	}
	var keys []string
	for _, d := range list {
		res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = 'expired' WHERE id = ? AND status = 'pending'`, d.id)
		if err != nil {
			return nil, fmt.Errorf("expire approvals: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			continue // decided meanwhile
		}
		if err := s.appendAudit(ctx, tx, "approval.expired", d.key, map[string]any{"approval_id": d.id}); err != nil {
			return nil, err
		}
		if err := s.endAwaiting(ctx, tx, d.key, codes.ApprovalExpired, "nobody approved this operation in time"); err != nil {
			return nil, err
		}
		keys = append(keys, d.key)
	}
	return keys, nil
}

// TakeApproved consumes one approved approval whose operation still
// awaits it with the same fingerprint, and moves that operation to
// started under owner's lease with attempt 1 recorded — all in one
// transaction, so an approval runs once. It returns ErrNotFound when none
// is ready.
func (s *Store) TakeApproved(ctx context.Context, owner string, lease time.Duration) (Operation, error) {
	var r0 Operation
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		r0, err = s.takeApprovedTx(ctx, tx, owner, lease)
		return err
	})
	return r0, err
}

func (s *Store) takeApprovedTx(ctx context.Context, tx *txn, owner string, lease time.Duration) (Operation, error) {
	var err error
	var id int64
	var key string
	err = tx.QueryRowContext(ctx, `
		SELECT a.id, a.operation_key FROM approvals a
		JOIN operations o ON o.operation_key = a.operation_key
		WHERE a.status = 'approved' AND o.status = 'awaiting_approval' AND o.fingerprint = a.fingerprint
		ORDER BY a.decided_at LIMIT 1`+tx.skipLocked()).Scan(&id, &key)
	if err != nil {
		return Operation{}, fmt.Errorf("take approved: %w", interpretError(err))
	}
	now := s.now()
	res, err := tx.ExecContext(ctx, `UPDATE approvals SET status = 'consumed' WHERE id = ? AND status = 'approved'`, id)
	if err != nil {
		return Operation{}, fmt.Errorf("take approved: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return Operation{}, fmt.Errorf("take approved %d: %w", id, ErrConflict)
	}
	res, err = tx.ExecContext(ctx, `
		UPDATE operations
		SET status = 'started', lease_owner = ?, lease_until = ?, attempt_count = attempt_count + 1,
			last_attempt_at = ?, updated_at = ?
		WHERE operation_key = ? AND status = 'awaiting_approval'`,
		owner, formatTime(now.Add(lease)), formatTime(now), formatTime(now), key)
	if err != nil {
		return Operation{}, fmt.Errorf("take approved: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return Operation{}, fmt.Errorf("take approved %q: %w", key, ErrConflict)
	}
	if err := s.appendAudit(ctx, tx, "operation.started", key, map[string]any{"approval_id": id}); err != nil {
		return Operation{}, err
	}
	op, err := getOperation(ctx, tx, key)
	if err != nil {
		return Operation{}, fmt.Errorf("take approved: %w", err)
	}
	return op, nil
}
