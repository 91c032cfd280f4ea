package admin_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/store"
)

// The users page says who must still choose their own password (one an
// admin chose for them) and who has, as `user list` does.
func TestUsersShowWhoMustChooseAPassword(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "users-admin", store.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAdmin] = u
	if _, err := a.st.CreateUser(ctx, "fresh-operator", store.RoleOperator, "an-admin-chose-this"); err != nil {
		t.Fatal(err)
	}
	p := a.signIn(store.RoleAdmin).get("/admin/users").expect(t, http.StatusOK)
	state := func(name string) string {
		s := section(p.Body, `data-testid="user-row" data-name="`+name+`"`)
		i := strings.Index(s, `data-testid="user-password-state"`)
		if i < 0 {
			return ""
		}
		s = s[i:]
		return s[:strings.Index(s, "</td>")]
	}
	if got := state("fresh-operator"); !strings.Contains(got, `data-must-change="true"`) || !strings.Contains(got, "ещё не выбрал свой") {
		t.Errorf("the user with an admin's password reads %q", got)
	}
	if got := state("users-admin"); !strings.Contains(got, `data-must-change="false"`) || !strings.Contains(got, "свой") {
		t.Errorf("the user with their own password reads %q", got)
	}
}

// The audit trail names every field of a password change in words: who
// changed it (self) and whether the change was required (was_required),
// not the journal's keys.
func TestAuditNamesPasswordChangeFields(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "words-auditor", store.RoleAuditor)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAuditor] = u
	p := a.signIn(store.RoleAuditor).get("/admin/audit?event="+url.QueryEscape("user.password_changed")).expect(t, http.StatusOK)
	detail := section(p.Body, `data-testid="event-detail"`)
	for _, want := range []string{"Сменил сам", "Смена была обязательной"} {
		if !strings.Contains(detail, want) {
			t.Errorf("the password change's detail lacks %q:\n%s", want, detail)
		}
	}
	for _, key := range []string{"<dt>self</dt>", "<dt>was_required</dt>"} {
		if strings.Contains(p.Body, key) {
			t.Errorf("the audit page shows the bare key %s", key)
		}
	}
}

// The comparison of a suspected duplicate shows an invoice's lines as a
// table with their total on either side, not as JSON.
func TestDuplicateShowsLinesAsTable(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	ctx := context.Background()
	u, err := ownPasswordUser(ctx, a.st, "dup-operator", store.RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleOperator] = u
	const first, second = "test:invoice.create:order-48320:v1", "test:invoice.create:order-48320:v2"
	a.invoiceOf(first, "order-48320", 2, "ОГ00-000020")
	a.invoiceClaim(second, "order-48320", 3, first)
	card := approvalCard(a.signIn(store.RoleOperator).get("/admin/approvals").expect(t, http.StatusOK).Body, second)
	c := page{Body: card}
	if !c.has("duplicate-lines-this") || !c.has("duplicate-lines-earlier") || strings.Contains(card, "[{") || strings.Contains(card, "&#34;product_id") {
		t.Fatalf("the lines are not tables:\n%s", card)
	}
	if got, want := c.text("duplicate-lines-this-total"), "1\u00a0875,00\u00a0₽"; got != want {
		t.Errorf("this invoice's total %q, want %q", got, want)
	}
	if got, want := c.text("duplicate-lines-earlier-total"), "1\u00a0250,00\u00a0₽"; got != want {
		t.Errorf("the earlier invoice's total %q, want %q", got, want)
	}
}
