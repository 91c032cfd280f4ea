package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
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

// An agent waits for a process without polling: a GET with wait returns
// when the process moves on.
func TestProcessAwaited(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, "manual")
	const key = "test:order.fulfil:order-p5:v1"
	r := g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p5", 125000))
	chargeKey := step(r, "charge")["operation_key"].(string)
	got := make(chan reply, 1)
	go func() { got <- g.do("GET", "/v1/operations/"+key+"?wait=30s", tok, nil, nil) }()
	until(t, "the GET to wait", func() bool { return g.store.Watching() > 0 })
	if err := g.store.DecideApproval(context.Background(), g.approval(chargeKey).ID, true, "anna", "ok"); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.str("state") != "succeeded" {
		t.Fatalf("the awaited process: %s", r.Raw)
	}
}

// The invoice's answer lost after 1C made it: the process holds at the
// step, unknown, until reconciliation finds the document by key, then
// goes on; one invoice in 1C.
func TestProcessStepLostAnswerReconciled(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, "manual")
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDropResponse, Times: 1})
	const key = "test:order.fulfil:order-p6:v1"
	r := g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p6", 125000))
	expect(t, r, http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	if s := step(r, "charge"); s["state"] != "pending" {
		t.Fatalf("the charge was sent while the invoice is unknown: %s", r.Raw)
	}
	invoiceKey := step(r, "invoice")["operation_key"].(string)
	until(t, "the process to go on to the charge", func() bool {
		return g.do("GET", "/v1/operations/"+key, tok, nil, nil).str("state") == "awaiting_approval"
	})
	if n := g.sim.Effects(sim.OneC, invoiceKey); n != 1 {
		t.Fatalf("%d invoices in 1C after the lost answer, want 1", n)
	}
}

// invoiceCall is a process of no money: an invoice, then a call-back for
// the customer named; a refused call undoes the invoice by a task of its
// own.
const invoiceCall = `name: order.invoice_call
version: 1
title: { ru: Счёт и звонок, en: Invoice and call }
labels:
  order_id:    { ru: Заказ, en: Order }
  customer_id: { ru: Клиент, en: Customer }
description: Invoice the order in 1C, then ask the CRM to call the customer.
schema:
  type: object
  additionalProperties: false
  required: [order_id, customer_id]
  properties:
    order_id:    { type: string, minLength: 1, maxLength: 64 }
    customer_id: { type: string, minLength: 1, maxLength: 64 }
steps:
  - name: invoice
    intent: invoice.create
    payload:
      order_id:        { from: order_id }
      organization_id: { value: org-main }
      customer_id:     { value: customer-1042 }
      currency:        { value: RUB }
      items:           { value: [{ product_id: product-778, quantity: 1, unit: pcs, price_minor: 62500 }] }
    compensate:
      intent: crm.callback.create
      payload:
        customer_id: { value: customer-2001 }
        due_at:      { value: "2026-12-10T10:00:00+03:00" }
        comment:     { template: "Отменить счёт {steps.invoice.result.number}" }
  - name: call
    intent: crm.callback.create
    payload:
      customer_id: { from: customer_id }
      due_at:      { value: "2026-12-10T10:00:00+03:00" }
      comment:     { template: "Счёт {steps.invoice.result.number}: позвонить" }
`

// Two gateways on one PostgreSQL journal, each sent every process at
// once: every process ends as it should, each step and compensation made
// once at the simulators.
func TestProcessesAcrossGateways(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.IntentsDir = configtest.Dir(t, map[string]string{"order.invoice_call.v1.yaml": invoiceCall})
	loc := storetest.Database(t)
	open := func() *store.Store {
		st, err := store.Open(context.Background(), loc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	sims := simulated(t, cfg)
	a, b := serveAt(t, cfg, open(), sims), serveAt(t, cfg, open(), sims)
	tok := a.MustToken("shop-agent", "write")
	const n = 12
	key := func(i int) string { return "test:order.invoice_call:order-g" + strconv.Itoa(i) + ":v1" }
	body := func(i int) []byte {
		customer := "customer-1042"
		if i%2 == 1 {
			customer = "customer-404"
		}
		return []byte(`{"schema_version":"1.0","intent":"order.invoice_call","payload":{"order_id":"order-g` + strconv.Itoa(i) + `","customer_id":"` + customer + `"}}`)
	}
	var wg sync.WaitGroup
	for i := range n {
		for _, g := range []*gateway{a, b} {
			wg.Go(func() { g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key(i)}, body(i)) })
		}
	}
	wg.Wait()
	for i := range n {
		want := "succeeded"
		if i%2 == 1 {
			want = "compensated"
		}
		var r reply
		until(t, "process "+key(i)+" to end "+want, func() bool {
			r = b.do("GET", "/v1/operations/"+key(i), tok, nil, nil)
			return r.str("state") == want
		})
		invoice, call := step(r, "invoice"), step(r, "call")
		if got := sims.Sim.Effects(sim.OneC, invoice["operation_key"].(string)); got != 1 {
			t.Errorf("%s: %d invoices, want 1", key(i), got)
		}
		calls, undos := 1, 0
		if want == "compensated" {
			calls, undos = 0, 1
		}
		if got := sims.Sim.Effects(sim.Bitrix24, call["operation_key"].(string)); got != calls {
			t.Errorf("%s: %d call-backs, want %d", key(i), got, calls)
		}
		if undo, _ := invoice["compensation"].(map[string]any); undos == 1 && (undo == nil || sims.Sim.Effects(sim.Bitrix24, undo["operation_key"].(string)) != 1) {
			t.Errorf("%s: the invoice undone %v, want once", key(i), undo)
		}
	}
}

// A compensation the target refuses leaves the process to a person; once
// what refused it is put right, the person has it tried again (under a
// new key) and the process ends compensated; the audit names them.
func TestProcessRefusedUndoRetriedByAPerson(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, callBack)
	const key = "test:order.fulfil:order-p7:v1"
	r := g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p7", 125000))
	chargeKey := step(r, "charge")["operation_key"].(string)
	g.inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultTargetError, Times: 1})
	if err := g.store.DecideApproval(context.Background(), g.approval(chargeKey).ID, false, "anna", "no"); err != nil {
		t.Fatal(err)
	}
	until(t, "the refused undo to need a person", func() bool {
		r = g.do("GET", "/v1/operations/"+key, tok, nil, nil)
		return r.str("state") == "needs_review"
	})
	first, _ := step(r, "invoice")["compensation"].(map[string]any)
	if first == nil || first["state"] != "failed_final" {
		t.Fatalf("the refused compensation: %s", r.Raw)
	}
	if _, err := g.store.ResolveProcess(context.Background(), key, store.ResolveRetry, "olga", "the CRM is fixed"); err != nil {
		t.Fatal(err)
	}
	until(t, "the retried undo to finish", func() bool {
		r = g.do("GET", "/v1/operations/"+key, tok, nil, nil)
		return r.str("state") == "compensated"
	})
	second := step(r, "invoice")["compensation"].(map[string]any)
	if second["operation_key"] == first["operation_key"] || second["state"] != "succeeded" || g.sim.Effects(sim.Bitrix24, second["operation_key"].(string)) != 1 {
		t.Fatalf("the retried compensation: %v (first %v)", second, first)
	}
	if _, err := g.store.ResolveProcess(context.Background(), key, store.ResolveRetry, "olga", "again"); !errors.Is(err, store.ErrNotInReview) {
		t.Fatalf("a finished process retried: %v", err)
	}
	events, err := g.store.AuditEvents(context.Background(), store.AuditFilter{OperationKey: key, Event: "process.retry"})
	if err != nil || len(events) != 1 || events[0].Actor.Name != "olga" {
		t.Fatalf("the retry's audit: %+v %v", events, err)
	}
}

// A step a person undid by hand is recorded so, and the process ends
// compensated.
func TestProcessUndoneByHand(t *testing.T) {
	t.Parallel()
	g, tok := processGateway(t, "manual")
	const key = "test:order.fulfil:order-p8:v1"
	r := g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-p8", 125000))
	if err := g.store.DecideApproval(context.Background(), g.approval(step(r, "charge")["operation_key"].(string)).ID, false, "anna", "no"); err != nil {
		t.Fatal(err)
	}
	until(t, "the process to wait for a person", func() bool {
		return g.do("GET", "/v1/operations/"+key, tok, nil, nil).str("state") == "needs_review"
	})
	if _, err := g.store.ResolveProcess(context.Background(), key, store.ResolveUndone, "olga", "invoice voided in 1C"); err != nil {
		t.Fatal(err)
	}
	until(t, "the process to end compensated", func() bool {
		return g.do("GET", "/v1/operations/"+key, tok, nil, nil).str("state") == "compensated"
	})
}

// A firm's system hears a process's end by webhook: a denied charge's
// process, undone, is delivered as process.compensated with the
// process's envelope.
func TestProcessCompensatedWebhook(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	cfg := webhookConfig(rcv, config.EventProcessCompensated)
	cfg.Reconciler = fastConfig().Reconciler
	cfg.IntentsDir = configtest.Dir(t, map[string]string{"order.fulfil.v1.yaml": strings.Replace(fulfil, "UNDO", callBack, 1)})
	g := setupWith(t, cfg)
	tok := g.MustToken("shop-agent", "write", "pay")
	const key = "test:order.fulfil:order-w1:v1"
	r := g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-w1", 125000))
	if err := g.store.DecideApproval(context.Background(), g.approval(step(r, "charge")["operation_key"].(string)).ID, false, "anna", "no"); err != nil {
		t.Fatal(err)
	}
	got := rcv.awaitDeliveries(t, 1)[0]
	if got.event.Type != "process.compensated" || got.event.Data["operation_key"] != key || got.event.Data["state"] != "compensated" {
		t.Fatalf("the delivery: %s", got.body)
	}
	if !signedWith(got, "WH_SECRET") {
		t.Fatal("the process's delivery is not signed")
	}
}

// mode validate checks every step the process's payload alone fills at
// its intent (and its target), writing nothing: a customer the CRM does
// not know is refused naming the step; a step reading an earlier one's
// result is left to the run.
func TestProcessValidated(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	plain := strings.Replace(invoiceCall, `comment:     { template: "Счёт {steps.invoice.result.number}: позвонить" }`, `comment:     { value: "позвонить по счёту" }`, 1)
	cfg.IntentsDir = configtest.Dir(t, map[string]string{"order.invoice_call.v1.yaml": plain, "order.fulfil.v1.yaml": strings.Replace(fulfil, "UNDO", "manual", 1)})
	g := setupWith(t, cfg)
	tok := g.MustToken("shop-agent", "write", "pay")
	validate := func(intentName, payload string) reply {
		return g.do("POST", "/v1/operations", tok, nil, []byte(`{"schema_version":"1.0","intent":"`+intentName+`","mode":"validate","payload":`+payload+`}`))
	}
	r := validate("order.invoice_call", `{"order_id":"order-v1","customer_id":"customer-1042"}`)
	if r.Code != http.StatusOK || r.str("state") != "valid" {
		t.Fatalf("a valid process: %s", r.Raw)
	}
	steps, _ := r.Body["plan"].(map[string]any)["steps"].([]any)
	if len(steps) != 2 || steps[0].(map[string]any)["checked"] != true || steps[1].(map[string]any)["checked"] != true {
		t.Fatalf("the plan's steps: %s", r.Raw)
	}
	r = validate("order.invoice_call", `{"order_id":"order-v2","customer_id":"customer-404"}`)
	if r.Code != http.StatusUnprocessableEntity || r.errCode() != "REFERENCE_NOT_FOUND" || !strings.HasPrefix(r.errMessage(), "step call (crm.callback.create): ") {
		t.Fatalf("an unknown customer: %s", r.Raw)
	}
	r = validate("order.fulfil", `{"order_id":"order-v3","amount_minor":5000}`)
	steps, _ = r.Body["plan"].(map[string]any)["steps"].([]any)
	if r.Code != http.StatusOK || len(steps) != 2 || steps[1].(map[string]any)["checked"] != false {
		t.Fatalf("a step reading an earlier one: %s", r.Raw)
	}
	if ps, err := g.store.ListProcesses(context.Background(), store.ProcessFilter{Limit: 10}); err != nil || len(ps) != 0 {
		t.Fatalf("validate journaled processes: %v %v", ps, err)
	}
}
