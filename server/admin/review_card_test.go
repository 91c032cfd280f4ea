package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// reviewCard is the review card of key on the review page.
func reviewCard(body, key string) page {
	s := body[max(strings.Index(body, `data-testid="review-row" data-key="`+key+`"`), 0):]
	if i := strings.Index(s, "</article>"); i >= 0 {
		s = s[:i]
	}
	return page{Body: s}
}

// The operator's review card says what to look for: the request as the
// agent sent it (the customer unmasked, the lines as a table), the exact
// search to run at the target, by the target's kind; the operation page
// says the same search. The auditor reads the customer masked.
func TestReviewCardSaysWhatToLookFor(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, func(d *admin.Deps) {
		d.TargetKinds = map[string]string{"onec": "onec", "buh": "onec_odata", "crm": "bitrix24", "payments": "yookassa"}
	})
	ctx := context.Background()
	for role, name := range map[string]string{store.RoleOperator: "look-operator", store.RoleAuditor: "look-auditor"} {
		u, err := ownPasswordUser(ctx, a.st, name, role)
		if err != nil {
			t.Fatal(err)
		}
		a.users[role] = u
	}
	const inv = "test:invoice.create:order-48300:v1"
	a.claim(inv, "invoice.create", "onec", false, invoicePayload("order-48300", 2))
	const odata = "test:invoice.create:order-48301:v1"
	a.claim(odata, "invoice.create", "buh", false, invoicePayload("order-48301", 1))
	const callback = "test:crm.callback.create:lead-7:v1"
	a.claim(callback, "crm.callback.create", "crm", false, map[string]any{"customer_id": "customer-2001", "phone": "+79161234567"})
	for _, k := range []string{inv, odata, callback} {
		if _, err := a.st.LookupFailed(ctx, k, "test-run", "", "", 1, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}

	opr := a.signIn(store.RoleOperator)
	body := opr.get("/admin/review").expect(t, http.StatusOK).Body
	card := reviewCard(body, inv)
	if got, want := card.text("review-search"), "в 1С: запись регистра «ОперацииOncegate» с ключом операции "+inv; got != want {
		t.Errorf("1C's search reads %q, want %q", got, want)
	}
	if got := card.text("field-customer_id"); got != "customer-1042" {
		t.Errorf("the operator reads the customer as %q:\n%s", got, card.Body)
	}
	if !card.has("lines-items") || strings.Contains(card.Body, `[{&#34;`) {
		t.Errorf("the invoice's lines are not a table:\n%s", card.Body)
	}
	if got, want := reviewCard(body, odata).text("review-search"), "в 1С: документ с Ref_Key "+onecodata.RefKey("buh", "invoice.create", odata); got != want {
		t.Errorf("1C OData's search reads %q, want %q", got, want)
	}
	if got, want := reviewCard(body, callback).text("review-search"), "в Битрикс24: дела с ORIGINATOR_ID = oncegate и ORIGIN_ID = "+callback; got != want {
		t.Errorf("Bitrix24's search reads %q, want %q", got, want)
	}
	op := opr.get("/admin/operations/"+url.PathEscape(inv)).expect(t, http.StatusOK)
	if got := op.Body; !strings.Contains(got, "в 1С: запись регистра «ОперацииOncegate» с ключом операции "+inv) || op.text("field-customer_id") != "customer-1042" {
		t.Errorf("the operation page does not say what to look for:\n%s", section(got, `data-testid="request-summary"`))
	}

	aud := reviewCard(a.signIn(store.RoleAuditor).get("/admin/review").expect(t, http.StatusOK).Body, inv)
	if got := aud.text("field-customer_id"); got == "customer-1042" || got == "" {
		t.Errorf("the auditor reads the customer as %q", got)
	}
}

// A payment's search is by the key YooKassa keeps in its metadata; a
// card's number in a request is masked for everyone.
func TestReviewCardOfAPayment(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, func(d *admin.Deps) { d.TargetKinds = map[string]string{"payments": "yookassa"} })
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "pay-operator", store.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleOperator] = u
	const key = "test:payment.charge:48310:v1"
	a.claim(key, "payment.charge", "payments", false, map[string]any{"account_id": "merchant-account-17", "order_id": "order-48310",
		"amount_minor": 125000, "currency": "RUB", "card_number": "4111111111111111"})
	if _, err := a.st.LookupFailed(ctx, key, "test-run", "", "payments: Post \"https://api.yookassa.ru/v3/payments\": context deadline exceeded", 1, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	card := reviewCard(a.signIn(store.RoleOperator).get("/admin/review").expect(t, http.StatusOK).Body, key)
	if got, want := card.text("review-search"), "в ЮKassa: платёж с metadata.operation_key = "+key; got != want {
		t.Errorf("YooKassa's search reads %q, want %q", got, want)
	}
	if got := card.text("review-last-answer"); got != "ЮKassa не ответил вовремя" {
		t.Errorf("a timeout reads %q", got)
	}
	if strings.Contains(card.Body, "4111111111111111") || card.text("field-account_id") != "merchant-account-17" {
		t.Errorf("the card number is shown, or the request masked for the operator:\n%s", card.Body)
	}
}

// With no time_zone set the pages say the times are in the server's own
// zone, so no one takes UTC for Moscow.
func TestPagesSayTheServerZone(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(d *admin.Deps) { d.Location = time.Local })
	if got := a.signIn(store.RoleAuditor).get("/admin/").expect(t, http.StatusOK).text("time-zone"); !strings.Contains(got, "пояс сервера (time_zone не задан)") {
		t.Fatalf("the zone reads %q", got)
	}
}

// The card says a look-up of the customer failed — 1C is down — rather
// than show the raw id as if no one knew it; the name the CRM gave is
// said to be the CRM's.
func TestApprovalSaysTheCustomerLookupFailed(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens: every call fails
	dead, err := onec.New(onec.Config{BaseURL: down.URL + "/onec", Username: "oncegate", Password: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.New())
	t.Cleanup(srv.Close)
	crm, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/bitrix24" + sim.Bitrix24WebhookPath()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		describers map[string]adapters.Describer
		customer   string
		from       string // the system the name is from, "" for no name
	}{
		{"alone", map[string]adapters.Describer{"onec": dead}, "customer-1042", ""},
		// The CRM knows customer-1042 as a contact person, without an ИНН:
		// 1C, which knows the legal entity, is asked too, and fails.
		{"crm-answers", map[string]adapters.Describer{"onec": dead, "crm": crm}, "customer-1042", "Битрикс24"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newApp(t, func(d *admin.Deps) { d.Describers = tc.describers })
			key := a.uniq("test:payment.charge:lookup-" + tc.name + ":v1")
			a.claim(key, "payment.charge", "payments", true, map[string]any{"account_id": "merchant-account-17",
				"order_id": orderOf(key), "amount_minor": 125000, "currency": "RUB", "customer_id": tc.customer})
			card := page{Body: approvalCard(a.signIn(store.RoleAccountant).get("/admin/approvals").expect(t, http.StatusOK).Body, key)}
			if got := card.text("approval-customer-unchecked"); got != "1С: не удалось проверить" {
				t.Fatalf("a failed look-up reads %q:\n%s", got, card.Body)
			}
			if got := card.text("approval-customer-from"); tc.from != "" && !strings.Contains(got, tc.from) || tc.from == "" && card.has("approval-customer-name") {
				t.Fatalf("the name's source reads %q:\n%s", got, card.Body)
			}
		})
	}
}
