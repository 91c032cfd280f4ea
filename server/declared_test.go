package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/oncegate/oncegate/server/config/configtest"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// purchaseOrder is a firm's own intent: a purchase order draft in 1C,
// declared in a file.
const purchaseOrder = `name: purchase_order.create_draft
version: 1
target: onec
scope: draft
money: false
title: { ru: Заказ поставщику, en: Purchase order }
labels:
  supplier_id:  { ru: Поставщик, en: Supplier }
  currency:     { ru: Валюта, en: Currency }
  items:        { ru: Строки, en: Lines }
description: purchase order draft in 1C
schema:
  type: object
  additionalProperties: false
  required: [supplier_id, currency, items]
  properties:
    supplier_id: { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
    currency:    { type: string, minLength: 3, maxLength: 3, pattern: "^[A-Za-z]{3}$" }
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
limits: { currency_field: currency, currencies: [RUB], items_field: items, max_items: 2 }
`

// purchase is a purchase_order.create_draft envelope.
func purchase(supplier string, quantity float64) map[string]any {
	return map[string]any{
		"schema_version": "1.0",
		"intent":         "purchase_order.create_draft",
		"payload": map[string]any{
			"supplier_id": supplier, "currency": "rub",
			"items": []any{map[string]any{"product_id": "product-778", "quantity": quantity}},
		},
	}
}

// A firm's own intent, declared in intents_dir, runs with every guarantee
// of the built-ins: executed once at its target, replayed, a changed
// request under its key refused, its limits applied, listed by GET
// /v1/intents beside the built-ins.
func TestDeclaredIntent(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.IntentsDir = configtest.Dir(t, map[string]string{"purchase_order.create_draft.v1.yaml": purchaseOrder})
	g := setupWith(t, cfg)
	if err := g.sim.PublishOneC("purchase_order.create_draft"); err != nil {
		t.Fatal(err)
	}
	const key = "test:purchase_order:create_draft:po-1:v1"

	first := g.post(key, purchase("supplier-7", 2))
	expect(t, first, http.StatusOK, "succeeded", "")
	if got, want := first.str("target_system"), "onec"; got != want {
		t.Errorf("target_system = %q, want %q", got, want)
	}
	if got, want := first.str("operation"), "purchase_order.create_draft"; got != want {
		t.Errorf("operation = %q, want %q", got, want)
	}
	if g.sim.Effects("onec", key) != 1 {
		t.Fatalf("effects at 1C: %d, want 1", g.sim.Effects("onec", key))
	}

	// The same request again: the stored answer, nothing done again.
	again := g.post(key, purchase("supplier-7", 2))
	expect(t, again, http.StatusOK, "succeeded", "")
	if again.Header.Get("Idempotent-Replayed") != "true" || again.str("target_object_id") != first.str("target_object_id") {
		t.Fatalf("not a replay: %s", again.Raw)
	}
	// The declared upper-casing makes rub and RUB one request.
	upper := purchase("supplier-7", 2)
	upper["payload"].(map[string]any)["currency"] = "RUB"
	expect(t, g.post(key, upper), http.StatusOK, "succeeded", "")
	// Another request under the key is refused.
	expect(t, g.post(key, purchase("supplier-7", 3)), http.StatusUnprocessableEntity, "rejected", "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH")
	if g.sim.Effects("onec", key) != 1 {
		t.Fatalf("effects at 1C after the retries: %d, want 1", g.sim.Effects("onec", key))
	}

	// Its declared limits and schema hold.
	three := purchase("supplier-7", 1)
	items := three["payload"].(map[string]any)["items"].([]any)
	three["payload"].(map[string]any)["items"] = append(items, items[0], items[0])
	r := g.post("test:purchase_order:create_draft:po-2:v1", three)
	expect(t, r, http.StatusUnprocessableEntity, "rejected", "LIMIT_EXCEEDED")
	if r.errField() != "items" {
		t.Errorf("field %q, want items", r.errField())
	}
	bad := purchase("supplier-7", 1)
	bad["payload"].(map[string]any)["method"] = "Документ.ЗаказПоставщику.Записать"
	r = g.post("test:purchase_order:create_draft:po-3:v1", bad)
	expect(t, r, http.StatusBadRequest, "rejected", "UNKNOWN_FIELD")
	// The key rules (docs/api.md, Operation keys) apply unchanged.
	expect(t, g.post("test:purchase_order.create:po-4:v1", purchase("supplier-7", 1)), http.StatusBadRequest, "rejected", "IDEMPOTENCY_KEY_INVALID")
	// The draft right is its scope.
	reader := g.MustToken("agent-read", "read")
	body, _ := json.Marshal(purchase("supplier-7", 1))
	expect(t, g.do("POST", "/v1/operations", reader, map[string]string{"Idempotency-Key": "test:purchase_order.create_draft:po-5:v1"}, body), http.StatusForbidden, "rejected", "PERMISSION_DENIED")

	// Listed beside the built-ins, with its schema.
	list := g.do("GET", "/v1/intents", g.token, nil, nil)
	var names []string
	for _, in := range list.Body["intents"].([]any) {
		names = append(names, in.(map[string]any)["name"].(string))
	}
	if got, want := strings.Join(names, ","), "invoice.create,sales_order.create_draft,sales_order.get_status,sales_order.post,crm.callback.create,payment.charge,payment.refund,purchase_order.create_draft"; got != want {
		t.Fatalf("GET /v1/intents lists %s, want %s", got, want)
	}
	if !strings.Contains(list.Raw, `"description":"purchase order draft in 1C"`) || !strings.Contains(list.Raw, `"supplier_id":{"type":"string"`) {
		t.Fatalf("GET /v1/intents: %s", list.Raw)
	}
	doc := g.do("GET", "/v1/openapi.json", "", nil, nil)
	if !strings.Contains(doc.Raw, `"PurchaseOrderCreateDraftRequest"`) {
		t.Fatal("the OpenAPI document lacks the declared intent")
	}
}

// builtin_intents switches built-ins off: what is not served is
// INTENT_NOT_ALLOWED, whatever it was before.
func TestBuiltinIntentsSwitchedOff(t *testing.T) {
	t.Parallel()
	t.Run("None", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig()
		cfg.BuiltinIntents = []string{"none"}
		cfg.IntentsDir = configtest.Dir(t, map[string]string{"po.yaml": purchaseOrder})
		g := setupWith(t, cfg)
		if err := g.sim.PublishOneC("purchase_order.create_draft"); err != nil {
			t.Fatal(err)
		}
		r := g.post("test:invoice.create:order-off-1:v1", invoice("order-off-1", 1))
		expect(t, r, http.StatusBadRequest, "rejected", "INTENT_NOT_ALLOWED")
		if !strings.Contains(r.Raw, "allowed intents: purchase_order.create_draft") {
			t.Errorf("the refusal does not list what is served: %s", r.Raw)
		}
		expect(t, g.post("test:purchase_order.create_draft:po-on-1:v1", purchase("supplier-1", 1)), http.StatusOK, "succeeded", "")
	})
	t.Run("List", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig()
		cfg.BuiltinIntents = []string{"sales_order.create_draft"}
		g := setupWith(t, cfg)
		expect(t, g.post("test:invoice.create:order-off-2:v1", invoice("order-off-2", 1)), http.StatusBadRequest, "rejected", "INTENT_NOT_ALLOWED")
		expect(t, g.post("test:sales_order.create_draft:draft-on-2:v1", draft()), http.StatusOK, "succeeded", "")
		list := g.do("GET", "/v1/intents", g.token, nil, nil)
		if got := len(list.Body["intents"].([]any)); got != 1 {
			t.Fatalf("GET /v1/intents lists %d intents, want 1: %s", got, list.Raw)
		}
	})
}

// A key never runs under a meaning other than the one it was first
// accepted under: after its definition was edited in place or removed, a
// retry of an unfinished operation is INTENT_CHANGED and sends nothing,
// while a final operation still replays; each row records the definition.
func TestIntentChanged(t *testing.T) {
	t.Parallel()
	st := openJournal(t)
	dir := configtest.Dir(t, map[string]string{"po.yaml": purchaseOrder})
	cfg := testConfig()
	cfg.IntentsDir = dir
	cfg.Reconciler.IntervalMS, cfg.Reconciler.MaxBackoffMS = 600000, 600000 // nothing settles behind the test's back
	const done, open = "test:purchase_order.create_draft:po-done:v1", "test:purchase_order.create_draft:po-open:v1"
	const reworded = "test:purchase_order.create_draft:po-reworded:v1"

	g := serveOver(t, cfg, st)
	if err := g.sim.PublishOneC("purchase_order.create_draft"); err != nil {
		t.Fatal(err)
	}
	expect(t, g.post(done, purchase("supplier-1", 1)), http.StatusOK, "succeeded", "")
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: 503, Times: 100})
	expect(t, g.post(open, purchase("supplier-2", 1)), http.StatusServiceUnavailable, "failed_retryable", "TARGET_UNAVAILABLE")
	expect(t, g.post(reworded, purchase("supplier-4", 1)), http.StatusServiceUnavailable, "failed_retryable", "TARGET_UNAVAILABLE")
	row := g.row(open)
	// The digest is of what the definition means: the file without the
	// people's words (title, labels, description).
	var meaning []string
	for _, l := range strings.SplitAfter(purchaseOrder, "\n") {
		if !strings.HasPrefix(l, "title:") && !strings.HasPrefix(l, "labels:") && !strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "description:") ||
			strings.HasPrefix(l, "  ") && !strings.Contains(l, "{ ru:") {
			meaning = append(meaning, l)
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(meaning, "")))
	if row.IntentVersion != 1 || row.IntentDigest != hex.EncodeToString(sum[:]) {
		t.Fatalf("the row records version %d digest %q, want 1 and the SHA-256 of the file but its title, labels and description", row.IntentVersion, row.IntentDigest)
	}
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}

	// Reworded in place — title, labels, description — the definition
	// means the same: an unfinished key goes on.
	words := strings.Replace(purchaseOrder, "description: purchase order draft in 1C", "description: purchase order draft in 1C, reviewed", 1)
	words = strings.Replace(words, "en: Purchase order }", "en: Purchase order (draft) }", 1)
	if err := os.WriteFile(filepath.Join(dir, "po.yaml"), []byte(words), 0o600); err != nil {
		t.Fatal(err)
	}
	g = serveOver(t, cfg, st)
	if err := g.sim.PublishOneC("purchase_order.create_draft"); err != nil {
		t.Fatal(err)
	}
	expect(t, g.post(reworded, purchase("supplier-4", 1)), http.StatusOK, "succeeded", "")
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}

	// The file edited in place: same name and version, another meaning.
	edited := strings.Replace(words, "maximum: 1000000 }", "maximum: 999999 }", 1)
	if edited == words {
		t.Fatal("the edit changed nothing")
	}
	if err := os.WriteFile(filepath.Join(dir, "po.yaml"), []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	g = serveOver(t, cfg, st)
	if err := g.sim.PublishOneC("purchase_order.create_draft"); err != nil {
		t.Fatal(err)
	}
	r := g.post(open, purchase("supplier-2", 1))
	expect(t, r, http.StatusConflict, "rejected", "INTENT_CHANGED")
	if g.sim.Effects("onec", open) != 0 {
		t.Fatal("an operation ran under its changed definition")
	}
	again := g.post(done, purchase("supplier-1", 1))
	expect(t, again, http.StatusOK, "succeeded", "")
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a final operation did not replay: %s", again.Raw)
	}
	// A new key runs under the new text.
	expect(t, g.post("test:purchase_order.create_draft:po-new:v1", purchase("supplier-3", 1)), http.StatusOK, "succeeded", "")
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}

	// The file removed: the unfinished key is refused the same way.
	if err := os.Remove(filepath.Join(dir, "po.yaml")); err != nil {
		t.Fatal(err)
	}
	g = serveOver(t, cfg, st)
	expect(t, g.post(open, purchase("supplier-2", 1)), http.StatusConflict, "rejected", "INTENT_CHANGED")
	expect(t, g.post("test:purchase_order.create_draft:po-other:v1", purchase("supplier-2", 1)), http.StatusBadRequest, "rejected", "INTENT_NOT_ALLOWED")
	// A final operation still replays, its request unchanged; changed, it
	// cannot be told apart without its definition.
	again = g.post(done, purchase("supplier-1", 1))
	expect(t, again, http.StatusOK, "succeeded", "")
	if again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a final operation whose definition is gone did not replay: %s", again.Raw)
	}
	expect(t, g.post(done, purchase("supplier-1", 2)), http.StatusConflict, "rejected", "INTENT_CHANGED")
}
