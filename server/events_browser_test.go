package server_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// refundOnCancelConfig is the test configuration with one rule of events: a
// payment canceled at YooKassa is refunded, so the gateway takes the
// notices of payments.
func refundOnCancelConfig() config.Config {
	cfg := testConfig()
	cfg.Events = []config.EventRule{{Source: "payments", On: "payment.canceled", Run: "payment.refund", Line: 1, Payload: []config.EventField{
		{Name: "payment_id", Event: "object.id"},
		{Name: "amount_minor", Event: "object.amount.value", Money: config.MoneyDecimal},
		{Name: "currency", Event: "object.amount.currency"},
		{Name: "reason", Value: "canceled at the shop"},
	}}}
	return cfg
}

// journalNotice journals a notice of payments about object as the
// endpoint does, not due to be read back for an hour (so the gateway's
// own pass leaves it as the test puts it), and returns its row.
func (g *gateway) journalNotice(tb testing.TB, object string) store.Event {
	tb.Helper()
	key := "test:payment.refund:evt-payments-" + object + ":v1"
	evs, err := g.store.ReceiveEvent(context.Background(), "payments", "payment.canceled", object,
		[]store.EventRule{{Run: "payment.refund", OpKey: key}}, time.Now().Add(time.Hour))
	if err != nil || len(evs) != 1 {
		tb.Fatalf("journal the notice of %s: %+v %v", object, evs, err)
	}
	return evs[0]
}

// An operator sees on the dashboard that a notice was dropped, follows
// the warning to the events page, finds there the dropped, the pending
// and the run notice with what became of each and why, narrows the list
// by state, and goes from the notice that ran to its operation, whose
// page says the notice started it. In English the states read so too.
func TestEventsInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	g := setupWith(t, refundOnCancelConfig())
	g.mustUsers(t, map[string]string{"olga": store.RoleOperator})
	ctx := context.Background()

	forged := g.journalNotice(t, "pay-forged")
	if err := g.store.SettleEvent(ctx, forged.ID, store.EventDropped, "the source does not hold it as the notice says: status is succeeded"); err != nil {
		t.Fatal(err)
	}
	waiting := g.journalNotice(t, "pay-wait")
	if err := g.store.PostponeEvent(ctx, waiting.ID, "the source could not be read back: HTTP 503", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ran := g.journalNotice(t, "pay-ran")
	if _, _, err := g.store.Claim(ctx, store.ClaimRequest{
		Key: ran.OpKey, Intent: "payment.refund", Fingerprint: strings.Repeat("ef", 32), TargetSystem: "payments",
		Agent: "event:payments", RequestID: ran.OpKey, Owner: "test-run", Lease: time.Minute,
		Payload: []byte(`{"payment_id":"pay-ran","amount_minor":125000,"currency":"RUB","reason":"canceled at the shop"}`),
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.store.SettleEvent(ctx, ran.ID, store.EventRun, ""); err != nil {
		t.Fatal(err)
	}

	shots, err := os.MkdirTemp("", "oncegate-events-screens-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	b := g.newTab(t, root, shots)
	b.signIn("olga")

	// The dashboard's warning leads to the dropped notice.
	b.open("/admin/")
	b.do(chromedp.WaitVisible(tid("dashboard-alert")))
	if alert := b.text(tid("dashboard-alert")); !strings.Contains(alert, "отброшено за сутки: 1") {
		t.Fatalf("the dashboard's alert: %q", alert)
	}
	b.do(chromedp.Click(tid("dashboard-alert")+" a"), chromedp.WaitVisible(tid("events")))
	if n := b.count(`[data-testid="event-row"]`); n != 1 || b.text(tid("event-object")) != "pay-forged" {
		t.Fatalf("%d rows after the dashboard's warning, the first of %q", n, b.text(tid("event-object")))
	}

	// Every notice, newest first, with its state and why.
	b.do(chromedp.Click(tid("nav-events")), chromedp.WaitVisible(tid("events")))
	b.shot("events")
	if n := b.count(`[data-testid="event-row"]`); n != 3 {
		t.Fatalf("%d notices listed, want 3", n)
	}
	for _, tc := range []struct{ object, state, label, reason string }{
		{"pay-ran", "run", "запущено", ""},
		{"pay-wait", "pending", "ждёт проверки", "HTTP 503"},
		{"pay-forged", "dropped", "отброшено", "status is succeeded"},
	} {
		scope := `[data-testid="event-row"][data-object="` + tc.object + `"]`
		if got := b.text(tid("event-state", scope)); got != tc.label {
			t.Errorf("%s: state %q, want %q", tc.object, got, tc.label)
		}
		if n := b.count(scope + ` [data-testid="event-state"][data-state="` + tc.state + `"]`); n != 1 {
			t.Errorf("%s: not in state %s", tc.object, tc.state)
		}
		if got := b.text(tid("event-reason", scope)); !strings.Contains(got, tc.reason) || tc.reason == "" && got != "" {
			t.Errorf("%s: reason %q, want %q", tc.object, got, tc.reason)
		}
	}
	if next := b.text(tid("event-next", `[data-object="pay-wait"]`)); next == "" {
		t.Error("the pending notice's next read-back is not shown")
	}

	// Narrowed to the pending one by the state filter.
	b.do(chromedp.SetValue(tid("filter-state"), "pending"), chromedp.Click(tid("filter-apply")),
		chromedp.WaitNotPresent(`[data-object="pay-ran"]`))
	if n := b.count(`[data-testid="event-row"]`); n != 1 || b.text(tid("event-object")) != "pay-wait" {
		t.Fatalf("%d rows pending, the first %q", n, b.text(tid("event-object")))
	}

	// From the notice that ran to its operation, which says what started it.
	b.open("/admin/events")
	b.do(chromedp.Click(tid("event-operation", `[data-object="pay-ran"]`)), chromedp.WaitVisible(tid("started-by")))
	b.shot("operation-started-by")
	if got := b.text(tid("operation-key")); got != ran.OpKey {
		t.Fatalf("the link led to %q, want %q", got, ran.OpKey)
	}
	if src, obj := b.text(tid("started-by-source")), b.text(tid("started-by-object")); src != "payments" || obj != "pay-ran" {
		t.Fatalf("started by: source %q, object %q", src, obj)
	}
	b.do(chromedp.Click(tid("started-by-events")), chromedp.WaitVisible(tid("events")))
	sel, err := run(b, chromedp.Evaluate[string](`document.querySelector('[data-testid="filter-source"]').value`))
	if err != nil || sel != "payments" {
		t.Fatalf("the source's notices open with the source %q chosen (%v)", sel, err)
	}

	// In English.
	b.do(chromedp.Click(tid("lang-switch")), chromedp.WaitVisible(tid("events")))
	if got := b.text(tid("event-state", `[data-object="pay-forged"]`)); got != "dropped" {
		t.Fatalf("in English the dropped notice reads %q", got)
	}
	if got := b.text(tid("nav-events")); got != "Events" {
		t.Fatalf("the navigation reads %q in English", got)
	}
}
