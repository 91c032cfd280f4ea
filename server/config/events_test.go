package config_test

import (
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// A rule whose source sends no such event, or whose mapping is malformed,
// is refused at load with its key, file and line; a whole rule loads with
// its lines.
func TestEventRules(t *testing.T) {
	t.Parallel()
	const portal = "targets:\n  shopcrm: {kind: bitrix24, webhook_url_env: B24}\n"
	for _, c := range []struct{ name, yaml, want string }{
		{"UnknownSource", "events:\n  - {source: shop, on: payment.succeeded, run: x.y}\n", `events[0].source: "shop" is no target instance of this configuration`},
		{"SourceSendsNone", "events:\n  - {source: onec, on: payment.succeeded, run: x.y}\n", `events[0].source: "onec" is a target of kind onec, which sends no events`},
		{"EventNotSent", "events:\n  - {source: payments, on: payment.done, run: x.y}\n", `events[0].on: "payment.done" is no event a yookassa source sends`},
		{"NoRun", "events:\n  - {source: payments, on: payment.succeeded}\n", `events[0].run: name the intent or process the event runs`},
		{"TwoRules", "events:\n  - {source: payments, on: payment.succeeded, run: x.y}\n  - {source: payments, on: payment.succeeded, run: x.y}\n", "events[1]: a second rule runs x.y on payments's payment.succeeded"},
		{"UnknownKey", "events:\n  - {source: payments, on: payment.succeeded, run: x.y, if: z}\n", `line 2: "if" is not a key of an event rule`},
		{"BothSources", "events:\n  - source: payments\n    on: payment.succeeded\n    run: x.y\n    payload:\n      id: {event: object.id, value: x}\n", "events[0].payload.id: say where it comes from: exactly one of event: (a path into the object read back) and value: (a constant) ("},
		{"NotTheObject", "events:\n  - source: payments\n    on: payment.succeeded\n    run: x.y\n    payload:\n      id: {event: data.id}\n", `events[0].payload.id.event: "data.id": a path into the object as the source answers it, starting object.`},
		{"OtherMoney", "events:\n  - source: payments\n    on: payment.succeeded\n    run: x.y\n    payload:\n      amount: {event: object.amount.value, money: cents}\n", `events[0].payload.amount.money: "cents": the one form is decimal`},
		{"PortalWithoutToken", portal + "events:\n  - {source: shopcrm, on: ONCRMDEALUPDATE, run: x.y}\n", "targets.shopcrm.application_token_env: not set; the portal's events carry its application token"},
		{"BadRange", "targets:\n  payments: {notices_from: [185.71.76.0/99]}\n", `targets.payments.notices_from: "185.71.76.0/99" is neither an address nor a CIDR range`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := configtest.Write(t, c.yaml)
			_, err := config.Load(path, configtest.NoEnv, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("load: %v, want %q", err, c.want)
			}
		})
	}
	path := configtest.Write(t, portal+"  crm: {application_token_env: B24_APP}\nevents:\n  - source: payments\n    on: payment.succeeded\n    run: crm.callback.create\n"+
		"    when: {object.metadata.kind: callback}\n    payload:\n      customer_id: {event: object.metadata.customer_id}\n      comment: {value: paid}\n")
	cfg, err := config.Load(path, configtest.NoEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Events[0]
	if r.Line != 5 || r.Run != "crm.callback.create" || len(r.When) != 1 || r.When[0].Equals != "callback" || len(r.Payload) != 2 || r.Payload[1].Value != "paid" || r.Payload[1].Line != 11 {
		t.Fatalf("loaded %+v", r)
	}
	if !strings.Contains(cfg.Targets["crm"].ApplicationTokenEnv, "B24_APP") {
		t.Fatalf("the portal's token variable: %+v", cfg.Targets["crm"])
	}
}
