package main

import (
	"fmt"
	"github.com/oncegate/oncegate/server/config/configtest"
	"net/http"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

// odataInvoiceDefinition is a firm's own intent on a 1C base reached over
// the standard OData interface: a customer's invoice, its references
// resolved at 1C by code, its lines the document's Товары section.
const odataInvoiceDefinition = `name: buh_invoice.create
version: 1
target: buh
scope: draft
money: false
title: { ru: Счет покупателю, en: Customer invoice }
labels:
  order_id: { ru: Заказ, en: Order }
  organization_id: { ru: Организация, en: Organization }
  customer_id: { ru: Покупатель, en: Customer }
  currency: { ru: Валюта, en: Currency }
  items: { ru: Строки, en: Lines }
  items.product_id: { ru: Товар, en: Product }
  items.quantity: { ru: Количество, en: Quantity }
  items.price_minor: { ru: Цена в копейках, en: Price in minor units }
description: Create an unposted customer invoice in 1C. Send the same operation key on every retry.
schema:
  type: object
  additionalProperties: false
  required: [order_id, organization_id, customer_id, currency, items]
  properties:
    order_id:        { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
    organization_id: { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
    customer_id:     { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
    currency:        { type: string, maxLength: 3, enum: [RUB] }
    items:
      type: array
      minItems: 1
      maxItems: 100
      items:
        type: object
        additionalProperties: false
        required: [product_id, quantity, price_minor]
        properties:
          product_id:  { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
          quantity:    { type: number, exclusiveMinimum: 0, maximum: 1000000 }
          price_minor: { type: integer, minimum: 0, maximum: 100000000000 }
references:
  organization_id: organization
  customer_id: counterparty
  items.product_id: product
map:
  entity: Document_СчетНаОплатуПокупателю
  fields:
    Организация_Key: { ref: organization_id }
    Контрагент_Key: { ref: customer_id }
    Комментарий: { from: order_id }
    Number: { from: order_id }
    Товары:
      from: items
      row:
        Номенклатура_Key: { ref: product_id }
        Количество: { from: quantity }
        Цена: { from: price_minor, money: minor }
`

const e2eODataInvoice = `{"schema_version":"1.0","intent":"buh_invoice.create","payload":{"order_id":"%s","organization_id":"org-main","customer_id":"customer-1042","currency":"RUB","items":[{"product_id":"product-778","quantity":%d,"price_minor":62500}]}}`

// A declared intent on an instance of kind onec_odata through the binary:
// the document's Ref_Key is the operation's, so execute makes one
// document, a replay sends nothing, and a lost answer is settled by
// looking the document up, never by a second create; a change of the
// document runs on the same gateway (testODataChange).
func TestBinaryDeclaredODataIntent(t *testing.T) {
	t.Parallel()
	dir := configtest.Dir(t, map[string]string{"buh_invoice.create.v1.yaml": odataInvoiceDefinition,
		"buh_invoice.mark_deleted.v1.yaml": odataMarkDeletedDefinition})
	r := newRig(t, withIntents(dir), withOData("buh", "time_zone: Europe/Moscow, timeout_ms: 1000"))

	effects := func(key string) (docs, creates int) {
		t.Helper()
		ref := onecodata.RefKey("buh", "buh_invoice.create", key)
		return r.simJSON("/_sim/effects")[sim.OneCOData][ref], r.simJSON("/_sim/calls")[sim.OneCOData][ref]
	}

	t.Run("ExecuteReplayMismatch", func(t *testing.T) {
		const key = "test:buh_invoice.create:inv-odata-1:v1"
		code, first, err := r.post(key, fmt.Sprintf(e2eODataInvoice, "inv-odata-1", 2))
		if err != nil || code != 200 || first["state"] != "succeeded" {
			t.Fatalf("first: %d %v %v", code, first, err)
		}
		if got, want := first["target_object_id"], onecodata.RefKey("buh", "buh_invoice.create", key); got != want {
			t.Fatalf("target_object_id %v, want the Ref_Key %s", got, want)
		}
		if res, _ := first["result"].(map[string]any); res == nil || res["number"] == nil || res["number"] == "" {
			t.Errorf("result %v carries no document number", first["result"])
		}
		code, again, err := r.post(key, fmt.Sprintf(e2eODataInvoice, "inv-odata-1", 2))
		if err != nil || code != 200 || again["replayed"] != true || again["target_object_id"] != first["target_object_id"] {
			t.Fatalf("replay: %d %v %v", code, again, err)
		}
		code, changed, _ := r.post(key, fmt.Sprintf(e2eODataInvoice, "inv-odata-1", 3))
		if code != 422 || errorCode(changed) != "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH" {
			t.Fatalf("changed payload: %d %v", code, changed)
		}
		if docs, creates := effects(key); docs != 1 || creates != 1 {
			t.Fatalf("documents %d and creates %d, want 1 and 1", docs, creates)
		}
	})

	// A base that cuts a string to its attribute's length answers the
	// create as a success; the answer, and its replay, say what was cut.
	t.Run("TruncatedValueWarned", func(t *testing.T) {
		const key = "test:buh_invoice.create:inv-odata-cut-000123:v1"
		resp, err := http.Post(r.simURL+"/_sim/onec_odata/settings", "application/json", strings.NewReader(`{"truncate":true}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		defer func() {
			resp, err := http.Post(r.simURL+"/_sim/onec_odata/settings", "application/json", strings.NewReader(`{}`))
			if err == nil {
				resp.Body.Close()
			}
		}()
		for _, what := range []string{"first", "replay"} {
			code, body, err := r.post(key, fmt.Sprintf(e2eODataInvoice, "inv-odata-cut-000123", 1))
			if err != nil || code != 200 || body["state"] != "succeeded" {
				t.Fatalf("%s: %d %v %v", what, code, body, err)
			}
			ws, _ := body["warnings"].([]any)
			w, _ := func() (map[string]any, bool) {
				if len(ws) != 1 {
					return nil, false
				}
				m, ok := ws[0].(map[string]any)
				return m, ok
			}()
			if w == nil || w["code"] != "TARGET_CHANGED_VALUE" || w["field"] != "order_id" ||
				!strings.Contains(fmt.Sprint(w["message"]), "cut Number to 11 characters (20 were sent)") {
				t.Fatalf("%s: warnings %v, want TARGET_CHANGED_VALUE on order_id", what, body["warnings"])
			}
		}
	})

	t.Run("Change", func(t *testing.T) { testODataChange(t, r) })

	t.Run("LostAnswer", func(t *testing.T) {
		const key = "test:buh_invoice.create:inv-odata-2:v1"
		r.fault(`{"target":"onec_odata","fault":"drop_response_after_commit","times":1}`)
		code, body, err := r.post(key, fmt.Sprintf(e2eODataInvoice, "inv-odata-2", 1))
		if err != nil || code != 202 || body["state"] != "unknown" || errorCode(body) != "OUTCOME_UNKNOWN" {
			t.Fatalf("the lost answer: %d %v %v, want 202 unknown OUTCOME_UNKNOWN", code, body, err)
		}
		for i := 0; err == nil && body["state"] != "succeeded" && i < 50; i++ {
			// Unknown or in progress: the agent sends the key again.
			code, body, err = r.post(key, fmt.Sprintf(e2eODataInvoice, "inv-odata-2", 1))
		}
		if err != nil || code != 200 || body["state"] != "succeeded" {
			t.Fatalf("after the lost answer: %d %v %v", code, body, err)
		}
		if docs, creates := effects(key); docs != 1 || creates != 1 {
			t.Fatalf("documents %d and creates %d, want 1 and 1: the lost answer is settled by a look-up", docs, creates)
		}
	})
}

// check reads the OData publication of an onec_odata instance, writing
// nothing: the declared intent's entity set and mapped properties are
// published, then its document is left out of the composition and check
// names it, and a wrong password names the credentials' settings.
func TestCheckDeclaredODataIntent(t *testing.T) {
	t.Parallel()
	dir := intentsDir(t, "buh_invoice.create.v1.yaml", odataInvoiceDefinition)
	simURL := startSim(t)
	cfg := configtest.Write(t, "contour: test\nintents_dir: "+dir+"\ntargets:\n  buh: { kind: onec_odata, base_url: \""+simURL+sim.ODataPath+"\", username_env: BUH_USER, password_env: BUH_PASSWORD, timeout_ms: 2000 }\n")
	env := []string{"BUH_USER=integration", "BUH_PASSWORD=" + sim.ODataPassword}

	out, code := runCheck(t, env, "--config", cfg)
	if line := lineOf(out, "buh"); code != 0 || !strings.Contains(line, "OK") ||
		!strings.Contains(line, "buh_invoice.create v1: Document_СчетНаОплатуПокупателю and every mapped property are published") {
		t.Fatalf("check of the published intent (exit %d):\n%s", code, out)
	}
	// intents check: the definitions, then each target they run at.
	out, code = runCommand(t, env, "intents", "check", "--config", cfg)
	if line := lineOf(out, "buh"); code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "buh_invoice.create 1 buh draft no") || !strings.Contains(line, "OK") ||
		!strings.Contains(line, "buh_invoice.create v1: Document_СчетНаОплатуПокупателю and every mapped property are published") {
		t.Fatalf("intents check of the published intent (exit %d):\n%s", code, out)
	}

	resp, err := http.Post(simURL+"/_sim/onec_odata/settings", "application/json", strings.NewReader(`{"unpublished":["Document_СчетНаОплатуПокупателю"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("unpublish at the simulator: %s", resp.Status)
	}
	out, code = runCheck(t, env, "--config", cfg)
	if line := lineOf(out, "buh"); code == 0 || !strings.Contains(line, "FAIL") || !strings.Contains(line, "Document_СчетНаОплатуПокупателю") {
		t.Fatalf("check with the document unpublished (exit %d):\n%s", code, out)
	}
	out, code = runCommand(t, env, "intents", "check", "--config", cfg)
	if line := lineOf(out, "buh"); code == 0 || !strings.Contains(line, "FAIL") || !strings.Contains(line, "buh_invoice.create v1: not published: Document_СчетНаОплатуПокупателю") {
		t.Fatalf("intents check with the document unpublished (exit %d):\n%s", code, out)
	}

	out, code = runCheck(t, []string{"BUH_USER=integration", "BUH_PASSWORD=wrong-password"}, "--config", cfg)
	if code == 0 || !strings.Contains(lineOf(out, "buh"), "FAIL") || !strings.Contains(out, "targets.buh.password_env (BUH_PASSWORD)") || strings.Contains(out, "wrong-password") {
		t.Fatalf("check with a wrong password (exit %d):\n%s", code, out)
	}
	if effects := (&rig{t: t, simURL: simURL}).simJSON("/_sim/effects"); len(effects[sim.OneCOData]) != 0 {
		t.Fatalf("check left effects: %v", effects)
	}
}
