package server_test

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

	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// eventsConfig runs, on a payment's success, a call-back in the CRM for
// the customer the payment names and a refund of what the source says
// was paid (a money intent: it waits for a person); on a new lead, a
// call-back for the lead's contact.
func eventsConfig() config.Config {
	cfg := fastConfig()
	cfg.Events = []config.EventRule{
		{Source: "payments", On: "payment.succeeded", Run: "crm.callback.create", Line: 1, Payload: []config.EventField{
			{Name: "customer_id", Event: "object.metadata.customer_id"},
			{Name: "due_at", Event: "object.created_at"},
			{Name: "comment", Value: "paid online"},
		}},
		{Source: "payments", On: "payment.succeeded", Run: "payment.refund", Line: 2, Payload: []config.EventField{
			{Name: "payment_id", Event: "object.id"},
			{Name: "amount_minor", Event: "object.amount.value", Money: config.MoneyDecimal},
			{Name: "currency", Event: "object.amount.currency"},
		}},
		{Source: "crm", On: "ONCRMLEADADD", Run: "crm.callback.create", Line: 3, Payload: []config.EventField{
			{Name: "customer_id", Event: "object.CONTACT_ID"},
			{Name: "due_at", Value: "2026-12-10T10:00:00+03:00"},
			{Name: "comment", Event: "object.TITLE"},
		}},
	}
	return cfg
}

// simPayment makes a payment of minor kopecks at the YooKassa simulator,
// as a shop's checkout would, and returns its id; capture false leaves it
// waiting for capture.
func simPayment(tb testing.TB, g *gateway, minor int, capture bool) string {
	tb.Helper()
	body := fmt.Sprintf(`{"amount":{"value":"%d.%02d","currency":"RUB"},"capture":%t,"payment_method_id":"merchant-account-17","metadata":{"customer_id":"customer-1042"}}`,
		minor/100, minor%100, capture)
	req, _ := http.NewRequest(http.MethodPost, g.simURL+"/yookassa/v3/payments", strings.NewReader(body))
	req.SetBasicAuth(adapterstest.ShopID, sim.YooKassaSecret())
	req.Header.Set("Idempotence-Key", fmt.Sprintf("checkout-%d", time.Now().UnixNano()))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK || p.ID == "" {
		tb.Fatalf("a payment at the simulator: %d %v", resp.StatusCode, err)
	}
	return p.ID
}

// notice is a YooKassa notification of event about the payment id whose
// body says it was paid 1.00 RUB, whatever it was.
func notice(event, id string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "notification", "event": event, "object": map[string]any{
		"id": id, "status": "succeeded", "paid": true, "amount": map[string]any{"value": "1.00", "currency": "RUB"},
		"metadata": map[string]any{"customer_id": "customer-2001"},
	}})
	return b
}

func (g *gateway) notify(source, contentType string, body []byte) reply {
	g.t.Helper()
	return g.send(http.MethodPost, "/v1/events/"+source, http.Header{"Content-Type": {contentType}}, body)
}

// eventsOf waits until every event about object is settled, and returns them.
func eventsOf(tb testing.TB, g *gateway, object string, want int) []store.Event {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		all, err := g.store.ListEvents(context.Background(), store.EventFilter{Limit: 1000})
		if err != nil {
			tb.Fatal(err)
		}
		var out []store.Event
		settled := true
		for _, e := range all {
			if e.ObjectID == object {
				out = append(out, e)
				settled = settled && e.State != store.EventPending
			}
		}
		if len(out) == want && settled {
			return out
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the events of %s did not settle: %+v", object, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A notice delivered five times at once makes one effect, from what the
// source answers (its customer, its amount), not from the notice's body;
// the operation names the notice that started it, and every agent may read it.
func TestNoticeRunsOnce(t *testing.T) {
	t.Parallel()
	g := setupWith(t, eventsConfig())
	id := simPayment(t, g, 125000, true)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if r := g.notify("payments", "application/json", notice("payment.succeeded", id)); r.Code != http.StatusOK || r.Body["received"] != true {
				t.Errorf("a delivery: %d %s", r.Code, r.Raw)
			}
		})
	}
	wg.Wait()
	evs := eventsOf(t, g, id, 2)
	for _, e := range evs {
		if e.State != store.EventRun || e.Deliveries != 5 {
			t.Fatalf("an event after five deliveries: %+v", e)
		}
	}
	callback := engine.EventKey(eventsConfig().Contour, "crm.callback.create", "payments", "payment.succeeded-"+id)
	refund := engine.EventKey(eventsConfig().Contour, "payment.refund", "payments", "payment.succeeded-"+id)
	if n := g.sim.Effects(sim.Bitrix24, callback); n != 1 {
		t.Fatalf("%d call-backs at the CRM, want 1", n)
	}
	op := g.row(callback)
	if op.Status != store.StatusSucceeded || op.Agent != engine.EventAgentPrefix+"payments" || !bytes.Contains(op.Payload, []byte(`"customer_id":"customer-1042"`)) {
		t.Fatalf("the call-back's row: %s %s %s", op.Status, op.Agent, op.Payload)
	}
	// The amount is the source's 1250.00, not the notice's 1.00.
	if op := g.row(refund); op.Status != store.StatusAwaitingApproval || !bytes.Contains(op.Payload, []byte(`"amount_minor":125000`)) {
		t.Fatalf("the refund's row: %s %s", op.Status, op.Payload)
	}
	r := g.do(http.MethodGet, "/v1/operations/"+url.PathEscape(callback), g.token, nil, nil)
	ev, _ := r.Body["event"].(map[string]any)
	if r.Code != http.StatusOK || ev["source"] != "payments" || ev["event"] != "payment.succeeded" || ev["object_id"] != id || ev["deliveries"] != float64(5) {
		t.Fatalf("an agent reads the operation a notice ran: %d %s", r.Code, r.Raw)
	}
	// Delivered again after it ran: counted, nothing more runs.
	if r := g.notify("payments", "application/json", notice("payment.succeeded", id)); r.Code != http.StatusOK {
		t.Fatal(r.Raw)
	}
	if n := g.sim.Effects(sim.Bitrix24, callback); n != 1 {
		t.Fatalf("%d call-backs after a sixth delivery", n)
	}
	// No agent may send a key shaped as a notice's.
	body, _ := json.Marshal(map[string]any{"schema_version": "1.0", "intent": "crm.callback.create", "payload": map[string]any{
		"customer_id": "customer-1042", "due_at": "2026-12-10T10:00:00+03:00", "comment": "x"}})
	forged := engine.EventKey(eventsConfig().Contour, "crm.callback.create", "payments", "payment.succeeded-other")
	expect(t, g.do(http.MethodPost, "/v1/operations", g.token, map[string]string{"Idempotency-Key": forged}, body), http.StatusBadRequest, "rejected", "IDEMPOTENCY_KEY_INVALID")
}

// A notice the source denies runs nothing and is journaled as dropped
// with the source's word: a payment it does not have, one whose status is
// not the notice's.
func TestNoticeTheSourceDenies(t *testing.T) {
	t.Parallel()
	g := setupWith(t, eventsConfig())
	unknown := "2d3a4f5e-000f-5000-9000-1a2b3c4d5e6f"
	waiting := simPayment(t, g, 5000, false)
	for _, id := range []string{unknown, waiting} {
		if r := g.notify("payments", "application/json", notice("payment.succeeded", id)); r.Code != http.StatusOK {
			t.Fatalf("%d %s", r.Code, r.Raw)
		}
	}
	for id, reason := range map[string]string{unknown: "the source has no object " + unknown, waiting: "status is waiting_for_capture, not succeeded"} {
		for _, e := range eventsOf(t, g, id, 2) {
			if e.State != store.EventDropped || !strings.Contains(e.Reason, reason) {
				t.Fatalf("%s: %+v, want dropped for %q", id, e, reason)
			}
			if _, err := g.store.Get(context.Background(), e.OpKey); err == nil {
				t.Fatalf("a dropped notice has an operation: %s", e.OpKey)
			}
		}
	}
	audit, err := g.store.AuditEvents(context.Background(), store.AuditFilter{Event: "event.dropped"})
	if err != nil || len(audit) != 4 {
		t.Fatalf("dropped notices audited: %d %v", len(audit), err)
	}
}

// A source that cannot be read leaves the notice pending; it runs once
// the source answers again.
func TestNoticeWhileTheSourceIsDown(t *testing.T) {
	t.Parallel()
	g := setupWith(t, eventsConfig())
	id := simPayment(t, g, 7000, true)
	g.inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultStatus, Status: http.StatusServiceUnavailable, On: sim.OnLookup, Times: 1000})
	if r := g.notify("payments", "application/json", notice("payment.succeeded", id)); r.Code != http.StatusOK {
		t.Fatalf("%d %s", r.Code, r.Raw)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs, err := g.store.ListEvents(context.Background(), store.EventFilter{Source: "payments"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 2 && evs[0].Attempts > 0 && evs[1].Attempts > 0 {
			for _, e := range evs {
				if e.State != store.EventPending || !strings.Contains(e.Reason, "could not be read back") {
					t.Fatalf("with the source down: %+v", e)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no read-back failed: %+v", evs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.sim.ClearFaults()
	for _, e := range eventsOf(t, g, id, 2) {
		if e.State != store.EventRun {
			t.Fatalf("once the source is back: %+v", e)
		}
	}
	if n := g.sim.Effects(sim.Bitrix24, engine.EventKey(eventsConfig().Contour, "crm.callback.create", "payments", "payment.succeeded-"+id)); n != 1 {
		t.Fatalf("%d call-backs", n)
	}
}

// A notice refused journals nothing: an unknown source, an event no rule
// runs on, a body that is no notice, one over the limit, a Bitrix24
// notice without the portal's application token.
func TestNoticeRefused(t *testing.T) {
	t.Parallel()
	g := setupWith(t, eventsConfig())
	g.srv.SetEventTokens(map[string]string{"crm": "portal-app-token-1"})
	lead := func(token string) []byte {
		return []byte(url.Values{"event": {"ONCRMLEADADD"}, "data[FIELDS][ID]": {"424242"}, "ts": {"1765100000"},
			"auth[domain]": {"portal.example"}, "auth[application_token]": {token}}.Encode())
	}
	const form = "application/x-www-form-urlencoded"
	for _, tc := range []struct {
		name, source, contentType string
		body                      []byte
		status                    int
		code                      string
	}{
		{"UnknownSource", "shop", "application/json", notice("payment.succeeded", "2d3a4f5e-000f-5000-9000-1a2b3c4d5e6f"), 404, "EVENT_SOURCE_UNKNOWN"},
		{"SourceWithoutRules", "onec", "application/json", notice("payment.succeeded", "2d3a4f5e-000f-5000-9000-1a2b3c4d5e6f"), 404, "EVENT_SOURCE_UNKNOWN"},
		{"NoRule", "payments", "application/json", notice("payment.canceled", "2d3a4f5e-000f-5000-9000-1a2b3c4d5e6f"), 422, "EVENT_UNKNOWN"},
		{"NotSent", "payments", "application/json", notice("payout.succeeded", "2d3a4f5e-000f-5000-9000-1a2b3c4d5e6f"), 422, "EVENT_UNKNOWN"},
		{"NoNotice", "payments", "application/json", []byte(`{"hello":"world"}`), 400, "EVENT_MALFORMED"},
		{"TooLarge", "payments", "application/json", bytes.Repeat([]byte(" "), 65<<10), 413, "PAYLOAD_TOO_LARGE"},
		{"WrongToken", "crm", form, lead("portal-app-token-2"), 401, "UNAUTHENTICATED"},
		{"NoToken", "crm", form, lead(""), 401, "UNAUTHENTICATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.notify(tc.source, tc.contentType, tc.body)
			if r.Code != tc.status || r.errCode() != tc.code {
				t.Fatalf("%d %s, want %d %s", r.Code, r.Raw, tc.status, tc.code)
			}
			if strings.Contains(r.Raw, "portal-app-token") {
				t.Fatalf("the answer repeats a token: %s", r.Raw)
			}
		})
	}
	if evs, err := g.store.ListEvents(context.Background(), store.EventFilter{}); err != nil || len(evs) != 0 {
		t.Fatalf("refused notices journaled: %+v %v", evs, err)
	}
	// The right token: journaled, read back at the portal, which has no
	// such lead.
	if r := g.notify("crm", form, lead("portal-app-token-1")); r.Code != http.StatusOK {
		t.Fatalf("%d %s", r.Code, r.Raw)
	}
	if e := eventsOf(t, g, "424242", 1)[0]; e.State != store.EventDropped || e.Source != "crm" || e.Event != "ONCRMLEADADD" {
		t.Fatalf("a notice of a lead the portal does not have: %+v", e)
	}
}

// A burst of notices is read back a few at a time: forty notices of forty
// payments, each read-back held 150 ms at the source (within the read's timeout), never have more than
// the gateway's sixteen runners reading at YooKassa at once — not a
// connection per notice — and every one of them runs.
func TestNoticeBurstReadBackBounded(t *testing.T) {
	t.Parallel()
	cfg := fastConfig()
	cfg.Events = eventsConfig().Events[:1] // the call-back
	g := setupWith(t, cfg)
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = simPayment(t, g, 1000+i, true)
	}
	g.inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultDelay, DelayMS: 150, Times: len(ids), On: sim.OnLookup})
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			if r := g.notify("payments", "application/json", notice("payment.succeeded", id)); r.Code != http.StatusOK {
				t.Errorf("a notice: %d %s", r.Code, r.Raw)
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if e := eventsOf(t, g, id, 1)[0]; e.State != store.EventRun {
			t.Fatalf("a notice of the burst: %+v", e)
		}
	}
	if peak := g.sim.PeakInFlight("yookassa"); peak > 16 || peak < 2 {
		t.Fatalf("%d read-backs at YooKassa at once, want 2 to 16", peak)
	}
}
