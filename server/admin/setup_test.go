package admin_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/server/admin"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// password is every test user's password.
const password = "correct-horse-battery"

// shared is one journal with a user of every role, made once: each user
// costs a production-strength password hash. Tests on it use their own
// operation keys and sessions, so they can run in parallel.
var shared struct {
	once  sync.Once
	st    *store.Store
	close func()
	users map[string]store.User // by role
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.close != nil {
		shared.close()
	}
	os.Exit(code)
}

// sharedStore returns the shared journal and its users by role.
func sharedStore(tb testing.TB) (*store.Store, map[string]store.User) {
	tb.Helper()
	shared.once.Do(func() {
		ctx := context.Background()
		shared.st, shared.close = storetest.OpenShared(tb)
		shared.users = map[string]store.User{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, role := range store.Roles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, err := ownPasswordUser(ctx, shared.st, "test-"+role, role)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					shared.err = err
				}
				shared.users[role] = u
			}()
		}
		wg.Wait()
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	if shared.st == nil {
		tb.Fatal("the shared journal could not be opened (see the first test that asked)")
	}
	return shared.st, shared.users
}

// givenPassword is what an admin chose for a user who has not yet chosen
// their own.
const givenPassword = "an-admin-chose-this"

// ownPasswordUser adds a user as an admin does, with a password the admin
// chose, and then has the user choose their own (password), as everyone
// does at first sign-in before the UI lets them act: the state of every
// working account. Tests of the first sign-in use CreateUser alone.
func ownPasswordUser(ctx context.Context, st *store.Store, name, role string) (store.User, error) {
	u, err := st.CreateUser(ctx, name, role, givenPassword)
	if err != nil {
		return store.User{}, err
	}
	me := store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: name})
	if err := st.ChangeOwnPassword(me, name, password, "127.0.0.1"); err != nil {
		return store.User{}, err
	}
	return st.UserByID(ctx, u.ID)
}

// app is the admin UI on a real Echo over a real journal, on loopback.
type app struct {
	tb    testing.TB
	st    *store.Store
	users map[string]store.User
	url   string
	wakes atomic.Int32
	n     int64 // this app's number, to make names and keys unique
}

// apps numbers the apps, so tests run again (-count) on the shared
// journal use new keys and names.
var apps atomic.Int64

// newApp serves the admin UI over the shared journal; edit adjusts Deps.
func newApp(tb testing.TB, edit func(*admin.Deps)) *app {
	tb.Helper()
	st, users := sharedStore(tb)
	return serveApp(tb, st, users, edit)
}

// newOwnApp serves the admin UI over a journal of its own, with no users.
func newOwnApp(tb testing.TB, edit func(*admin.Deps)) *app {
	tb.Helper()
	return serveApp(tb, storetest.Open(tb), map[string]store.User{}, edit)
}

func serveApp(tb testing.TB, st *store.Store, users map[string]store.User, edit func(*admin.Deps)) *app {
	tb.Helper()
	a := &app{tb: tb, st: st, users: users, n: apps.Add(1)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := admin.Deps{Store: st, Log: log, Wake: func() { a.wakes.Add(1) }, Contour: "test", Location: time.UTC}
	if edit != nil {
		edit(&d)
	}
	e := echo.New()
	e.HTTPErrorHandler = func(err error, c echo.Context) { admin.HandleError(err, c, log) }
	admin.New(d).Register(e)
	srv := httptest.NewServer(e)
	tb.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

// client is a browser without JavaScript: it keeps cookies by name
// (Secure ones too, over plain loopback HTTP) and does not follow
// redirects, so tests see them.
type client struct {
	a       *app
	cookies map[string]string
	csrf    string // the session's form token, when signed in
	header  map[string]string
}

func (a *app) client() *client {
	return &client{a: a, cookies: map[string]string{}, header: map[string]string{}}
}

// signIn gives the client a session of the user with role, made in the
// store directly (no password hash).
func (a *app) signIn(role string) *client {
	a.tb.Helper()
	return a.signInAs(a.users[role])
}

// page is an answer as the test reads it.
type page struct {
	Code   int
	Header http.Header
	Body   string
	resp   *http.Response
}

func (c *client) do(method, path string, form url.Values) page {
	c.a.tb.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.a.url+path, body)
	if err != nil {
		c.a.tb.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	for k, v := range c.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		c.a.tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, ck := range resp.Cookies() {
		if ck.MaxAge < 0 || ck.Value == "" {
			delete(c.cookies, ck.Name)
		} else {
			c.cookies[ck.Name] = ck.Value
		}
	}
	return page{Code: resp.StatusCode, Header: resp.Header, Body: string(raw), resp: resp}
}

func (c *client) get(path string) page { return c.do("GET", path, nil) }

// post sends a form with the session's CSRF token added.
func (c *client) post(path string, form url.Values) page {
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", c.csrf)
	}
	return c.do("POST", path, form)
}

func (p page) expect(tb testing.TB, code int) page {
	tb.Helper()
	if p.Code != code {
		tb.Fatalf("HTTP %d, want %d; body:\n%s", p.Code, code, p.Body)
	}
	return p
}

// location is the redirect target.
func (p page) location() string { return p.Header.Get("Location") }

// has reports whether the page holds an element with data-testid id.
func (p page) has(id string) bool { return strings.Contains(p.Body, `data-testid="`+id+`"`) }

// attrs returns the values of attribute attr on elements with data-testid id.
func (p page) attrs(id, attr string) []string {
	re := regexp.MustCompile(`<[^>]*data-testid="` + regexp.QuoteMeta(id) + `"[^>]*>`)
	var out []string
	for _, tag := range re.FindAllString(p.Body, -1) {
		m := regexp.MustCompile(`\s` + regexp.QuoteMeta(attr) + `="([^"]*)"`).FindStringSubmatch(tag)
		if m != nil {
			out = append(out, html.UnescapeString(m[1]))
		}
	}
	return out
}

// text returns the text of the first element with data-testid id.
func (p page) text(id string) string {
	re := regexp.MustCompile(`data-testid="` + regexp.QuoteMeta(id) + `"[^>]*>([^<]*)<`)
	m := re.FindStringSubmatch(p.Body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(strings.TrimSpace(m[1]))
}

// claim journals an operation directly.
func (a *app) claim(key, intent, target string, money bool, payload map[string]any) store.Operation {
	a.tb.Helper()
	raw, _ := json.Marshal(payload)
	req := store.ClaimRequest{
		Key: key, Intent: intent, Fingerprint: strings.Repeat("ab", 32), TargetSystem: target,
		Agent: "agent-a", ActorID: "user-42", RequestID: key, Payload: raw,
		Owner: "test-run", Lease: time.Minute,
	}
	if money {
		req.AwaitApproval, req.ApprovalTTL = true, time.Hour
	}
	_, op, err := a.st.Claim(context.Background(), req)
	if err != nil {
		a.tb.Fatal(err)
	}
	return op
}

// charge journals a payment.charge awaiting approval and returns its approval.
func (a *app) charge(key string, amount int, description string) store.Approval {
	a.tb.Helper()
	p := map[string]any{"account_id": "merchant-account-17", "order_id": orderOf(key), "amount_minor": amount, "currency": "RUB", "customer_id": "customer-1042"}
	if description != "" {
		p["description"] = description
	}
	a.claim(key, "payment.charge", "payments", true, p)
	ap, err := a.st.ApprovalByKey(context.Background(), key)
	if err != nil {
		a.tb.Fatal(err)
	}
	return ap
}

// approval reads the approval of key.
func (a *app) approval(key string) store.Approval {
	a.tb.Helper()
	ap, err := a.st.ApprovalByKey(context.Background(), key)
	if err != nil {
		a.tb.Fatal(err)
	}
	return ap
}

// unknown journals an operation whose outcome is unknown, flagged for a
// person, with its next automatic check far away.
func (a *app) unknown(key string) store.Operation {
	a.tb.Helper()
	ctx := context.Background()
	a.claim(key, "invoice.create", "onec", false, map[string]any{"order_id": "o-1", "customer_id": "customer-1042"})
	if _, err := a.st.LookupFailed(ctx, key, "test-run", "", "onec: HTTP 503 Service Unavailable", 1, time.Now().Add(time.Hour)); err != nil {
		a.tb.Fatal(err)
	}
	op, err := a.st.Get(ctx, key)
	if err != nil {
		a.tb.Fatal(err)
	}
	if op.Status != store.StatusUnknown || !op.NeedsReview {
		a.tb.Fatalf("not unknown and flagged: %+v", op)
	}
	return op
}

// events returns the audit events of key, oldest first.
func (a *app) events(f store.AuditFilter) []store.AuditEvent {
	a.tb.Helper()
	evs, err := a.st.AuditEvents(context.Background(), f)
	if err != nil {
		a.tb.Fatal(err)
	}
	return evs
}

// uniq makes a key ("test:intent:name:v1") or a name unique to this app.
func (a *app) uniq(s string) string {
	suffix := "-" + strconv.FormatInt(a.n, 10)
	if strings.HasSuffix(s, ":v1") {
		return strings.TrimSuffix(s, ":v1") + suffix + ":v1"
	}
	return s + suffix
}

// orderOf is the order a test's charge under key is for: one of its own,
// named by the key's id (test:payment.charge:<id>:v1).
func orderOf(key string) string {
	if parts := strings.Split(key, ":"); len(parts) == 4 {
		return "order-" + parts[2]
	}
	return "order-" + key
}

// keyPath is key escaped as a path segment, as the UI links it.
func keyPath(key string) string { return strings.ReplaceAll(url.PathEscape(key), ":", "%3A") }
