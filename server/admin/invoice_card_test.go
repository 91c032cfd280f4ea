package admin_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// invoiceOf journals an invoice.create of order with lines totalling
// quantity × 625,00 ₽; made (with 1C's number) when number is set.
func (a *app) invoiceOf(key, order string, quantity int, number string) {
	a.tb.Helper()
	a.invoiceClaim(key, order, quantity, key)
	result, _ := json.Marshal(map[string]any{"number": number, "state": "created"})
	if err := a.st.Complete(context.Background(), key, "test-run", "INV-3f1c9a2e-7b4d-4c1a-9e2f-"+strings.Repeat("0", 12), result); err != nil {
		a.tb.Fatal(err)
	}
}

func invoicePayload(order string, quantity int) map[string]any {
	return map[string]any{
		"order_id": order, "organization_id": "org-main", "customer_id": "customer-1042", "currency": "RUB",
		"items": []any{map[string]any{"product_id": "product-778", "quantity": quantity, "unit": "pcs", "price_minor": 62500}},
	}
}

// invoiceClaim journals an invoice.create of order under a duplicate
// rule that holds (as the built-in one does): the first of a business
// event is started, a later one held as a suspected duplicate of it —
// never made, waiting for a person.
func (a *app) invoiceClaim(key, order string, quantity int, event string) {
	a.tb.Helper()
	raw, _ := json.Marshal(invoicePayload(order, quantity))
	_, _, err := a.st.Claim(context.Background(), store.ClaimRequest{
		Key: key, Intent: "invoice.create", Fingerprint: strings.Repeat("cd", 32), TargetSystem: "onec",
		Agent: "agent-a", RequestID: key, Payload: raw, Owner: "test-run", Lease: time.Minute, ApprovalTTL: time.Hour,
		Duplicates: &store.DuplicateCheck{BusinessKey: fmt.Sprintf("%064x", sha256.Sum256([]byte(event))), Window: time.Hour, Action: store.DuplicateHold},
	})
	if err != nil {
		a.tb.Fatal(err)
	}
}

// The charge's card names the invoice actually made for its order and
// whose total is the charge's amount, by 1C's number — not a second
// invoice held as a suspected duplicate (never made) — and counts the
// others in correct Russian. The dashboard does not count the held one
// among the money approvals.
func TestApprovalNamesTheInvoiceMade(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	const order = "order-48291"
	const charge = "test:payment.charge:48291:v1"
	a.invoiceOf("test:invoice.create:order-48291:v0", order, 1, "ОГ00-000000")                           // 625 ₽, made first
	a.invoiceOf("test:invoice.create:order-48291:v1", order, 2, "ОГ00-000001")                           // 1 250 ₽
	a.invoiceClaim("test:invoice.create:order-48291:v2", order, 3, "test:invoice.create:order-48291:v1") // 1 875 ₽, held
	if op, err := a.st.Get(context.Background(), "test:invoice.create:order-48291:v2"); err != nil || op.Status != store.StatusAwaitingApproval || op.DuplicateOf == "" {
		t.Fatalf("the second invoice is not held as a duplicate: %+v, %v", op, err)
	}
	a.charge(charge, 125000, "")
	acc := a.accountant("invoice-namer")

	card := page{Body: approvalCard(acc.get("/admin/approvals").expect(t, http.StatusOK).Body, charge)}
	if got := card.text("approval-invoice-number"); got != "№ ОГ00-000001" {
		t.Fatalf("the card names invoice %q, want № ОГ00-000001:\n%s", got, card.Body)
	}
	if got := card.attrs("approval-invoice", "data-key"); len(got) != 1 || got[0] != "test:invoice.create:order-48291:v1" {
		t.Fatalf("the card links invoice %v", got)
	}
	if got := card.text("approval-invoice-amount"); got != "1\u00a0250,00\u00a0₽" {
		t.Fatalf("the invoice's total %q", got)
	}
	if card.has("approval-invoice-mismatch") || strings.Contains(card.Body, "ждёт согласования") {
		t.Fatalf("the card shows a held or mismatched invoice:\n%s", card.Body)
	}
	if got := card.text("approval-invoice-more"); got != "ещё 1 счёт по заказу" {
		t.Fatalf("the other invoices read %q", got)
	}

	// Another invoice made: two others now.
	a.invoiceOf("test:invoice.create:order-48291:v3", order, 4, "ОГ00-000003")
	card = page{Body: approvalCard(acc.get("/admin/approvals").expect(t, http.StatusOK).Body, charge)}
	if got := card.text("approval-invoice-more"); got != "ещё 2 счёта по заказу" {
		t.Fatalf("the other invoices read %q", got)
	}
	if got := card.text("approval-invoice-number"); got != "№ ОГ00-000001" {
		t.Fatalf("a newer invoice of another total displaced the matching one: %q", got)
	}

	// The dashboard counts the charge, not the held invoice.
	if got := acc.get("/admin/").expect(t, http.StatusOK).text("card-approvals-value"); got != "1" {
		t.Fatalf("money approvals on the dashboard: %q, want 1", got)
	}
}

// No amount matches: the newest invoice made is named, with a warning
// that its total is not the payment's amount.
func TestApprovalWarnsOfAnInvoiceOfAnotherAmount(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	const order = "order-48292"
	a.invoiceOf("test:invoice.create:order-48292:v1", order, 2, "ОГ00-000010")
	const charge = "test:payment.charge:48292:v1"
	a.charge(charge, 99900, "")
	card := page{Body: approvalCard(a.accountant("invoice-warner").get("/admin/approvals").expect(t, http.StatusOK).Body, charge)}
	if got := card.text("approval-invoice-number"); got != "№ ОГ00-000010" || !card.has("approval-invoice-mismatch") {
		t.Fatalf("an invoice of another total is not flagged:\n%s", card.Body)
	}
}

// The recipient is the shop's configured name; without one the card says
// the configuration names none, never a bare «магазин». The refund's
// card titles the customer's saved payment method as the charge does,
// not «Счёт» beside the 1C invoice.
func TestApprovalNamesRecipientAndPaymentMethod(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, func(d *admin.Deps) { d.ShopNames = nil })
	ctx := context.Background()
	const chargeKey = "test:payment.charge:48293:v1"
	ap := a.charge(chargeKey, 125000, "")
	acc := a.accountant("recipient-reader")
	card := page{Body: approvalCard(acc.get("/admin/approvals").expect(t, http.StatusOK).Body, chargeKey)}
	if d := card.text("approval-direction"); strings.HasSuffix(d, "— магазин") || !strings.Contains(d, "targets.payments.shop_name") {
		t.Fatalf("an unnamed shop reads %q", d)
	}

	if err := a.st.DecideApproval(ctx, ap.ID, true, "someone", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.TakeApproved(ctx, "test-run", time.Minute); err != nil {
		t.Fatal(err)
	}
	const paymentID = "2f3b588d-000f-5000-8000-1d6e87c7fb01"
	if err := a.st.Complete(ctx, chargeKey, "test-run", paymentID, nil); err != nil {
		t.Fatal(err)
	}
	const refundKey = "test:payment.refund:order-48293:v1"
	a.claim(refundKey, "payment.refund", "payments", true, map[string]any{"payment_id": paymentID, "amount_minor": 25000, "currency": "RUB"})
	refund := approvalCard(acc.get("/admin/approvals").expect(t, http.StatusOK).Body, refundKey)
	if !strings.Contains(refund, `<dt>Сохранённый способ оплаты</dt><dd data-testid="approval-account">merchant-account-17`) || strings.Contains(refund, "<dt>Счёт</dt>") {
		t.Fatalf("the refund's payment method is not titled as the charge's:\n%s", refund)
	}
}

// accountant signs in an accountant of a's own journal, who chose their
// own password.
func (a *app) accountant(name string) *client {
	a.tb.Helper()
	u, err := ownPasswordUser(context.Background(), a.st, name, store.RoleAccountant)
	if err != nil {
		a.tb.Fatal(err)
	}
	a.users[store.RoleAccountant] = u
	return a.signIn(store.RoleAccountant)
}
