package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config/configtest"
)

// invoiceThenCharge is a process over the built-ins: an invoice in 1C,
// then a charge; the invoice is undone by a person should the charge fail.
const invoiceThenCharge = `name: order.fulfil
version: 1
title: { ru: Оформление заказа, en: Order fulfilment }
labels:
  order_id:     { ru: Заказ, en: Order }
  account_id:   { ru: Счёт клиента, en: Customer account }
  amount_minor: { ru: Сумма, en: Amount }
  items:        { ru: Строки, en: Lines }
description: Invoice the order in 1C, then charge the customer's saved card.
schema:
  type: object
  additionalProperties: false
  required: [order_id, account_id, amount_minor, items]
  properties:
    order_id:     { type: string, minLength: 1, maxLength: 64 }
    account_id:   { type: string, minLength: 1, maxLength: 64 }
    amount_minor: { type: integer, minimum: 1, maximum: 100000000000 }
    items:
      type: array
      minItems: 1
      maxItems: 100
      items:
        type: object
        additionalProperties: false
        required: [product_id, quantity, unit, price_minor]
        properties:
          product_id:  { type: string, minLength: 1, maxLength: 64 }
          quantity:    { type: number, exclusiveMinimum: 0, maximum: 1000000 }
          unit:        { type: string, minLength: 1, maxLength: 16 }
          price_minor: { type: integer, minimum: 0, maximum: 100000000000 }
steps:
  - name: invoice
    intent: invoice.create
    payload:
      order_id:        { from: order_id }
      organization_id: { value: org-main }
      customer_id:     { value: customer-1042 }
      currency:        { value: RUB }
      items:           { from: items }
    compensate: manual
  - name: charge
    intent: payment.charge
    payload:
      account_id:   { from: account_id }
      order_id:     { from: order_id }
      amount_minor: { from: amount_minor }
      currency:     { value: RUB }
      description:  { template: "Оплата счёта {steps.invoice.result.number}" }
`

// A declared process is checked strictly and listed with its steps.
func TestProcessListed(t *testing.T) {
	t.Parallel()
	dir := intentsDir(t, "order.fulfil.v1.yaml", invoiceThenCharge)
	cfg := configtest.Write(t, "intents_dir: "+dir+"\n")
	out := runBinary(t, nil, "intents", "list", "--config", cfg)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := "order.fulfil 1 process: invoice.create → payment.charge write+pay yes " + filepath.Join(dir, "order.fulfil.v1.yaml")
	if got := strings.Join(strings.Fields(lines[len(lines)-1]), " "); got != want {
		t.Errorf("the process's line: %q, want %q", got, want)
	}
	broken := strings.Replace(invoiceThenCharge, "      customer_id:     { value: customer-1042 }\n", "", 1)
	if out, code := runCommand(t, nil, "intents", "list", "--config", configtest.Write(t, "intents_dir: "+intentsDir(t, "order.fulfil.v1.yaml", broken)+"\n")); code == 0 ||
		!strings.Contains(out, "order.fulfil.v1.yaml: steps[0].payload: leaves invoice.create's required field customer_id unfilled (line 34)") {
		t.Errorf("a process leaving a required field unfilled: exit %d\n%s", code, out)
	}
}

// A process through the real binary: both steps run, each once at its
// target, and the process's key replays the answer.
func TestProcessThroughTheBinary(t *testing.T) {
	t.Parallel()
	process := strings.Replace(invoiceThenCharge, `  - name: charge
    intent: payment.charge
    payload:
      account_id:   { from: account_id }
      order_id:     { from: order_id }
      amount_minor: { from: amount_minor }
      currency:     { value: RUB }
      description:  { template: "Оплата счёта {steps.invoice.result.number}" }
`, `  - name: call
    intent: crm.callback.create
    payload:
      customer_id: { value: customer-1042 }
      due_at:      { value: "2026-12-10T10:00:00+03:00" }
      comment:     { template: "Счёт {steps.invoice.result.number} по заказу {order_id}: позвонить" }
`, 1)
	r := newRig(t, withSettings(""), withIntents(intentsDir(t, "order.fulfil.v1.yaml", process)))
	const key = "test:order.fulfil:order-e2e-1:v1"
	body := `{"schema_version":"1.0","intent":"order.fulfil","payload":{"order_id":"order-e2e-1","account_id":"merchant-account-17","amount_minor":125000,
		"items":[{"product_id":"product-778","quantity":2,"unit":"pcs","price_minor":62500}]}}`
	code, answer, err := r.post(key, body)
	if err != nil || code != 200 || answer["state"] != "succeeded" {
		t.Fatalf("the process: %d %v %v", code, answer, err)
	}
	steps := answer["steps"].([]any)
	if len(steps) != 2 {
		t.Fatalf("steps: %v", steps)
	}
	effects := r.simJSON("/_sim/effects")
	for i, target := range []string{"onec", "bitrix24"} {
		s := steps[i].(map[string]any)
		if s["state"] != "succeeded" || effects[target][s["operation_key"].(string)] != 1 {
			t.Errorf("step %v: %v; effects at %s: %v", s["name"], s, target, effects[target])
		}
	}
	if code, again, err := r.post(key, body); err != nil || code != 200 || again["replayed"] != true {
		t.Fatalf("the replay: %d %v %v", code, again, err)
	}
}
