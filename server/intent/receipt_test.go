package intent_test

import (
	"github.com/oncegate/oncegate/adapters/codes/codestest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
)

// TestNormalize_Receipt: the payment intents take an optional 54-FZ
// receipt. Absent (or null) it changes nothing: a request without one
// keeps the fingerprint it always had. Present, it is part of the
// business meaning and checked like any field.
func TestNormalize_Receipt(t *testing.T) {
	t.Parallel()
	const vector = "28a4262860864e5110d391a4556da2ad2f539ae2f87e52871f80cb7381d86aa6"
	charge := mustLookup(t, "payment.charge")
	base := `"account_id":"merchant-account-17","order_id":"order-48291","amount_minor":125000,"currency":"rub"`

	n, err := charge.Normalize([]byte(`{` + base + `,"receipt":null}`))
	if err != nil || n.Fingerprint != vector {
		t.Fatalf("with receipt null: %v, fingerprint %s, want %s", err, n.Fingerprint, vector)
	}
	with := `{` + base + `,"receipt":{"email":" buyer@example.com ","items":[{"description":"Tea, kg","quantity":2.5,"price_minor":50000,"vat_code":1}]}}`
	n, err = charge.Normalize([]byte(with))
	if err != nil {
		t.Fatalf("with a receipt: %v", err)
	}
	if n.Fingerprint == vector || !strings.Contains(string(n.Payload), `"email":"buyer@example.com"`) {
		t.Fatalf("with a receipt: fingerprint %s, payload %s", n.Fingerprint, n.Payload)
	}

	for name, tc := range map[string]struct{ receipt, field string }{
		"Email":          {`{"email":"not-an-address","items":[{"description":"x","quantity":1,"price_minor":1}]}`, "receipt.email"},
		"Phone":          {`{"phone":"+7 900 123","items":[{"description":"x","quantity":1,"price_minor":1}]}`, "receipt.phone"},
		"NoItems":        {`{"email":"a@example.com","items":[]}`, "receipt.items"},
		"QuantityPlaces": {`{"email":"a@example.com","items":[{"description":"x","quantity":1.0001,"price_minor":1}]}`, "receipt.items[0].quantity"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := charge.Normalize([]byte(`{` + base + `,"receipt":` + tc.receipt + `}`))
			ce := codestest.WantRefusal(t, err, codes.Validation, tc.field)
			_ = ce
		})
	}
	refund := mustLookup(t, "payment.refund")
	if _, err := refund.Normalize([]byte(`{"payment_id":"2f3b588d-000f-5000-8000-1d6e87c7fbde","amount_minor":100,"currency":"RUB","receipt":{"phone":"79001234567","items":[{"description":"x","quantity":1,"price_minor":100}]}}`)); err != nil {
		t.Fatalf("refund with a receipt: %v", err)
	}
}
