package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// The card says whom a payment goes to by the shop's configured name,
// and links the 1C invoice of the same order with 1C's number and its
// total; a charge of an order without an invoice says there is none.
func TestApprovalNamesShopAndInvoice(t *testing.T) {
	t.Parallel()
	const shop = "Интернет-магазин «Ромашка»"
	a := newApp(t, func(d *admin.Deps) { d.ShopNames = map[string]string{"payments": shop} })
	ctx := context.Background()
	key := a.uniq("test:payment.charge:inv-001:v1")
	order := orderOf(key)
	invKey := a.uniq("test:invoice.create:inv-001:v1")
	a.claim(invKey, "invoice.create", "onec", false, map[string]any{
		"order_id": order, "organization_id": "org-main", "customer_id": "customer-1042", "currency": "RUB",
		"items": []any{map[string]any{"product_id": "product-778", "quantity": 2, "unit": "pcs", "price_minor": 62500}},
	})
	if err := a.st.Complete(ctx, invKey, "test-run", "INV-3f1c9a2e-7b4d-4c1a-9e2f-5d8b6a0c4e71", []byte(`{"number":"ОГ00-000123","state":"created"}`)); err != nil {
		t.Fatal(err)
	}
	a.charge(key, 125000, "Оплата заказа")
	bare := a.uniq("test:payment.charge:inv-002:v1")
	a.charge(bare, 5000, "")

	p := a.signIn(store.RoleAccountant).get("/admin/approvals").expect(t, http.StatusOK)
	c := approvalCard(p.Body, key)
	card := page{Body: c}
	if !strings.Contains(c, `data-testid="approval-shop"><strong>`+shop+`</strong>`) {
		t.Fatalf("the card does not name the shop:\n%s", c)
	}
	if got := card.text("approval-direction"); !strings.Contains(got, shop) {
		t.Fatalf("direction %q does not name the shop", got)
	}
	if got := card.text("approval-invoice-number"); got != "№ ОГ00-000123" {
		t.Fatalf("invoice named %q, want № ОГ00-000123:\n%s", got, c)
	}
	if !strings.Contains(c, `href="/admin/operations/`+keyPath(invKey)+`"`) {
		t.Fatalf("the invoice does not link its operation:\n%s", c)
	}
	if got := card.text("approval-invoice-amount"); !strings.Contains(got, "1\u00a0250,00") {
		t.Fatalf("invoice total %q", got)
	}
	none := page{Body: approvalCard(p.Body, bare)}
	if none.has("approval-invoice") || !none.has("approval-invoice-none") || !strings.Contains(none.Body, "счёта по заказу в 1С нет") {
		t.Fatalf("a charge of an order without an invoice does not say so:\n%s", none.Body)
	}
}

// A refund's card names its customer as the target knows them, looked up
// through the charge it refunds, like a charge's card.
func TestRefundNamesTheCustomer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(sim.New())
	t.Cleanup(srv.Close)
	buh, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: srv.URL + "/onec-odata/odata/standard.odata", Username: "buh", Password: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	a := newOwnApp(t, func(d *admin.Deps) { d.Describers = map[string]adapters.Describer{"buh": buh} })
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "refund-namer", store.RoleAccountant)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAccountant] = u
	const chargeKey = "test:payment.charge:rn-000001:v1"
	ap := a.charge(chargeKey, 125000, "")
	if err := a.st.DecideApproval(ctx, ap.ID, true, "someone", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.st.TakeApproved(ctx, "test-run", time.Minute); err != nil {
		t.Fatal(err)
	}
	const paymentID = "2f3b588d-000f-5000-8000-1d6e87c7fbdf"
	if err := a.st.Complete(ctx, chargeKey, "test-run", paymentID, nil); err != nil {
		t.Fatal(err)
	}
	refundKey := "test:payment.refund:rn-000001:v1"
	a.claim(refundKey, "payment.refund", "payments", true, map[string]any{"payment_id": paymentID, "amount_minor": 25000, "currency": "RUB"})
	p := a.signIn(store.RoleAccountant).get("/admin/approvals").expect(t, http.StatusOK)
	c := page{Body: approvalCard(p.Body, refundKey)}
	if got := c.text("approval-customer-name"); got != "ООО «Вектор»" {
		t.Fatalf("the refund's customer is named %q, want ООО «Вектор»:\n%s", got, c.Body)
	}
	if got := c.text("approval-customer-inn"); !strings.Contains(got, "7702104200") {
		t.Fatalf("the refund's customer's ИНН %q", got)
	}
}
