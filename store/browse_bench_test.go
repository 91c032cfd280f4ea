package store_test

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"testing"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// BenchmarkListOperations pages through a journal of a million rows
// (BROWSE_ROWS overrides the size): the newest page, a page deep in the
// keyset, and filtered pages. Rows are written in one statement, not
// through Claim, so the set-up takes seconds.
func BenchmarkListOperations(b *testing.B) {
	rows := 1_000_000
	if n, err := strconv.Atoi(os.Getenv("BROWSE_ROWS")); err == nil && n > 0 {
		rows = n
	}
	// SQLite only: rows are made by a recursive SQLite statement.
	j := storetest.SQLite
	s := j.Open(b)
	db, err := sql.Open("sqlite", s.Path())
	if err != nil {
		b.Fatal(err)
	}
	_, err = db.Exec(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO operations (operation_key, intent, fingerprint, status, target_system, agent, payload,
			attempt_count, target_object_id, created_at, updated_at, completed_at)
		SELECT 'test:invoice.create:bench-' || i || ':v1',
			CASE i % 3 WHEN 0 THEN 'invoice.create' WHEN 1 THEN 'crm.callback.create' ELSE 'payment.charge' END,
			printf('%064d', i),
			CASE WHEN i % 1000 = 0 THEN 'unknown' WHEN i % 50 = 0 THEN 'failed_final' ELSE 'succeeded' END,
			CASE i % 3 WHEN 0 THEN 'onec' WHEN 1 THEN 'crm' ELSE 'payments' END,
			'agent-' || (i % 7), '{}', 1, 'OBJ-' || i,
			strftime('%Y-%m-%dT%H:%M:%S.000000Z', '2026-01-01', '+' || (i * 20) || ' seconds'),
			strftime('%Y-%m-%dT%H:%M:%S.000000Z', '2026-01-01', '+' || (i * 20) || ' seconds'),
			strftime('%Y-%m-%dT%H:%M:%S.000000Z', '2026-01-01', '+' || (i * 20) || ' seconds')
		FROM n`, rows)
	db.Close()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	deep, err := s.ListOperations(ctx, store.OperationFilter{Limit: 500})
	if err != nil || len(deep) == 0 {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    store.OperationFilter
	}{
		{"Newest", store.OperationFilter{}},
		{"Deep", store.OperationFilter{BeforeCreated: deep[len(deep)-1].CreatedAt, BeforeKey: deep[len(deep)-1].Key}},
		{"Status", store.OperationFilter{Status: store.StatusUnknown}},
		{"AgentIntent", store.OperationFilter{Agent: "agent-3", Intent: "payment.charge"}},
		{"KeyPrefix", store.OperationFilter{KeyPrefix: "test:invoice.create:bench-4242"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.ListOperations(ctx, c.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
