package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/config/configtest"
	"github.com/oncegate/oncegate/store/storetest"
)

// invoiceThenCharge is a process over the built-ins: an invoice in 1C,
// then a charge; the invoice is undone by a person should the charge fail.
const invoiceThenCharge = `name: order.fulfil
version: 1
title: { ru: Оформление заказа, en: Order fulfilment }
labels:
  order_id:     { ru: Заказ, en: Order }
  customer_id:  { ru: Клиент, en: Customer }
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
    customer_id:  { type: string, minLength: 1, maxLength: 64 }
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
		!strings.Contains(out, "order.fulfil.v1.yaml: steps[0].payload: leaves invoice.create's required field customer_id unfilled (line 36)") {
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
	// Read at once, it is what the answer said, whether or not its own
	// row has followed its steps yet.
	if _, got := r.getProcess(key); got == nil || got["state"] != "succeeded" {
		t.Fatalf("read right after its answer: %v", got)
	}
	if code, again, err := r.post(key, body); err != nil || code != 200 || again["replayed"] != true {
		t.Fatalf("the replay: %d %v %v", code, again, err)
	}
}

// invoiceThenCall is a process through the real binary: an invoice, then
// a call-back task for the customer the agent names; should the task be
// refused, the invoice is undone by a task for the firm's own manager.
var invoiceThenCall = strings.Replace(strings.Replace(strings.Replace(invoiceThenCharge, "required: [order_id, ", "required: [order_id, customer_id, ", 1), `  - name: charge
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
      customer_id: { from: customer_id }
      due_at:      { value: "2026-12-10T10:00:00+03:00" }
      comment:     { template: "Счёт {steps.invoice.result.number} по заказу {order_id}: позвонить" }
`, 1), `    compensate: manual
`, `    compensate:
      intent: crm.callback.create
      payload:
        customer_id: { value: customer-2001 }
        due_at:      { value: "2026-12-10T10:00:00+03:00" }
        comment:     { template: "Отменить счёт {steps.invoice.result.number}" }
`, 1)

// processBody is a request for invoiceThenCall.
func processBody(order, customer string) string {
	return `{"schema_version":"1.0","intent":"order.fulfil","payload":{"order_id":"` + order + `","customer_id":"` + customer + `",` +
		`"account_id":"merchant-account-17","amount_minor":125000,"items":[{"product_id":"product-778","quantity":2,"unit":"pcs","price_minor":62500}]}}`
}

// kill -9 while agents start 50 processes: after the restart every process
// that reached the journal goes on by itself, and every process ends
// succeeded, or compensated where its second step is refused (an unknown
// customer), each step's and each compensation's effect exactly once at
// the simulators.
func TestProcessesSurviveKill9(t *testing.T) {
	t.Parallel()
	r := newRig(t, withSettings(""), withIntents(intentsDir(t, "order.fulfil.v1.yaml", invoiceThenCall)))
	const n = 50
	customer := func(i int) string {
		if i%2 == 0 {
			return "customer-1042"
		}
		return "customer-404" // not in the CRM: the call is refused, the invoice undone
	}
	key := func(i int) string { return "test:order.fulfil:order-k" + strconv.Itoa(i) + ":v1" }
	var answered atomic.Int64
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if _, _, err := r.post(key(i), processBody("order-k"+strconv.Itoa(i), customer(i))); err == nil {
					answered.Add(1)
				}
			}
		})
	}
	for answered.Load() < n/3 {
		time.Sleep(5 * time.Millisecond)
	}
	r.gateway.kill9()
	wg.Wait()
	r.serve()

	deadline := time.Now().Add(90 * time.Second)
	for i := range n {
		want := "succeeded"
		if i%2 == 1 {
			want = "compensated"
		}
		var answer map[string]any
		for {
			if _, got := r.getProcess(key(i)); got == nil {
				// Never journaled before the kill: the agent sends it again.
				r.post(key(i), processBody("order-k"+strconv.Itoa(i), customer(i)))
			} else if answer = got; got["state"] == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d is %v, want %s: %v", i, answer["state"], want, answer)
			}
			time.Sleep(20 * time.Millisecond)
		}
		effects := r.simJSON("/_sim/effects")
		steps := answer["steps"].([]any)
		invoice, call := steps[0].(map[string]any), steps[1].(map[string]any)
		if got := effects["onec"][invoice["operation_key"].(string)]; got != 1 {
			t.Errorf("process %d: %d invoices, want 1", i, got)
		}
		wantCalls, wantUndo := 1, 0
		if want == "compensated" {
			wantCalls, wantUndo = 0, 1
		}
		if got := effects["bitrix24"][call["operation_key"].(string)]; got != wantCalls {
			t.Errorf("process %d: %d call-back tasks, want %d", i, got, wantCalls)
		}
		if undo, _ := invoice["compensation"].(map[string]any); wantUndo == 1 && (undo == nil || effects["bitrix24"][undo["operation_key"].(string)] != 1) {
			t.Errorf("process %d: its invoice undone %v, want once", i, undo)
		}
	}
}

// getProcess reads a process as its agent: the HTTP status and the
// answer, nil when the key holds nothing.
func (r *rig) getProcess(key string) (int, map[string]any) {
	req, _ := http.NewRequest("GET", r.apiURL+"/v1/operations/"+key, nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	var m map[string]any
	if json.NewDecoder(resp.Body).Decode(&m) != nil {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, m
}

// Two gateways (two binaries) on one PostgreSQL journal, each sent every
// process at once, as a load balancer would: every process ends as it
// should, each step and compensation made once at the simulators.
func TestProcessesOnTwoGateways(t *testing.T) {
	t.Parallel()
	r := newRig(t, withSettings(""), withIntents(intentsDir(t, "order.fulfil.v1.yaml", invoiceThenCall)), onJournal(storetest.Database(t)))
	r.addInstance(t)
	const n = 16
	customer := func(i int) string { return []string{"customer-1042", "customer-404"}[i%2] }
	key := func(i int) string { return "test:order.fulfil:order-two-" + strconv.Itoa(i) + ":v1" }
	var wg sync.WaitGroup
	for i := range n {
		for _, addr := range []string{r.addr, r.others[0].addr} {
			wg.Go(func() { postTo(t, addr, r.token, key(i), processBody("order-two-"+strconv.Itoa(i), customer(i))) })
		}
	}
	wg.Wait()
	for i := range n {
		want := []string{"succeeded", "compensated"}[i%2]
		answer := untilState(t, r, key(i), want)
		effects := r.simJSON("/_sim/effects")
		steps := answer["steps"].([]any)
		invoice, call := steps[0].(map[string]any), steps[1].(map[string]any)
		if got := effects["onec"][invoice["operation_key"].(string)]; got != 1 {
			t.Errorf("process %d: %d invoices, want 1", i, got)
		}
		calls := map[string]int{"succeeded": 1, "compensated": 0}[want]
		if got := effects["bitrix24"][call["operation_key"].(string)]; got != calls {
			t.Errorf("process %d: %d call-backs, want %d", i, got, calls)
		}
		if undo, _ := invoice["compensation"].(map[string]any); want == "compensated" && (undo == nil || effects["bitrix24"][undo["operation_key"].(string)] != 1) {
			t.Errorf("process %d: its invoice undone %v, want once", i, undo)
		}
	}
}
