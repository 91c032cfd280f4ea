package intent_test

import (
	"testing"

	"github.com/oncegate/oncegate/server/intent"
)

// builtins is the catalog of the built-in intents.
var builtins = intent.Builtin()

// mustLookup returns the named built-in intent or fails.
func mustLookup(tb testing.TB, name string) *intent.Intent {
	tb.Helper()
	in, ok := builtins.Lookup(name)
	if !ok {
		tb.Fatalf("Lookup(%q) = false", name)
	}
	return in
}

// validPayloads holds one accepted payload per intent.
var validPayloads = map[string]string{
	"invoice.create": `{"order_id":"order-48291","organization_id":"org-main","customer_id":"customer-1042","currency":"rub",
		"items":[{"product_id":"product-778","quantity":2,"unit":"pcs","price_minor":62500}]}`,
	"sales_order.create_draft": `{"organization_id":"org-main","customer_id":"customer-1042","warehouse_id":"wh-1","currency":"RUB",
		"items":[{"product_id":"product-778","quantity":2.5,"unit":"kg"}],"comment":"call before delivery"}`,
	"sales_order.get_status": `{"order_id":"SO-000123"}`,
	"sales_order.post":       `{"order_id":"SO-000123"}`,
	"crm.callback.create":    `{"customer_id":"customer-1042","due_at":"2026-12-03T10:00:00+03:00","comment":"asks about delivery"}`,
	"payment.charge":         `{"account_id":"merchant-account-17","order_id":"order-48291","amount_minor":125000,"currency":"rub"}`,
	"payment.refund":         `{"payment_id":"pay-2f1c","amount_minor":5000,"currency":"RUB","reason":"damaged item"}`,
}

// withItems lists the intents whose payload has items[].
var withItems = []string{"invoice.create", "sales_order.create_draft"}
