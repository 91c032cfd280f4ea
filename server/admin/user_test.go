package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

// signInAs gives a client a session of u, made in the store directly.
func (a *app) signInAs(u store.User) *client {
	a.tb.Helper()
	id, sess, err := a.st.CreateSession(context.Background(), u.ID, time.Hour, "127.0.0.1")
	if err != nil {
		a.tb.Fatal(err)
	}
	c := a.client()
	c.cookies[admin.SessionCookie] = id
	c.csrf = sess.CSRF
	return c
}

// detailOf decodes an audit event's detail.
func detailOf(tb testing.TB, e store.AuditEvent) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Detail, &m); err != nil {
		tb.Fatalf("detail of %s: %v", e.Event, err)
	}
	return m
}

// roleUsers is a journal of its own with two admins, an operator and an
// accountant, each with a password of their own: the second admin keeps
// the last-admin rule out of the way of an admin's change of their own
// role.
func roleUsers(t *testing.T) (a *app, adam, olga, anna store.User) {
	t.Helper()
	a = newOwnApp(t, nil) // wrong passwords count per name and address: keep them apart
	ctx := context.Background()
	var root store.User
	users := []struct {
		dst        *store.User
		name, role string
	}{
		{&adam, "role-adam", store.RoleAdmin}, {&root, "role-root", store.RoleAdmin},
		{&olga, "role-olga", store.RoleOperator}, {&anna, "role-anna", store.RoleAccountant},
	}
	errs := make(chan error, len(users))
	for _, u := range users { // each costs production-strength hashes: at once
		go func() {
			var err error
			*u.dst, err = ownPasswordUser(ctx, a.st, u.name, u.role)
			errs <- err
		}()
	}
	for range users {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	return a, adam, olga, anna
}

// No one approves money by promoting themselves: an admin cannot change
// their own role; granting the role that decides money asks the granting
// admin's password again and signs the grantee out; the audit trail and
// the approvals page show who granted it, and that the password was
// confirmed.
func TestUserRole(t *testing.T) {
	t.Parallel()
	a, adam, olga, anna := roleUsers(t)
	adm := a.signInAs(adam)
	roleOf := func(name string) string { return mustUserNamed(t, a.st, name).Role }

	t.Run("ErrOwnRole", func(t *testing.T) {
		for _, name := range []string{adam.Name, strings.ToUpper(adam.Name)} {
			p := adm.post("/admin/users/"+name+"/role", url.Values{"role": {store.RoleAccountant}, "own_password": {password}}).
				expect(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") {
				t.Fatalf("no message:\n%s", p.Body)
			}
		}
		if got := roleOf(adam.Name); got != store.RoleAdmin {
			t.Fatalf("role of %s = %s after changing their own, want admin", adam.Name, got)
		}
		p := adm.get("/admin/users").expect(t, http.StatusOK)
		if own := rowOf(p.Body, adam.Name); own == "" || strings.Contains(own, `data-testid="user-set-role"`) {
			t.Fatalf("the admin's own row offers a change of role:\n%s", own)
		}
		if evs := a.events(store.AuditFilter{Event: "user.role_changed"}); len(evs) != 0 {
			t.Fatalf("a refused change is audited as made: %s", evs[0].Detail)
		}
		evs := a.events(store.AuditFilter{Event: "user.role_change_failed", Actor: adam.Name})
		if len(evs) != 2 || detailOf(t, evs[0])["reason"] != "own_role" {
			t.Fatalf("refusals audited: %v", evs)
		}
	})

	t.Run("ErrPassword", func(t *testing.T) {
		for _, f := range []url.Values{
			{"role": {store.RoleAccountant}},
			{"role": {store.RoleAccountant}, "own_password": {""}},
			{"role": {store.RoleAccountant}, "own_password": {"not-the-admins-password"}},
			{"role": {store.RoleAccountant}, "own_password": {givenPassword}},
		} {
			p := adm.post("/admin/users/"+olga.Name+"/role", f).expect(t, http.StatusUnprocessableEntity)
			if !p.has("form-error") {
				t.Fatalf("%v: no message:\n%s", f, p.Body)
			}
		}
		if got := roleOf(olga.Name); got != store.RoleOperator {
			t.Fatalf("role of %s = %s after grants without the password, want operator", olga.Name, got)
		}
		evs := a.events(store.AuditFilter{Event: "user.role_change_failed"})
		var wrong int
		for _, e := range evs {
			if d := detailOf(t, e); d["reason"] == "bad_credentials" && d["name"] == olga.Name {
				wrong++
			}
		}
		if wrong != 2 {
			t.Fatalf("wrong passwords audited %d times, want 2: %v", wrong, evs)
		}
		// Roles that decide no money need no password.
		adm.post("/admin/users/"+anna.Name+"/role", url.Values{"role": {store.RoleAuditor}}).expect(t, http.StatusSeeOther)
		if got := roleOf(anna.Name); got != store.RoleAuditor {
			t.Fatalf("role of %s = %s, want auditor", anna.Name, got)
		}
	})

	t.Run("EndsSessions", func(t *testing.T) {
		before := a.signInAs(olga)
		before.get("/admin/").expect(t, http.StatusOK)
		adm.post("/admin/users/"+olga.Name+"/role", url.Values{"role": {store.RoleAccountant}, "own_password": {password}}).
			expect(t, http.StatusSeeOther)
		if got := roleOf(olga.Name); got != store.RoleAccountant {
			t.Fatalf("role of %s = %s, want accountant", olga.Name, got)
		}
		if p := before.get("/admin/approvals").expect(t, http.StatusSeeOther); !strings.HasPrefix(p.location(), "/admin/login") {
			t.Fatalf("the grantee's session opened before the grant goes to %q, want the sign-in", p.location())
		}
		adm.get("/admin/users").expect(t, http.StatusOK) // the granting admin stays signed in
	})

	t.Run("Audited", func(t *testing.T) {
		evs := a.events(store.AuditFilter{Event: "user.role_changed", Actor: adam.Name})
		if len(evs) != 2 {
			t.Fatalf("role changes audited: %v", evs)
		}
		e := evs[0] // newest: the grant
		d := detailOf(t, e)
		want := map[string]any{
			"name": olga.Name, "from": store.RoleOperator, "role": store.RoleAccountant,
			"password_confirmed": true, "sessions_ended": float64(1), "addr": "127.0.0.1",
		}
		for k, v := range want {
			if got := d[k]; got != v {
				t.Errorf("%s: %v, want %v (detail %s)", k, got, v, e.Detail)
			}
		}
		if e.Actor.Kind != store.ActorUser || e.Actor.Name != adam.Name {
			t.Errorf("granted by %+v, want %s", e.Actor, adam.Name)
		}
		if strings.Contains(string(e.Detail), password) {
			t.Fatal("the password is in the audit trail")
		}
	})

	t.Run("ApprovalsShowGrant", func(t *testing.T) {
		p := a.signInAs(adam).get("/admin/approvals").expect(t, http.StatusOK)
		if got := p.attrs("approver", "data-name"); len(got) != 1 || got[0] != olga.Name {
			t.Fatalf("approvers shown: %v, want [%s]", got, olga.Name)
		}
		line := p.text("approver-grant")
		if !strings.Contains(line, adam.Name) || !p.has("approver-confirmed") {
			t.Fatalf("the approver's line %q does not name who granted the role with the password confirmed:\n%s", line, p.Body)
		}
	})

	// A grant made before these rules, as the red team made it: an admin
	// who gave themselves the role. The approvals page says so.
	t.Run("ApprovalsShowSelfGrant", func(t *testing.T) {
		ctx := context.Background()
		if err := a.st.SetRole(ctx, "role-root", store.RoleAccountant); err != nil {
			t.Fatal(err)
		}
		root := store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: "role-root"})
		if err := a.st.Audit(root, "user.role_changed", "", map[string]any{"name": "role-root", "from": store.RoleAdmin, "role": store.RoleAccountant}); err != nil {
			t.Fatal(err)
		}
		p := a.signInAs(adam).get("/admin/approvals").expect(t, http.StatusOK)
		if got := p.attrs("approver", "data-name"); len(got) != 2 || !p.has("approver-self") {
			t.Fatalf("approvers %v; the self-grant is not marked:\n%s", got, p.Body)
		}
	})
}

// Adding a user with the role that decides money is a grant too: the
// form asks the admin's password again.
func TestUserCreateAccountant(t *testing.T) {
	t.Parallel()
	a, adam, _, _ := roleUsers(t)
	adm := a.signInAs(adam)
	name := "role-new-accountant"
	for _, own := range []string{"", "not-the-admins-password"} {
		p := adm.post("/admin/users", url.Values{"name": {name}, "role": {store.RoleAccountant}, "password": {givenPassword}, "own_password": {own}}).
			expect(t, http.StatusUnprocessableEntity)
		if !p.has("form-error") {
			t.Fatalf("no message:\n%s", p.Body)
		}
	}
	users, err := a.st.Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Name == name {
			t.Fatalf("an accountant was added without the admin's password: %+v", u)
		}
	}
	adm.post("/admin/users", url.Values{"name": {name}, "role": {store.RoleAccountant}, "password": {givenPassword}, "own_password": {password}}).
		expect(t, http.StatusSeeOther)
	evs := a.events(store.AuditFilter{Event: "user.created", Actor: adam.Name})
	if len(evs) != 1 {
		t.Fatalf("user.created by %s: %v", adam.Name, evs)
	}
	if d := detailOf(t, evs[0]); d["name"] != name || d["role"] != store.RoleAccountant || d["password_confirmed"] != true {
		t.Fatalf("user.created detail %s", evs[0].Detail)
	}
	// Other roles are added as before.
	adm.post("/admin/users", url.Values{"name": {"role-new-operator"}, "role": {store.RoleOperator}, "password": {givenPassword}}).
		expect(t, http.StatusSeeOther)
}

// rowOf is the users page's row of name.
func rowOf(body, name string) string {
	i := strings.Index(body, `data-testid="user-row" data-name="`+name+`"`)
	if i < 0 {
		return ""
	}
	row := body[i:]
	if j := strings.Index(row, "</tr>"); j >= 0 {
		row = row[:j]
	}
	return row
}
