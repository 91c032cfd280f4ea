package admin

import (
	"slices"
	"testing"

	"github.com/oncegate/oncegate/views"
)

func TestCollapseRepeats(t *testing.T) {
	t.Parallel()
	ev := func(id int64, e string) views.EventRow { return views.EventRow{ID: id, Event: e, Label: e} }
	const r, f, s = "operation.resumed", "operation.lookup_failed", "operation.succeeded"
	oldestFirst := []views.EventRow{ev(1, "operation.started"), ev(2, r), ev(3, f), ev(4, r), ev(5, f), ev(6, r), ev(7, f), ev(8, r), ev(9, s)}
	newestFirst := slices.Clone(oldestFirst)
	slices.Reverse(newestFirst)
	for _, tc := range []struct {
		name      string
		rows      []views.EventRow
		ids       []int64
		repeat    int
		repeatsAt int64
	}{
		// The run of three pairs is one line: the newest failure's (7).
		{"OldestFirst", oldestFirst, []int64{1, 7, 8, 9}, 3, 7},
		{"NewestFirst", newestFirst, []int64{9, 7, 2, 1}, 3, 7},
		{"OnePair", []views.EventRow{ev(1, r), ev(2, f)}, []int64{1, 2}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := collapseRepeats(tc.rows)
			var ids []int64
			for _, g := range got {
				ids = append(ids, g.ID)
				if g.Repeat > 1 && (g.ID != tc.repeatsAt || g.Repeat != tc.repeat) {
					t.Errorf("row %d repeats %d", g.ID, g.Repeat)
				}
			}
			if !slices.Equal(ids, tc.ids) {
				t.Fatalf("rows %v, want %v", ids, tc.ids)
			}
		})
	}
}
