package store_test

import (
	"context"
	"encoding/json"
	"github.com/oncegate/oncegate/store/storetest"
	"testing"

	"github.com/oncegate/oncegate/store"
)

// TestOrderOperations: the invoices of an order are found by the order
// named in their request, not by a longer id it begins, an id in a line,
// or a LIKE wildcard in the order id.
func TestOrderOperations(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		s := j.Open(t)
		claim := func(key, intent, payload string) {
			req := claimReq(key, fp1, "run-1")
			req.Intent, req.Payload = intent, json.RawMessage(payload)
			MustClaim(t, s, req, store.DecisionExecute)
		}
		claim("test:invoice.create:a:v1", "invoice.create", `{"customer_id":"c-1","order_id":"order_7"}`)
		claim("test:invoice.create:b:v1", "invoice.create", `{"order_id":"order_77"}`)
		claim("test:invoice.create:c:v1", "invoice.create", `{"items":[{"order_id":"order_7"}],"order_id":"orderX7"}`)
		claim("test:sales_order.create_draft:d:v1", "sales_order.create_draft", `{"order_id":"order_7"}`)
		if err := s.Complete(ctx, "test:invoice.create:a:v1", "run-1", "INV-7", nil); err != nil {
			t.Fatal(err)
		}
		got, err := s.OrderOperations(ctx, []string{"invoice.create"}, "order_7", 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Key != "test:invoice.create:a:v1" || got[0].TargetObjectID != "INV-7" {
			t.Fatalf("got %+v, want the one invoice of order_7", got)
		}
		if got, err := s.OrderOperations(ctx, []string{"invoice.create"}, "order-none", 5); err != nil || len(got) != 0 {
			t.Fatalf("an order without invoices: %v, %v", got, err)
		}
	})
}
