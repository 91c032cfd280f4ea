package store

import (
	"context"
	"fmt"
)

// Queries the admin UI needs beyond the journal's own API.

// ApprovalByID returns the approval with id and its operation, or
// ErrNotFound.
func (s *Store) ApprovalByID(ctx context.Context, id int64) (Approval, error) {
	row := s.rdb.QueryRowContext(ctx, `SELECT id, operation_key, fingerprint, status, expires_at, decided_by, decided_at, comment, created_at
		FROM approvals WHERE id = ?`, id)
	a, err := scanApproval(row)
	if err != nil {
		return Approval{}, fmt.Errorf("get approval %d: %w", id, interpretError(err))
	}
	if a.Operation, err = getOperation(ctx, s.rdb, a.OperationKey); err != nil {
		return Approval{}, fmt.Errorf("get approval %d: %w", id, err)
	}
	return a, nil
}
