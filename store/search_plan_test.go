package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The browser's search walks the key's, the object's and the order's
// indexes, never the whole journal: its cost does not grow with it.
func TestSearchQueryUsesIndexes(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, f := range []OperationFilter{{Search: "order-77"}, {Search: "INV-1", Status: StatusSucceeded}} {
		q, args := operationQuery(f)
		rows, err := s.rdb.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		for _, want := range []string{"operations_order (order_id=?", "operations_object (target_object_id=?", "USING INDEX sqlite_autoindex_operations_1 (operation_key=?)"} {
			if !strings.Contains(p, want) {
				t.Errorf("search %+v: plan lacks %q: %s", f, want, p)
			}
		}
		if strings.Contains(p, "SCAN operations") {
			t.Errorf("search %+v scans the journal: %s", f, p)
		}
	}
}

// The approval card's look-up of the order's other operations (its 1C
// invoice) walks the order's index, never every operation of the intent.
func TestOrderQueryUsesItsIndex(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q, args := orderQuery([]string{"invoice.create", "sales_order.create_draft"}, "order-77", 5)
	rows, err := s.rdb.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	rows.Close()
	if p := strings.Join(plan, "; "); !strings.Contains(p, "operations_order (order_id=?") {
		t.Errorf("the order's look-up does not walk its index: %s", p)
	}
}
