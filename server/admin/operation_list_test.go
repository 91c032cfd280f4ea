package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// The operations list shows a payment's amount and customer (masked for
// whoever does not decide), nothing of the kind for other intents, and
// finds an operation by its order, its object at the target or its key.
func TestOperationListMoneyAndSearch(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	payKey := a.uniq("test:payment.charge:list-000001:v1")
	invKey := a.uniq("test:invoice.create:list-000002:v1")
	a.charge(payKey, 1370125, "")
	a.claim(invKey, "invoice.create", "onec", false, map[string]any{"order_id": orderOf(payKey), "customer_id": "customer-2001"})
	object := a.uniq("INV-000777")
	if err := a.st.Complete(context.Background(), invKey, "test-run", object, nil); err != nil {
		t.Fatal(err)
	}

	cell := func(p page, key, id string) string {
		t.Helper()
		i := strings.Index(p.Body, `data-key="`+key+`"`)
		if i < 0 {
			t.Fatalf("no row %s", key)
		}
		end := strings.Index(p.Body[i:], "</tr>")
		return page{Body: p.Body[i : i+end]}.text(id)
	}
	t.Run("Money", func(t *testing.T) {
		for _, tc := range []struct{ role, lang, amount, customer string }{
			{store.RoleAccountant, "ru", "13\u00a0701,25\u00a0₽", "customer-1042"},
			{store.RoleAccountant, "en", "₽13,701.25", "customer-1042"},
			{store.RoleOperator, "ru", "13\u00a0701,25\u00a0₽", "cust…1042"},
		} {
			c := a.signIn(tc.role)
			if tc.lang == "en" {
				c.cookies[admin.LangCookie] = "en"
			}
			p := c.get("/admin/operations?q="+url.QueryEscape(orderOf(payKey))).expect(t, http.StatusOK)
			if got := cell(p, payKey, "operation-amount"); got != tc.amount {
				t.Errorf("%s/%s: amount %q, want %q", tc.role, tc.lang, got, tc.amount)
			}
			if got := cell(p, payKey, "operation-customer"); got != tc.customer {
				t.Errorf("%s/%s: customer %q, want %q", tc.role, tc.lang, got, tc.customer)
			}
			if got := cell(p, invKey, "operation-amount") + cell(p, invKey, "operation-customer"); got != "" {
				t.Errorf("%s: an invoice shows %q in the money columns", tc.role, got)
			}
			if strings.Contains(p.Body, "customer-1042") != (tc.role == store.RoleAccountant) {
				t.Errorf("%s: the customer's id shown in full: %v", tc.role, strings.Contains(p.Body, "customer-1042"))
			}
		}
	})
	t.Run("Search", func(t *testing.T) {
		c := a.signIn(store.RoleAuditor)
		for _, tc := range []struct {
			q    string
			want []string
		}{
			{orderOf(payKey), []string{invKey, payKey}},
			{object, []string{invKey}},
			{payKey, []string{payKey}},
			{"  " + payKey + " ", []string{payKey}},
			{"order-nothing-like-it", nil},
		} {
			p := c.get("/admin/operations?q="+url.QueryEscape(tc.q)).expect(t, http.StatusOK)
			if got := p.attrs("operation-row", "data-key"); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("q=%q: rows %v, want %v", tc.q, got, tc.want)
			}
			if got := p.attrs("filter-search", "value"); len(got) != 1 || got[0] != strings.TrimSpace(tc.q) {
				t.Errorf("q=%q: the box keeps %v", tc.q, got)
			}
		}
		// The search and the filters together.
		p := c.get("/admin/operations?intent=payment.charge&q="+url.QueryEscape(orderOf(payKey))).expect(t, http.StatusOK)
		if got := p.attrs("operation-row", "data-key"); len(got) != 1 || got[0] != payKey {
			t.Errorf("search with intent: rows %v", got)
		}
		if !strings.Contains(p.Body, `<details class="fold" open`) {
			t.Error("a filter in use leaves the filters folded")
		}
	})
}

// The key filter's placeholder is a key of the gateway's own contour.
func TestOperationListPlaceholderInOwnContour(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	body := a.signIn(store.RoleOperator).get("/admin/operations").expect(t, http.StatusOK).Body
	if !strings.Contains(body, `placeholder="test:invoice.create:"`) || strings.Contains(body, "prod:") {
		t.Fatal("the key filter's placeholder is not of the gateway's contour test")
	}
}
