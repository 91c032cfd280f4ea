package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// The secrets of the echoing targets' configuration.
const (
	echoUser     = "rtu_obmen"
	echoPassword = "Pa55:w/rd+кот"
	echoHook     = "Echo7Hook9Secret4x"
	echoShop     = "987654"
	echoKey      = "live_EchoSecretKey-42"
)

// echoTarget is a 1C, Bitrix24 and YooKassa that refuses every request
// and repeats in its refusal what it was sent: the Authorization header,
// the user and password it carries, the path and query, in raw, URL
// escaped and base64 forms. Its answers take turns: JSON in each system's
// error shape refusing the credentials, HTML, JSON refusing the request,
// plain text. calls counts the requests per system.
func echoTarget(t *testing.T) (*httptest.Server, map[string]*atomic.Int64) {
	calls := map[string]*atomic.Int64{"onec": {}, "bitrix24": {}, "yookassa": {}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		system, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		n, ok := calls[system]
		if !ok {
			http.NotFound(w, r)
			return
		}
		turn := n.Add(1)
		io.Copy(io.Discard, r.Body)
		user, pw, _ := r.BasicAuth()
		pair := user + ":" + pw
		echo := fmt.Sprintf("ECHO %s user %s pw=%s %s q=%s b=%s u=%s p=%s", r.Header.Get("Authorization"), user, pw, pair,
			url.QueryEscape(pair), base64.StdEncoding.EncodeToString([]byte(pw)), base64.URLEncoding.EncodeToString([]byte(pair)), url.PathEscape(pw))
		if system == "bitrix24" {
			// The CRM clips its description to 200 characters: the path, raw and escaped.
			echo = "ECHO " + r.URL.RequestURI() + " " + url.QueryEscape(r.URL.RequestURI())
		}
		switch turn % 4 {
		case 1, 3: // JSON: first a refusal of the credentials, then of the request
			var body any
			status := http.StatusUnauthorized
			if turn%4 == 3 {
				status = http.StatusBadRequest
			}
			switch system {
			case "onec":
				status = http.StatusUnprocessableEntity
				body = map[string]any{"errors": []map[string]string{{"code": "ACCESS_CHECK", "message": echo}}}
			case "bitrix24":
				body = map[string]string{"error": map[bool]string{true: "INVALID_CREDENTIALS", false: "ERROR_ARGUMENT"}[status == 401], "error_description": echo}
			case "yookassa":
				body = map[string]string{"type": "error", "id": "echo-1", "code": map[bool]string{true: "invalid_credentials", false: "invalid_request"}[status == 401], "description": echo}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(body)
		case 2:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, "<html><body><h1>Forbidden</h1><p>%s</p></body></html>", html.EscapeString(echo))
		default:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, echo)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, calls
}

// echoSecrets are the configured secrets in every form a target may echo
// them in; none may appear in any output. The shop id is no secret.
func echoSecrets() []string {
	var out []string
	for _, v := range []string{echoUser, echoPassword, echoHook, echoKey, echoUser + ":" + echoPassword, echoShop + ":" + echoKey} {
		out = append(out, v, url.QueryEscape(v), url.PathEscape(v))
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(v)))
		}
	}
	return out
}

// assertNoSecret fails for each secret form found in out.
func assertNoSecret(t *testing.T, what, out string) {
	t.Helper()
	for _, s := range echoSecrets() {
		if i := strings.Index(out, s); i >= 0 {
			t.Errorf("%s shows %q: …%s…", what, s, out[max(0, i-80):min(len(out), i+len(s)+40)])
		}
	}
}

// A target that echoes the credentials it is sent, configured as 1C,
// Bitrix24 and YooKassa: neither check, nor serve's log, answers and
// journal (its audit trail included), nor the admin pages and their CSV
// show a configured secret, in any encoding, or the 1C user's name.
func TestEchoedSecretsRedacted(t *testing.T) {
	t.Parallel()
	fake, calls := echoTarget(t)
	cfg := fmt.Sprintf(`contour: test
retry: { max_attempts: 3, initial_delay_ms: 10, multiplier: 2, max_delay_ms: 20, jitter: false }
targets:
  onec: { base_url: "%[1]s/onec", username_env: ECHO_1C_USER, password_env: ECHO_1C_PASSWORD, timeout_ms: 2000 }
  bitrix24: { webhook_url_env: ECHO_B24_WEBHOOK, timeout_ms: 2000 }
  yookassa: { base_url: "%[1]s/yookassa/v3", shop_id: %[2]q, secret_key_env: ECHO_YK_SECRET, timeout_ms: 2000 }
`, fake.URL, echoShop)
	env := []string{
		"ECHO_1C_USER=" + echoUser, "ECHO_1C_PASSWORD=" + echoPassword,
		"ECHO_B24_WEBHOOK=" + fake.URL + "/bitrix24/rest/7/" + echoHook + "/",
		"ECHO_YK_SECRET=" + echoKey,
	}
	r := newRig(t, withConfigFile(cfg), withEnv(env...), notStarted())
	config, dataDir := r.config, r.dataDir

	// check, whose probes are refused with the echo.
	out, code := runCheck(t, env, "--config", config)
	if code != 1 {
		t.Fatalf("check exited %d:\n%s", code, out)
	}
	for _, target := range []string{"onec", "bitrix24", "yookassa"} {
		if l := lineOf(out, target); !strings.Contains(l, " FAIL ") || !strings.Contains(l, "ECHO") {
			t.Errorf("%s: %q, want FAIL with the target's echo\n%s", target, l, out)
		}
	}
	assertNoSecret(t, "check", out)
	for _, n := range calls {
		n.Store(0) // serve's calls begin the turns again
	}

	// serve, with an operation at each target.
	r.serve()
	token, gw, api := r.token, r.gateway, r.apiURL
	var answers strings.Builder
	for key, body := range map[string]string{
		"test:invoice.create:echo-1:v1":      fmt.Sprintf(e2eInvoice, "echo-1", 1),
		"test:crm.callback:create:echo-2:v1": `{"schema_version":"1.0","intent":"crm.callback.create","payload":{"customer_id":"customer-1042","due_at":"2026-12-03T10:00:00+03:00","comment":"call back"}}`,
		"test:payment.charge:echo-3:v1":      `{"schema_version":"1.0","intent":"payment.charge","payload":{"account_id":"merchant-account-17","order_id":"echo-3","amount_minor":1000,"currency":"RUB"}}`,
	} {
		for _, req := range []*http.Request{
			mustRequest(t, "POST", api+"/v1/operations", body),
			mustRequest(t, "POST", api+"/v1/operations", body),
			mustRequest(t, "GET", api+"/v1/operations/"+url.PathEscape(key), ""),
		} {
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Idempotency-Key", key)
			answers.WriteString(fetch(t, http.DefaultClient, req))
		}
	}
	for system, n := range calls {
		if n.Load() == 0 {
			t.Errorf("%s was not called; the operations did not reach it", system)
		}
	}
	assertNoSecret(t, "the answers", answers.String())

	// The admin pages and the audit trail's CSV.
	m := regexp.MustCompile(`admin user "admin" with password (\S+)`).FindStringSubmatch(gw.output())
	if m == nil {
		t.Fatalf("no first admin password in serve's output:\n%s", gw.output())
	}
	admin := signIn(t, api, "admin", m[1])
	var pages strings.Builder
	for _, p := range []string{"/admin/", "/admin/operations", "/admin/review", "/admin/approvals", "/admin/audit",
		"/admin/operations/" + url.PathEscape("test:invoice.create:echo-1:v1"),
		"/admin/operations/" + url.PathEscape("test:crm.callback:create:echo-2:v1"),
		"/admin/operations/" + url.PathEscape("test:payment.charge:echo-3:v1")} {
		pages.WriteString(fetch(t, admin, mustRequest(t, "GET", api+p, "")))
	}
	if !strings.Contains(pages.String(), "ECHO") {
		t.Errorf("the admin pages show no target's answer")
	}
	assertNoSecret(t, "the admin pages", pages.String())
	csv := fetch(t, admin, mustRequest(t, "GET", api+"/admin/audit?format=csv", ""))
	if !strings.Contains(csv, "ECHO") || !strings.Contains(csv, "test:invoice.create:echo-1:v1") {
		t.Errorf("the audit CSV holds no target's answer:\n%s", csv)
	}
	assertNoSecret(t, "the audit CSV", csv)

	// The journal's files, read raw (the audit trail in them).
	files, _ := filepath.Glob(filepath.Join(dataDir, "*"))
	var journal strings.Builder
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			journal.Write(b)
		}
	}
	if !strings.Contains(journal.String(), "ECHO") {
		t.Errorf("the journal holds no target's answer")
	}
	assertNoSecret(t, "the journal", journal.String())

	// serve's log, last: everything above has been logged.
	assertNoSecret(t, "serve's output", gw.output())
	if !strings.Contains(gw.output(), "ECHO") {
		t.Errorf("serve's log holds no target's answer")
	}
}

func mustRequest(t *testing.T, method, u, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// fetch does req and returns its status line, headers and body.
func fetch(t *testing.T, c *http.Client, req *http.Request) string {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var h strings.Builder
	resp.Header.Write(&h)
	return fmt.Sprintf("%s %s\n%s\n%s\n", req.URL, resp.Status, h.String(), b)
}

// signIn is a client signed in to the admin UI at api as name.
func signIn(t *testing.T, api, name, password string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	form := fetch(t, c, mustRequest(t, "GET", api+"/admin/login", ""))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(form)
	if m == nil {
		t.Fatalf("no form token on the sign-in page:\n%s", form)
	}
	resp, err := c.PostForm(api+"/admin/login", url.Values{"name": {name}, "password": {password}, "csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch resp.Request.URL.Path {
	case "/admin/login":
		t.Fatalf("sign-in as %s failed: %s", name, resp.Status)
	case "/admin/password":
		// A password someone else chose is changed at the first sign-in.
		m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(b))
		if m == nil {
			t.Fatalf("no form token on the password page:\n%s", b)
		}
		own := password + "-own-choice"
		resp, err := c.PostForm(api+"/admin/password", url.Values{"current": {password}, "password": {own}, "repeat": {own}, "csrf": {m[1]}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Request.URL.Path == "/admin/password" {
			t.Fatalf("choosing a password for %s failed: %s", name, resp.Status)
		}
	}
	return c
}
