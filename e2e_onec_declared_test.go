package main

import (
	"encoding/json"
	"fmt"
	"github.com/oncegate/oncegate/server/config/configtest"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// purchaseOrderDefinition is a firm's own intent on its 1C: the HTTP
// service routes it by map.intent, and the firm's module has its handler.
const purchaseOrderDefinition = `name: purchase_order.create_draft
version: 1
target: onec
scope: draft
money: false
title: { ru: Черновик заказа поставщику, en: Draft purchase order }
labels:
  supplier_id: { ru: Поставщик, en: Supplier }
  warehouse_id: { ru: Склад, en: Warehouse }
  items: { ru: Строки, en: Lines }
  items.product_id: { ru: Товар, en: Product }
  items.quantity: { ru: Количество, en: Quantity }
description: Create an unposted purchase order in 1C. Send the same operation key on every retry.
schema:
  type: object
  additionalProperties: false
  required: [supplier_id, warehouse_id, items]
  properties:
    supplier_id:  { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
    warehouse_id: { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
    items:
      type: array
      minItems: 1
      maxItems: 100
      items:
        type: object
        additionalProperties: false
        required: [product_id, quantity]
        properties:
          product_id: { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
          quantity:   { type: number, exclusiveMinimum: 0, maximum: 1000000 }
references:
  supplier_id: counterparty
  warehouse_id: warehouse
  items.product_id: product
map: { intent: purchase_order.create_draft }
`

const e2ePurchaseOrder = `{"schema_version":"1.0","intent":"purchase_order.create_draft","payload":{"supplier_id":"%s","warehouse_id":"warehouse-01","items":[{"product_id":"product-778","quantity":%d}]}}`

// A declared intent on kind onec through the binary: the gateway loads it
// from intents_dir and the simulated 1C publishes it; execute, replay,
// mismatch, a lost answer and parallel duplicates make one document each.
func TestBinaryDeclaredOneCIntent(t *testing.T) {
	t.Parallel()
	dir := intentsDir(t, "purchase_order.create_draft.v1.yaml", purchaseOrderDefinition)
	r := newRig(t, withIntents(dir), notStarted())
	resp, err := http.Post(r.simURL+"/_sim/onec/intents", "application/json", strings.NewReader(`{"intents":["purchase_order.create_draft"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("publish at the simulated 1C: %s", resp.Status)
	}
	r.serve()

	t.Run("ExecuteReplayMismatch", func(t *testing.T) {
		const key = "test:purchase_order.create_draft:po-e2e-1:v1"
		code, first, err := r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-7", 2))
		if err != nil || code != 200 || first["state"] != "succeeded" || !strings.HasPrefix(fmt.Sprint(first["target_object_id"]), "DOC-") {
			t.Fatalf("first: %d %v %v", code, first, err)
		}
		code, again, err := r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-7", 2))
		if err != nil || code != 200 || again["replayed"] != true || again["target_object_id"] != first["target_object_id"] {
			t.Fatalf("replay: %d %v %v", code, again, err)
		}
		code, changed, _ := r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-7", 3))
		if code != 422 || errorCode(changed) != "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH" {
			t.Fatalf("changed payload: %d %v", code, changed)
		}
		if got := r.simJSON("/_sim/effects")["onec"][key]; got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})

	t.Run("LostAnswer", func(t *testing.T) {
		const key = "test:purchase_order.create_draft:po-e2e-2:v1"
		r.fault(`{"target":"onec","fault":"drop_response_after_commit","times":1}`)
		code, body, err := r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-7", 1))
		for i := 0; err == nil && body["state"] != "succeeded" && i < 50; i++ {
			// Unknown or in progress: the agent sends the key again.
			code, body, err = r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-7", 1))
		}
		if err != nil || code != 200 || body["state"] != "succeeded" {
			t.Fatalf("after the lost answer: %d %v %v", code, body, err)
		}
		if got := r.simJSON("/_sim/effects")["onec"][key]; got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})

	t.Run("ParallelDuplicates", func(t *testing.T) {
		const key = "test:purchase_order.create_draft:po-e2e-3:v1"
		const n = 12
		var wg sync.WaitGroup
		ids := make(chan any, n)
		for range n {
			wg.Go(func() {
				code, body, err := r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-9", 4))
				switch {
				case err != nil:
					t.Errorf("post: %v", err)
				case code == 200 && body["state"] == "succeeded":
					ids <- body["target_object_id"]
				case code == 409 && errorCode(body) == "IDEMPOTENCY_KEY_IN_USE":
				default:
					t.Errorf("duplicate: %d %v", code, body)
				}
			})
		}
		wg.Wait()
		close(ids)
		var first any
		for id := range ids {
			if first == nil {
				first = id
			} else if id != first {
				t.Fatalf("duplicates answered %v and %v", first, id)
			}
		}
		if got := r.simJSON("/_sim/effects")["onec"][key]; got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})
	t.Run("NotPublishedThenPublished", func(t *testing.T) {
		// The firm's module lacks the handler: nothing is done at 1C, and
		// the same key goes through once it is added.
		publish := func(body string) {
			t.Helper()
			resp, err := http.Post(r.simURL+"/_sim/onec/intents", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("publish %s: %s", body, resp.Status)
			}
		}
		const key = "test:purchase_order.create_draft:po-e2e-4:v1"
		publish(`{"intents":[]}`)
		// The agent is told to send again later; the operator's log says why.
		code, body, err := r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-7", 5))
		if err != nil || code != 503 || errorCode(body) != "TARGET_UNAVAILABLE" || body["state"] != "failed_retryable" {
			t.Fatalf("unpublished: %d %v %v", code, body, err)
		}
		if !r.gateway.saysSoon("TARGET_NOT_PUBLISHED: the 1C HTTP service does not publish the intent purchase_order.create_draft") {
			t.Fatalf("the gateway's log does not name the unpublished intent:\n%s", r.gateway.output())
		}
		if got := r.simJSON("/_sim/effects")["onec"][key]; got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
		publish(`{"intents":["purchase_order.create_draft"]}`)
		code, body, err = r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-7", 5))
		if err != nil || code != 200 || body["state"] != "succeeded" {
			t.Fatalf("published again: %d %v %v", code, body, err)
		}
		if got := r.simJSON("/_sim/effects")["onec"][key]; got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})
}

// check gives the 1C target the definitions naming it and says whether
// its HTTP service publishes each: the firm's intent is named until the
// module routes it, and nothing is written either way.
func TestCheckDeclaredOneCIntent(t *testing.T) {
	t.Parallel()
	dir := intentsDir(t, "purchase_order.create_draft.v1.yaml", purchaseOrderDefinition)
	simURL := startSim(t)
	cfg := configtest.Write(t, "contour: test\nintents_dir: "+dir+"\ntargets:\n  onec: { base_url: \""+simURL+"/onec\", timeout_ms: 2000 }\n")

	out, code := runCheck(t, nil, "--config", cfg)
	line := lineOf(out, "onec")
	if code == 0 || !strings.Contains(line, "FAIL") || !strings.Contains(line, "does not publish purchase_order.create_draft") ||
		!strings.Contains(line, "it publishes invoice.create, sales_order.create_draft, sales_order.get_status, sales_order.post") {
		t.Fatalf("check with the intent unpublished (exit %d):\n%s", code, out)
	}

	resp, err := http.Post(simURL+"/_sim/onec/intents", "application/json", strings.NewReader(`{"intents":["purchase_order.create_draft"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out, code = runCheck(t, nil, "--config", cfg)
	if line := lineOf(out, "onec"); code != 0 || !strings.Contains(line, "OK") || !strings.Contains(line, "purchase_order.create_draft") {
		t.Fatalf("check with the intent published (exit %d):\n%s", code, out)
	}
	resp, err = http.Get(simURL + "/_sim/effects")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var effects map[string]map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&effects); err != nil || len(effects["onec"]) != 0 {
		t.Fatalf("check left effects: %v %v", effects, err)
	}
}

// serve on its built-in simulators publishes the firm's own 1C intents at
// the simulated 1C service, as the firm's module would with their
// handlers: a declared intent runs in the demo with no further step.
func TestServeSimulatorPublishesDeclaredIntents(t *testing.T) {
	t.Parallel()
	dir := intentsDir(t, "purchase_order.create_draft.v1.yaml", purchaseOrderDefinition)
	r := newRig(t, withConfigFile("contour: test\nintents_dir: "+dir+"\n"))
	const key = "test:purchase_order.create_draft:po-demo-1:v1"
	code, body, err := r.post(key, fmt.Sprintf(e2ePurchaseOrder, "supplier-7", 2))
	if err != nil || code != 200 || body["state"] != "succeeded" {
		t.Fatalf("a declared 1C intent on serve's own simulator: %d %v %v", code, body, err)
	}
}
