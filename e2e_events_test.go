package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// eventsRig is a gateway whose paid payments make receipts in 1C.
func eventsRig(t *testing.T, options ...rigOption) *rig {
	t.Helper()
	return newRig(t, append([]rigOption{withIntents(intentsDir(t, receiptRun+".v1.yaml", receiptIntent)),
		withOData("buh", "time_zone: Europe/Moscow, timeout_ms: 1000"), withSettings(rigRetry + receiptRule)}, options...)...)
}

// receipts counts the receipts at the 1C simulator made under the key of
// the operation the payment id's notice runs.
func (r *rig) receipts(payment string) int {
	key := engine.EventKey("test", "buh.payment_receipt.create", "payments", "payment.succeeded-"+payment)
	return r.simJSON("/_sim/effects")[sim.OneCOData][onecodata.RefKey("buh", "buh.payment_receipt.create", key)]
}

// simPost posts body to the simulator's control path.
func (r *rig) simPost(path, body string) {
	r.t.Helper()
	resp, err := http.Post(r.simURL+path, "application/json", strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		r.t.Fatalf("%s: %d", path, resp.StatusCode)
	}
}

// payAtShop makes a succeeded payment at the YooKassa simulator, as the
// shop's checkout does, and returns its id.
func (r *rig) payAtShop(order string) string {
	r.t.Helper()
	return r.payAtShopCapture(order, true)
}

// payAtShopCapture makes a payment, succeeded with capture or else
// waiting for capture, and returns its id.
func (r *rig) payAtShopCapture(order string, capture bool) string {
	r.t.Helper()
	body := fmt.Sprintf(`{"amount":{"value":"1250.00","currency":"RUB"},"capture":%t,"payment_method_id":"merchant-account-17","metadata":{"order_id":%q,"customer_id":"customer-1042"}}`, capture, order)
	req, _ := http.NewRequest(http.MethodPost, r.simURL+"/yookassa/v3/payments", strings.NewReader(body))
	req.SetBasicAuth("e2e-shop", sim.YooKassaSecret())
	req.Header.Set("Idempotence-Key", "checkout-"+order)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.ID == "" {
		r.t.Fatalf("a payment at the shop: %d %v", resp.StatusCode, err)
	}
	return p.ID
}

// notice posts a notification of the payment to the gateway at addr, as
// YooKassa does.
func postNotice(addr, payment string) (int, error) {
	body, _ := json.Marshal(map[string]any{"type": "notification", "event": "payment.succeeded", "object": map[string]any{"id": payment, "status": "succeeded"}})
	resp, err := http.Post("http://"+addr+"/v1/events/payments", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A charge made through the gateway is paid at YooKassa; YooKassa's own
// notices (three deliveries of each) come back to the gateway, which reads
// the payment back and makes one receipt in 1C, the operation naming the
// notice.
func TestE2ENoticeMakesOneReceipt(t *testing.T) {
	t.Parallel()
	r := eventsRig(t)
	r.simPost("/_sim/yookassa/notify", fmt.Sprintf(`{"url":"%s/v1/events/payments","retry_ms":[50,100,200,400,800],"copies":3}`, r.apiURL))
	const key = "test:payment.charge:order-evt-1:v1"
	code, first, err := r.post(key, `{"schema_version":"1.0","intent":"payment.charge","payload":{"account_id":"merchant-account-17","order_id":"order-evt-1","customer_id":"customer-1042","amount_minor":125000,"currency":"RUB"}}`)
	if err != nil || code != http.StatusAccepted || first["state"] != "awaiting_approval" {
		t.Fatalf("the charge: %d %v %v", code, first, err)
	}
	approveAll(t, r.journal)
	var payment string
	until(t, "the charge succeeds", func() bool {
		_, got := r.getOperation(key)
		payment, _ = got["target_object_id"].(string)
		return got["state"] == "succeeded"
	})
	receipt := engine.EventKey("test", "buh.payment_receipt.create", "payments", "payment.succeeded-"+payment)
	var got map[string]any
	until(t, "the receipt is made from the notices", func() bool {
		_, got = r.getOperation(receipt)
		ev, _ := got["event"].(map[string]any)
		return got["state"] == "succeeded" && ev["deliveries"] == float64(3)
	})
	if n := r.receipts(payment); n != 1 {
		t.Fatalf("%d receipts in 1C, want 1", n)
	}
	doc := r.odataDoc("Document_ПоступлениеНаРасчетныйСчет", got["target_object_id"].(string))
	if doc["СуммаДокумента"] != 1250.0 || doc["НазначениеПлатежа"] != payment || doc["Комментарий"] != "order-evt-1" {
		t.Fatalf("the receipt: %v", doc)
	}
}

// A notice answered 200 is on disk: the gateway killed while reading it
// back runs it after its restart, once.
func TestE2ENoticeAfterKill9(t *testing.T) {
	t.Parallel()
	r := eventsRig(t)
	payment := r.payAtShop("order-evt-kill")
	// The read-back hangs: the gateway has answered and not yet run it.
	r.fault(`{"target":"yookassa","fault":"delay","delay_ms":5000,"times":1,"on":"lookup"}`)
	if code, err := postNotice(r.addr, payment); err != nil || code != http.StatusOK {
		t.Fatalf("the notice: %d %v", code, err)
	}
	r.gateway.kill9()
	r.serve()
	until(t, "the notice runs after the restart", func() bool { return r.receipts(payment) == 1 })
	for range 3 { // and again, as YooKassa would: nothing more
		if code, err := postNotice(r.addr, payment); err != nil || code != http.StatusOK {
			t.Fatalf("a repeated notice: %d %v", code, err)
		}
	}
	_, got := r.getOperation(engine.EventKey("test", "buh.payment_receipt.create", "payments", "payment.succeeded-"+payment))
	if got["state"] != "succeeded" || r.receipts(payment) != 1 {
		t.Fatalf("after the restart: %v, %d receipts", got, r.receipts(payment))
	}
}

// One notice delivered to two gateways on one PostgreSQL journal at once,
// five times to each, makes one receipt.
func TestE2ENoticeOnTwoGateways(t *testing.T) {
	t.Parallel()
	r := eventsRig(t, onJournal(storetest.Database(t)))
	other := r.addInstance(t)
	payment := r.payAtShop("order-evt-two")
	var wg sync.WaitGroup
	for _, addr := range []string{r.addr, other.addr} {
		for range 5 {
			wg.Go(func() {
				if code, err := postNotice(addr, payment); err != nil || code != http.StatusOK {
					t.Errorf("a delivery to %s: %d %v", addr, code, err)
				}
			})
		}
	}
	wg.Wait()
	until(t, "the receipt is made", func() bool { return r.receipts(payment) == 1 })
	st, err := store.Open(context.Background(), r.journal)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	until(t, "the notice is settled", func() bool {
		evs, err := st.ListEvents(context.Background(), store.EventFilter{Source: "payments"})
		return err == nil && len(evs) == 1 && evs[0].State == store.EventRun && evs[0].Deliveries == 10
	})
	time.Sleep(300 * time.Millisecond) // a second read-back, had one started, has landed by now
	if n := r.receipts(payment); n != 1 {
		t.Fatalf("%d receipts, want 1", n)
	}
}

// getOperation reads an operation through the rig's gateway.
func (r *rig) getOperation(key string) (int, map[string]any) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.apiURL+"/v1/operations/"+url.PathEscape(key), nil)
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// approveAll approves every waiting payment in the journal, as an
// accountant would in the admin UI.
func approveAll(t *testing.T, journal string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, journal)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, err := st.Approvals(ctx, store.ApprovalPending, 100)
	if err != nil {
		t.Fatal(err)
	}
	actx := store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: "e2e-accountant"})
	for _, a := range list {
		if err := st.DecideApproval(actx, a.ID, true, "e2e-accountant", ""); err != nil {
			t.Fatal(err)
		}
	}
}

// until polls cond every 20 ms for up to 30 s, failing with what when it
// does not become true.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A notice is not believed, on the real binary: one of a payment the shop
// does not have, and one that says succeeded of a payment waiting for
// capture, are answered 200 and dropped with the source's word, making
// nothing; one whose read-back meets YooKassa down stays pending and runs
// once YooKassa answers, making its one receipt.
func TestE2ENoticeNotBelieved(t *testing.T) {
	t.Parallel()
	r := eventsRig(t)
	ctx := context.Background()
	st, err := store.Open(ctx, r.journal)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eventOf := func(object string) store.Event {
		all, err := st.ListEvents(ctx, store.EventFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range all {
			if e.ObjectID == object {
				return e
			}
		}
		return store.Event{}
	}

	const unknown = "2f1a0000-000f-5000-8000-000000000000"
	waiting := r.payAtShopCapture("order-evt-waiting", false)
	for _, p := range []string{unknown, waiting} {
		if code, err := postNotice(r.addr, p); err != nil || code != http.StatusOK {
			t.Fatalf("a notice of %s: %d %v", p, code, err)
		}
		var e store.Event
		until(t, "the notice of "+p+" is dropped", func() bool { e = eventOf(p); return e.State == store.EventDropped })
		if e.Reason == "" || r.receipts(p) != 0 {
			t.Fatalf("a dropped notice: %+v, %d receipts", e, r.receipts(p))
		}
	}

	paid := r.payAtShop("order-evt-outage")
	r.fault(`{"target":"yookassa","fault":"status","status":503,"times":3,"on":"lookup"}`)
	if code, err := postNotice(r.addr, paid); err != nil || code != http.StatusOK {
		t.Fatalf("a notice while YooKassa is down: %d %v", code, err)
	}
	until(t, "the notice waits for YooKassa", func() bool {
		e := eventOf(paid)
		return e.State == store.EventPending && e.Attempts >= 1 && e.Reason != ""
	})
	until(t, "the notice runs once YooKassa answers", func() bool { return eventOf(paid).State == store.EventRun })
	if n := r.receipts(paid); n != 1 {
		t.Fatalf("%d receipts after YooKassa came back, want 1", n)
	}
}

// dealWonRule is a rule on the CRM's deal updates: a deal that reads back
// won makes one call-back for its customer.
const dealWonRule = `events:
  - source: crm
    on: ONCRMDEALUPDATE
    run: crm.callback.create
    when:
      object.STAGE_ID: WON
    payload:
      customer_id: { value: customer-1042 }
      due_at:      { value: "2026-12-10T10:00:00+03:00" }
      comment:     { event: object.TITLE }
`

// Bitrix24's own outbound events reach the real binary in the portal's
// form encoding: the updates of a deal before it is won are dropped (the
// rule's when:), the update that reads back won makes one call-back, and a
// later update of the won deal makes nothing more; a notice without the
// portal's token is refused 401 and journals nothing.
func TestE2EBitrix24DealWon(t *testing.T) {
	t.Parallel()
	r := newRig(t, withBitrix24("application_token_env: E2E_B24_APP_TOKEN"), withSettings(rigRetry+dealWonRule),
		withEnv("E2E_B24_APP_TOKEN="+sim.DefaultBitrix24ApplicationToken))
	ctx := context.Background()
	st, err := store.Open(ctx, r.journal)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	events := func() []store.Event {
		all, err := st.ListEvents(ctx, store.EventFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		return all
	}
	r.simPost("/_sim/bitrix24/outbound_webhooks", fmt.Sprintf(`{"handler":"%s/v1/events/crm","events":["ONCRMDEALUPDATE"]}`, r.apiURL))
	resp, err := http.Post(r.simURL+"/bitrix24"+sim.Bitrix24WebhookPath()+"crm.deal.add", "application/json", strings.NewReader(`{"fields":{"TITLE":"Заказ 77"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var added struct{ Result int }
	err = json.NewDecoder(resp.Body).Decode(&added)
	resp.Body.Close()
	if err != nil || added.Result == 0 {
		t.Fatalf("crm.deal.add: %d %v", resp.StatusCode, err)
	}
	deal := fmt.Sprint(added.Result)
	change := func(fields string) {
		r.simPost("/_sim/bitrix24/change", fmt.Sprintf(`{"entity":"deal","id":%s,"fields":%s}`, deal, fields))
	}
	one := func(what string, ok func(store.Event) bool) store.Event {
		t.Helper()
		var got store.Event
		until(t, what, func() bool {
			evs := events()
			if len(evs) != 1 || evs[0].ObjectID != deal {
				return false
			}
			got = evs[0]
			return ok(got)
		})
		return got
	}

	change(`{"TITLE":"Заказ 77, счёт выставлен"}`)
	ev := one("the update before the deal is won is dropped", func(e store.Event) bool { return e.State == store.EventDropped })
	if !strings.Contains(ev.Reason, "STAGE_ID") {
		t.Fatalf("dropped for %q", ev.Reason)
	}
	change(`{"STAGE_ID":"WON"}`)
	ev = one("the update that reads back won runs", func(e store.Event) bool { return e.State == store.EventRun })
	callbacks := func() int { return r.simJSON("/_sim/effects")[sim.Bitrix24][ev.OpKey] }
	until(t, "its call-back is made", func() bool { return callbacks() == 1 })
	change(`{"OPPORTUNITY":1250}`)
	one("a later update is counted", func(e store.Event) bool { return e.Deliveries == 3 && e.State == store.EventRun })
	time.Sleep(500 * time.Millisecond) // a second run would have been made by now
	if n := callbacks(); n != 1 {
		t.Fatalf("%d call-backs for one won deal, want 1", n)
	}

	form := url.Values{"event": {"ONCRMDEALUPDATE"}, "data[FIELDS][ID]": {deal}, "ts": {"1765100000"},
		"auth[domain]": {"portal.example"}, "auth[application_token]": {"not-the-portal-token"}}.Encode()
	resp, err = http.Post(r.apiURL+"/v1/events/crm", "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a notice with another token: %d, want 401", resp.StatusCode)
	}
	if evs := events(); len(evs) != 1 || evs[0].Deliveries != 3 {
		t.Fatalf("a refused notice journaled: %+v", evs)
	}
}
