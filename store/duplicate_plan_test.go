package store

import (
	"strings"
	"testing"
)

// The duplicate look-up, run inside every claim of an intent with a rule,
// searches the business key's index, not every operation of the intent
// in the window: its cost does not grow with the journal.
func TestDuplicateQuerySearchesTheBusinessKey(t *testing.T) {
	t.Parallel()
	s := planJournal(t)
	for _, q := range []string{liveOriginalQuery, liveDuplicateQuery} {
		p := queryPlan(t, s, q, "invoice.create", "bk", "2026-01-01T00:00:00Z", "k")
		if !strings.Contains(p, "USING INDEX operations_business_key (intent=? AND business_key=?") || strings.Contains(p, "TEMP B-TREE") {
			t.Fatalf("the duplicate look-up's plan: %s", p)
		}
	}
}
