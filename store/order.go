package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// OrderOperations are the operations of the given intents whose request
// names order orderID (its top-level order_id), newest first, at most
// limit: the 1C invoice of the order a payment is approved for, say.
// Requests are stored in their canonical form, so the order's field is
// found as written; each candidate is read again to be sure.
func (s *Store) OrderOperations(ctx context.Context, intents []string, orderID string, limit int) ([]Operation, error) {
	if orderID == "" || len(intents) == 0 {
		return nil, nil
	}
	var lit bytes.Buffer
	enc := json.NewEncoder(&lit)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(orderID); err != nil {
		return nil, fmt.Errorf("order operations: %w", err)
	}
	esc := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace
	pattern := `%"order_id":` + esc(strings.TrimSpace(lit.String())) + `%`
	q := `SELECT ` + operationColumns + ` FROM operations WHERE intent IN (?` + strings.Repeat(`, ?`, len(intents)-1) + `)
		AND payload LIKE ? ESCAPE '!' ORDER BY created_at DESC, operation_key DESC LIMIT ?`
	args := make([]any, 0, len(intents)+2)
	for _, in := range intents {
		args = append(args, in)
	}
	args = append(args, pattern, min(max(limit, 1), 50)*4)
	ops, err := s.queryOperations(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("order operations: %w", err)
	}
	out := ops[:0]
	for _, op := range ops {
		var p struct {
			OrderID *string `json:"order_id"`
		}
		if json.Unmarshal(op.Payload, &p) == nil && p.OrderID != nil && *p.OrderID == orderID && len(out) < limit {
			out = append(out, op)
		}
	}
	return out, nil
}

// orderOf is the order a request names (its top-level order_id when a
// string), recorded beside the operation so the browser finds it by its
// index; nil when it names none.
func orderOf(payload []byte) any {
	var p struct {
		OrderID any `json:"order_id"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return nil
	}
	if s, ok := p.OrderID.(string); ok && s != "" {
		return s
	}
	return nil
}
