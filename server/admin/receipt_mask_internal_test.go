package admin

import (
	"strings"
	"testing"
)

// A payment's receipt carries the customer's e-mail or phone: the admin
// pages show them masked, at any depth.
func TestMaskedReceiptContacts(t *testing.T) {
	t.Parallel()
	p := parsePayload([]byte(`{"amount_minor":125000,"currency":"RUB","receipt":{"email":"ivan.petrov@example.com","phone":"79001234567","items":[{"description":"Tea","quantity":1,"price_minor":125000}]}}`))
	for _, f := range p.maskedFields() {
		if f.Label != "receipt" {
			continue
		}
		for _, secret := range []string{"ivan.petrov@example.com", "79001234567"} {
			if strings.Contains(f.Value, secret) {
				t.Fatalf("receipt shown as %s: holds %s", f.Value, secret)
			}
		}
		return
	}
	t.Fatal("no receipt field")
}
