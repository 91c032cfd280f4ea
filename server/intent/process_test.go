package intent_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config/configtest"
	"github.com/oncegate/oncegate/server/intent"
)

// orderFulfil is a valid process over the built-ins and markDeleted; the
// tests below break it one way at a time.
const orderFulfil = `name: order.fulfil
version: 1
title: { ru: Оформление заказа, en: Order fulfilment }
labels:
  order_id:     { ru: Заказ, en: Order }
  customer_id:  { ru: Клиент, en: Customer }
  account_id:   { ru: Счёт клиента, en: Customer account }
  currency:     { ru: Валюта, en: Currency }
  amount_minor: { ru: Сумма, en: Amount }
  items:        { ru: Строки, en: Lines }
description: Invoice the order in 1C, then charge the customer's saved card.
schema:
  type: object
  additionalProperties: false
  required: [order_id, customer_id, account_id, currency, amount_minor, items]
  properties:
    order_id:     { type: string, minLength: 1, maxLength: 64 }
    customer_id:  { type: string, minLength: 1, maxLength: 64 }
    account_id:   { type: string, minLength: 1, maxLength: 64 }
    currency:     { type: string, minLength: 3, maxLength: 3 }
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
      customer_id:     { from: customer_id }
      currency:        { from: currency }
      items:           { from: items }
    compensate:
      intent: shop.invoice.mark_deleted
      payload: { invoice_id: { step: invoice, field: target_object_id } }
  - name: charge
    intent: payment.charge
    payload:
      account_id:   { from: account_id }
      order_id:     { from: order_id }
      amount_minor: { from: amount_minor }
      currency:     { from: currency }
      description:  { template: "Оплата счёта {steps.invoice.result.number} по заказу {order_id}" }
    compensate: none
`

func loadProcess(t *testing.T, process string) (*intent.Catalog, error) {
	t.Helper()
	dir := configtest.Dir(t, map[string]string{"mark.v1.yaml": markDeleted, "order.v1.yaml": process})
	return intent.Load(intent.Options{Dir: dir, Targets: targets})
}

func TestLoad_Process(t *testing.T) {
	t.Parallel()
	c, err := loadProcess(t, orderFulfil)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := c.Process("order.fulfil")
	if !ok {
		t.Fatal("the process is not served")
	}
	if _, ok := c.Lookup("order.fulfil"); ok || slices.Contains(c.Names(), "order.fulfil") {
		t.Error("a process is served as an intent")
	}
	if got := len(c.Processes()); got != 1 {
		t.Errorf("%d processes, want 1", got)
	}
	if len(p.Steps) != 2 || p.Steps[0].Name != "invoice" || p.Steps[1].Intent != "payment.charge" {
		t.Fatalf("steps: %+v", p.Steps)
	}
	if c := p.Steps[0].Compensate; c.Kind != intent.CompensateIntent || c.Intent != "shop.invoice.mark_deleted" ||
		len(c.Payload) != 1 || c.Payload[0].Step != "invoice" || c.Payload[0].StepField != intent.StepObjectID {
		t.Errorf("the invoice's compensation: %+v", c)
	}
	if got := p.Steps[1].Compensate.Kind; got != intent.CompensateNone {
		t.Errorf("the charge's compensation is %q, want none", got)
	}
	// The token must hold every right the steps and compensations need;
	// a step moving money makes the process one that does.
	if got := strings.Join(p.StepScopes, ","); got != "write,pay" || !p.Money {
		t.Errorf("scopes %s, money %v; want write,pay and money", got, p.Money)
	}
	if p.Scope != "" || p.Target != "" || p.Map != nil {
		t.Errorf("a process has a scope, target or map of its own: %+v", p)
	}
}

// Every bad process is refused at load, naming the file, the path inside
// it, its line and what is wrong.
func TestLoad_ProcessRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		old, new  string // one replacement in orderFulfil
		path, msg string
	}{
		{"NoCompensation", "    compensate:\n      intent: shop.invoice.mark_deleted\n      payload: { invoice_id: { step: invoice, field: target_object_id } }\n", "",
			"steps[0].compensate", "every step but the last says what undoes it"},
		{"UnknownStepIntent", "intent: payment.charge", "intent: payment.charge_card", "steps[1].intent", `"payment.charge_card" is not an intent`},
		{"UnknownCompensation", "intent: shop.invoice.mark_deleted", "intent: shop.invoice.void", "steps[0].compensate.intent", `"shop.invoice.void" is not an intent`},
		{"ProcessInProcess", "intent: invoice.create", "intent: order.fulfil", "steps[0].intent", "is a process"},
		{"ReadOnlyStep", "intent: invoice.create", "intent: sales_order.get_status", "steps[0].intent", "only reads"},
		{"RequiredUnfilled", "      customer_id:     { from: customer_id }\n", "", "steps[0].payload", "leaves invoice.create's required field customer_id unfilled"},
		{"UnknownStepField", "      currency:     { from: currency }\n      description", "      currency:     { from: currency }\n      memo: { value: x }\n      description",
			"steps[1].payload.memo", "payment.charge has no payload field memo"},
		{"FromNothing", "order_id:        { from: order_id }", "order_id:        { from: order_number }", "steps[0].payload.order_id.from", "no field order_number"},
		{"FromOtherType", "amount_minor: { from: amount_minor }", "amount_minor: { from: currency }", "steps[1].payload.amount_minor.from", "currency is of type string"},
		{"ValueOtherType", "organization_id: { value: org-main }", "organization_id: { value: 17 }", "steps[0].payload.organization_id.value", "a integer"},
		{"LaterStep", "payload: { invoice_id: { step: invoice, field: target_object_id } }", "payload: { invoice_id: { step: charge, field: target_object_id } }",
			"steps[0].compensate.payload.invoice_id.step", `"charge" is no earlier step`},
		{"BadStepField", "field: target_object_id", "field: number", "steps[0].compensate.payload.invoice_id.field", `"number" is none of`},
		{"TemplateOfLaterStep", "{steps.invoice.result.number}", "{steps.shipment.result.number}", "steps[1].payload.description.template", `"shipment" is no earlier step`},
		{"TemplateOfNothing", "{order_id}", "{order_no}", "steps[1].payload.description.template", "{order_no} is no top-level field"},
		{"OptionalToRequired", "required: [order_id, customer_id,", "required: [order_id,", "steps[0].payload.customer_id.from", "customer_id is optional in the process's payload"},
		{"ItemMemberMissing", "          price_minor: { type: integer, minimum: 0, maximum: 100000000000 }\n", "          price_minor: { type: integer, minimum: 0, maximum: 100000000000 }\n          colour: { type: string, maxLength: 8 }\n",
			"steps[0].payload.items.from", "items.colour has no counterpart"},
		{"TargetOfItsOwn", "version: 1\n", "version: 1\ntarget: onec\n", "target", "a process has no target of its own"},
		{"TwoStepsOneName", "  - name: charge", "  - name: invoice", "steps[1].name", "names an earlier step too"},
		{"TwoSources", "{ from: order_id }", "{ from: order_id, value: x }", "steps[0].payload.order_id", "exactly one of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(orderFulfil, c.old) {
				t.Fatalf("the test's replacement %q is not in the process", c.old)
			}
			_, err := loadProcess(t, strings.Replace(orderFulfil, c.old, c.new, 1))
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), "order.v1.yaml: "+c.path+": ") || !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "(line ") && c.path != "target" {
				t.Errorf("the error does not name %s with %q and a line:\n%v", c.path, c.msg, err)
			}
		})
	}
}

// A process may not take an intent's name.
func TestLoad_ProcessNamedAsAnIntent(t *testing.T) {
	t.Parallel()
	_, err := loadProcess(t, strings.Replace(orderFulfil, "name: order.fulfil\nversion: 1", "name: shop.invoice.mark_deleted\nversion: 2", 1))
	if err == nil || !strings.Contains(err.Error(), "is both a process here and an intent") {
		t.Fatalf("err = %v", err)
	}
}
