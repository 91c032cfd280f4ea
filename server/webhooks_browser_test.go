package server_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// An endpoint paused after failing shows on the dashboard; on the
// webhooks page an operator resumes it and the delivery arrives, then
// sends it again — the same webhook-id — and both acts are audited.
func TestWebhooksInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	rcv := newReceiver(t)
	rcv.status.Store(http.StatusInternalServerError)
	g := setupWith(t, webhookConfig(rcv, config.EventOperationSucceeded))
	g.mustUsers(t, map[string]string{"olga": store.RoleOperator})
	const key = "test:invoice.create:order-hook-b1:v1"
	expect(t, g.post(key, invoice("order-hook-b1", 1)), http.StatusOK, "succeeded", "")
	first := rcv.awaitDeliveries(t, 1)[0]
	if err := g.store.StopEndpoint(context.Background(), "erp", "paused", "every delivery failed for five days"); err != nil {
		t.Fatal(err)
	}
	rcv.status.Store(http.StatusNoContent)

	b := g.newTab(t, root, os.TempDir())
	b.signIn("olga")
	b.open("/admin/")
	b.do(chromedp.WaitVisible(tid("dashboard-alert")))
	if alert := b.text(tid("dashboard-alert")); !strings.Contains(alert, "erp") {
		t.Fatalf("the dashboard's alert: %q", alert)
	}
	b.open("/admin/webhooks")
	b.do(chromedp.WaitVisible(tid("webhook-endpoint-state")))
	if n := b.count(`[data-testid="webhook-delivery"][data-state="pending"]`); n != 1 {
		t.Fatalf("%d pending deliveries shown, want 1", n)
	}
	b.do(chromedp.Click(tid("webhook-resume")), chromedp.WaitNotPresent(tid("webhook-endpoint-state")))
	second := rcv.awaitDeliveries(t, 2)[1]
	if second.id != first.id {
		t.Fatalf("the resumed delivery's webhook-id %q, first %q", second.id, first.id)
	}
	until(t, "the delivery to show delivered", func() bool {
		ds, err := g.store.Deliveries(context.Background(), "erp", 10)
		return err == nil && len(ds) == 1 && ds[0].State == store.DeliveryDelivered
	})
	b.open("/admin/webhooks")
	b.do(chromedp.WaitVisible(`[data-testid="webhook-delivery"][data-state="delivered"]`), chromedp.Click(tid("webhook-resend")))
	if third := rcv.awaitDeliveries(t, 3)[2]; third.id != first.id {
		t.Fatalf("the delivery sent again has webhook-id %q, want %q", third.id, first.id)
	}
	for _, ev := range []string{"webhook.endpoint_resumed", "webhook.delivery_resent"} {
		events, err := g.store.AuditEvents(context.Background(), store.AuditFilter{Event: ev})
		if err != nil || len(events) != 1 || events[0].Actor.Name != "olga" {
			t.Errorf("%s audited as %+v, %v", ev, events, err)
		}
	}
}
