package sim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// onecDocument is the 1C service's answer to GET …/documents/{object_id}.
type onecDocument struct {
	Status       int
	ObjectID     string  `json:"object_id"`
	Kind         string  `json:"kind"`
	Number       string  `json:"number"`
	State        string  `json:"state"`
	OperationKey *string `json:"operation_key"`
	Errors       []struct{ Code string }
}

func onecGetDocument(tb testing.TB, base, id, intent string) onecDocument {
	tb.Helper()
	u := base + onecBase + "/documents/" + url.PathEscape(id)
	if intent != "" {
		u += "?" + url.Values{"intent": {intent}}.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var d onecDocument
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		tb.Fatalf("GET %s: decode: %v", u, err)
	}
	d.Status = resp.StatusCode
	return d
}

// key is the operation key a document answer carries, or "" for none.
func (d onecDocument) key() string {
	if d.OperationKey == nil {
		return ""
	}
	return *d.OperationKey
}

// The document read answers what the module would: the document and the
// key of the caller's intent that made or posted it; a document a person
// made carries none; any other id is 404 NOT_FOUND.
func TestOneCDocuments(t *testing.T) {
	t.Parallel()
	s, base := onecServe(t)
	const draftKey, postKey = "test:sales_order.create_draft:doc-1:v1", "test:sales_order.post:doc-1:v1"
	draft := onecCall(t, "POST", base+onecBase+"/operations", draftKey, onecBody("sales_order.create_draft", onecPrint1, onecDraft))
	if draft.Status != http.StatusCreated {
		t.Fatalf("draft: %d %s", draft.Status, draft.codes())
	}

	d := onecGetDocument(t, base, draft.ObjectID, "sales_order.create_draft")
	if d.Status != http.StatusOK || d.ObjectID != draft.ObjectID || d.Kind != "sales_order" || d.Number != draft.Number || d.State != "draft" || d.key() != draftKey {
		t.Fatalf("the draft: %+v", d)
	}
	if d := onecGetDocument(t, base, draft.ObjectID, ""); d.Status != http.StatusOK || d.OperationKey != nil {
		t.Fatalf("without an intent: %+v, want no key", d)
	}
	if d := onecGetDocument(t, base, draft.ObjectID, "sales_order.post"); d.OperationKey != nil {
		t.Fatalf("no post yet: %+v, want no key", d)
	}

	post := onecCall(t, "POST", base+onecBase+"/operations", postKey,
		onecBody("sales_order.post", onecPrint2, `{"order_id":"`+draft.ObjectID+`"}`))
	if post.Status != http.StatusCreated {
		t.Fatalf("post: %d %s", post.Status, post.codes())
	}
	if d := onecGetDocument(t, base, draft.ObjectID, "sales_order.post"); d.State != "posted" || d.key() != postKey {
		t.Fatalf("the posted order, by the post: %+v", d)
	}
	if d := onecGetDocument(t, base, draft.ObjectID, "sales_order.create_draft"); d.State != "posted" || d.key() != draftKey {
		t.Fatalf("the posted order, by the draft: %+v", d)
	}

	// A document made by hand: found by its id alone, nobody's effect,
	// unknown to the routes that read the register of external ids.
	hand, err := s.MakeOneCDocument("invoice")
	if err != nil {
		t.Fatal(err)
	}
	if d := onecGetDocument(t, base, hand, "invoice.create"); d.Status != http.StatusOK || d.Kind != "invoice" || d.State != "created" || d.OperationKey != nil {
		t.Fatalf("an invoice by hand: %+v", d)
	}
	order, err := s.MakeOneCDocument("sales_order")
	if err != nil {
		t.Fatal(err)
	}
	if a := onecCall(t, "GET", base+onecBase+"/sales-orders/"+order, "", ""); a.Status != http.StatusNotFound {
		t.Fatalf("an order by hand at /sales-orders: %d, want 404 as the module answers", a.Status)
	}
	if err := s.SetOneCDocumentState(order, "deleted"); err != nil {
		t.Fatal(err)
	}
	if d := onecGetDocument(t, base, order, ""); d.State != "deleted" {
		t.Fatalf("an order marked for deletion: %+v", d)
	}
	if _, err := s.MakeOneCDocument("payment"); err == nil {
		t.Fatal("a document of no kind the service makes was made")
	}
	if err := s.SetOneCDocumentState(order, "lost"); err == nil {
		t.Fatal("a state the service never answers was set")
	}

	for _, id := range []string{"SO-0f8fad5b-d9cb-469f-a165-70867728950e", "SO-123", draft.Number, "customer-1042"} {
		if d := onecGetDocument(t, base, id, "sales_order.create_draft"); d.Status != http.StatusNotFound || len(d.Errors) != 1 || d.Errors[0].Code != "NOT_FOUND" {
			t.Fatalf("%q: %+v, want 404 NOT_FOUND", id, d)
		}
	}

	// A read takes lookup faults and counts no call.
	if err := s.Inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: http.StatusServiceUnavailable, Times: 1, On: sim.OnLookup}); err != nil {
		t.Fatal(err)
	}
	if d := onecGetDocument(t, base, draft.ObjectID, ""); d.Status != http.StatusServiceUnavailable {
		t.Fatalf("a lookup fault: %d, want 503", d.Status)
	}
	if n := s.Effects(sim.OneC, draftKey); n != 1 {
		t.Fatalf("effects = %d, want 1", n)
	}
}
