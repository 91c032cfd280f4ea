package intent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config"
)

// A rule runs an intent with an effect, names only its fields, fills the
// required ones and reads money into an integer field; each refusal names
// the file and the line.
func TestCheckEvents(t *testing.T) {
	refund := func(fields ...config.EventField) config.EventRule {
		return config.EventRule{Source: "payments", On: "payment.canceled", Run: "payment.refund", Line: 7, Payload: fields}
	}
	full := []config.EventField{
		{Name: "payment_id", Event: "object.id", Line: 9},
		{Name: "amount_minor", Event: "object.amount.value", Money: config.MoneyDecimal, Line: 10},
		{Name: "currency", Event: "object.amount.currency", Line: 11},
		{Name: "reason", Value: "canceled at the shop", Line: 12},
	}
	rules, err := builtins.CheckEvents([]config.EventRule{refund(full...)}, "gw.yaml")
	if err != nil || len(rules) != 1 || rules[0].Def.Name != "payment.refund" || rules[0].Scopes[0] != "pay" {
		t.Fatalf("a whole rule: %+v %v", rules, err)
	}
	for _, tc := range []struct {
		name string
		rule config.EventRule
		want string
	}{
		{"UnknownRun", config.EventRule{Run: "payment.refund_all", Line: 3}, `gw.yaml: events[0].run: "payment.refund_all" is not an intent or process of this gateway`},
		{"ReadOnly", config.EventRule{Run: "sales_order.get_status", Line: 3}, `gw.yaml: events[0].run: "sales_order.get_status" only reads`},
		{"Unfilled", refund(full[0], full[2]), "gw.yaml: events[0].payload: leaves payment.refund's required field amount_minor unfilled (line 7)"},
		{"NoSuchField", refund(append(full, config.EventField{Name: "note", Value: "x", Line: 13})...), "gw.yaml: events[0].payload.note: payment.refund has no payload field note"},
		{"MoneyIntoText", refund(full[0], config.EventField{Name: "amount_minor", Event: "object.amount.value", Line: 10},
			config.EventField{Name: "currency", Event: "object.amount.value", Money: config.MoneyDecimal, Line: 11}, full[3]),
			"gw.yaml: events[0].payload.currency.money: money: decimal makes whole minor units, and payment.refund.currency is of type string (line 11)"},
		{"ValueOfAnotherType", refund(full[0], full[1], full[2], config.EventField{Name: "reason", Value: 12, Line: 12}),
			"gw.yaml: events[0].payload.reason.value: a integer, and payment.refund.reason is of type string (line 12)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := builtins.CheckEvents([]config.EventRule{tc.rule}, "gw.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}

	// The mapping reads the object as the source answered it.
	var object map[string]any
	if err := json.Unmarshal([]byte(`{"id":"2d3a-pay","status":"canceled","amount":{"value":"1250.5","currency":"RUB"}}`), &object); err != nil {
		t.Fatal(err)
	}
	payload, err := rules[0].Map(object)
	if err != nil || payload["amount_minor"] != int64(125050) || payload["payment_id"] != "2d3a-pay" || payload["currency"] != "RUB" || payload["reason"] != "canceled at the shop" {
		t.Fatalf("mapped %v %v", payload, err)
	}
	for body, want := range map[string]string{
		`{"id":"p","amount":{"value":"12.345","currency":"RUB"}}`: `finer than RUB's 2 decimals`,
		`{"id":"p","amount":{"value":"1e3","currency":"RUB"}}`:    `no decimal amount`,
		`{"id":"p","amount":{"value":"10.00","currency":"XXQ"}}`:  `no currency the gateway knows`,
		`{"amount":{"value":"10.00","currency":"RUB"}}`:           `payment_id: object.id is not in what the source answered`,
	} {
		var o map[string]any
		_ = json.Unmarshal([]byte(body), &o)
		if _, err := rules[0].Map(o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	rules[0].When = []config.EventCondition{{Path: "object.status", Equals: "succeeded"}}
	if got := rules[0].Unmet(object); got != `object.status is "canceled"; the rule wants "succeeded"` {
		t.Fatalf("unmet: %q", got)
	}
}
