package onecodata_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

// keyFieldMap is the invoice create with the order's id as the
// document's Number (a string of 11 in the simulated base).
const keyFieldMap = `{"entity":"Document_СчетНаОплатуПокупателю","fields":{
 "Организация_Key":{"ref":"organization_id"},"Контрагент_Key":{"ref":"customer_id"},
 "Number":{"from":"order_id"},
 "Товары":{"from":"items","row":{"Номенклатура_Key":{"ref":"product_id"},"Количество":{"from":"quantity"},
  "Цена":{"from":"price_minor","money":"minor"}}}}}`

// keyFieldClient is a client of the simulator s bound to keyFieldMap,
// its creates guarded by keyField ("" for none).
func keyFieldClient(t *testing.T, s *sim.Server, keyField string) (*onecodata.Client, string) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: srv.URL + sim.ODataPath,
		Username: "buh", Password: sim.ODataPassword, Timeout: 2 * time.Second, KeyField: keyField})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Bind([]adapters.Binding{{Intent: "invoice.create", Version: 1, Schema: json.RawMessage(invoiceSchema), Map: json.RawMessage(keyFieldMap),
		References: map[string]string{"organization_id": "organization", "customer_id": "customer", "items.product_id": "product"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv.URL
}

// documents counts the documents the simulator made, from /_sim/effects.
func documents(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/_sim/effects")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var effects map[string]map[string]int
	json.NewDecoder(resp.Body).Decode(&effects)
	n := 0
	for _, c := range effects[sim.OneCOData] {
		n += c
	}
	return n
}

// Where 1C ignores client keys, a key_field keeps the no-code path: the
// answer of a committed create is lost, the look-up by the key_field
// finds the one document, and nothing is sent again.
func TestKeyField_LostAnswerFoundByKeyField(t *testing.T) {
	t.Parallel()
	s := sim.New()
	s.SetODataSettings(sim.ODataSettings{IgnoreClientKeys: true})
	c, base := keyFieldClient(t, s, "КлючОперации")
	if c.DedupesByKey() {
		t.Fatal("a target guarded by a key_field says 1C refuses a second document")
	}
	if err := s.Inject(sim.Fault{Target: sim.OneCOData, Fault: sim.FaultDropResponse, Times: 1}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	op := invoiceOp("k-lost")
	_, err := c.Execute(ctx, op)
	var ae *adapters.Error
	if !errors.As(err, &ae) || ae.Class != adapters.Reconcile {
		t.Fatalf("lost answer: %v, want an unknown outcome (Reconcile)", err)
	}
	found, err := c.Lookup(ctx, op)
	if err != nil {
		t.Fatalf("look-up: %v", err)
	}
	if found.ObjectID == onecodata.RefKey("buh", "invoice.create", "k-lost") || found.ObjectID == "" {
		t.Fatalf("found %q: want the key 1C chose", found.ObjectID)
	}
	// Another operation is not found by this one's key.
	if _, err := c.Lookup(ctx, invoiceOp("k-other")); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("another key: %v, want not found", err)
	}
	if n := documents(t, base); n != 1 {
		t.Fatalf("%d documents at 1C, want 1", n)
	}
	// A create without the fault is accepted under 1C's own key.
	r, err := c.Execute(ctx, invoiceOp("k-next"))
	if err != nil || r.ObjectID == "" {
		t.Fatalf("create under 1C's key: %+v %v", r, err)
	}
}

// Without a key_field, the same base is refused after its first create.
func TestKeyField_NoneRefusesIgnoringBase(t *testing.T) {
	t.Parallel()
	s := sim.New()
	s.SetODataSettings(sim.ODataSettings{IgnoreClientKeys: true})
	c, _ := keyFieldClient(t, s, "")
	_, err := c.Execute(context.Background(), invoiceOp("k1"))
	var ae *adapters.Error
	if !errors.As(err, &ae) || ae.Code != codes.TargetIgnoresKeys {
		t.Fatalf("%v, want %s", err, codes.TargetIgnoresKeys)
	}
}

// check refuses a key_field 1C cannot filter on (an unlimited string),
// one that is not published, and accepts a limited one.
func TestKeyField_CheckRefusesUnlimited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ field, want string }{
		{"Комментарий", "unlimited length"},
		{"НетТакого", "not published"},
		{"КлючОперации", ""},
	} {
		c, _ := keyFieldClient(t, sim.New(), tc.field)
		what, err := c.Probe(context.Background())
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.field, err)
		case tc.want == "" && !strings.Contains(what, "goes into КлючОперации (a string of 50)"):
			t.Errorf("%s: %q", tc.field, what)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %q, %v; want a refusal saying %q", tc.field, what, err, tc.want)
		}
	}
}

// A string 1C cuts to its attribute's length is a change the result
// names, by the payload's field, never a silent success.
func TestReadBack_TruncatedString(t *testing.T) {
	t.Parallel()
	s := sim.New()
	s.SetODataSettings(sim.ODataSettings{Truncate: true})
	c, _ := keyFieldClient(t, s, "")
	op := invoiceOp("k-cut")
	op.Payload = json.RawMessage(strings.Replace(string(op.Payload), `"order_id":"order-1"`, `"order_id":"order-2026-000123"`, 1))
	r, err := c.Execute(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := r.Data[onecodata.ChangedKey].([]map[string]any)
	if len(ch) != 1 || ch[0]["field"] != "order_id" || ch[0]["property"] != "Number" ||
		!strings.Contains(ch[0]["message"].(string), "cut Number to 11 characters (17 were sent)") {
		t.Fatalf("changes %v, want Number cut, named by order_id", r.Data)
	}
	// Kept whole, nothing is said.
	s.SetODataSettings(sim.ODataSettings{})
	r, err = c.Execute(context.Background(), invoiceOp("k-whole"))
	if err != nil || r.Data[onecodata.ChangedKey] != nil {
		t.Fatalf("%v %v, want no change", r.Data, err)
	}
}

// Where a key_field guards, a person's check of a document refuses one
// that carries another operation's key, and accepts this operation's.
func TestKeyField_CheckObjectByKeyField(t *testing.T) {
	t.Parallel()
	s := sim.New()
	s.SetODataSettings(sim.ODataSettings{IgnoreClientKeys: true})
	c, _ := keyFieldClient(t, s, "КлючОперации")
	ctx := context.Background()
	mine, err := c.Execute(ctx, invoiceOp("k-mine"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := c.Execute(ctx, invoiceOp("k-other"))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.CheckObject(ctx, invoiceOp("k-mine"), mine.ObjectID); err != nil || r.ObjectID != mine.ObjectID {
		t.Fatalf("this operation's document: %+v %v", r, err)
	}
	_, err = c.CheckObject(ctx, invoiceOp("k-mine"), other.ObjectID)
	var ae *adapters.Error
	if !errors.As(err, &ae) || ae.Code != codes.InvalidState || !strings.Contains(ae.Message, "another operation's key") {
		t.Fatalf("another operation's document: %v, want %s", err, codes.InvalidState)
	}
}

// A mapping's key_field overrides the target's, and may not be mapped
// itself or be a property the gateway owns.
func TestKeyField_Bind(t *testing.T) {
	t.Parallel()
	c, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: "http://127.0.0.1:9" + sim.ODataPath, Username: "buh"})
	if err != nil {
		t.Fatal(err)
	}
	bind := func(keyField string) error {
		m := strings.Replace(keyFieldMap, `{"entity":`, `{"key_field":`+keyField+`,"entity":`, 1)
		return c.Bind([]adapters.Binding{{Intent: "invoice.create", Version: 1, Schema: json.RawMessage(invoiceSchema), Map: json.RawMessage(m),
			References: map[string]string{"organization_id": "organization", "customer_id": "customer", "items.product_id": "product"}}})
	}
	if err := bind(`"КлючОперации"`); err != nil || c.DedupesByKey() {
		t.Fatalf("map.key_field: %v (dedupes %v)", err, c.DedupesByKey())
	}
	for v, want := range map[string]string{`"Number"`: "is the key_field", `"Ref_Key"`: "must name a string attribute", `"Контрагент_Key"`: "must name a string attribute"} {
		if err := bind(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("key_field %s: %v, want %q", v, err, want)
		}
	}
	if err := bind(`""`); err != nil || !c.DedupesByKey() {
		t.Fatalf("key_field off: %v (dedupes %v)", err, c.DedupesByKey())
	}
}
