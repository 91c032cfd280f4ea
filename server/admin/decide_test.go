package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// A denial needs its reason; the message after a decision names the
// amount and the customer.
func TestDenyNeedsReason(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	key := a.uniq("test:payment.charge:deny-reason:v1")
	ap := a.charge(key, 990000, "Оплата заказа")
	acc := a.signIn(store.RoleAccountant)
	deny := "/admin/approvals/" + itoa(ap.ID) + "/deny"
	for _, comment := range []string{"", "   "} {
		p := acc.post(deny, url.Values{"comment": {comment}}).expect(t, http.StatusUnprocessableEntity)
		if msg := p.text("form-error"); !strings.Contains(msg, "причину отказа") {
			t.Fatalf("deny without a reason: message %q", msg)
		}
		if got := a.approval(key).Status; got != store.ApprovalPending {
			t.Fatalf("approval = %s after a denial without reason", got)
		}
	}
	p := acc.post(deny, url.Values{"comment": {"клиент отменил заказ"}}).expect(t, http.StatusSeeOther)
	if got := a.approval(key); got.Status != store.ApprovalDenied || got.Comment != "клиент отменил заказ" {
		t.Fatalf("approval = %+v", got)
	}
	p = acc.get(p.location()).expect(t, http.StatusOK)
	if f := p.text("flash"); !strings.Contains(f, "9\u00a0900,00\u00a0₽") || !strings.Contains(f, "customer-1042") || !strings.Contains(f, "Отклонено") {
		t.Fatalf("flash %q does not name the amount and the customer", f)
	}
}

// The operation page shows the request under the intent's field titles in
// the page's language, the lines as a table with their total, and lets
// whoever decides decide there, after the same confirmation.
func TestOperationPageForWhoDecides(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	invoice := a.uniq("test:invoice.create:titles-001:v1")
	a.claim(invoice, "invoice.create", "onec", false, map[string]any{
		"order_id": "order-7", "organization_id": "org-main", "customer_id": "customer-1042", "currency": "RUB",
		"items": []map[string]any{
			{"product_id": "product-778", "quantity": 2, "unit": "pcs", "price_minor": 62500},
			{"product_id": "product-779", "quantity": 1.5, "unit": "kg", "price_minor": 10001},
		},
	})
	aud := a.signIn(store.RoleAuditor)
	p := aud.get("/admin/operations/"+keyPath(invoice)).expect(t, http.StatusOK)
	body := p.Body
	for _, want := range []string{"<dt>Заказ</dt>", "<dt>Организация</dt>", "<dt>Валюта</dt>", "<th>Товар</th>", "<th>Количество</th>", "<th>Цена</th>", "<th>Сумма строки</th>"} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s on the invoice's page", want)
		}
	}
	for _, raw := range []string{"<dt>order_id</dt>", "<dt>amount_minor</dt>", "<th>price_minor</th>"} {
		if strings.Contains(body, raw) {
			t.Errorf("a raw field name %s on the invoice's page", raw)
		}
	}
	// 2 × 625,00 + 1,5 × 100,01 = 1 400,02 (150,015 rounds half up).
	if got, want := p.text("lines-items-total"), "1\u00a0400,02\u00a0₽"; got != want {
		t.Fatalf("lines total %q, want %q", got, want)
	}
	en := a.signIn(store.RoleAuditor)
	en.cookies[admin.LangCookie] = "en"
	if pe := en.get("/admin/operations/"+keyPath(invoice)).expect(t, http.StatusOK); !strings.Contains(pe.Body, "<dt>Organization</dt>") || !strings.Contains(pe.Body, "<th>Product</th>") {
		t.Fatal("English field titles missing on the invoice's page")
	}

	charge := a.uniq("test:payment.charge:on-page-001:v1")
	ap := a.charge(charge, 125000, "Оплата заказа")
	if p := aud.get("/admin/operations/"+keyPath(charge)).expect(t, http.StatusOK); !p.has("pending-approval") || p.has("approve") {
		t.Fatal("the auditor sees no pending approval, or buttons to decide it")
	}
	acc := a.signIn(store.RoleAccountant)
	p = acc.get("/admin/operations/"+keyPath(charge)).expect(t, http.StatusOK)
	if !p.has("approve") || !p.has("deny") || p.text("amount") != "1\u00a0250,00\u00a0₽" {
		t.Fatalf("the accountant cannot decide on the operation page:\n%s", p.Body)
	}
	if !strings.Contains(p.Body, "<dt>Сумма</dt>") || !strings.Contains(p.Body, "<dt>Сохранённый способ оплаты</dt>") || p.text("field-description") != "Оплата заказа" {
		t.Fatalf("the charge's request is not shown titled and in full:\n%s", p.Body)
	}
	if got := p.text("nav-approvals-count"); got == "" || got == "0" {
		t.Fatalf("the navigation counts %q waiting approvals", got)
	}
	approve := "/admin/approvals/" + itoa(ap.ID) + "/approve"
	p = acc.post(approve, url.Values{"from": {"operation"}}).expect(t, http.StatusOK)
	if !p.has("confirm-approve") || a.approval(charge).Status != store.ApprovalPending {
		t.Fatal("an approve from the operation page did not ask to confirm")
	}
	if got := p.attrs("confirm-cancel", "href"); len(got) != 1 || got[0] != "/admin/operations/"+keyPath(charge) {
		t.Fatalf("cancel goes to %v", got)
	}
	p = acc.post(approve, url.Values{"from": {"operation"}, "confirm": {"yes"}}).expect(t, http.StatusSeeOther)
	if p.location() != "/admin/operations/"+keyPath(charge) {
		t.Fatalf("after deciding on the operation page: to %q", p.location())
	}
	if got := a.approval(charge); got.Status != store.ApprovalApproved || got.DecidedBy != "test-accountant" {
		t.Fatalf("approval = %+v", got)
	}
}

// A value the target did not keep as sent is shown on the operation's
// page as a warning naming the field, not only inside the result.
func TestOperationPageWarnsOfChangedValues(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	key := a.uniq("test:invoice.create:changed-001:v1")
	a.claim(key, "invoice.create", "onec", false, map[string]any{"order_id": "order-8"})
	result := json.RawMessage(`{"number":"ОГ00-000009","target_changed":[{"field":"comment","message":"1C kept the first 100 of 238 characters"}]}`)
	if err := a.st.Complete(context.Background(), key, "test-run", "DOC-9", result); err != nil {
		t.Fatal(err)
	}
	p := a.signIn(store.RoleOperator).get("/admin/operations/"+keyPath(key)).expect(t, http.StatusOK)
	_, box, _ := strings.Cut(p.Body, `data-testid="target-changed"`)
	box, _, _ = strings.Cut(box, "</div>")
	if !strings.Contains(box, "comment") || !strings.Contains(box, "1C kept the first 100 of 238 characters") || !strings.Contains(box, "не то, что было отправлено") {
		t.Fatalf("the page's warning of a changed value: %q", box)
	}
}
