package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/store"
)

// elementShot saves a screenshot of the first element matching css as
// name.png, and, when ONCEGATE_SHOTS names a folder, a copy there.
func (b *tab) elementShot(css, name string) {
	b.tb.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.Screenshot(chromedp.CSS(css)))
	if err != nil {
		b.tb.Fatalf("screenshot %s: %v", name, err)
	}
	for _, dir := range []string{b.shots, os.Getenv("ONCEGATE_SHOTS")} {
		if dir == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			b.tb.Fatal(err)
		}
	}
}

// cardsInBrowser: the charge's card names the invoice actually made for
// its order (not a duplicate held for a person), for the accountant b;
// the review card of an unknown invoice says what to look for at 1C, for
// the operator o.
func cardsInBrowser(t *testing.T, g *gateway, b, o *tab, payer string) {
	t.Helper()
	const order = "order-48291"
	const made, held = "test:invoice.create:" + order + ":v1", "test:invoice.create:" + order + ":v2"
	expect(t, g.post(made, invoice(order, 2)), http.StatusOK, "succeeded", "")
	if r := g.post(held, invoice(order, 3)); g.row(held).Status != store.StatusAwaitingApproval {
		t.Fatalf("the second invoice of the order is not held: %d %s", r.Code, r.Raw)
	}
	const chargeKey = "test:payment.charge:" + order + ":v1"
	expect(t, g.charge(payer, chargeKey, order, 125000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	const unknownKey = "test:invoice.create:order-48300:v1"
	g.unknownByHand(t, unknownKey, "order-48300")

	b.open("/admin/approvals")
	card := row("approval-row", chargeKey)
	b.do(chromedp.WaitVisible(chromedp.CSS(card)))
	b.elementShot(card, "approval-card")

	o.open("/admin/review")
	rc := row("review-row", unknownKey)
	o.do(chromedp.WaitVisible(chromedp.CSS(rc)))
	o.elementShot(rc, "review-card")
}
