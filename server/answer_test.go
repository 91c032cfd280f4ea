package server_test

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// problemDetails is an RFC 9457 problem as a typed client decodes it (a
// Go struct, a zod schema): status is a number.
type problemDetails struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
}

// Every answer a client meets — successes, replays, refusals of every
// kind — is valid against the response schema the served OpenAPI
// document gives its route and HTTP status, carries the operation's
// state, and every error answer decodes as an RFC 9457 problem whose
// status is the HTTP status (docs/api.md, section Answers).
func TestAnswersMatchOpenAPIAndRFC9457(t *testing.T) {
	t.Parallel()
	// A token refills one request a second: its burst runs out below,
	// however slowly a loaded machine sends.
	cfg := testConfig()
	cfg.RateLimit.PerSecond = 1
	g := setupWith(t, cfg)
	reader := g.MustToken("agent-reader", "read")
	payer := g.MustToken("agent-payer", "pay", "read")

	served := g.do("GET", "/v1/openapi.json", "", nil, nil)
	if served.Code != 200 {
		t.Fatalf("GET /v1/openapi.json: %d", served.Code)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(served.Raw))
	if err != nil {
		t.Fatal(err)
	}
	const base = "https://oncegate.invalid/openapi.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(base, doc); err != nil {
		t.Fatal(err)
	}

	key := "test:invoice.create:order-live-1:v1"
	body := func(v any) []byte { b, _ := json.Marshal(v); return b }
	unknownField := invoice("order-live-2", 1)
	unknownField["payload"].(map[string]any)["posted"] = true
	charge := map[string]any{"schema_version": "1.0", "intent": "payment.charge",
		"payload": map[string]any{"account_id": "merchant-account-17", "order_id": "order-live-3", "amount_minor": 1000, "currency": "RUB"}}
	validate := invoice("order-live-4", 1)
	validate["mode"] = "validate"

	type exchange struct {
		what, route string // route as the document names it
		r           reply
		code        int
	}
	var seen []exchange
	see := func(what, route string, code int, r reply) { seen = append(seen, exchange{what, route, r, code}) }
	see("execute", "/v1/operations", 200, g.post(key, invoice("order-live-1", 2)))
	see("replay", "/v1/operations", 200, g.post(key, invoice("order-live-1", 2)))
	see("changed request, same key", "/v1/operations", 422, g.post(key, invoice("order-live-1", 3)))
	see("validate", "/v1/operations", 200, g.post("test:invoice.create:order-live-4:v1", validate))
	see("money", "/v1/operations", 202, g.do("POST", "/v1/operations", payer, map[string]string{"Idempotency-Key": "test:payment.charge:order-live-3:v1"}, body(charge)))
	see("no key", "/v1/operations", 400, g.post("", invoice("order-live-5", 1)))
	see("unknown field", "/v1/operations", 400, g.post("test:invoice.create:order-live-2:v1", unknownField))
	see("key of another contour", "/v1/operations", 400, g.post("prod:invoice.create:order-live-6:v1", invoice("order-live-6", 1)))
	see("no token", "/v1/operations", 401, g.do("POST", "/v1/operations", "", nil, body(invoice("order-live-7", 1))))
	see("scope missing", "/v1/operations", 403, g.do("POST", "/v1/operations", reader, map[string]string{"Idempotency-Key": "test:invoice.create:order-live-8:v1"}, body(invoice("order-live-8", 1))))
	see("wrong media type", "/v1/operations", 415, g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": "test:invoice.create:order-live-9:v1", "Content-Type": "text/plain"}, body(invoice("order-live-9", 1))))
	see("too large", "/v1/operations", 413, g.do("POST", "/v1/operations", g.token, map[string]string{"Idempotency-Key": "test:invoice.create:order-live-10:v1"}, []byte(`{"pad":"`+strings.Repeat("x", 70<<10)+`"}`)))
	see("read back", "/v1/operations/{key}", 200, g.do("GET", "/v1/operations/"+key, g.token, nil, nil))
	see("read back, unknown key", "/v1/operations/{key}", 404, g.do("GET", "/v1/operations/test:invoice.create:order-never:v1", g.token, nil, nil))
	see("read back, no token", "/v1/operations/{key}", 401, g.do("GET", "/v1/operations/"+key, "", nil, nil))
	see("intents, no token", "/v1/intents", 401, g.do("GET", "/v1/intents", "", nil, nil))

	// A token over its rate: the GET routes answer 429 as POST does.
	slow := g.MustToken("agent-slow", "read")
	for _, route := range []string{"/v1/intents", "/v1/operations/{key}"} {
		path := strings.Replace(route, "{key}", key, 1)
		var r reply
		for range 200 { // the test configuration's burst is 100
			if r = g.do("GET", path, slow, nil, nil); r.Code == http.StatusTooManyRequests {
				break
			}
		}
		see("rate limited", route, http.StatusTooManyRequests, r)
	}

	method := map[string]string{"/v1/operations": "post", "/v1/operations/{key}": "get", "/v1/intents": "get"}
	pointer := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1") }
	for _, x := range seen {
		r := x.r
		if r.Code != x.code {
			t.Errorf("%s: HTTP %d, want %d: %s", x.what, r.Code, x.code, r.Raw)
			continue
		}
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		loc := base + "#/paths/" + pointer(x.route) + "/" + method[x.route] + "/responses/" + strconv.Itoa(r.Code) + "/content/" + pointer(mt) + "/schema"
		sch, err := c.Compile(loc)
		if err != nil {
			t.Errorf("%s: the document has no schema for HTTP %d %s on %s: %v", x.what, r.Code, mt, x.route, err)
			continue
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(r.Raw))
		if err != nil {
			t.Fatalf("%s: %v", x.what, err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: HTTP %d answer does not match the document: %v\n%s", x.what, r.Code, err, r.Raw)
		}
		if r.str("state") == "" {
			t.Errorf("%s: no state: %s", x.what, r.Raw)
		}
		if r.Code < 400 {
			if r.Body["status"] != r.Body["state"] {
				t.Errorf("%s: HTTP %d status %v, want the state %v", x.what, r.Code, r.Body["status"], r.Body["state"])
			}
			continue
		}
		if mt != "application/problem+json" {
			t.Errorf("%s: HTTP %d answered as %s", x.what, r.Code, mt)
		}
		var p problemDetails
		if err := json.Unmarshal([]byte(r.Raw), &p); err != nil {
			t.Errorf("%s: not an RFC 9457 problem: %v\n%s", x.what, err, r.Raw)
			continue
		}
		if p.Status != r.Code || p.Type == "" || p.Title == "" || p.Detail == "" {
			t.Errorf("%s: problem %+v, want status %d, a type, a title and a detail", x.what, p, r.Code)
		}
		if r.Code == http.StatusUnprocessableEntity && r.str("state") != "rejected" {
			t.Errorf("%s: state %q, want rejected", x.what, r.str("state"))
		}
	}
}
