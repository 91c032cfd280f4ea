package admin_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// purchaseOrder is a firm's own intent, version %d, at the instance buh.
const purchaseOrder = `name: purchase_order.create_draft
version: VERSION
target: buh
scope: draft
money: false
title: { ru: Заказ поставщику, en: Purchase order }
labels:
  supplier_id:  { ru: Поставщик, en: Supplier }
  currency:     { ru: Валюта, en: Currency }
  items:        { ru: Строки, en: Lines }
  items.product_id: { ru: Товар, en: Product }
description: Draft a purchase order to a supplier in 1C.
schema:
  type: object
  additionalProperties: false
  required: [supplier_id, currency, items]
  properties:
    supplier_id:  { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
    currency:     { type: string, minLength: 3, maxLength: 3, pattern: "^[A-Za-z]{3}$" }
    items:
      type: array
      minItems: 1
      maxItems: 100
      items:
        type: object
        additionalProperties: false
        required: [product_id, quantity]
        properties:
          product_id: { type: string, minLength: 1, maxLength: 128 }
          quantity:   { type: number, exclusiveMinimum: 0, maximum: 1000000 }
references:
  supplier_id: counterparty
  items.product_id: product
limits: { currency_field: currency, currencies: [RUB], items_field: items, max_items: 40 }
map: { document: Document_ЗаказПоставщику }
`

// declaredCatalog is the built-ins and two versions of a firm's own intent.
func declaredCatalog(t *testing.T) *intent.Catalog {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []string{"1", "2"} {
		body := strings.Replace(purchaseOrder, "VERSION", v, 1)
		if err := os.WriteFile(filepath.Join(dir, "po.v"+v+".yaml"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := intent.Load(intent.Options{Dir: dir, Targets: []string{"onec", "crm", "payments", "buh"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The intents page shows every loaded definition as people read it: its
// title, target and kind, right, money, journal, field titles, references,
// limits, schema and mapping; an older version still loaded is marked.
func TestIntentsPage(t *testing.T) {
	t.Parallel()
	cat := declaredCatalog(t)
	a := newApp(t, func(d *admin.Deps) {
		d.Catalog = cat
		d.TargetKinds = map[string]string{"onec": "onec", "crm": "bitrix24", "payments": "yookassa", "buh": "onec_odata"}
	})
	for _, role := range store.Roles {
		c := a.signIn(role)
		p := c.get("/admin/intents").expect(t, 200)
		if !p.has("nav-intents") {
			t.Errorf("%s: no link to the intents page", role)
		}
		if got, want := len(p.attrs("intent", "data-name")), len(cat.Definitions()); got != want {
			t.Fatalf("%s: %d definitions shown, want %d", role, got, want)
		}
	}
	p := a.signIn(store.RoleAuditor).get("/admin/intents").expect(t, 200)
	versions := []string{}
	for i, name := range p.attrs("intent", "data-name") {
		if name == "purchase_order.create_draft" {
			versions = append(versions, p.attrs("intent", "data-version")[i])
		}
	}
	if strings.Join(versions, ",") != "2,1" {
		t.Fatalf("purchase order versions shown %v, want the served 2 then the older 1", versions)
	}
	sec := section(p.Body, `data-testid="intent" data-name="purchase_order.create_draft" data-version="1"`)
	for _, want := range []string{"intent-older", "Заказ поставщику", "buh", "onec_odata", "1С, OData",
		"draft", "Поставщик", "supplier_id", "items.product_id", "counterparty", "Document_ЗаказПоставщику",
		"Наибольшее число строк", "40 (Строки, items)", "additionalProperties", "записывается в журнал"} {
		if !strings.Contains(sec, want) {
			t.Errorf("older purchase order: no %q in\n%s", want, sec)
		}
	}
	charge := section(p.Body, `data-testid="intent" data-name="payment.charge" data-version="1"`)
	for _, want := range []string{"intent-served", "Списание", "payments", "ЮKassa", "pay", "ждёт согласования",
		"Сумма", "amount_minor", "10\u00a0000\u00a0000,00\u00a0₽", "intent-served"} {
		if !strings.Contains(charge, want) {
			t.Errorf("payment.charge: no %q in\n%s", want, charge)
		}
	}
	status := section(p.Body, `data-testid="intent" data-name="sales_order.get_status" data-version="1"`)
	if !strings.Contains(status, "только чтение") {
		t.Errorf("sales_order.get_status is not shown as read only:\n%s", status)
	}

	en := a.signIn(store.RoleAuditor)
	en.cookies[admin.LangCookie] = "en"
	pe := en.get("/admin/intents").expect(t, 200)
	sec = section(pe.Body, `data-testid="intent" data-name="purchase_order.create_draft" data-version="2"`)
	for _, want := range []string{"Purchase order", "Supplier", "1C, OData", "served", "Most lines"} {
		if !strings.Contains(sec, want) {
			t.Errorf("English: no %q in\n%s", want, sec)
		}
	}
}

// section is the card of the page that starts with the attributes attr.
func section(body, attr string) string {
	i := strings.Index(body, attr)
	if i < 0 {
		return ""
	}
	s := body[i:]
	if j := strings.Index(s, "</section>"); j >= 0 {
		s = s[:j]
	}
	return s
}
