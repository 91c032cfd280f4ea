package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// fulfil is a process over the built-ins: an invoice in 1C, then a
// charge; should the charge fail for good, the customer is called back
// (a CRM task) — the compensation given by undo.
const fulfil = `name: order.fulfil
version: 1
title: { ru: Оформление заказа, en: Order fulfilment }
labels:
  order_id:     { ru: Заказ, en: Order }
  amount_minor: { ru: Сумма, en: Amount }
description: Invoice the order in 1C, then charge the customer's saved card.
schema:
  type: object
  additionalProperties: false
  required: [order_id, amount_minor]
  properties:
    order_id:     { type: string, minLength: 1, maxLength: 64 }
    amount_minor: { type: integer, minimum: 1, maximum: 100000000000 }
steps:
  - name: invoice
    intent: invoice.create
    payload:
      order_id:        { from: order_id }
      organization_id: { value: org-main }
      customer_id:     { value: customer-1042 }
      currency:        { value: RUB }
      items:           { value: [{ product_id: product-778, quantity: 2, unit: pcs, price_minor: 62500 }] }
    compensate: UNDO
  - name: charge
    intent: payment.charge
    payload:
      account_id:   { value: merchant-account-17 }
      order_id:     { from: order_id }
      amount_minor: { from: amount_minor }
      currency:     { value: RUB }
      description:  { template: "Оплата счёта {steps.invoice.result.number} по заказу {order_id}" }
`

// callBack undoes the invoice: a CRM task to tell the customer.
const callBack = `
      intent: crm.callback.create
      payload:
        customer_id: { value: customer-1042 }
        due_at:      { value: "2026-12-10T10:00:00+03:00" }
        comment:     { template: "Счёт {steps.invoice.target_object_id} отменён: оплата не прошла" }`

// processGateway serves fulfil with its invoice undone by undo, and a
// token with every right its steps need.
func processGateway(t *testing.T, undo string) (*gateway, string) {
	t.Helper()
	cfg := fastConfig()
	cfg.IntentsDir = configtest.Dir(t, map[string]string{"order.fulfil.v1.yaml": strings.Replace(fulfil, "UNDO", undo, 1)})
	g := setupWith(t, cfg)
	return g, g.MustToken("shop-agent", "write", "pay")
}

func fulfilment(order string, amount int) []byte {
	return []byte(`{"schema_version":"1.0","intent":"order.fulfil","payload":{"order_id":"` + order + `","amount_minor":` + strconv.Itoa(amount) + `}}`)
}

// step is the named step of a process's answer.
func step(r reply, name string) map[string]any {
	steps, _ := r.Body["steps"].([]any)
	for _, s := range steps {
		if m, _ := s.(map[string]any); m["name"] == name {
			return m
		}
	}
	return nil
}

// A process runs its steps in order, each an operation of its own: the
// charge waits for the accountant, and once approved the process
// succeeds, with one invoice and one payment at the targets.
func TestProcessRunsItsSteps(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, "manual")
	const key = "test:order.fulfil:order-p1:v1"
	post := func() reply {
		return g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p1", 125000))
	}
	r := post()
	expect(t, r, http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	invoice, charge := step(r, "invoice"), step(r, "charge")
	if invoice["state"] != "succeeded" || invoice["target_object_id"] == nil || charge["state"] != "awaiting_approval" {
		t.Fatalf("steps: %s", r.Raw)
	}
	chargeKey := charge["operation_key"].(string)
	if !strings.HasPrefix(chargeKey, "test:payment.charge:px-order-p1-") {
		t.Fatalf("the charge's key %q is not derived from the process's", chargeKey)
	}
	if err := g.store.DecideApproval(context.Background(), g.approval(chargeKey).ID, true, "anna", "checked"); err != nil {
		t.Fatal(err)
	}
	until(t, "the process to succeed", func() bool {
		return g.do("GET", "/v1/operations/"+key, tok, nil, nil).str("state") == "succeeded"
	})
	r = post()
	expect(t, r, http.StatusOK, "succeeded", "")
	if r.Body["replayed"] != true || step(r, "charge")["state"] != "succeeded" {
		t.Fatalf("the replay: %s", r.Raw)
	}
	invoiceKey := step(r, "invoice")["operation_key"].(string)
	if n := g.sim.Effects(sim.OneC, invoiceKey); n != 1 {
		t.Errorf("%d invoices in 1C, want 1", n)
	}
	if n := g.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(chargeKey)); n != 1 {
		t.Errorf("%d payments at YooKassa, want 1", n)
	}
	// The charge's description was filled from the invoice's result.
	if desc := g.row(chargeKey).Payload; !strings.Contains(string(desc), "Оплата счёта ") || strings.Contains(string(desc), "{steps") {
		t.Errorf("the charge's payload: %s", desc)
	}
	// Another request under the process's key is refused.
	r = g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p1", 99))
	expect(t, r, http.StatusUnprocessableEntity, "rejected", "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH")
}

// The charge denied, the completed invoice is undone as declared, once:
// the process ends compensated, and nothing was charged.
func TestProcessDeniedIsCompensated(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, callBack)
	const key = "test:order.fulfil:order-p2:v1"
	r := g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p2", 125000))
	expect(t, r, http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	chargeKey := step(r, "charge")["operation_key"].(string)
	if err := g.store.DecideApproval(context.Background(), g.approval(chargeKey).ID, false, "anna", "no such order"); err != nil {
		t.Fatal(err)
	}
	var got reply
	until(t, "the process to be compensated", func() bool {
		got = g.do("GET", "/v1/operations/"+key, tok, nil, nil)
		return got.str("state") == "compensated"
	})
	undo, _ := step(got, "invoice")["compensation"].(map[string]any)
	if undo == nil || undo["state"] != "succeeded" || undo["intent"] != "crm.callback.create" {
		t.Fatalf("the invoice's compensation: %s", got.Raw)
	}
	r = g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p2", 125000))
	expect(t, r, http.StatusUnprocessableEntity, "compensated", "APPROVAL_DENIED")
	if errs := r.Body["errors"].([]any); len(errs) != 2 || errs[1].(map[string]any)["code"] != "PROCESS_COMPENSATED" {
		t.Fatalf("errors of a compensated process: %s", r.Raw)
	}
	if n := g.sim.Effects(sim.Bitrix24, undo["operation_key"].(string)); n != 1 {
		t.Errorf("%d call-back tasks, want 1", n)
	}
	if n := g.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(chargeKey)); n != 0 {
		t.Errorf("%d payments for a denied charge", n)
	}
}

// A step undone by a person leaves the process waiting for them.
func TestProcessManualUndoNeedsReview(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, "manual")
	const key = "test:order.fulfil:order-p3:v1"
	r := g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p3", 125000))
	chargeKey := step(r, "charge")["operation_key"].(string)
	if err := g.store.DecideApproval(context.Background(), g.approval(chargeKey).ID, false, "anna", "no"); err != nil {
		t.Fatal(err)
	}
	until(t, "the process to wait for a person", func() bool {
		r = g.do("GET", "/v1/operations/"+key, tok, nil, nil)
		return r.str("state") == "needs_review"
	})
	if errs := r.Body["errors"].([]any); len(errs) != 2 || errs[1].(map[string]any)["code"] != "PROCESS_NEEDS_REVIEW" {
		t.Fatalf("errors of a process needing review: %s", r.Raw)
	}
}

// An agent cannot send a key shaped as a step's, nor run a process
// without every right its steps need.
func TestProcessKeysAndRights(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, "manual")
	r := g.post("test:invoice.create:px-order-9-abc-invoice:v1", invoice("order-9", 1))
	expect(t, r, http.StatusBadRequest, "rejected", "IDEMPOTENCY_KEY_INVALID")
	writer := g.MustToken("writer", "write")
	r = g.do("POST", "/v1/operations", writer, map[string]string{"Idempotency-Key": "test:order.fulfil:order-p4:v1"}, fulfilment("order-p4", 100))
	expect(t, r, http.StatusForbidden, "rejected", "PERMISSION_DENIED")
	r = g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": "test:order.fulfil:order-p4:v1"}, fulfilment("order-p4", 100))
	if r.Code != http.StatusAccepted {
		t.Fatalf("with write and pay: %s", r.Raw)
	}
}

// A process is offered as any intent: listed with the scopes its steps
// need, in the OpenAPI document, and as an MCP tool to a token holding
// them all — one call runs it, steps and all.
func TestProcessOffered(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, "manual")
	r := g.do("GET", "/v1/intents", tok, nil, nil)
	var listed map[string]any
	for _, in := range r.Body["intents"].([]any) {
		if m := in.(map[string]any); m["name"] == "order.fulfil" {
			listed = m
		}
	}
	if listed == nil || listed["target"] != "process" || fmt.Sprint(listed["scopes"]) != "[write pay]" || fmt.Sprint(listed["steps"]) != "[invoice.create payment.charge]" {
		t.Fatalf("GET /v1/intents lists the process as %v", listed)
	}
	doc := g.do("GET", "/v1/openapi.json", tok, nil, nil)
	schemas, _ := doc.Body["components"].(map[string]any)["schemas"].(map[string]any)
	req, _ := schemas["OrderFulfilRequest"].(map[string]any)
	if fmt.Sprint(req["x-oncegate-steps"]) != "[invoice.create payment.charge]" || schemas["Step"] == nil {
		t.Fatalf("the OpenAPI document's process: %v", req)
	}
	tools := func(token string) []string {
		cs, err := g.mcpSession(t, token)
		if err != nil {
			t.Fatal(err)
		}
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	if names := tools(g.MustToken("writer", "write")); slices.Contains(names, "order.fulfil") {
		t.Errorf("a token without pay is offered the process: %v", names)
	}
	if names := tools(tok); !slices.Contains(names, "order.fulfil") {
		t.Fatalf("a token with write and pay is not offered the process: %v", names)
	}
	cs, err := g.mcpSession(t, tok)
	if err != nil {
		t.Fatal(err)
	}
	a := call(t, cs, "order.fulfil", map[string]any{"operation_key": "test:order.fulfil:order-mcp-1:v1", "payload": map[string]any{"order_id": "order-mcp-1", "amount_minor": 5000}})
	if a.str("state") != "awaiting_approval" || a.errCode() != "APPROVAL_REQUIRED" {
		t.Fatalf("the process through MCP: %v", a.body)
	}
	if steps, _ := a.body["steps"].([]any); len(steps) != 2 {
		t.Fatalf("the MCP answer's steps: %v", a.body)
	}
}
