package intent_test

import (
	"encoding/json"
	"errors"
	"github.com/oncegate/oncegate/adapters/codes/codestest"
	"github.com/oncegate/oncegate/server/config/configtest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/intent"
)

// purchaseOrder is a valid declared definition; the tests below break it
// one way at a time.
const purchaseOrder = `# A firm's own intent.
name: purchase_order.create_draft
version: 1
target: onec
scope: draft
money: false
title: { ru: Заказ поставщику, en: Purchase order }
labels:
  supplier_id:  { ru: Поставщик, en: Supplier }
  currency:     { ru: Валюта, en: Currency }
  amount_minor: { ru: Сумма, en: Amount }
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
    amount_minor: { type: integer, minimum: 1, maximum: 100000000000 }
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
normalize: { upper: [currency] }
limits: { currency_field: currency, currencies: [RUB], amount_field: amount_minor, amount_ceiling: { RUB: 100000000 } }
map: { intent: purchase_order.create_draft }
`

// targets are the target instances of the tests' configuration.
var targets = []string{"onec", "crm", "payments", "buh"}

// mustLoadDir loads the built-ins and dir.
func mustLoadDir(t *testing.T, dir string) *intent.Catalog {
	t.Helper()
	c, err := intent.Load(intent.Options{Dir: dir, Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoad_Declared(t *testing.T) {
	t.Parallel()
	dir := configtest.Dir(t, map[string]string{"po.v1.yaml": purchaseOrder, "README.txt": "not a definition"})
	c := mustLoadDir(t, dir)
	in, ok := c.Lookup("purchase_order.create_draft")
	if !ok {
		t.Fatal("declared intent not served")
	}
	if got, want := in.Source, filepath.Join(dir, "po.v1.yaml"); got != want {
		t.Errorf("Source = %q, want %q", got, want)
	}
	if in.Version != 1 || in.Target != "onec" || in.Scope != "draft" || in.Money || !in.Journaled {
		t.Errorf("facts: %+v", in)
	}
	if got, want := in.Label("items.product_id", "ru"), "Товар"; got != want {
		t.Errorf("label = %q, want %q", got, want)
	}
	if got, want := string(in.Map), `{"intent":"purchase_order.create_draft"}`; got != want {
		t.Errorf("Map = %s, want %s", got, want)
	}
	if got, want := strings.Join(c.Names()[7:], ","), "purchase_order.create_draft"; got != want {
		t.Errorf("declared intents follow the built-ins: %v", c.Names())
	}
	// Normalization is the definition's: the declared upper-casing.
	n, err := in.Normalize([]byte(`{"supplier_id":" sup-1 ","currency":"rub","items":[{"product_id":"p-1","quantity":2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(n.Canonical), `{"currency":"RUB","items":[{"product_id":"p-1","quantity":2}],"operation":"purchase_order.create_draft","supplier_id":"sup-1"}`; got != want {
		t.Errorf("canonical = %s, want %s", got, want)
	}
	_, err = in.Normalize([]byte(`{"supplier_id":"s","currency":"RUB","items":[{"product_id":"p","quantity":1,"method":"x"}]}`))
	codestest.WantRefusal(t, err, codes.UnknownField, "items[0].method")
}

// Every bad definition is refused at load, naming the file, the path
// inside it and what is wrong; nothing of a refused directory loads.
func TestLoad_Refused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		old, new  string // one replacement in purchaseOrder
		path, msg string
	}{
		{"OpenObject", "        additionalProperties: false\n", "", "schema.properties.items.items.additionalProperties", "additionalProperties: false"},
		{"OpenTop", "  additionalProperties: false\n  required", "  required", "schema.additionalProperties", "closed"},
		{"UnboundedString", `maxLength: 128, pattern`, `pattern`, "schema.properties.supplier_id", "maxLength"},
		{"UnboundedArray", "      maxItems: 100\n", "", "schema.properties.items", "maxItems"},
		{"BadName", "name: purchase_order.create_draft", "name: PurchaseOrder", "name", "dotted lower-case"},
		{"OneWordName", "name: purchase_order.create_draft", "name: purchase_order", "name", "dotted lower-case"},
		{"BadVersion", "version: 1", "version: 0", "version", "whole number"},
		{"UnknownScope", "scope: draft", "scope: admin", "scope", "not a scope"},
		{"UnknownTarget", "target: onec", "target: erp", "target", "not a configured target instance"},
		{"ReferenceToNothing", "  supplier_id: counterparty", "  vendor_id: counterparty", "references.vendor_id", "no field vendor_id"},
		{"LimitOnNothing", "amount_field: amount_minor", "amount_field: total_minor", "limits.amount_field", "total_minor is not"},
		{"LabelOfNothing", "  items:        { ru: Строки, en: Lines }", "  items:        { ru: Строки, en: Lines }\n  vendor: { ru: x, en: y }", "labels.vendor", "no field"},
		{"FieldWithoutLabel", "  currency:     { ru: Валюта, en: Currency }\n", "", "labels", "currency has no label"},
		{"UpperOfNothing", "upper: [currency]", "upper: [currency_code]", "normalize.upper", "currency_code"},
		{"ForbiddenField", "    amount_minor:", "    method: { type: string, maxLength: 16 }\n    amount_minor:", "schema.properties.method", "exists in no contract"},
		{"ForbiddenNested", "          quantity:", "          privileged_mode: { type: boolean }\n          quantity:", "schema.properties.items.items.properties.privileged_mode", "exists in no contract"},
		{"UnknownTopKey", "money: false", "money: false\nquery: SELECT 1", "query", "unknown key"},
		{"Reference$ref", "    currency:     {", "    currency:     { $ref: \"#/x\", ", "schema.properties.currency.$ref", "not accepted"},
		{"DuplicatesNoFields", "money: false", "money: false\nduplicates: { fields: [], window: 24h, action: warn }", "duplicates.fields", "non-empty list"},
		{"DuplicatesFieldOfNothing", "money: false", "money: false\nduplicates: { fields: [vendor_id], window: 24h, action: warn }", "duplicates.fields[0]", "vendor_id is not a top-level field"},
		{"DuplicatesNestedField", "money: false", "money: false\nduplicates: { fields: [items.product_id], window: 24h, action: warn }", "duplicates.fields[0]", "not a top-level field"},
		{"DuplicatesArrayField", "money: false", "money: false\nduplicates: { fields: [items], window: 24h, action: warn }", "duplicates.fields[0]", "scalar fields"},
		{"DuplicatesFieldTwice", "money: false", "money: false\nduplicates: { fields: [supplier_id, supplier_id], window: 24h, action: warn }", "duplicates.fields[1]", "named twice"},
		{"DuplicatesTruncateNotDateTime", "money: false", "money: false\nduplicates: { fields: [{ field: supplier_id, truncate: day }], window: 24h, action: warn }", "duplicates.fields[0]", "not a date-time"},
		{"DuplicatesTruncateToHour", "money: false", "money: false\nduplicates: { fields: [{ field: supplier_id, truncate: hour }], window: 24h, action: warn }", "duplicates.fields[0].truncate", "truncated to its day"},
		{"DuplicatesDaysWindow", "money: false", "money: false\nduplicates: { fields: [supplier_id], window: 30d, action: warn }", "duplicates.window", "positive duration"},
		{"DuplicatesNegativeWindow", "money: false", "money: false\nduplicates: { fields: [supplier_id], window: -1h, action: warn }", "duplicates.window", "positive duration"},
		{"DuplicatesNoWindow", "money: false", "money: false\nduplicates: { fields: [supplier_id], action: warn }", "duplicates.window", "is required"},
		{"DuplicatesUnknownAction", "money: false", "money: false\nduplicates: { fields: [supplier_id], window: 24h, action: ask }", "duplicates.action", "not an action"},
		{"DuplicatesUnknownKey", "money: false", "money: false\nduplicates: { fields: [supplier_id], window: 24h, action: warn, scope: all }", "duplicates.scope", "unknown key"},
		{"NoTitle", "title: { ru: Заказ поставщику, en: Purchase order }", "title: { ru: Заказ поставщику }", "title", "both ru and en"},
		{"WriteNotJournaled", "money: false", "money: false\njournaled: false", "journaled", "scope read"},
		{"UnknownCurrency", "currencies: [RUB]", "currencies: [rub]", "limits.currencies", "ISO 4217"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(purchaseOrder, c.old) {
				t.Fatalf("the base definition lacks %q", c.old)
			}
			dir := configtest.Dir(t, map[string]string{"po.v1.yaml": strings.Replace(purchaseOrder, c.old, c.new, 1)})
			cat, err := intent.Load(intent.Options{Dir: dir, Targets: targets})
			if err == nil || cat != nil {
				t.Fatal("loaded")
			}
			want := filepath.Join(dir, "po.v1.yaml") + ": " + c.path + ": "
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error does not say %q … %q:\n%v", want, c.msg, err)
			}
		})
	}
	t.Run("TwoFilesOneVersion", func(t *testing.T) {
		t.Parallel()
		dir := configtest.Dir(t, map[string]string{"a.yaml": purchaseOrder, "b.yaml": purchaseOrder})
		_, err := intent.Load(intent.Options{Dir: dir, Targets: targets})
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "b.yaml")+": name: purchase_order.create_draft version 1 is also defined by "+filepath.Join(dir, "a.yaml")) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("TwoVersions", func(t *testing.T) {
		t.Parallel()
		dir := configtest.Dir(t, map[string]string{"a.yaml": purchaseOrder, "b.yaml": strings.Replace(purchaseOrder, "version: 1", "version: 2", 1)})
		c := mustLoadDir(t, dir)
		if in, _ := c.Lookup("purchase_order.create_draft"); in.Version != 2 {
			t.Fatalf("served version %d, want the newest", in.Version)
		}
		if _, ok := c.Version("purchase_order.create_draft", 1); !ok || len(c.Definitions()) != 9 {
			t.Fatal("version 1 not kept beside version 2")
		}
	})
	t.Run("BuiltInNameTaken", func(t *testing.T) {
		t.Parallel()
		dir := configtest.Dir(t, map[string]string{"inv.yaml": strings.Replace(purchaseOrder, "name: purchase_order.create_draft", "name: invoice.create", 1)})
		if _, err := intent.Load(intent.Options{Dir: dir, Targets: targets}); err == nil || !strings.Contains(err.Error(), "also defined by built-in") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("NotYAML", func(t *testing.T) {
		t.Parallel()
		dir := configtest.Dir(t, map[string]string{"x.yaml": "name: [unclosed"})
		if _, err := intent.Load(intent.Options{Dir: dir, Targets: targets}); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "x.yaml")+": not valid YAML") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("NoDirectory", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "nowhere")
		if _, err := intent.Load(intent.Options{Dir: missing, Targets: targets}); err == nil || !strings.Contains(err.Error(), "intents_dir "+missing) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("OneBadFileRefusesAll", func(t *testing.T) {
		t.Parallel()
		dir := configtest.Dir(t, map[string]string{"a.yaml": purchaseOrder, "b.yaml": strings.Replace(purchaseOrder, "version: 1", "version: 2\nscript: x", 1)})
		if c, err := intent.Load(intent.Options{Dir: dir, Targets: targets}); err == nil || c != nil {
			t.Fatal("a half-loaded whitelist")
		}
	})
}

func TestLoad_Builtins(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		list []string
		want string
	}{
		{nil, "invoice.create,sales_order.create_draft,sales_order.get_status,sales_order.post,crm.callback.create,payment.charge,payment.refund"},
		{[]string{"all"}, "invoice.create,sales_order.create_draft,sales_order.get_status,sales_order.post,crm.callback.create,payment.charge,payment.refund"},
		{[]string{"none"}, ""},
		{[]string{}, ""},
		{[]string{"payment.refund", "invoice.create"}, "invoice.create,payment.refund"},
	} {
		cat, err := intent.Load(intent.Options{Builtins: c.list, Targets: targets})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cat.Names(), ","); got != c.want {
			t.Errorf("builtin_intents %v: %s, want %s", c.list, got, c.want)
		}
	}
	cat, _ := intent.Load(intent.Options{Builtins: []string{"none"}, Targets: targets})
	ce := codestest.WantRefusal(t, cat.NotAllowed("invoice.create"), codes.IntentNotAllowed, "intent")
	if !strings.Contains(ce.Message, "none") {
		t.Errorf("message %q", ce.Message)
	}
	if _, err := intent.Load(intent.Options{Builtins: []string{"invoice.delete"}, Targets: targets}); err == nil || !strings.Contains(err.Error(), `builtin_intents: "invoice.delete"`) {
		t.Fatalf("err = %v", err)
	}
	// A built-in's target must be configured.
	if _, err := intent.Load(intent.Options{Targets: []string{"onec", "crm"}}); err == nil || !strings.Contains(err.Error(), "payment.charge.v1.yaml: target:") {
		t.Fatalf("err = %v", err)
	}
}

// The configuration's limits replace a definition's values; an intent it
// names must exist.
func TestLoad_LimitsOverride(t *testing.T) {
	t.Parallel()
	cat, err := intent.Load(intent.Options{Targets: targets, Limits: map[string]config.IntentLimits{
		"sales_order.create_draft": {MaxItems: 2},
		"payment.charge":           {AmountCeiling: map[string]int64{"RUB": 5}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := cat.Lookup("sales_order.create_draft")
	if d.Limits.MaxItems != 2 || d.Limits.MaxQuantity != 1e6 || !slices.Equal(d.Limits.Units, []string{"pcs", "kg"}) {
		t.Errorf("draft limits %+v", d.Limits)
	}
	ch, _ := cat.Lookup("payment.charge")
	if ch.Limits.AmountCeiling["RUB"] != 5 || ch.Limits.AmountField != "amount_minor" {
		t.Errorf("charge limits %+v", ch.Limits)
	}
	if b, _ := intent.Builtin().Lookup("payment.charge"); b.Limits.AmountCeiling["RUB"] != 1_000_000_000 {
		t.Error("an override changed another catalog")
	}
	_, err = intent.Load(intent.Options{Targets: targets, Limits: map[string]config.IntentLimits{"invoice.delete": {MaxItems: 1}}})
	if err == nil || !strings.Contains(err.Error(), "limits.invoice.delete: no such intent") {
		t.Fatalf("err = %v", err)
	}
	_, err = intent.Load(intent.Options{Targets: targets, Limits: map[string]config.IntentLimits{"crm.callback.create": {Units: []string{"pcs"}}}})
	if err == nil || !strings.Contains(err.Error(), "limits.crm.callback.create: the definition (built-in) declares no unit_field") {
		t.Fatalf("err = %v", err)
	}
}

// binder is a target that records what it is bound to.
type binder struct {
	adapters.Target
	got []adapters.Binding
	err error
}

func (b *binder) Bind(bs []adapters.Binding) error { b.got = bs; return b.err }

// plain is a target that serves no declared intents.
type plain struct{ adapters.Target }

func TestBind(t *testing.T) {
	t.Parallel()
	cat := mustLoadDir(t, configtest.Dir(t, map[string]string{"po.yaml": purchaseOrder}))
	onec, crm := &binder{}, &binder{}
	err := cat.Bind(map[string]adapters.Target{"onec": onec, "crm": crm, "payments": plain{}, "buh": plain{}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range onec.got {
		names = append(names, b.Intent)
	}
	if got, want := strings.Join(names, ","), "invoice.create,sales_order.create_draft,sales_order.get_status,sales_order.post,purchase_order.create_draft"; got != want {
		t.Fatalf("onec bound to %s, want %s", got, want)
	}
	po := onec.got[4]
	if po.Version != 1 || string(po.Map) != `{"intent":"purchase_order.create_draft"}` || po.References["items.product_id"] != "product" || !json.Valid(po.Schema) {
		t.Fatalf("binding %+v", po)
	}
	if len(crm.got) != 1 || crm.got[0].Intent != "crm.callback.create" || crm.got[0].Map != nil {
		t.Fatalf("crm bound to %+v", crm.got)
	}
	// A target's refusal stops the start, naming the target.
	onec.err = errors.New("purchase_order.create_draft v1: map.intent: not published")
	if err := cat.Bind(map[string]adapters.Target{"onec": onec, "crm": crm, "payments": plain{}}); err == nil || !strings.Contains(err.Error(), "target onec refused its intents:\n  ") || !strings.Contains(err.Error(), "po.yaml: purchase_order.create_draft v1: map.intent") {
		t.Fatalf("err = %v", err)
	}
	// A declared intent at a target that serves only its built-ins.
	moved := mustLoadDir(t, configtest.Dir(t, map[string]string{"po.yaml": strings.Replace(purchaseOrder, "target: onec", "target: buh", 1)}))
	if err := moved.Bind(map[string]adapters.Target{"onec": &binder{}, "crm": &binder{}, "payments": plain{}, "buh": plain{}}); err == nil || !strings.Contains(err.Error(), "target: the target buh serves only its built-in intents") {
		t.Fatalf("err = %v", err)
	}
}
