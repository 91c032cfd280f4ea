package store

import (
	"context"
	"fmt"
)

// CountPendingApprovals is how many approvals wait for a decision.
func (s *Store) CountPendingApprovals(ctx context.Context) (int, error) {
	var n int
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM approvals WHERE status = 'pending'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count approvals: %w", err)
	}
	return n, nil
}
