package admin_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
)

func TestNoSessionRedirectsToLogin(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	c := a.client()
	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/admin/", "/admin/login"},
		{"GET", "/admin/approvals?x=1", "/admin/login?next=" + url.QueryEscape("/admin/approvals?x=1")},
		{"GET", "/admin/operations/" + keyPath("test:invoice.create:o-1:v1"), "/admin/login?next=" + url.QueryEscape("/admin/operations/"+keyPath("test:invoice.create:o-1:v1"))},
		{"GET", "/admin/no-such-page", "/admin/login?next=%2Fadmin%2Fno-such-page"},
		{"POST", "/admin/approvals/1/approve", "/admin/login"},
		{"POST", "/admin/logout", "/admin/login"},
	} {
		p := c.do(tc.method, tc.path, url.Values{})
		if p.Code != http.StatusSeeOther || p.location() != tc.want {
			t.Errorf("%s %s: HTTP %d to %q, want 303 to %q", tc.method, tc.path, p.Code, p.location(), tc.want)
		}
	}
	// A bad session id is no session.
	c.cookies[admin.SessionCookie] = "forged"
	if p := c.get("/admin/"); p.Code != http.StatusSeeOther {
		t.Fatalf("forged session: HTTP %d", p.Code)
	}
	// The sign-in form is served, with a form token.
	p := c.get("/admin/login?next=%2Fadmin%2Faudit").expect(t, http.StatusOK)
	if !p.has("login-form") || p.attrs("login-form", "action")[0] != "/admin/login" {
		t.Fatalf("no sign-in form:\n%s", p.Body)
	}
	if !strings.Contains(p.Body, `name="next" value="/admin/audit"`) {
		t.Fatalf("next lost:\n%s", p.Body)
	}
}

func TestWrongRoleIsForbidden(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	key := a.uniq("test:payment.charge:role-check:v1")
	ap := a.charge(key, 1000, "")
	unknown := a.unknown(a.uniq("test:invoice.create:role-check:v1"))

	for _, tc := range []struct {
		role, method, path string
		form               url.Values
	}{
		{store.RoleAccountant, "GET", "/admin/users", nil},
		{store.RoleOperator, "GET", "/admin/tokens", nil},
		{store.RoleOperator, "POST", "/admin/approvals/" + itoa(ap.ID) + "/approve", url.Values{}},
		{store.RoleAuditor, "POST", "/admin/approvals/" + itoa(ap.ID) + "/deny", url.Values{}},
		// Money is an accountant's: the admin who makes pay tokens cannot
		// also approve what they request.
		{store.RoleAdmin, "POST", "/admin/approvals/" + itoa(ap.ID) + "/approve", url.Values{}},
		{store.RoleAccountant, "POST", "/admin/review/" + keyPath(unknown.Key) + "/resolve", url.Values{"outcome": {"found"}, "object_id": {"X-1"}, "reason": {"seen it"}}},
		{store.RoleAuditor, "POST", "/admin/review/" + keyPath(unknown.Key) + "/resolve", url.Values{"outcome": {"found"}, "object_id": {"X-1"}, "reason": {"seen it"}}},
		{store.RoleAuditor, "POST", "/admin/tokens", url.Values{"agent": {"evil"}, "scope": {"pay"}}},
		{store.RoleAccountant, "POST", "/admin/users", url.Values{"name": {"evil"}, "role": {"admin"}, "password": {password}}},
	} {
		c := a.signIn(tc.role)
		var p page
		if tc.method == "GET" {
			p = c.get(tc.path)
		} else {
			p = c.post(tc.path, tc.form) // with the right CSRF token
		}
		if p.Code != http.StatusForbidden || !p.has("error-page") || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s %s as %s: HTTP %d %s, want the 403 page", tc.method, tc.path, tc.role, p.Code, p.Header.Get("Content-Type"))
		}
	}
	// Nothing changed.
	if got := a.approval(key).Status; got != store.ApprovalPending {
		t.Fatalf("approval = %s, want pending", got)
	}
	if op, _ := a.st.Get(context.Background(), unknown.Key); op.Status != store.StatusUnknown {
		t.Fatalf("operation = %s, want unknown", op.Status)
	}
	if n := len(a.events(store.AuditFilter{Event: "token.created", Actor: "test-auditor"})); n != 0 {
		t.Fatalf("auditor made %d tokens", n)
	}
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	key := a.uniq("test:payment.charge:csrf-check:v1")
	ap := a.charge(key, 125000, "")
	c := a.signIn(store.RoleAccountant)
	path := "/admin/approvals/" + itoa(ap.ID) + "/approve"

	t.Run("Missing", func(t *testing.T) {
		c.do("POST", path, url.Values{"comment": {"ok"}}).expect(t, http.StatusForbidden)
	})
	t.Run("Wrong", func(t *testing.T) {
		c.post(path, url.Values{"csrf": {c.csrf[:len(c.csrf)-1] + "x"}}).expect(t, http.StatusForbidden)
	})
	t.Run("OtherSession", func(t *testing.T) {
		other := a.signIn(store.RoleAccountant)
		c.post(path, url.Values{"csrf": {other.csrf}}).expect(t, http.StatusForbidden)
	})
	// The right token in the address, not the form: refused, so a token
	// that leaked into a log or a Referer is no use.
	t.Run("InURL", func(t *testing.T) {
		c.do("POST", path+"?csrf="+url.QueryEscape(c.csrf), url.Values{"comment": {"ok"}}).expect(t, http.StatusForbidden)
	})
	t.Run("CrossSite", func(t *testing.T) {
		c.header["Sec-Fetch-Site"] = "cross-site"
		defer delete(c.header, "Sec-Fetch-Site")
		c.post(path, nil).expect(t, http.StatusForbidden)
	})
	if got := a.approval(key).Status; got != store.ApprovalPending {
		t.Fatalf("approval after forged forms = %s, want pending", got)
	}
	if a.wakes.Load() != 0 {
		t.Fatal("the executor was woken by a forged form")
	}

	t.Run("OK", func(t *testing.T) {
		// The first approve only asks to confirm, showing what is approved.
		p := c.post(path, url.Values{"comment": {"checked"}}).expect(t, http.StatusOK)
		if !p.has("confirm-approve") || p.text("confirm-amount") != "1\u00a0250,00\u00a0₽" {
			t.Fatalf("no confirmation with the amount:\n%s", p.Body)
		}
		if got := a.approval(key).Status; got != store.ApprovalPending || a.wakes.Load() != 0 {
			t.Fatalf("approval = %s, wakes %d before the confirmation", got, a.wakes.Load())
		}
		// The approver is the session's user, whatever the form says.
		p = c.post(path, url.Values{"comment": {"checked"}, "confirm": {"yes"}, "user": {"mallory"}, "decided_by": {"mallory"}}).expect(t, http.StatusSeeOther)
		if p.location() != "/admin/approvals" {
			t.Fatalf("redirect to %q", p.location())
		}
		got := a.approval(key)
		if got.Status != store.ApprovalApproved || got.DecidedBy != "test-accountant" || got.Comment != "checked" {
			t.Fatalf("approval = %+v", got)
		}
		if a.wakes.Load() != 1 {
			t.Fatalf("executor woken %d times, want 1", a.wakes.Load())
		}
		evs := a.events(store.AuditFilter{OperationKey: key, Event: "approval.approved"})
		if len(evs) != 1 || evs[0].Actor != (store.Actor{Kind: store.ActorUser, Name: "test-accountant"}) {
			t.Fatalf("audit of the approval: %+v", evs)
		}
		// The flash says so once.
		p = c.get("/admin/approvals").expect(t, http.StatusOK)
		if f := p.text("flash"); !strings.Contains(f, "1\u00a0250,00\u00a0₽") || !strings.Contains(f, "customer-1042") {
			t.Fatalf("no flash: %q", p.text("flash"))
		}
		if p = c.get("/admin/approvals"); p.has("flash") {
			t.Fatal("the flash shows twice")
		}
	})
	t.Run("SecondDecisionRefused", func(t *testing.T) {
		p := c.post("/admin/approvals/"+itoa(ap.ID)+"/deny", nil).expect(t, http.StatusUnprocessableEntity)
		// It says who decided first, and when.
		if msg := p.text("form-error"); !strings.Contains(msg, "test-accountant") || !strings.Contains(msg, "одобрено") {
			t.Fatalf("error message %q, want who decided:\n%s", msg, p.Body)
		}
		if got := a.approval(key); got.Status != store.ApprovalApproved {
			t.Fatalf("approval = %s after a second decision", got.Status)
		}
	})
}

// Signing in sets the session cookie with the right flags; signing out
// ends the session for good; both are audited, the password never.
func TestLoginLogout(t *testing.T) {
	t.Parallel()
	a := newApp(t, func(d *admin.Deps) { d.Secure = true })
	ctx := context.Background()
	c := a.client()
	var before int64 // the events of this test come after it
	if evs := a.events(store.AuditFilter{Limit: 1}); len(evs) > 0 {
		before = evs[0].ID
	}

	// No form token (a form posted from elsewhere): refused, no check.
	c.do("POST", "/admin/login", url.Values{"name": {"test-operator"}, "password": {password}}).expect(t, http.StatusForbidden)

	form := c.get("/admin/login?next=%2Fadmin%2Freview").expect(t, http.StatusOK)
	if !form.has("login-form") {
		t.Fatal("no sign-in form")
	}
	p := c.do("POST", "/admin/login", url.Values{
		"name": {"test-operator"}, "password": {password}, "next": {"/admin/review"}, "csrf": {loginToken(t, form)},
	}).expect(t, http.StatusSeeOther)
	if p.location() != "/admin/review" {
		t.Fatalf("after sign-in to %q", p.location())
	}
	var sc *http.Cookie
	for _, ck := range p.resp.Cookies() {
		if ck.Name == admin.SessionCookie {
			sc = ck
		}
	}
	if sc == nil {
		t.Fatal("no session cookie")
	}
	if !sc.HttpOnly || !sc.Secure || sc.SameSite != http.SameSiteStrictMode || sc.Path != "/admin" || sc.MaxAge != int((12*time.Hour).Seconds()) {
		t.Fatalf("session cookie %+v: want HttpOnly, Secure, SameSite=Strict, Path=/admin, 12h", sc)
	}
	id := sc.Value
	p = c.get("/admin/review").expect(t, http.StatusOK)
	if p.text("current-user") != "test-operator" {
		t.Fatalf("signed in as %q", p.text("current-user"))
	}
	logout := hiddenCSRF(t, p)

	c.do("POST", "/admin/logout", url.Values{"csrf": {logout}}).expect(t, http.StatusSeeOther)
	if _, err := a.st.SessionByID(ctx, id, admin.SessionIdle); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("session after sign-out: %v", err)
	}
	// The old cookie, replayed, is no session.
	c.cookies[admin.SessionCookie] = id
	if p := c.get("/admin/review"); p.Code != http.StatusSeeOther {
		t.Fatalf("old session after sign-out: HTTP %d", p.Code)
	}

	var names []string
	for _, e := range a.events(store.AuditFilter{Actor: "test-operator", Event: "user."}) {
		if e.ID <= before {
			continue
		}
		names = append(names, e.Event)
		if strings.Contains(string(e.Detail), password) {
			t.Fatalf("the password is in the audit trail: %s", e.Detail)
		}
	}
	if strings.Join(names, ",") != "user.logout,user.login" {
		t.Fatalf("audit events %v, want user.logout,user.login", names)
	}
}

// /admin/logout opened as an address shows the sign-out form; only its
// POST with the session's token signs out.
func TestLogoutPage(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	ctx := context.Background()
	c := a.signIn(store.RoleAuditor)
	id := c.cookies[admin.SessionCookie]

	p := c.get("/admin/logout").expect(t, http.StatusOK)
	if !p.has("logout-form") || p.attrs("logout-form", "action")[0] != "/admin/logout" || p.attrs("logout-form", "method")[0] != "post" {
		t.Fatalf("no sign-out form:\n%s", p.Body)
	}
	if got := hiddenCSRF(t, p); got != c.csrf {
		t.Fatalf("the form's token %q is not the session's", got)
	}
	if _, err := a.st.SessionByID(ctx, id, admin.SessionIdle); err != nil {
		t.Fatalf("the page ended the session: %v", err)
	}
	c.do("POST", "/admin/logout", url.Values{}).expect(t, http.StatusForbidden) // no token
	if _, err := a.st.SessionByID(ctx, id, admin.SessionIdle); err != nil {
		t.Fatalf("a post without the token ended the session: %v", err)
	}
	p = c.post("/admin/logout", nil).expect(t, http.StatusSeeOther)
	if p.location() != "/admin/login" {
		t.Fatalf("after sign-out to %q", p.location())
	}
	if _, err := a.st.SessionByID(ctx, id, admin.SessionIdle); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("session after sign-out: %v", err)
	}
	// Without a session: to the sign-in page, which does not come back here.
	p = a.client().get("/admin/logout").expect(t, http.StatusSeeOther)
	if p.location() != "/admin/login" {
		t.Fatalf("no session: to %q, want /admin/login", p.location())
	}
}

// After five wrong passwords for a name, the sixth try is refused even
// with the right password, without a check.
func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil) // failures count per address too: keep them apart
	if _, err := ownPasswordUser(context.Background(), a.st, "throttled-anna", store.RoleAccountant); err != nil {
		t.Fatal(err)
	}
	c := a.client()
	try := func(pw string) page {
		form := c.get("/admin/login").expect(t, http.StatusOK)
		return c.do("POST", "/admin/login", url.Values{"name": {"throttled-anna"}, "password": {pw}, "csrf": {loginToken(t, form)}})
	}
	for i := range store.NameFailureLimit {
		p := try("wrong-password-" + itoa(int64(i)))
		if p.Code != http.StatusUnprocessableEntity || !p.has("form-error") {
			t.Fatalf("wrong password %d: HTTP %d", i+1, p.Code)
		}
	}
	p := try(password)
	if p.Code != http.StatusTooManyRequests || !p.has("form-error") {
		t.Fatalf("sixth try: HTTP %d, want 429 with a message", p.Code)
	}
	if _, ok := c.cookies[admin.SessionCookie]; ok {
		t.Fatal("a throttled sign-in got a session")
	}
	if !strings.Contains(p.text("form-error"), "Слишком много") {
		t.Fatalf("message %q", p.text("form-error"))
	}
	fails := a.events(store.AuditFilter{Actor: "throttled-anna", Event: "user.login_failed"})
	if len(fails) != store.NameFailureLimit+1 {
		t.Fatalf("%d failed sign-ins audited, want %d", len(fails), store.NameFailureLimit+1)
	}
	if !strings.Contains(string(fails[0].Detail), "throttled") {
		t.Fatalf("last failure detail %s", fails[0].Detail)
	}
}

// A name that is no user's is never written to the audit trail: it may be
// a password typed into the name field. A user's own name still is.
func TestLoginFailedAuditsOnlyUserNames(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	if _, err := ownPasswordUser(context.Background(), a.st, "audit-anna", store.RoleAccountant); err != nil {
		t.Fatal(err)
	}
	c := a.client()
	signIn := func(name, pw string) {
		t.Helper()
		form := c.get("/admin/login").expect(t, http.StatusOK)
		c.do("POST", "/admin/login", url.Values{"name": {name}, "password": {pw}, "csrf": {loginToken(t, form)}}).
			expect(t, http.StatusUnprocessableEntity)
	}

	t.Run("NoSuchUser", func(t *testing.T) {
		const typed = "Tr0ub4dor.3-horse" // shaped like a user name
		signIn(typed, "anything-at-all")
		fails := a.events(store.AuditFilter{Event: "user.login_failed"})
		if len(fails) != 1 || fails[0].Actor != (store.Actor{Kind: store.ActorUser, Name: "?"}) {
			t.Fatalf("failed sign-in audited as %+v, want one event by user ?", fails)
		}
		for _, e := range a.events(store.AuditFilter{Limit: 1000}) {
			if strings.Contains(e.Actor.Name, typed) || strings.Contains(string(e.Detail), typed) {
				t.Fatalf("the typed name is in the audit trail: %+v", e)
			}
		}
	})
	t.Run("User", func(t *testing.T) {
		signIn("Audit-Anna", "wrong-password-1")
		fails := a.events(store.AuditFilter{Event: "user.login_failed", Actor: "audit-anna"})
		if len(fails) != 1 {
			t.Fatalf("%d failed sign-ins of audit-anna audited, want 1", len(fails))
		}
	})
}

// loginToken is the sign-in form's token.
func loginToken(tb testing.TB, p page) string {
	tb.Helper()
	return hiddenCSRF(tb, p)
}

// hiddenCSRF is the value of the first hidden csrf field of a page.
func hiddenCSRF(tb testing.TB, p page) string {
	tb.Helper()
	const mark = `name="csrf" value="`
	i := strings.Index(p.Body, mark)
	if i < 0 {
		tb.Fatalf("no csrf field:\n%s", p.Body)
	}
	rest := p.Body[i+len(mark):]
	return rest[:strings.IndexByte(rest, '"')]
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Behind the firm's reverse proxy every request comes from the proxy:
// only a trusted proxy's X-Forwarded-For names the client, so one
// address's failures do not lock everyone out; from anyone else the header
// is ignored, so a client cannot dodge its own limit.
func TestLoginThrottleBehindProxy(t *testing.T) {
	t.Parallel()
	fail := func(c *client, i int) page {
		form := c.get("/admin/login").expect(t, http.StatusOK)
		return c.do("POST", "/admin/login", url.Values{"name": {"nobody-" + itoa(int64(i))}, "password": {"wrong-password"}, "csrf": {loginToken(t, form)}})
	}
	t.Run("TrustedProxy", func(t *testing.T) {
		t.Parallel()
		_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
		a := newOwnApp(t, func(d *admin.Deps) {
			d.ClientIP = echo.ExtractIPFromXFFHeader(echo.TrustLoopback(false), echo.TrustIPRange(loopback))
		})
		one, two := a.client(), a.client()
		one.header["X-Forwarded-For"] = "203.0.113.5"
		two.header["X-Forwarded-For"] = "203.0.113.6"
		for i := range store.AddrFailureLimit {
			if p := fail(one, i); p.Code != http.StatusUnprocessableEntity {
				t.Fatalf("failure %d: HTTP %d", i+1, p.Code)
			}
		}
		if p := fail(one, 99); p.Code != http.StatusTooManyRequests {
			t.Fatalf("the failing address after its limit: HTTP %d, want 429", p.Code)
		}
		if p := fail(two, 99); p.Code != http.StatusUnprocessableEntity {
			t.Fatalf("another client behind the same proxy: HTTP %d, want 422 (not throttled)", p.Code)
		}
		if ev := a.events(store.AuditFilter{Event: "user.login_failed"}); len(ev) == 0 || !strings.Contains(string(ev[0].Detail), "203.0.113.6") {
			t.Fatalf("the audit trail does not name the client: %v", ev)
		}
	})
	t.Run("UntrustedHeader", func(t *testing.T) {
		t.Parallel()
		a := newOwnApp(t, nil)
		c := a.client()
		for i := range store.AddrFailureLimit {
			c.header["X-Forwarded-For"] = "198.51.100." + itoa(int64(i))
			fail(c, i)
		}
		c.header["X-Forwarded-For"] = "198.51.100.200"
		if p := fail(c, 99); p.Code != http.StatusTooManyRequests {
			t.Fatalf("a forged X-Forwarded-For dodged the address limit: HTTP %d", p.Code)
		}
	})
	t.Run("SecureCookieViaProxy", func(t *testing.T) {
		t.Parallel()
		a := newOwnApp(t, nil)
		req, _ := http.NewRequest("GET", a.url+"/admin/login", nil)
		req.Header.Set("X-Forwarded-Proto", "https")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(resp.Cookies()) == 0 {
			t.Fatal("no cookie")
		}
		for _, c := range resp.Cookies() {
			if !c.Secure {
				t.Fatalf("cookie %s behind an HTTPS proxy is not Secure", c.Name)
			}
		}
	})
}

// A page's own refresh (live.js) is no sign of a person: an unattended
// browser still reaches the idle limit, while a person's clicks keep the
// session alive.
func TestLiveRefreshIsNotActivity(t *testing.T) {
	t.Parallel()
	a := newOwnApp(t, nil)
	var offset atomic.Int64
	base := time.Now()
	a.st.Now = func() time.Time { return base.Add(time.Duration(offset.Load())) }
	u, err := ownPasswordUser(context.Background(), a.st, "watcher", store.RoleAccountant)
	if err != nil {
		t.Fatal(err)
	}
	a.users[store.RoleAccountant] = u
	person, screen := a.signIn(store.RoleAccountant), a.signIn(store.RoleAccountant)
	screen.header[admin.LiveHeader] = "1"
	for _, minutes := range []int{10, 20, 29, 38, 47} {
		offset.Store(int64(time.Duration(minutes) * time.Minute))
		person.get("/admin/approvals").expect(t, http.StatusOK)
		if minutes < 30 {
			screen.get("/admin/approvals").expect(t, http.StatusOK)
		}
	}
	// 47 minutes after sign-in, 47 without a person at the screen.
	if p := screen.get("/admin/approvals"); p.Code != http.StatusSeeOther || !strings.HasPrefix(p.location(), "/admin/login") {
		t.Fatalf("an unattended, refreshing page after the idle limit: HTTP %d to %q", p.Code, p.location())
	}
	person.get("/admin/approvals").expect(t, http.StatusOK)
}
