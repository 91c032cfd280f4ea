package admin_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// logIn signs the client in through the sign-in form.
func (c *client) logIn(name, pw string) page {
	c.a.tb.Helper()
	form := c.get("/admin/login").expect(c.a.tb, http.StatusOK)
	return c.do("POST", "/admin/login", url.Values{"name": {name}, "password": {pw}, "csrf": {loginToken(c.a.tb, form)}})
}

// An admin who makes an accountant with a password of their choosing
// cannot sign in as them and decide: the account can do nothing until it
// has a password of its own, and the audit trail shows who chose it.
func TestFirstSignInChoosesOwnPassword(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	ctx := context.Background()
	adm := a.signIn(store.RoleAdmin)
	name := a.uniq("sod-accountant")
	const given, own = "the-admin-chose-this", "only-the-accountant-knows"
	adm.post("/admin/users", url.Values{"name": {name}, "role": {"accountant"}, "password": {given}, "own_password": {password}}).expect(t, http.StatusSeeOther)
	key := a.uniq("test:payment.charge:sod-001:v1")
	ap := a.charge(key, 125000, "")
	approve, deny := "/admin/approvals/"+itoa(ap.ID)+"/approve", "/admin/approvals/"+itoa(ap.ID)+"/deny"

	// Signed in with the password the admin chose: to the password page.
	acc := a.client()
	if p := acc.logIn(name, given).expect(t, http.StatusSeeOther); p.location() != "/admin/password" {
		t.Fatalf("first sign-in goes to %q, want /admin/password", p.location())
	}
	p := acc.get("/admin/password").expect(t, http.StatusOK)
	if !p.has("password-required") || !p.has("password-form") || p.has("nav-approvals") {
		t.Fatalf("the password page does not say a password of one's own is needed, or offers more:\n%s", p.Body)
	}
	acc.csrf = hiddenCSRF(t, p)

	t.Run("NothingElse", func(t *testing.T) {
		p := acc.get("/admin/approvals").expect(t, http.StatusSeeOther)
		if got, want := p.location(), "/admin/password?next=%2Fadmin%2Fapprovals"; got != want {
			t.Fatalf("approvals page goes to %q, want %q", got, want)
		}
		acc.post(approve, url.Values{"comment": {"approved by whoever chose the password"}}).expect(t, http.StatusForbidden)
		acc.post(deny, nil).expect(t, http.StatusForbidden)
		if got := a.approval(key).Status; got != store.ApprovalPending {
			t.Fatalf("approval = %s, want pending", got)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		for _, f := range []url.Values{
			{"current": {"not-the-password"}, "password": {own}, "repeat": {own}},
			{"current": {given}, "password": {given}, "repeat": {given}},
			{"current": {given}, "password": {own}, "repeat": {own + "!"}},
			{"current": {given}, "password": {"short"}, "repeat": {"short"}},
		} {
			if p := acc.post("/admin/password", f).expect(t, http.StatusUnprocessableEntity); !p.has("form-error") {
				t.Fatalf("no message:\n%s", p.Body)
			}
		}
		if u := mustUserNamed(t, a.st, name); !u.MustChangePassword {
			t.Fatal("a refused change cleared the requirement")
		}
	})
	t.Run("OwnPassword", func(t *testing.T) {
		old := acc.cookies[admin.SessionCookie]
		p := acc.post("/admin/password", url.Values{"current": {given}, "password": {own}, "repeat": {own}, "next": {"/admin/approvals"}}).
			expect(t, http.StatusSeeOther)
		if p.location() != "/admin/approvals" {
			t.Fatalf("after the change to %q", p.location())
		}
		if _, err := a.st.SessionByID(ctx, old, admin.SessionIdle); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the session of the given password: %v, want ErrNotFound", err)
		}
		p = acc.get("/admin/approvals").expect(t, http.StatusOK)
		acc.csrf = hiddenCSRF(t, p)
		acc.post(approve, url.Values{"comment": {"checked"}, "confirm": {"yes"}}).expect(t, http.StatusSeeOther)
		if got := a.approval(key); got.Status != store.ApprovalApproved || got.DecidedBy != name {
			t.Fatalf("approval = %+v", got)
		}
		// The trail: the admin made the account; the accountant chose
		// the password they decided with.
		created := false
		for _, e := range a.events(store.AuditFilter{Event: "user.created", Actor: "test-admin"}) {
			created = created || strings.Contains(string(e.Detail), `"`+name+`"`)
		}
		changed := a.events(store.AuditFilter{Event: "user.password_changed", Actor: name})
		if !created || len(changed) != 1 || !strings.Contains(string(changed[0].Detail), `"self":true`) ||
			!strings.Contains(string(changed[0].Detail), `"was_required":true`) {
			t.Fatalf("audit: created by the admin %v, own password %+v", created, changed)
		}
		for _, e := range a.events(store.AuditFilter{Actor: name, Limit: 100}) {
			if strings.Contains(string(e.Detail), given) || strings.Contains(string(e.Detail), own) {
				t.Fatalf("a password is in the audit trail: %s", e.Detail)
			}
		}
	})
	// A reset by the admin ends the accountant's sessions, and the
	// accountant chooses again.
	t.Run("Reset", func(t *testing.T) {
		const again = "the-admin-chose-again"
		adm.post("/admin/users/"+name+"/password", url.Values{"password": {again}}).expect(t, http.StatusSeeOther)
		if p := acc.get("/admin/approvals").expect(t, http.StatusSeeOther); !strings.HasPrefix(p.location(), "/admin/login") {
			t.Fatalf("after the reset to %q, want the sign-in page", p.location())
		}
		if p := acc.logIn(name, again).expect(t, http.StatusSeeOther); p.location() != "/admin/password" {
			t.Fatalf("sign-in after the reset goes to %q, want /admin/password", p.location())
		}
	})
}

// Anyone signed in can choose a new password of their own; the nav bar
// links to the page.
func TestChangeOwnPassword(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	if _, err := ownPasswordUser(t.Context(), a.st, "own-olga", store.RoleOperator); err != nil {
		t.Fatal(err)
	}
	c := a.client()
	if p := c.logIn("own-olga", password).expect(t, http.StatusSeeOther); p.location() != "/admin/" {
		t.Fatalf("sign-in goes to %q", p.location())
	}
	p := c.get("/admin/").expect(t, http.StatusOK)
	if got := p.attrs("change-password", "href"); len(got) != 1 || got[0] != "/admin/password" {
		t.Fatalf("link to the password page: %v", got)
	}
	p = c.get("/admin/password").expect(t, http.StatusOK)
	if p.has("password-required") {
		t.Fatal("the page says a change is required")
	}
	c.csrf = hiddenCSRF(t, p)
	const newer = "olga-chose-a-newer-one"
	p = c.post("/admin/password", url.Values{"current": {password}, "password": {newer}, "repeat": {newer}}).expect(t, http.StatusSeeOther)
	if p.location() != "/admin/" {
		t.Fatalf("after the change to %q", p.location())
	}
	if p := c.get("/admin/").expect(t, http.StatusOK); !p.has("flash") {
		t.Fatal("no message after the change")
	}
	changed := a.events(store.AuditFilter{Event: "user.password_changed", Actor: "own-olga"})
	if len(changed) != 2 || !strings.Contains(string(changed[0].Detail), `"was_required":false`) {
		t.Fatalf("audit of the change: %+v", changed)
	}
}

// mustUserNamed is the user called name.
func mustUserNamed(tb testing.TB, st *store.Store, name string) store.User {
	tb.Helper()
	users, err := st.Users(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, u := range users {
		if u.Name == name {
			return u
		}
	}
	tb.Fatalf("no user %q", name)
	return store.User{}
}
