package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

const (
	onecBase    = "/onec/hs/oncegate/v1"
	onecPrint1  = "1111111111111111111111111111111111111111111111111111111111111111"
	onecPrint2  = "2222222222222222222222222222222222222222222222222222222222222222"
	onecInvoice = `{"order_id":"order-1","organization_id":"org-main","customer_id":"customer-1042","currency":"RUB",` +
		`"items":[{"product_id":"product-778","quantity":2,"unit":"pcs","price_minor":62500}]}`
	onecDraft = `{"organization_id":"org-main","customer_id":"customer-1042","warehouse_id":"warehouse-01","currency":"RUB",` +
		`"items":[{"product_id":"product-778","quantity":1.5,"unit":"kg"}],"comment":"call first"}`
)

// onecAnswer is a decoded reply of the 1C simulator.
type onecAnswer struct {
	Status   int
	ObjectID string `json:"object_id"`
	Number   string `json:"number"`
	State    string `json:"state"`
	Key      string `json:"key"`
	Intent   string `json:"intent"`
	Replayed bool   `json:"replayed"`
	Valid    bool   `json:"valid"`
	Plan     map[string]any
	Errors   []struct{ Code, Field string }
}

func (a onecAnswer) codes() string {
	var s []string
	for _, e := range a.Errors {
		s = append(s, e.Code+"@"+e.Field)
	}
	return strings.Join(s, " ")
}

func onecServe(tb testing.TB) (*sim.Server, string) {
	tb.Helper()
	s := sim.New()
	ts := httptest.NewServer(s)
	tb.Cleanup(ts.Close)
	return s, ts.URL
}

// onecCall sends method path with reqBody (and the key when not empty) and
// decodes the JSON onecAnswer.
func onecCall(tb testing.TB, method, u, key, reqBody string) onecAnswer {
	tb.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(reqBody))
	if err != nil {
		tb.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	var a onecAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		tb.Fatalf("%s %s: decode: %v", method, u, err)
	}
	a.Status = resp.StatusCode
	return a
}

func onecBody(intent, fingerprint, payload string) string {
	return `{"intent":"` + intent + `","fingerprint":"` + fingerprint + `","payload":` + payload + `}`
}

func TestOneCParallelDuplicates(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	const n = 20
	key := "test:invoice.create:order-1:v1"
	answers := make([]onecAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			answers[i] = onecCall(t, "POST", base+onecBase+"/operations", key, onecBody("invoice.create", onecPrint1, onecInvoice))
		})
	}
	wg.Wait()
	created := 0
	for _, a := range answers {
		switch {
		case a.Status == http.StatusCreated && !a.Replayed:
			created++
		case a.Status == http.StatusOK && a.Replayed:
		default:
			t.Fatalf("answer %+v, want 201 or a 200 replay", a)
		}
		if a.ObjectID != "INV-000001" || a.Number != "000001" || a.State != "created" || a.Key != key {
			t.Fatalf("answer %+v, want INV-000001 for every call", a)
		}
	}
	if got, want := created, 1; got != want {
		t.Fatalf("created = %d, want %d", got, want)
	}
	if got, want := s.Effects(sim.OneC, key), 1; got != want {
		t.Fatalf("effects = %d, want %d", got, want)
	}
	if got, want := s.Calls(sim.OneC, key), n; got != want {
		t.Fatalf("calls = %d, want %d", got, want)
	}
}

func TestOneCWire(t *testing.T) {
	t.Parallel()
	ops := onecBase + "/operations"
	tests := []struct {
		name   string
		method string
		path   string
		key    string
		body   string
		status int
		codes  string
	}{
		{"ErrKeyMissing", "POST", ops, "", onecBody("invoice.create", onecPrint1, onecInvoice), 400, "IDEMPOTENCY_KEY_MISSING@"},
		{"ErrIntentNotAllowed", "POST", ops, "k:1", onecBody("payment.charge", onecPrint1, `{}`), 400, "INTENT_NOT_ALLOWED@intent"},
		{"ErrEnvelopeField", "POST", ops, "k:1", `{"intent":"invoice.create","fingerprint":"` + onecPrint1 + `","payload":` + onecInvoice + `,"script":"x"}`, 400, "VALIDATION_ERROR@"},
		{"ErrPayloadField", "POST", ops, "k:1", onecBody("sales_order.create_draft", onecPrint1, strings.Replace(onecDraft, `"comment"`, `"posted":true,"comment"`, 1)), 400, "VALIDATION_ERROR@payload"},
		{"ErrPriceOnOrder", "POST", ops, "k:1", onecBody("sales_order.create_draft", onecPrint1, strings.Replace(onecDraft, `"unit":"kg"`, `"unit":"kg","price_minor":1`, 1)), 400, "VALIDATION_ERROR@payload"},
		{"ErrFingerprint", "POST", ops, "k:1", onecBody("invoice.create", "ABC", onecInvoice), 400, "VALIDATION_ERROR@fingerprint"},
		{"ErrAllInPayloadOrder", "POST", ops, "k:1", onecBody("sales_order.create_draft", onecPrint1,
			`{"organization_id":"org-x","customer_id":"customer-blocked-1","warehouse_id":"warehouse-01","currency":"USD",`+
				`"items":[{"product_id":"product-deleted-1","quantity":0,"unit":"pcs"},{"product_id":"product-779","quantity":1,"unit":"box"}]}`), 422,
			"REFERENCE_NOT_FOUND@organization_id REFERENCE_INACTIVE@customer_id VALIDATION_ERROR@currency " +
				"REFERENCE_INACTIVE@items[0].product_id VALIDATION_ERROR@items[0].quantity REFERENCE_NOT_FOUND@items[1].unit"},
		{"ErrNoItems", "POST", ops, "k:1", onecBody("invoice.create", onecPrint1, strings.Replace(onecInvoice, `[{"product_id":"product-778","quantity":2,"unit":"pcs","price_minor":62500}]`, `[]`, 1)), 422, "VALIDATION_ERROR@items"},
		{"ErrPostUnknown", "POST", ops, "k:1", onecBody("sales_order.post", onecPrint1, `{"order_id":"SO-000009"}`), 422, "REFERENCE_NOT_FOUND@order_id"},
		{"LookupErrNotFound", "GET", ops + "?intent=invoice.create&key=k%3A1", "", "", 404, "NOT_FOUND@"},
		{"LookupErrIntent", "GET", ops + "?intent=run.script&key=k%3A1", "", "", 400, "INTENT_NOT_ALLOWED@intent"},
		{"StatusErrNotFound", "GET", onecBase + "/sales-orders/SO-000001", "", "", 404, "NOT_FOUND@"},
		{"ValidateOK", "POST", onecBase + "/validate", "", onecBody("invoice.create", onecPrint1, onecInvoice), 200, ""},
		{"ValidateErr", "POST", onecBase + "/validate", "", onecBody("invoice.create", onecPrint1, strings.Replace(onecInvoice, "customer-1042", "nobody", 1)), 422, "REFERENCE_NOT_FOUND@customer_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, base := onecServe(t)
			a := onecCall(t, tt.method, base+tt.path, tt.key, tt.body)
			if a.Status != tt.status || a.codes() != tt.codes {
				t.Fatalf("answer %d %q, want %d %q", a.Status, a.codes(), tt.status, tt.codes)
			}
			if got := s.Effects(sim.OneC, tt.key); got != 0 {
				t.Fatalf("effects = %d, want 0", got)
			}
		})
	}
}

func TestOneCOperations(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	ops := base + onecBase + "/operations"

	t.Run("Validate", func(t *testing.T) {
		a := onecCall(t, "POST", base+onecBase+"/validate", "", onecBody("invoice.create", onecPrint1, onecInvoice))
		if !a.Valid || a.Plan["total_minor"] != float64(125000) {
			t.Fatalf("validate = %+v, want valid with total 125000", a)
		}
		if a := onecCall(t, "GET", base+onecBase+"/sales-orders/SO-000001", "", ""); a.Status != 404 {
			t.Fatalf("validate wrote something: %+v", a)
		}
	})

	key := "test:sales_order.create_draft:d-1:v1"
	a := onecCall(t, "POST", ops, key, onecBody("sales_order.create_draft", onecPrint1, onecDraft))
	if a.Status != 201 || a.ObjectID != "SO-000001" || a.State != "draft" || a.Replayed {
		t.Fatalf("create draft = %+v", a)
	}
	if a := onecCall(t, "POST", ops, key, onecBody("sales_order.create_draft", onecPrint2, onecDraft)); a.Status != 409 || a.codes() != "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH@" {
		t.Fatalf("mismatch = %+v", a)
	}
	// The key register is unique by (intent, key): the same key under
	// another intent is another operation.
	if a := onecCall(t, "GET", ops+"?"+url.Values{"intent": {"invoice.create"}, "key": {key}}.Encode(), "", ""); a.Status != 404 {
		t.Fatalf("lookup under another intent = %+v", a)
	}

	post := "test:sales_order.post:SO-000001:v1"
	a = onecCall(t, "POST", ops, post, onecBody("sales_order.post", onecPrint1, `{"order_id":"SO-000001"}`))
	if a.Status != 201 || a.ObjectID != "SO-000001" || a.Number != "000001" || a.State != "posted" {
		t.Fatalf("post = %+v", a)
	}
	if a := onecCall(t, "GET", base+onecBase+"/sales-orders/SO-000001", "", ""); a.Status != 200 || a.State != "posted" {
		t.Fatalf("status = %+v", a)
	}
	// The draft's register entry still answers as it first did.
	a = onecCall(t, "GET", ops+"?"+url.Values{"intent": {"sales_order.create_draft"}, "key": {key}}.Encode(), "", "")
	if a.Status != 200 || a.State != "draft" || !a.Replayed || a.Key != key {
		t.Fatalf("lookup = %+v", a)
	}
	if a := onecCall(t, "POST", ops, "test:sales_order.post:SO-000001:v2", onecBody("sales_order.post", onecPrint1, `{"order_id":"SO-000001"}`)); a.Status != 422 || a.codes() != "INVALID_STATE@order_id" {
		t.Fatalf("second post = %+v", a)
	}
	if got, want := s.Effects(sim.OneC, post), 1; got != want {
		t.Fatalf("post effects = %d, want %d", got, want)
	}
}

func TestOneCControlAPI(t *testing.T) {
	t.Parallel()
	_, base := onecServe(t)
	ops := base + onecBase + "/operations"
	key := "test:invoice.create:order-1:v1"

	control := func(method, path, reqBody string) map[string]map[string]int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, bytes.NewBufferString(reqBody))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s = %s", method, path, resp.Status)
		}
		var m map[string]map[string]int
		if method == "GET" {
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}

	control("POST", "/_sim/faults", `{"target":"onec","fault":"status","status":503}`)
	if a := onecCall(t, "POST", ops, key, onecBody("invoice.create", onecPrint1, onecInvoice)); a.Status != 503 {
		t.Fatalf("faulted execute = %d, want 503", a.Status)
	}
	onecCall(t, "POST", ops, key, onecBody("invoice.create", onecPrint1, onecInvoice))
	onecCall(t, "POST", ops, key, onecBody("invoice.create", onecPrint1, onecInvoice))

	if got, want := control("GET", "/_sim/effects", "")["onec"][key], 1; got != want {
		t.Fatalf("effects = %d, want %d", got, want)
	}
	if got, want := control("GET", "/_sim/calls", "")["onec"][key], 3; got != want {
		t.Fatalf("calls = %d, want %d", got, want)
	}

	// reset_before_read closes the connection without an onecAnswer.
	control("POST", "/_sim/faults", `{"target":"onec","fault":"reset_before_read"}`)
	req, _ := http.NewRequest("POST", ops, strings.NewReader(onecBody("invoice.create", onecPrint1, onecInvoice)))
	req.Header.Set("Idempotency-Key", "test:invoice.create:order-2:v1")
	if resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("reset_before_read answered %s", resp.Status)
	}

	control("POST", "/_sim/reset", "")
	if got := control("GET", "/_sim/effects", "")["onec"]; len(got) != 0 {
		t.Fatalf("effects after reset = %v, want none", got)
	}
	if a := onecCall(t, "GET", ops+"?intent=invoice.create&key="+url.QueryEscape(key), "", ""); a.Status != 404 {
		t.Fatalf("lookup after reset = %d, want 404", a.Status)
	}
	// Numbering starts again, as in a fresh database.
	if a := onecCall(t, "POST", ops, "test:invoice.create:order-3:v1", onecBody("invoice.create", onecPrint1, onecInvoice)); a.Status != 201 || a.ObjectID != "INV-000001" {
		t.Fatalf("execute after reset = %+v", a)
	}
}
