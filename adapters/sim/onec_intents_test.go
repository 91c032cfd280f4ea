package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

const (
	onecPurchase = "purchase_order.create_draft"
	onecPO       = `{"supplier_id":"supplier-7","items":[{"product_id":"product-778","quantity":3}]}`
)

// onecPublish posts intents to the control API and returns its status and
// the published list it answers.
func onecPublish(tb testing.TB, base, body string) (int, []string) {
	tb.Helper()
	resp, err := http.Post(base+"/_sim/onec/intents", "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Intents []string }
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Intents
}

func TestOneCExtraIntents(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	ops := base + onecBase + "/operations"
	key := "test:purchase_order.create_draft:po-1:v1"
	lookup := ops + "?" + url.Values{"intent": {onecPurchase}, "key": {key}}.Encode()

	// Unpublished: routed nowhere, as the module answers any intent it lacks.
	if a := onecCall(t, "POST", ops, key, onecBody(onecPurchase, onecPrint1, onecPO)); a.Status != 400 || a.codes() != "INTENT_NOT_ALLOWED@intent" {
		t.Fatalf("unpublished execute = %+v", a)
	}
	if a := onecCall(t, "GET", lookup, "", ""); a.Status != 400 || a.codes() != "INTENT_NOT_ALLOWED@intent" {
		t.Fatalf("unpublished lookup = %+v", a)
	}
	if a := onecCall(t, "POST", base+onecBase+"/validate", "", onecBody(onecPurchase, "", onecPO)); a.Status != 400 || a.codes() != "INTENT_NOT_ALLOWED@intent" {
		t.Fatalf("unpublished validate = %+v", a)
	}

	status, list := onecPublish(t, base, `{"intents":["purchase_order.create_draft"]}`)
	if want := []string{"invoice.create", onecPurchase, "sales_order.create_draft", "sales_order.post"}; status != 200 || !slices.Equal(list, want) {
		t.Fatalf("publish = %d %v, want 200 %v", status, list, want)
	}
	if a := onecCall(t, "GET", lookup, "", ""); a.Status != 404 || a.codes() != "NOT_FOUND@" {
		t.Fatalf("lookup before execute = %+v", a)
	}
	if a := onecCall(t, "POST", base+onecBase+"/validate", key, onecBody(onecPurchase, onecPrint1, onecPO)); a.Status != 200 || !a.Valid || a.Plan["document"] != onecPurchase {
		t.Fatalf("validate = %+v", a)
	}
	a := onecCall(t, "POST", ops, key, onecBody(onecPurchase, onecPrint1, onecPO))
	if a.Status != 201 || !onecID(a.ObjectID, "DOC-") || a.Number != "ОГ00-000001" || a.State != "created" || a.Intent != onecPurchase || a.Key != key || a.Replayed {
		t.Fatalf("execute = %+v", a)
	}
	doc := a.ObjectID
	if a := onecCall(t, "POST", ops, key, onecBody(onecPurchase, onecPrint1, onecPO)); a.Status != 200 || !a.Replayed || a.ObjectID != doc {
		t.Fatalf("replay = %+v", a)
	}
	if a := onecCall(t, "POST", ops, key, onecBody(onecPurchase, onecPrint2, onecPO)); a.Status != 409 || a.codes() != "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH@" {
		t.Fatalf("mismatch = %+v", a)
	}
	if a := onecCall(t, "GET", lookup, "", ""); a.Status != 200 || !a.Replayed || a.ObjectID != doc {
		t.Fatalf("lookup = %+v", a)
	}
	// The register is by (intent, key): the key under a built-in is another entry.
	if a := onecCall(t, "GET", ops+"?"+url.Values{"intent": {"invoice.create"}, "key": {key}}.Encode(), "", ""); a.Status != 404 {
		t.Fatalf("lookup under invoice.create = %+v", a)
	}
	if a := onecCall(t, "POST", ops, "test:purchase_order.create_draft:po-2:v1", onecBody(onecPurchase, onecPrint1, `[1]`)); a.Status != 400 || a.codes() != "VALIDATION_ERROR@payload" {
		t.Fatalf("payload not an object = %+v", a)
	}
	if a := onecCall(t, "GET", base+onecBase+"/sales-orders/"+doc, "", ""); a.Status != 404 {
		t.Fatalf("a document of an extra intent as a sales order = %+v", a)
	}

	docs := s.OneCDocuments(onecPurchase)
	if len(docs) != 1 || docs[0].ObjectID != doc || docs[0].Intent != onecPurchase || !bytes.Equal(docs[0].Payload, []byte(onecPO)) {
		t.Fatalf("documents = %+v", docs)
	}
	if got, want := s.Effects(sim.OneC, key), 1; got != want {
		t.Fatalf("effects = %d, want %d", got, want)
	}

	// A reset forgets the database, not the module's code.
	s.Reset()
	if got := s.OneCPublished(); !slices.Contains(got, onecPurchase) {
		t.Fatalf("published after reset = %v", got)
	}
	if a := onecCall(t, "POST", ops, key, onecBody(onecPurchase, onecPrint1, onecPO)); a.Status != 201 || !onecID(a.ObjectID, "DOC-") {
		t.Fatalf("execute after reset = %+v", a)
	}
	// Publishing replaces the list: none.
	if status, list := onecPublish(t, base, `{"intents":[]}`); status != 200 || slices.Contains(list, onecPurchase) {
		t.Fatalf("unpublish = %d %v", status, list)
	}
	if a := onecCall(t, "GET", lookup, "", ""); a.Status != 400 {
		t.Fatalf("lookup once unpublished = %+v", a)
	}
}

func TestOneCExtraIntentsRefused(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	for _, body := range []string{
		`{"intents":["Purchase.Order"]}`,
		`{"intents":["purchase"]}`,
		`{"intents":["purchase_order.` + strings.Repeat("x", 40) + `"]}`,
		`{"intents":"purchase_order.create_draft"}`,
		`{"names":["purchase_order.create_draft"]}`,
	} {
		if status, _ := onecPublish(t, base, body); status != 400 {
			t.Fatalf("publish %s = %d, want 400", body, status)
		}
	}
	if err := s.PublishOneC("ok.intent", "Not.ok"); err == nil {
		t.Fatal("PublishOneC took a name 1C cannot route by")
	}
	if got := s.OneCPublished(); slices.Contains(got, "ok.intent") {
		t.Fatalf("a refused list changed the published intents: %v", got)
	}
}

func TestOneCExtraIntentsFaults(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	if err := s.PublishOneC(onecPurchase); err != nil {
		t.Fatal(err)
	}
	ops := base + onecBase + "/operations"
	key := "test:purchase_order.create_draft:po-1:v1"

	// The answer is lost after the commit: the key register has it.
	if err := s.Inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDropResponse}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", ops, strings.NewReader(onecBody(onecPurchase, onecPrint1, onecPO)))
	req.Header.Set("Idempotency-Key", key)
	if resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("drop_response_after_commit answered %s", resp.Status)
	}
	if a := onecCall(t, "GET", ops+"?"+url.Values{"intent": {onecPurchase}, "key": {key}}.Encode(), "", ""); a.Status != 200 || !onecID(a.ObjectID, "DOC-") {
		t.Fatalf("lookup after the lost answer = %+v", a)
	}

	// Parallel duplicates of a new key: one document.
	dup := "test:purchase_order.create_draft:po-2:v1"
	const n = 20
	answers := make([]onecAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = onecCall(t, "POST", ops, dup, onecBody(onecPurchase, onecPrint1, onecPO)) })
	}
	wg.Wait()
	for _, a := range answers {
		if a.ObjectID != answers[0].ObjectID || !onecID(a.ObjectID, "DOC-") || a.Number != "ОГ00-000002" {
			t.Fatalf("answer %+v, want one DOC- id, number 2, for every call", a)
		}
	}
	if got := len(s.OneCDocuments(onecPurchase)); got != 2 {
		t.Fatalf("documents = %d, want 2", got)
	}
	for k, want := range map[string]int{key: 1, dup: 1} {
		if got := s.Effects(sim.OneC, k); got != want {
			t.Fatalf("effects(%s) = %d, want %d", k, got, want)
		}
	}
}

func TestOneCExtraIntentsEnv(t *testing.T) {
	t.Setenv(sim.OneCIntentsEnv, " purchase_order.create_draft, ,Bad.Name,payments.register_incoming")
	s, _ := onecServe(t)
	want := []string{"invoice.create", "payments.register_incoming", onecPurchase, "sales_order.create_draft", "sales_order.post"}
	if got := s.OneCPublished(); !slices.Equal(got, want) {
		t.Fatalf("published = %v, want %v", got, want)
	}
}
