package store_test

import (
	"context"
	"github.com/oncegate/oncegate/store/storetest"
	"testing"

	"github.com/oncegate/oncegate/store"
)

// Fill grows a journal as serving would: final operations, each with its
// audit events in the one chain, found by key, and a chain that verifies.
func TestFill(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		var seen []int
		if err := s.Fill(ctx, "f1", 2500, func(done int) { seen = append(seen, done) }); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 2 || seen[1] != 2500 {
			t.Fatalf("progress %v, want two writes ending at 2500", seen)
		}
		op, err := s.Get(ctx, "test:invoice.create:f1-2499:v1")
		if err != nil || op.Status != store.StatusSucceeded || op.TargetObjectID == "" || op.BusinessKey == "" {
			t.Fatalf("a filled operation: %+v, %v", op, err)
		}
		rep, err := s.VerifyAudit(ctx)
		if err != nil || rep.BrokenAt != 0 || rep.Events < 3*2500 {
			t.Fatalf("the chain after a fill: %+v, %v", rep, err)
		}
	})
}
