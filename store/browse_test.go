package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

func TestListOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := MustOpenStore(t)
	c := pinClock(s)
	for i := range 7 {
		req := claimReq(fmt.Sprintf("test:invoice.create:l-%d:v1", i), fp1, "run-1")
		if i%2 == 1 {
			req.Agent = "agent-b"
		}
		MustClaim(t, s, req, store.DecisionExecute)
		if i < 3 {
			s.Complete(ctx, req.Key, "run-1", "INV-1", nil)
		}
		c.Advance(time.Second)
	}
	var keys []string
	f := store.OperationFilter{Limit: 3}
	for {
		page, err := s.ListOperations(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, op := range page {
			keys = append(keys, op.Key)
		}
		last := page[len(page)-1]
		f.BeforeCreated, f.BeforeKey = last.CreatedAt, last.Key
	}
	if len(keys) != 7 || keys[0] != "test:invoice.create:l-6:v1" || keys[6] != "test:invoice.create:l-0:v1" {
		t.Fatalf("pages walked %v", keys)
	}
	for _, c := range []struct {
		f    store.OperationFilter
		want int
	}{
		{store.OperationFilter{Status: store.StatusSucceeded}, 3},
		{store.OperationFilter{Agent: "agent-b"}, 3},
		{store.OperationFilter{KeyPrefix: "test:invoice.create:l-1"}, 1},
		{store.OperationFilter{Intent: "payment.charge"}, 0},
		{store.OperationFilter{Target: "onec", Status: store.StatusStarted}, 4},
	} {
		got, err := s.ListOperations(ctx, c.f)
		if err != nil || len(got) != c.want {
			t.Errorf("filter %+v: %d rows, %v; want %d", c.f, len(got), err, c.want)
		}
	}
	sum, err := s.Summarize(ctx)
	if err != nil || sum.ByStatus[store.StatusSucceeded] != 3 || sum.ByStatus[store.StatusStarted] != 4 || sum.OldestUnresolved.IsZero() {
		t.Fatalf("summary %+v, %v", sum, err)
	}
}

func TestResolveByHand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := MustOpenStore(t)
	unknown := func(key string) {
		MustClaim(t, s, claimReq(key, fp1, "run-1"), store.DecisionExecute)
		if err := s.MarkUnknown(ctx, key, "run-1", "", store.Failure{Code: "OUTCOME_UNKNOWN"}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	unknown("test:invoice.create:h-1:v1")
	if err := s.ResolveByHand(ctx, "test:invoice.create:h-1:v1", true, "INV-9", ""); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("no reason: %v", err)
	}
	if err := s.ResolveByHand(ctx, "test:invoice.create:h-1:v1", true, "INV-9", "found in 1C by the accountant"); err != nil {
		t.Fatal(err)
	}
	op, _ := s.Get(ctx, "test:invoice.create:h-1:v1")
	if op.Status != store.StatusSucceeded || op.TargetObjectID != "INV-9" {
		t.Fatalf("row %+v", op)
	}
	if err := s.ResolveByHand(ctx, "test:invoice.create:h-1:v1", false, "", "again"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("resolving a succeeded row: %v", err)
	}
	unknown("test:invoice.create:h-2:v1")
	if err := s.ResolveByHand(ctx, "test:invoice.create:h-2:v1", false, "", "not in 1C"); err != nil {
		t.Fatal(err)
	}
	op, _ = s.Get(ctx, "test:invoice.create:h-2:v1")
	if op.Status != store.StatusFailedRetryable {
		t.Fatalf("row %+v", op)
	}
	events, _ := s.AuditEvents(ctx, store.AuditFilter{Event: "operation.resolved_by_hand"})
	if len(events) != 2 {
		t.Fatalf("%d resolution events", len(events))
	}
}
