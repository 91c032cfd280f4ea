package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/store"
)

// elementShot saves a screenshot of the first element matching css as
// name.png, and, when ONCEGATE_SHOTS names a folder, a copy there.
func (b *tab) elementShot(css, name string) {
	b.tb.Helper()
	png, err := run(b, chromedp.Screenshot(chromedp.CSS(css)))
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
// the operator o. bare is a charge awaiting approval whose order has no
// invoice.
func cardsInBrowser(t *testing.T, g *gateway, b, o *tab, payer, bare string) {
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
	// The invoice made, by 1C's number, not the one held for a person.
	if n := b.count(card + ` [data-testid="approval-invoice-number"]`); n != 1 {
		t.Fatalf("the card names no invoice by 1C's number: %q", b.text(chromedp.CSS(card)))
	}
	if got := b.text(tid("approval-invoice-number", card)); !strings.HasPrefix(got, "№ ОГ00-") {
		t.Fatalf("the card names the invoice %q, not by 1C's number", got)
	}
	if got := eval[string](b, `document.querySelector('`+card+` [data-testid="approval-invoice"]').dataset.key`); got != made {
		t.Fatalf("the card names invoice %s, want %s", got, made)
	}
	if got := b.text(tid("approval-invoice-amount", card)); got != "1\u00a0250,00\u00a0₽" {
		t.Fatalf("the invoice's total reads %q", got)
	}
	if got := b.text(tid("approval-direction", card)); !strings.Contains(got, "Интернет-магазин «Ромашка»") {
		t.Fatalf("the recipient reads %q", got)
	}
	if got := b.text(chromedp.CSS(card)); strings.Contains(got, "ждёт согласования") || strings.Contains(got, held) {
		t.Fatalf("the card shows the held invoice:\n%s", got)
	}
	// A charge of an order with no invoice says so.
	if n := b.count(row("approval-row", bare) + ` [data-testid="approval-invoice-none"]`); n != 1 {
		t.Fatal("a charge of an order without an invoice does not say so")
	}
	// The held invoice's comparison shows its lines as tables.
	hc := row("approval-row", held)
	if n := b.count(hc + ` [data-testid="duplicate-lines-this"]`); n != 1 || b.text(tid("duplicate-lines-earlier-total", hc)) != "1\u00a0250,00\u00a0₽" {
		t.Fatal("the duplicate's comparison does not show the lines as tables")
	}

	// The dashboard counts the two charges, not the held invoice.
	b.open("/admin/")
	b.do(chromedp.WaitVisible(tid("card-approvals-value")))
	if got := b.text(tid("card-approvals-value")); got != "2" {
		t.Fatalf("money approvals on the dashboard: %s, want 2", got)
	}

	o.open("/admin/review")
	rc := row("review-row", unknownKey)
	o.do(chromedp.WaitVisible(chromedp.CSS(rc)))
	o.elementShot(rc, "review-card")
	if n := o.count(rc + ` [data-testid="review-search"]`); n != 1 {
		t.Fatalf("the review card says no search to run at 1C: %q", o.text(chromedp.CSS(rc)))
	}
	if got := o.text(tid("review-search", rc)); got != "в 1С: запись регистра «ОперацииOncegate» с ключом операции "+unknownKey {
		t.Fatalf("the search reads %q", got)
	}
	if got := o.text(tid("field-customer_id", rc)); got != "customer-1042" {
		t.Fatalf("the operator reads the customer as %q", got)
	}
	if got := o.text(tid("time-zone")); !strings.Contains(got, "UTC+03:00") {
		t.Fatalf("the times are in %q, not the firm's zone", got)
	}
}
