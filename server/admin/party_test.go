package admin_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// The accountant reads who pays as 1C knows them — the counterparty's
// name and ИНН, read from 1C when the card is shown, not the agent's id
// alone — on the card, the confirmation and the message after it.
func TestApprovalNamesTheCustomer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(sim.New())
	t.Cleanup(srv.Close)
	buh, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: srv.URL + "/onec-odata/odata/standard.odata", Username: "buh", Password: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, func(d *admin.Deps) { d.Describers = map[string]adapters.Describer{"buh": buh} })
	key := a.uniq("test:payment.charge:party-001:v1")
	ap := a.charge(key, 125000, "Оплата заказа")

	acc := a.signIn(store.RoleAccountant)
	p := acc.get("/admin/approvals").expect(t, http.StatusOK)
	c := approvalCard(p.Body, key)
	if !strings.Contains(c, "ООО «Вектор»") || !strings.Contains(c, "7702104200") || !strings.Contains(c, "КПП 770201001") || !strings.Contains(c, "customer-1042") {
		t.Fatalf("the card does not name the customer as 1C knows them:\n%s", c)
	}
	p = acc.post("/admin/approvals/"+itoa(ap.ID)+"/approve", nil).expect(t, http.StatusOK)
	if got := p.text("approval-customer-name"); got != "ООО «Вектор»" {
		t.Fatalf("the confirmation names the customer %q", got)
	}
	p = acc.post("/admin/approvals/"+itoa(ap.ID)+"/approve", url.Values{"confirm": {"yes"}}).expect(t, http.StatusSeeOther)
	if f := acc.get(p.location()).text("flash"); !strings.Contains(f, "ООО «Вектор»") {
		t.Fatalf("flash %q does not name the customer", f)
	}

	// Those who do not decide see the id masked, and no name.
	other := a.uniq("test:payment.charge:party-002:v1")
	a.charge(other, 5000, "")
	p = a.signIn(store.RoleAuditor).get("/admin/approvals").expect(t, http.StatusOK)
	if c := approvalCard(p.Body, other); strings.Contains(c, "Вектор") || strings.Contains(c, "customer-1042") {
		t.Fatalf("the auditor reads the customer:\n%s", c)
	}
}

// The card names the customer whichever target can tell: the firm's 1C
// HTTP service (its id register and catalog) or the CRM (the contact and
// its requisites), each read when the card is shown. Where both can, the
// answer with an ИНН wins: the CRM knows customer-1042 as a contact
// person only, 1C as the legal entity that pays.
func TestApprovalNamesTheCustomerFromEachTarget(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(sim.New())
	t.Cleanup(srv.Close)
	one, err := onec.New(onec.Config{BaseURL: srv.URL + "/onec", Username: "oncegate", Password: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	crm, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/bitrix24" + sim.Bitrix24WebhookPath()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, customer, party, inn, not string
		describers                      map[string]adapters.Describer
	}{
		{"onec", "customer-1042", "ООО «Вектор»", "7702104200", "", map[string]adapters.Describer{"onec": one}},
		{"crm", "customer-2001", "Соколов Андрей Викторович", "770220010001", "", map[string]adapters.Describer{"crm": crm}},
		{"both", "customer-1042", "ООО «Вектор»", "7702104200", "Волкова", map[string]adapters.Describer{"crm": crm, "onec": one}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newApp(t, func(d *admin.Deps) { d.Describers = tc.describers })
			key := a.uniq("test:payment.charge:party-" + tc.name + ":v1")
			a.claim(key, "payment.charge", "payments", true, map[string]any{"account_id": "merchant-account-17",
				"order_id": orderOf(key), "amount_minor": 125000, "currency": "RUB", "customer_id": tc.customer})
			p := a.signIn(store.RoleAccountant).get("/admin/approvals").expect(t, http.StatusOK)
			c := approvalCard(p.Body, key)
			if !strings.Contains(c, tc.party) || !strings.Contains(c, tc.inn) || !strings.Contains(c, tc.customer) ||
				tc.not != "" && strings.Contains(c, tc.not) {
				t.Fatalf("the card does not name %s as %s (ИНН %s):\n%s", tc.customer, tc.party, tc.inn, c)
			}
		})
	}
}

// approvalCard is the approval card of key on the queue's page.
func approvalCard(body, key string) string {
	s := section(body, `data-testid="approval-row" data-key="`+key+`"`)
	if i := strings.Index(s, "</article>"); i >= 0 {
		s = s[:i]
	}
	return s
}
