package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// The duplicate look-up, run inside every claim of an intent with a rule,
// searches the business key's index, not every operation of the intent
// in the window: its cost does not grow with the journal.
func TestDuplicateQuerySearchesTheBusinessKey(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{liveOriginalQuery, liveDuplicateQuery} {
		rows, err := s.rdb.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, "invoice.create", "bk", "2026-01-01T00:00:00Z", "k")
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
		if p := strings.Join(plan, "; "); !strings.Contains(p, "USING INDEX operations_business_key (intent=? AND business_key=?") || strings.Contains(p, "TEMP B-TREE") {
			t.Fatalf("the duplicate look-up's plan: %s", p)
		}
	}
}
