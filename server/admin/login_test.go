package admin_test

import (
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/views"
)

// loginForm opens the sign-in form and returns its token, which the form
// and its cookie both carry (double submit).
func (a *app) loginForm() string {
	a.tb.Helper()
	return loginToken(a.tb, a.client().get("/admin/login").expect(a.tb, http.StatusOK))
}

// postLogin posts a sign-in with the form token from a browser of its
// own, naming the client in X-Forwarded-For when xff is set; it answers
// the status and whether a session began. A sign-in refused because its
// address has others being checked is sent again, as a person (or a
// patient attacker) would. It is safe to call from many goroutines.
func (a *app) postLogin(token, name, pw, xff string) (int, bool) {
	for {
		status, session, body := a.postLoginOnce(token, name, pw, xff)
		if status != http.StatusTooManyRequests || !strings.Contains(body, busyText) {
			return status, session
		}
		time.Sleep(10 * time.Millisecond) // let the address's checks finish
	}
}

// busyText is the message of a sign-in refused as one too many at once.
var busyText = html.EscapeString(views.LabelsFor("ru").ErrLoginBusy)

func (a *app) postLoginOnce(token, name, pw, xff string) (int, bool, string) {
	form := url.Values{"name": {name}, "password": {pw}, "csrf": {token}}
	req, err := http.NewRequest("POST", a.url+"/admin/login", strings.NewReader(form.Encode()))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "oncegate_login", Value: token})
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		a.tb.Errorf("sign-in: %v", err)
		return 0, false, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, ck := range resp.Cookies() {
		if ck.Name == admin.SessionCookie && ck.Value != "" {
			return resp.StatusCode, true, string(body)
		}
	}
	return resp.StatusCode, false, string(body)
}

// burst counts the answers to a burst of sign-ins by status.
type burst struct {
	mu       sync.Mutex
	statuses map[int]int
	sessions int
}

func (b *burst) add(status int, session bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.statuses == nil {
		b.statuses = map[int]int{}
	}
	b.statuses[status]++
	if session {
		b.sessions++
	}
}

// guessBurst sends n wrong passwords for name at once, from(i) naming the
// i-th one's client, and the right one as the 90th: once the first 89 are
// answered (so at least the limit of them were counted), while the last
// ones may still be on their way. It returns the burst's answers and the
// right password's.
func guessBurst(a *app, n int, name string, from func(i int) string) (b *burst, status int, session bool) {
	const right = 89
	token := a.loginForm()
	b = &burst{}
	var first, all sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		if i == right {
			continue
		}
		all.Add(1)
		if i < right {
			first.Add(1)
		}
		go func() {
			defer all.Done()
			if i < right {
				defer first.Done()
			}
			<-start
			b.add(a.postLogin(token, name, fmt.Sprintf("wrong-password-%03d", i), from(i)))
		}()
	}
	close(start)
	first.Wait()
	status, session = a.postLogin(token, name, password, from(right))
	all.Wait()
	return b, status, session
}

// However many sign-ins arrive at once, at most the throttle's limit of
// them get their password checked: each is counted before its check, and
// the right password that comes while the name is throttled signs no one
// in.
func TestLoginBurst(t *testing.T) {
	t.Parallel()
	trustProxy := func(d *admin.Deps) {
		_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
		d.ClientIP = echo.ExtractIPFromXFFHeader(echo.TrustLoopback(false), echo.TrustIPRange(loopback))
	}
	check := func(t *testing.T, a *app, b *burst, status int, session bool, n, limit int) {
		t.Helper()
		if status != http.StatusTooManyRequests || session {
			t.Errorf("the right password after 89 wrong ones: HTTP %d, session %v; want 429 and none", status, session)
		}
		checked := b.statuses[http.StatusUnprocessableEntity]
		if checked > limit || checked+b.statuses[http.StatusTooManyRequests] != n-1 || b.sessions != 0 {
			t.Fatalf("answers %v, %d sessions; want at most %d checked (422), the rest 429", b.statuses, b.sessions, limit)
		}
		// Every checked password is in the audit trail as such.
		wrong := 0
		for _, e := range a.events(store.AuditFilter{Event: "user.login_failed", Limit: 100000}) {
			if strings.Contains(string(e.Detail), `"reason":"bad_credentials"`) {
				wrong++
			}
		}
		if wrong != checked {
			t.Fatalf("%d wrong passwords audited, %d answered so", wrong, checked)
		}
	}

	t.Run("OneAddress", func(t *testing.T) {
		t.Parallel()
		a := newOwnApp(t, nil)
		if _, err := ownPasswordUser(t.Context(), a.st, "burst-anna", store.RoleAccountant); err != nil {
			t.Fatal(err)
		}
		b, status, session := guessBurst(a, 100, "burst-anna", func(int) string { return "" })
		check(t, a, b, status, session, 100, store.NameFailureLimit)
	})
	t.Run("ManyAddresses", func(t *testing.T) {
		t.Parallel()
		a := newOwnApp(t, trustProxy)
		if _, err := ownPasswordUser(t.Context(), a.st, "burst-boris", store.RoleAccountant); err != nil {
			t.Fatal(err)
		}
		b, status, session := guessBurst(a, 100, "burst-boris", func(i int) string { return fmt.Sprintf("198.51.100.%d", i) })
		check(t, a, b, status, session, 100, store.NameFailureLimit)
	})
	// Names that are no user's are counted and throttled alike: 200 at
	// once from one address get at most the address's limit checked.
	t.Run("UnknownNames", func(t *testing.T) {
		t.Parallel()
		a := newOwnApp(t, nil)
		token := a.loginForm()
		const n = 200
		b := &burst{}
		var all sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			all.Add(1)
			go func() {
				defer all.Done()
				<-start
				b.add(a.postLogin(token, fmt.Sprintf("nobody-%03d", i), "wrong-password", ""))
			}()
		}
		close(start)
		all.Wait()
		checked := b.statuses[http.StatusUnprocessableEntity]
		if checked > store.AddrFailureLimit || checked+b.statuses[http.StatusTooManyRequests] != n {
			t.Fatalf("answers %v; want at most %d checked (422), the rest 429", b.statuses, store.AddrFailureLimit)
		}
	})
}

// The sign-in form's token counts only in the form's body, not in the
// address.
func TestLoginTokenOnlyInBody(t *testing.T) {
	t.Parallel()
	a := newApp(t, nil)
	c := a.client()
	token := loginToken(t, c.get("/admin/login").expect(t, http.StatusOK))
	p := c.do("POST", "/admin/login?csrf="+url.QueryEscape(token), url.Values{"name": {"test-auditor"}, "password": {password}}).
		expect(t, http.StatusForbidden)
	if _, ok := c.cookies[admin.SessionCookie]; ok {
		t.Fatal("a sign-in with the token in the address got a session")
	}
	// The refusal's form has a new token; in the body it works.
	c.do("POST", "/admin/login", url.Values{"name": {"test-auditor"}, "password": {password}, "csrf": {loginToken(t, p)}}).
		expect(t, http.StatusSeeOther)
}
