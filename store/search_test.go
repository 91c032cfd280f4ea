package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// The browser's search finds an operation by its order, by the object it
// made at the target, or by its key — each matched whole — and keeps the
// other filters.
func TestListOperationsSearch(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		c := pinClock(s)
		claim := func(key, intent, target, payload string) {
			t.Helper()
			req := claimReq(key, fp1, "run-1")
			req.Intent, req.TargetSystem, req.Payload = intent, target, json.RawMessage(payload)
			MustClaim(t, s, req, store.DecisionExecute)
			c.Advance(time.Second)
		}
		claim("test:invoice.create:s-1:v1", "invoice.create", "onec", `{"customer_id":"customer-1042","order_id":"order-77"}`)
		claim("test:payment.charge:s-2:v1", "payment.charge", "payments", `{"amount_minor":1370125,"currency":"RUB","order_id":"order-77"}`)
		claim("test:invoice.create:s-3:v1", "invoice.create", "onec", `{"order_id":"order-771"}`)
		claim("test:invoice.create:s-4:v1", "invoice.create", "onec", `{"items":[{"order_id":"order-77"}]}`)
		claim("test:invoice.create:s-5:v1", "invoice.create", "onec", `{"order_id":77}`)
		if err := s.Complete(ctx, "test:invoice.create:s-3:v1", "run-1", "INV-000123", nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, "test:payment.charge:s-2:v1", "run-1", "2f8a1c3e-000f-5000-9000-1b2c3d4e5f60", nil); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			f    store.OperationFilter
			want []string
		}{
			{"Order", store.OperationFilter{Search: "order-77"}, []string{"test:payment.charge:s-2:v1", "test:invoice.create:s-1:v1"}},
			{"OrderAndIntent", store.OperationFilter{Search: "order-77", Intent: "invoice.create"}, []string{"test:invoice.create:s-1:v1"}},
			{"Invoice", store.OperationFilter{Search: "INV-000123"}, []string{"test:invoice.create:s-3:v1"}},
			{"Payment", store.OperationFilter{Search: "2f8a1c3e-000f-5000-9000-1b2c3d4e5f60"}, []string{"test:payment.charge:s-2:v1"}},
			{"Key", store.OperationFilter{Search: "test:invoice.create:s-4:v1"}, []string{"test:invoice.create:s-4:v1"}},
			{"KeyPartNotAKey", store.OperationFilter{Search: "test:invoice.create:s-"}, nil},
			{"NumberIsNoOrder", store.OperationFilter{Search: "77"}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ops, err := s.ListOperations(ctx, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, op := range ops {
					got = append(got, op.Key)
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("search %q: %v, want %v", tc.f.Search, got, tc.want)
				}
			})
		}
	})
}

// A journal made before orders were recorded apart finds its operations
// by order once migrated: the migration reads them from the requests.
func TestSearchFindsOrdersOfAnOlderJournal(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		loc := j.Location(t)
		s, err := store.Open(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		req := claimReq("test:invoice.create:old-1:v1", fp1, "run-1")
		req.Payload = json.RawMessage(`{"order_id":"order-old"}`)
		MustClaim(t, s, req, store.DecisionExecute)
		s.Close()
		for _, dir := range []string{"down", "up"} {
			if _, err := store.Migrate(ctx, loc, dir); err != nil {
				t.Fatal(err)
			}
		}
		s, err = store.Open(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ops, err := s.ListOperations(ctx, store.OperationFilter{Search: "order-old"})
		if err != nil || len(ops) != 1 {
			t.Fatalf("after migrating: %d operations, %v", len(ops), err)
		}
	})
}
