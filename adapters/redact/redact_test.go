package redact_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/redact"
)

const (
	user     = "rtu-обмен"
	password = "p@ss/wörd:42"
	hook     = "q1w2e3r4t5y6u7i8"
	shop     = "506751"
	key      = "live_Zk3mP9xQ2"
)

func testRedactor() *redact.Redactor {
	return redact.New(
		redact.Basic(user, password), redact.Name(user),
		redact.Webhook("https://portal.example/rest/7/"+hook+"/"),
		redact.Basic(shop, key),
	)
}

// Every secret, in every encoding a target may echo it in, is gone from
// a target's text; what is not a secret stays.
func TestForeign(t *testing.T) {
	t.Parallel()
	r := testRedactor()
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	for _, c := range []struct{ in, gone, kept string }{
		{"Authorization: Basic " + b64(base64.StdEncoding, user+":"+password), b64(base64.RawStdEncoding, user+":"+password)[:12], "Authorization"},
		{"auth=" + b64(base64.URLEncoding, user+":"+password), b64(base64.RawURLEncoding, user+":"+password)[:12], "auth="},
		{"echo " + b64(base64.RawStdEncoding, shop+":"+key) + " end", b64(base64.RawStdEncoding, shop+":"+key)[:12], "end"},
		{"password " + password + " is wrong", "wörd", "is wrong"},
		{"path /x?pw=" + url.QueryEscape(password), url.QueryEscape(password), "/x?pw="},
		{"path /x/" + url.PathEscape(password) + "/y", url.PathEscape(password), "/y"},
		{"path /x/" + strings.ToLower(url.PathEscape(password)) + "/y", strings.ToLower(url.PathEscape(password)), "/y"},
		{`{"msg":"` + strings.ReplaceAll(password, "/", `\/`) + `"}`, `wörd`, `"msg"`},
		{`{"msg":"p@ss\/w\u00f6rd:42"}`, `w\u00f6rd`, `"msg"`},
		{"GET https://portal.example/rest/7/" + hook + "/crm.contact.list", hook, "portal.example"},
		{"secret " + hook[:10] + hook[10:], hook, "secret"},
		{"key " + key + ".", key, "key"},
		{"Пользователь rtu-обмен не имеет прав", "rtu-обмен", "не имеет прав"},
		{"user=RTU-ОБМЕН denied", "RTU-ОБМЕН", "denied"},
		{"GET /x?user=" + url.QueryEscape(user), url.QueryEscape(user), "/x?user="},
		{`{"login": "rtu-обмен"}`, "rtu-обмен", "login"},
		{"card 4111 1111 1111 1111 declined", "4111 1111", "declined"},
		{"auth failed for og_fjPSCdP_Eh2m6OQqENSGQdwSbybum5xBrwj2gLJbTE0", "fjPSCdP", "og_***"},
		{"connect: password=hunter2; host=srv-1c.corp.local", "hunter2", "srv-1c.corp.local"},
		{"GET https://shop:topsecret@api.example/v3", "topsecret", "https://***@api.example"},
		{"shop " + shop + " is enabled", "", shop},
	} {
		got := r.Foreign(c.in)
		if c.gone != "" && strings.Contains(got, c.gone) || !strings.Contains(got, c.kept) {
			t.Errorf("Foreign(%q) = %q: want %q gone and %q kept", c.in, got, c.gone, c.kept)
		}
	}
}

// After a word such as token or password, a value is masked; the words of
// a sentence that only mentions the credential ("failed to find token: no
// such file") are not. An assigned or quoted value is a value whatever it
// looks like; after ": " in prose, what looks like a secret is (a digit, a
// symbol, mixed case, a long run of letters) and an ordinary word is not.
func TestCredentialWords(t *testing.T) {
	t.Parallel()
	r := testRedactor()
	for _, c := range []struct{ in, want string }{
		// Ordinary words after the credential's name stay.
		{"failed to find token: no such file to connect", "failed to find token: no such file to connect"},
		{"token: failed to connect", "token: failed to connect"},
		{"failed to read password: permission denied", "failed to read password: permission denied"},
		{"open /etc/oncegate/token: no such file or directory", "open /etc/oncegate/token: no such file or directory"},
		{"secret: Missing. api_key: EMPTY!", "secret: Missing. api_key: EMPTY!"},
		{"пароль не найден; password: не задан", "пароль не найден; password: не задан"},
		// Values that look like secrets go, the sentence around them stays.
		{"failed to find token: abc123XYZ to connect", "failed to find token: *** to connect"},
		{"failed to read password: hunter2 to connect", "failed to read password: *** to connect"},
		{"token: s3cr3t-value, retrying", "token: ***, retrying"},
		{"token: e2b7f1c0d9a84f3b.", "token: ***"},
		{"password: hUnTeR now", "password: *** now"},
		{"secret: Tr0ub4dor now", "secret: *** now"},
		{"token: JBSWYDPEHPKPXPJBSWYDPEHPKPXP here", "token: *** here"},
		{"password: p@ss rejected", "password: *** rejected"},
		{"token: user:pass", "token: ***"},
		// Assigned, quoted or glued values go whatever they look like.
		{"token=failed", "token=***"},
		{"password = hunter now", "password = *** now"},
		{`{"token": "failed"}`, `{"token": "***"}`},
		{`password: 'hunter' now`, `password: '***' now`},
		{"token:failed now", "token:*** now"},
		{"connect: password=hunter2; host=srv-1c.corp.local", "connect: password=***; host=srv-1c.corp.local"},
		// Configured secrets and agent tokens go wherever they stand.
		{"failed to find token: " + hook + " to connect", "failed to find token: *** to connect"},
		{"failed to find token: og_fjPSCdP_Eh2m6OQqENSGQdwSbybum5xBrwj2gLJbTE0 to connect", "failed to find token: *** to connect"},
	} {
		if got := r.Own(c.in); got != c.want {
			t.Errorf("Own(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := r.Foreign(c.in); got != c.want {
			t.Errorf("Foreign(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A user's name that is a common word is masked where it stands as the
// user everywhere, as a word in a target's text, and left alone in the
// gateway's own lines and inside other words.
func TestName(t *testing.T) {
	t.Parallel()
	r := redact.New(redact.Basic("admin", "s3cret-pw"), redact.Name("admin"))
	for _, c := range []struct {
		own      bool
		in, want string
	}{
		{true, "serving admin=http://127.0.0.1:8080/admin/", "serving admin=http://127.0.0.1:8080/admin/"},
		{true, "user=admin denied", "user=*** denied"},
		{true, `{"username": "admin"}`, `{"username": "***"}`},
		{true, "http://admin@1c.local/base", "http://***@1c.local/base"},
		{true, "admin:s3cret-pw", "***"},
		{false, "403: admin has no rights to /admin/", "403: *** has no rights to /***/"},
		{false, "administrator madmin admin_x", "administrator madmin admin_x"},
	} {
		got := r.Foreign(c.in)
		if c.own {
			got = r.Own(c.in)
		}
		if got != c.want {
			t.Errorf("own %v: %q → %q, want %q", c.own, c.in, got, c.want)
		}
	}
}

// Short values are not masked as substrings of other words; their
// credentials still are.
func TestShortValue(t *testing.T) {
	t.Parallel()
	r := redact.New(redact.Basic("u", "abc"))
	if got, want := r.Foreign("abcdef cab"), "abcdef cab"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := r.Foreign("u:abc " + base64.StdEncoding.EncodeToString([]byte("u:abc"))); strings.Contains(got, "abc") || strings.Contains(got, "dTph") {
		t.Errorf("credentials kept: %q", got)
	}
}

// A nil Redactor masks the patterns alone.
func TestNil(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor
	if got := r.Foreign("Bearer abcdefghijklmnop"); strings.Contains(got, "abcdefghijklmnop") {
		t.Errorf("got %q", got)
	}
}

// The log handler masks messages, strings, errors, groups and attributes
// given in advance; other values stay as they are.
func TestHandler(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(redact.Handler(slog.NewTextHandler(&buf, nil), testRedactor())).With("hook", "https://portal.example/rest/7/"+hook+"/")
	log.WithGroup("g").Info("sent "+key, "err", errors.New("Пользователь rtu-обмен: Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+password))),
		"n", 42, "body", []byte(password), slog.Group("in", "pw", url.QueryEscape(password)), "any", struct{ K string }{key})
	out := buf.String()
	for _, s := range []string{hook, key, "rtu-обмен", "wörd", url.QueryEscape(password), base64.StdEncoding.EncodeToString([]byte(user + ":" + password))[:12]} {
		if strings.Contains(out, s) {
			t.Errorf("%q in %s", s, out)
		}
	}
	if !strings.Contains(out, "g.n=42") {
		t.Errorf("other values changed: %s", out)
	}
}

// BenchmarkHandler is the cost of one "operation claimed" line through
// the redacting handler, beside the same line without it.
func BenchmarkHandler(b *testing.B) {
	line := func(l *slog.Logger) {
		l.Info("operation claimed", "key", "test:invoice.create:order-48291:v1", "intent", "invoice.create", "agent", "demo-agent", "decision", "execute")
	}
	b.Run("Plain", func(b *testing.B) {
		l := slog.New(slog.NewTextHandler(io.Discard, nil))
		for b.Loop() {
			line(l)
		}
	})
	b.Run("Redacting", func(b *testing.B) {
		l := slog.New(redact.Handler(slog.NewTextHandler(io.Discard, nil), testRedactor()))
		for b.Loop() {
			line(l)
		}
	})
}
