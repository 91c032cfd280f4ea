package store

import (
	"strings"
	"testing"
)

// The reconciler's look-ups, run every few seconds, read only the live
// rows they look for (started, unknown) through the index by status:
// their cost follows the live operations, not the journal. And the write
// path keeps no index it does not need: none by status and lease or
// check time, none on the audit trail's random hashes.
func TestReconcileQueriesReadLiveRowsOnly(t *testing.T) {
	t.Parallel()
	s := planJournal(t)
	for _, c := range []struct {
		name, query string
		args        []any
		want        []string
	}{
		{"due", dueQuery, []any{"2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 10}, []string{"operations_status_created (status=?)"}},
		{"orphans", orphanQuery, []any{"run", 4, "run/"}, []string{"operations_status_created (status=?)"}},
	} {
		p := queryPlan(t, s, c.query, c.args...)
		for _, index := range c.want {
			if !strings.Contains(p, index) {
				t.Errorf("%s: the plan does not read %s: %s", c.name, index, p)
			}
		}
		if strings.Contains(p, "SCAN operations") && !strings.Contains(p, "USING INDEX") {
			t.Errorf("%s: the plan scans every operation: %s", c.name, p)
		}
	}
	var n int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('operations_status_lease', 'operations_status_check')`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d indexes by status and lease or check time (%v), want none", n, err)
	}
	if err := s.rdb.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'audit_events' AND sql IS NULL`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the audit trail keeps %d automatic (unique) indexes (%v), want none", n, err)
	}
}
