package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// fillChunk is how many operations one write of Fill inserts.
const fillChunk = 2000

// Fill adds n final operations to the journal as a gateway that has run
// for a while leaves them, for measuring how the gateway behaves on a
// large journal (oncegate bench --fill): invoices of n orders by one
// agent, created over the 30 days before now, each with the audit events
// a served operation has (claimed, attempt, succeeded), chained as any
// others. Keys start with prefix, so they never meet a served one. It
// writes through the journal's writer, fillChunk operations a write, and
// calls progress after each.
func (s *Store) Fill(ctx context.Context, prefix string, n int, progress func(done int)) error {
	start := s.now().Add(-30 * 24 * time.Hour)
	step := 30 * 24 * time.Hour / time.Duration(max(n, 1))
	for done := 0; done < n; {
		m := min(fillChunk, n-done)
		from := done
		err := s.write(ctx, func(ctx context.Context, tx *txn) error {
			for i := from; i < from+m; i++ {
				if err := s.fillOne(ctx, tx, prefix, i, start.Add(time.Duration(i)*step)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("fill: %w", err)
		}
		done += m
		if progress != nil {
			progress(done)
		}
	}
	return nil
}

// fillOne inserts the i-th filler operation, made at at.
func (s *Store) fillOne(ctx context.Context, tx *txn, prefix string, i int, at time.Time) error {
	order := fmt.Sprintf("%s-order-%d", prefix, i)
	key := fmt.Sprintf("test:invoice.create:%s-%d:v1", prefix, i)
	payload := fmt.Sprintf(`{"currency":"RUB","customer_id":"customer-%d","items":[{"price_minor":62500,"product_id":"product-%d","quantity":%d,"unit":"pcs"}],"order_id":%q,"organization_id":"org-main"}`,
		1000+i%5000, 700+i%300, 1+i%5, order)
	fp := sha256.Sum256([]byte(payload + key))
	bk := sha256.Sum256([]byte("org-main\x00" + order))
	when := formatTime(at)
	done := formatTime(at.Add(40 * time.Millisecond))
	_, err := tx.ExecContext(ctx, `
		INSERT INTO operations (operation_key, intent, fingerprint, status, target_system, agent,
			actor_id, request_id, payload, attempt_count, last_attempt_at, target_object_id, result,
			created_at, updated_at, completed_at, intent_version, intent_digest, business_key, order_id)
		VALUES (?, 'invoice.create', ?, ?, 'onec', 'fill-agent', '', ?, ?, 1, ?, ?, ?, ?, ?, ?, 1, '', ?, ?)`,
		key, hex.EncodeToString(fp[:]), StatusSucceeded, key, payload, when,
		fmt.Sprintf("INV-%s-%d", prefix, i), fmt.Sprintf(`{"number":"%06d"}`, i%1000000), when, done, done, hex.EncodeToString(bk[:]), order)
	if err != nil {
		return interpretError(err)
	}
	for _, ev := range []string{"operation.started", "operation.attempt", "operation.succeeded"} {
		if err := s.appendAudit(ctx, tx, ev, key, map[string]any{"intent": "invoice.create", "target": "onec"}); err != nil {
			return err
		}
	}
	return nil
}
