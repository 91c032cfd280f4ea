package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// OrderOperations are the operations of the given intents whose request
// names order orderID (its top-level order_id, recorded beside the row),
// newest first, at most limit: the 1C invoice of the order a payment is
// approved for, say. It walks the order's index, so an approval card
// costs the same on a journal of millions of operations.
func (s *Store) OrderOperations(ctx context.Context, intents []string, orderID string, limit int) ([]Operation, error) {
	if orderID == "" || len(intents) == 0 {
		return nil, nil
	}
	q, args := orderQuery(intents, orderID, limit)
	ops, err := s.queryOperations(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("order operations: %w", err)
	}
	return ops, nil
}

// orderQuery is OrderOperations' query and its arguments.
func orderQuery(intents []string, orderID string, limit int) (string, []any) {
	q := `SELECT ` + operationColumns + ` FROM operations WHERE order_id = ? AND intent IN (?` + strings.Repeat(`, ?`, len(intents)-1) + `)
		ORDER BY created_at DESC, operation_key DESC LIMIT ?`
	args := make([]any, 0, len(intents)+2)
	args = append(args, orderID)
	for _, name := range intents {
		args = append(args, name)
	}
	return q, append(args, min(max(limit, 1), 50))
}

// orderOf is the order a request names (its top-level order_id when a
// string), recorded beside the operation so the browser finds it by its
// index; nil when it names none.
func orderOf(payload []byte) any {
	var p struct {
		OrderID json.RawMessage `json:"order_id"` // the rest of the request is skipped, not decoded
	}
	var s string
	if json.Unmarshal(payload, &p) != nil || json.Unmarshal(p.OrderID, &s) != nil || s == "" {
		return nil
	}
	return s
}
