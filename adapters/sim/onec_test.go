package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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

// onecIDPattern is an object id of the 1C service: a kind prefix and the
// UUID of the document's reference.
var onecIDPattern = regexp.MustCompile(`^(INV|SO|DOC)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func onecID(id, prefix string) bool {
	return onecIDPattern.MatchString(id) && strings.HasPrefix(id, prefix)
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
	first := answers[0].ObjectID
	for _, a := range answers {
		switch {
		case a.Status == http.StatusCreated && !a.Replayed:
			created++
		case a.Status == http.StatusOK && a.Replayed:
		default:
			t.Fatalf("answer %+v, want 201 or a 200 replay", a)
		}
		if a.ObjectID != first || !onecID(a.ObjectID, "INV-") || a.Number != "ОГ00-000001" || a.State != "created" || a.Key != key {
			t.Fatalf("answer %+v, want one INV- id for every call", a)
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
	if a.Status != 201 || !onecID(a.ObjectID, "SO-") || a.State != "draft" || a.Replayed {
		t.Fatalf("create draft = %+v", a)
	}
	order := a.ObjectID
	if a := onecCall(t, "POST", ops, key, onecBody("sales_order.create_draft", onecPrint2, onecDraft)); a.Status != 409 || a.codes() != "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH@" {
		t.Fatalf("mismatch = %+v", a)
	}
	// The key register is unique by (intent, key): the same key under
	// another intent is another operation.
	if a := onecCall(t, "GET", ops+"?"+url.Values{"intent": {"invoice.create"}, "key": {key}}.Encode(), "", ""); a.Status != 404 {
		t.Fatalf("lookup under another intent = %+v", a)
	}

	post := "test:sales_order.post:" + order + ":v1"
	a = onecCall(t, "POST", ops, post, onecBody("sales_order.post", onecPrint1, `{"order_id":"`+order+`"}`))
	if a.Status != 201 || a.ObjectID != order || a.Number != "ОГ00-000001" || a.State != "posted" {
		t.Fatalf("post = %+v", a)
	}
	if a := onecCall(t, "GET", base+onecBase+"/sales-orders/"+order, "", ""); a.Status != 200 || a.State != "posted" {
		t.Fatalf("status = %+v", a)
	}
	// The draft's register entry still answers as it first did.
	a = onecCall(t, "GET", ops+"?"+url.Values{"intent": {"sales_order.create_draft"}, "key": {key}}.Encode(), "", "")
	if a.Status != 200 || a.State != "draft" || !a.Replayed || a.Key != key {
		t.Fatalf("lookup = %+v", a)
	}
	if a := onecCall(t, "POST", ops, "test:sales_order.post:"+order+":v2", onecBody("sales_order.post", onecPrint1, `{"order_id":"`+order+`"}`)); a.Status != 422 || a.codes() != "INVALID_STATE@order_id" {
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
	if a := onecCall(t, "POST", ops, "test:invoice.create:order-3:v1", onecBody("invoice.create", onecPrint1, onecInvoice)); a.Status != 201 || !onecID(a.ObjectID, "INV-") {
		t.Fatalf("execute after reset = %+v", a)
	}
}

// onecSend posts an invoice under key with extra headers and decodes the
// answer, with the Retry-After it carried.
func onecSend(tb testing.TB, base, key string, header map[string]string) (onecAnswer, string) {
	tb.Helper()
	req, err := http.NewRequest("POST", base+onecBase+"/operations", strings.NewReader(onecBody("invoice.create", onecPrint1, onecInvoice)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var a onecAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		tb.Fatal(err)
	}
	a.Status = resp.StatusCode
	return a, resp.Header.Get("Retry-After")
}

// The object id is the kind and the UUID of the document's reference, not
// its number: an agent can send it back (the order_id pattern of
// sales_order.post and get_status), and a number with a Cyrillic prefix or
// one restarting each year never collides. The number is in the result.
func TestOneCObjectIDs(t *testing.T) {
	t.Parallel()
	_, base := onecServe(t)
	ops := base + onecBase + "/operations"
	orderID := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`) // the catalogue's pattern of order_id
	seen := map[string]bool{}
	for i := range 3 {
		a := onecCall(t, "POST", ops, fmt.Sprintf("test:sales_order.create_draft:ids-%d:v1", i), onecBody("sales_order.create_draft", onecPrint1, onecDraft))
		if a.Status != 201 || !onecID(a.ObjectID, "SO-") || !orderID.MatchString(a.ObjectID) || len(a.ObjectID) > 50 || seen[a.ObjectID] {
			t.Fatalf("draft %d = %+v: want a new SO-<uuid> id within ТипОперации's 50 characters", i, a)
		}
		seen[a.ObjectID] = true
		if want := fmt.Sprintf("ОГ00-%06d", i+1); a.Number != want {
			t.Fatalf("number = %q, want %q", a.Number, want)
		}
		if st := onecCall(t, "GET", base+onecBase+"/sales-orders/"+a.ObjectID, "", ""); st.Status != 200 || st.ObjectID != a.ObjectID || st.Number != a.Number {
			t.Fatalf("status of %s = %+v", a.ObjectID, st)
		}
	}
}

// The gateway's deadline: a commit that would land after it is refused and
// rolled back (503, Retry-After, nothing made), whether the deadline is
// the gateway's instant or its wait measured from the call's arrival; a
// call without one (by hand) and late_commit commit whenever they get there.
func TestOneCDeadline(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	past := time.Now().Add(50 * time.Millisecond)
	cases := []struct {
		name   string
		header map[string]string
		fault  string
		status int
	}{
		{"Deadline", map[string]string{sim.OneCDeadlineHeader: strconv.FormatInt(past.UnixMilli(), 10)}, sim.FaultDelay, 503},
		{"Wait", map[string]string{sim.OneCDeadlineHeader: strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10), sim.OneCTimeoutHeader: "50"}, sim.FaultDelay, 503},
		{"InTime", map[string]string{sim.OneCDeadlineHeader: strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10), sim.OneCTimeoutHeader: "60000"}, sim.FaultDelay, 201},
		{"NoDeadline", nil, sim.FaultDelay, 201},
		{"LateCommit", map[string]string{sim.OneCTimeoutHeader: "50"}, sim.FaultLateCommit, 201},
	}
	for _, c := range cases {
		key := "test:invoice.create:deadline-" + c.name + ":v1"
		if err := s.Inject(sim.Fault{Target: sim.OneC, Fault: c.fault, DelayMS: 200}); err != nil {
			t.Fatal(err)
		}
		a, retry := onecSend(t, base, key, c.header)
		if a.Status != c.status {
			t.Fatalf("%s: answer %+v, want %d", c.name, a, c.status)
		}
		if c.status == 503 {
			if a.codes() != "DEADLINE_EXCEEDED@" || retry == "" {
				t.Fatalf("%s: answer %+v, Retry-After %q: want DEADLINE_EXCEEDED with Retry-After", c.name, a, retry)
			}
			// Nothing was made: the key goes through when sent again.
			if a, _ := onecSend(t, base, key, nil); a.Status != 201 {
				t.Fatalf("%s: sent again = %+v", c.name, a)
			}
		}
		if got := s.Effects(sim.OneC, key); got != 1 {
			t.Fatalf("%s: effects = %d, want 1", c.name, got)
		}
	}
}

// A call in its transaction holds the key's managed lock: a second call of
// the key waits for it and, past the lock timeout, is answered 503 (nothing
// done, sent again later); a look-up waits behind it too, so it never
// answers 404 for a commit on its way.
func TestOneCKeyLock(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	ops := base + onecBase + "/operations"
	lookup := func(key string) onecAnswer {
		return onecCall(t, "GET", ops+"?"+url.Values{"intent": {"invoice.create"}, "key": {key}}.Encode(), "", "")
	}
	// hold sends key with a slow transaction and waits until it holds the
	// key's lock: a look-up with a short lock timeout then answers 503.
	hold := func(key string) <-chan onecAnswer {
		if err := s.Inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDelay, DelayMS: 1500}); err != nil {
			t.Fatal(err)
		}
		done := make(chan onecAnswer, 1)
		go func() { a, _ := onecSend(t, base, key, nil); done <- a }()
		for s.Calls(sim.OneC, key) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		return done
	}

	s.SetOneCLockTimeout(50 * time.Millisecond)
	key := "test:invoice.create:lock-1:v1"
	done := hold(key)
	var locked onecAnswer
	for locked = lookup(key); locked.Status == 404; locked = lookup(key) {
		// Not locked yet: the slow call is still being parsed.
	}
	if locked.Status != 503 || locked.codes() != "LOCK_CONFLICT@" {
		t.Fatalf("look-up while the key is locked = %+v, want 503 LOCK_CONFLICT", locked)
	}
	if a, retry := onecSend(t, base, key, nil); a.Status != 503 || a.codes() != "LOCK_CONFLICT@" || retry == "" {
		t.Fatalf("second call while the key is locked = %+v (Retry-After %q), want 503 LOCK_CONFLICT", a, retry)
	}
	if a := <-done; a.Status != 201 {
		t.Fatalf("the slow call = %+v", a)
	}
	if got := s.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}

	// With 1C's lock timeout the look-up waits and finds the commit.
	s.SetOneCLockTimeout(sim.OneCLockTimeout)
	key = "test:invoice.create:lock-2:v1"
	done = hold(key)
	a := lookup(key)
	made := <-done
	if a.Status == 404 {
		// The look-up may only come before the slow call took its lock.
		t.Logf("look-up before the lock was taken: %+v", a)
	} else if a.Status != 200 || a.ObjectID != made.ObjectID {
		t.Fatalf("look-up behind the slow call = %+v, want its document %s", a, made.ObjectID)
	}
}

// An unexpected exception in the module is rolled back and answered 500
// INTERNAL_ERROR with no text; the gateway then looks the key up.
func TestOneCInternalError(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	key := "test:invoice.create:internal:v1"
	if err := s.Inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: 500, On: sim.OnAny, Times: 2}); err != nil {
		t.Fatal(err)
	}
	if a, _ := onecSend(t, base, key, nil); a.Status != 500 || a.codes() != "INTERNAL_ERROR@" {
		t.Fatalf("execute = %+v, want 500 INTERNAL_ERROR", a)
	}
	if a := onecCall(t, "GET", base+onecBase+"/operations?intent=invoice.create&key="+url.QueryEscape(key), "", ""); a.Status != 500 || a.codes() != "INTERNAL_ERROR@" {
		t.Fatalf("look-up = %+v, want 500 INTERNAL_ERROR", a)
	}
	if got := s.Effects(sim.OneC, key); got != 0 {
		t.Fatalf("effects = %d, want 0", got)
	}
}

// Keys are compared exactly, as the module's key register does by storing
// the SHA-256 of the key as its dimension (an infobase compares strings
// without regard to case): two keys that differ in case are two operations.
func TestOneCKeysByCase(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	lower, upper := "test:invoice.create:case-a:v1", "test:invoice.create:CASE-A:v1"
	a, _ := onecSend(t, base, lower, nil)
	b, _ := onecSend(t, base, upper, nil)
	if a.Status != 201 || b.Status != 201 || a.ObjectID == b.ObjectID {
		t.Fatalf("keys differing in case = %+v and %+v, want two documents", a, b)
	}
	if s.Effects(sim.OneC, lower) != 1 || s.Effects(sim.OneC, upper) != 1 {
		t.Fatal("want one effect per key")
	}
}
