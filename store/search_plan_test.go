package store

import (
	"strings"
	"testing"
)

// The browser's search walks the key's, the object's and the order's
// indexes, never the whole journal: its cost does not grow with it.
func TestSearchQueryUsesIndexes(t *testing.T) {
	t.Parallel()
	s := planJournal(t)
	for _, f := range []OperationFilter{{Search: "order-77"}, {Search: "INV-1", Status: StatusSucceeded}} {
		q, args := operationQuery(f)
		p := queryPlan(t, s, q, args...)
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
	s := planJournal(t)
	q, args := orderQuery([]string{"invoice.create", "sales_order.create_draft"}, "order-77", 5)
	if p := queryPlan(t, s, q, args...); !strings.Contains(p, "operations_order (order_id=?") {
		t.Errorf("the order's look-up does not walk its index: %s", p)
	}
}
