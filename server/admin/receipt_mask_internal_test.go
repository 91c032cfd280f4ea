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
	fields, tables := newRequestView(nil, p, "ru", false).show(p)
	var shown []string
	for _, f := range fields {
		shown = append(shown, f.Label+"="+f.Value)
	}
	for _, t := range tables {
		for _, r := range t.Rows {
			shown = append(shown, r...)
		}
	}
	all := strings.Join(shown, "\n")
	for _, secret := range []string{"ivan.petrov@example.com", "79001234567"} {
		if strings.Contains(all, secret) {
			t.Fatalf("receipt shown as %s: holds %s", all, secret)
		}
	}
	if !strings.Contains(all, "receipt.email=") {
		t.Fatalf("no receipt e-mail field in %s", all)
	}
}
