package onecodata_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

const invoiceSchema = `{"type":"object","additionalProperties":false,
 "required":["order_id","organization_id","customer_id","currency","items"],
 "properties":{
  "order_id":{"type":"string"},"organization_id":{"type":"string"},"customer_id":{"type":"string"},
  "currency":{"type":"string"},"due_date":{"type":"string"},
  "items":{"type":"array","items":{"type":"object","additionalProperties":false,
   "properties":{"product_id":{"type":"string"},"quantity":{"type":"number"},"price_minor":{"type":"integer"}}}}}}`

const invoiceMap = `{"entity":"Document_СчетНаОплатуПокупателю","fields":{
 "Организация_Key":{"ref":"organization_id"},"Контрагент_Key":{"ref":"customer_id"},
 "Комментарий":{"from":"order_id"},"СрокОплаты":{"from":"due_date","date":"local"},
 "Товары":{"from":"items","row":{"Номенклатура_Key":{"ref":"product_id"},"Количество":{"from":"quantity"},
  "Цена":{"from":"price_minor","money":"minor"}}}}}`

const (
	postSchema = `{"type":"object","additionalProperties":false,"required":["order_id"],"properties":{"order_id":{"type":"string"}}}`
	postMap    = `{"post":{"entity":"Document_СчетНаОплатуПокупателю","document":"order_id"}}`
)

// declaredInvoice is the payload of the declared invoice.create the OData
// client is bound to, for customer and product.
func declaredInvoice(customer, product string) json.RawMessage {
	return json.RawMessage(`{"order_id":"order-1","organization_id":"org-main","customer_id":"` + customer +
		`","currency":"RUB","due_date":"2026-12-04T07:00:00Z","items":[{"product_id":"` + product + `","quantity":2,"price_minor":62500}]}`)
}

// fixture is the OData simulator over loopback, a client bound to an
// invoice create and a posting, and a count of the requests by method.
type fixture struct {
	sim    *sim.Server
	c      *onecodata.Client
	gets   atomic.Int64
	posts  atomic.Int64
	server *httptest.Server
}

func setup(t *testing.T, timeout time.Duration, refs map[string]onecodata.Reference) *fixture {
	t.Helper()
	f := &fixture{sim: sim.New()}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "standard.odata") {
			if r.Method == http.MethodGet {
				f.gets.Add(1)
			} else {
				f.posts.Add(1)
			}
		}
		f.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(f.server.Close)
	zone, _ := time.LoadLocation("Europe/Moscow")
	c, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: f.server.URL + "/onec-odata/odata/standard.odata",
		Username: "buh", Password: "sim", Zone: zone, Timeout: timeout, References: refs})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Bind(bindings()); err != nil {
		t.Fatal(err)
	}
	f.c = c
	return f
}

// bindings are an invoice create and a posting, as declared intents.
func bindings() []adapters.Binding {
	return []adapters.Binding{
		{Intent: "invoice.create", Version: 1, Schema: json.RawMessage(invoiceSchema), Map: json.RawMessage(invoiceMap),
			References: map[string]string{"organization_id": "organization", "customer_id": "customer", "items.product_id": "product"}},
		{Intent: "sales_order.post", Version: 1, Schema: json.RawMessage(postSchema), Map: json.RawMessage(postMap)},
	}
}

func invoiceOp(key string) adapters.Op {
	return adapters.Op{Key: key, Intent: "invoice.create", Version: 1, Payload: declaredInvoice("customer-1042", "product-778"), Attempt: 1}
}

func TestRefKey(t *testing.T) {
	t.Parallel()
	a := onecodata.RefKey("buh", "invoice.create", "k1")
	if a != onecodata.RefKey("buh", "invoice.create", "k1") || a[14] != '5' || !strings.ContainsAny(a[19:20], "89ab") {
		t.Fatalf("not a stable version-5 UUID: %s", a)
	}
	for _, other := range []string{onecodata.RefKey("buh2", "invoice.create", "k1"), onecodata.RefKey("buh", "invoice.post", "k1"), onecodata.RefKey("buh", "invoice.create", "k2")} {
		if other == a {
			t.Fatalf("%s repeats for another instance, intent or key", a)
		}
	}
}

func TestExecute_CreateOnceAndDuplicateReplayed(t *testing.T) {
	t.Parallel()
	for _, dup := range []sim.ODataSettings{
		{},
		{DuplicateStatus: 409, DuplicateBody: sim.DupKeyExists},
		{DuplicateStatus: 400, DuplicateBody: sim.DupKeyExists},
		{DuplicateStatus: 500, DuplicateBody: sim.DupEmpty},
	} {
		f := setup(t, 2*time.Second, nil)
		f.sim.SetODataSettings(dup)
		ctx := context.Background()
		op := invoiceOp("prod:invoice:create:1:v1")
		ref := onecodata.RefKey("buh", "invoice.create", op.Key)

		plan, err := f.c.Validate(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		body := plan.Data["body"].(map[string]any)
		rows := body["Товары"].([]map[string]any)
		if body["Ref_Key"] != ref || rows[0]["LineNumber"] != "1" || rows[0]["Цена"] != json.Number("625.00") ||
			body["СрокОплаты"] != "2026-12-04T10:00:00" || body["Контрагент_Key"] != sim.ODataRef("Catalog_Контрагенты", "customer-1042") {
			t.Fatalf("plan body: %#v", body)
		}
		res, err := f.c.Execute(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		if res.ObjectID != ref || res.Data["number"] != "0000-000001" {
			t.Fatalf("result %+v", res)
		}
		// The same key again: 1C refuses the second document; the adapter
		// finds the first under the key and answers it.
		res2, err := f.c.Execute(ctx, op)
		if err != nil && dup.DuplicateBody != sim.DupEmpty {
			t.Fatalf("%+v: duplicate: %v", dup, err)
		}
		if err == nil && res2.ObjectID != ref {
			t.Fatalf("%+v: duplicate answered %+v", dup, res2)
		}
		if err != nil { // a 500 without a body: unknown, then found by key
			adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
			if res2, err = f.c.Lookup(ctx, op); err != nil || res2.ObjectID != ref {
				t.Fatalf("look-up after a bodiless refusal: %+v %v", res2, err)
			}
		}
		if got := f.sim.Effects(sim.OneCOData, ref); got != 1 {
			t.Fatalf("%+v: effects = %d", dup, got)
		}
	}
}

func TestExecute_LostAnswerSettledByOneGET(t *testing.T) {
	t.Parallel()
	f := setup(t, 2*time.Second, nil)
	ctx := context.Background()
	op := invoiceOp("k-lost")
	ref := onecodata.RefKey("buh", "invoice.create", op.Key)
	f.c.Validate(ctx, op) // metadata and references read beforehand
	f.sim.Inject(sim.Fault{Target: sim.OneCOData, Fault: sim.FaultDropResponse})
	_, err := f.c.Execute(ctx, op)
	adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
	before := f.gets.Load()
	res, err := f.c.Lookup(ctx, op)
	if err != nil || res.ObjectID != ref || res.Data["number"] != "0000-000001" {
		t.Fatalf("look-up: %+v %v", res, err)
	}
	if got := f.gets.Load() - before; got != 1 {
		t.Fatalf("look-up made %d GETs, want 1", got)
	}
	if got := f.sim.Effects(sim.OneCOData, ref); got != 1 {
		t.Fatalf("effects = %d", got)
	}
}

func TestExecute_LateCommitNeverDoubled(t *testing.T) {
	t.Parallel()
	f := setup(t, 200*time.Millisecond, nil)
	ctx := context.Background()
	op := invoiceOp("k-late")
	ref := onecodata.RefKey("buh", "invoice.create", op.Key)
	if _, err := f.c.Validate(ctx, op); err != nil {
		t.Fatal(err)
	}
	f.sim.Inject(sim.Fault{Target: sim.OneCOData, Fault: sim.FaultLateCommit, DelayMS: 700})
	_, err := f.c.Execute(ctx, op)
	adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
	// Before the commit a look-up finds nothing: the engine does not take
	// that as an answer before the settle time.
	if _, err := f.c.Lookup(ctx, op); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("look-up before the commit: %v", err)
	}
	// After it, the document is there, once.
	time.Sleep(900 * time.Millisecond)
	res, err := f.c.Lookup(ctx, op)
	if err != nil || res.ObjectID != ref {
		t.Fatalf("look-up after the commit: %+v %v", res, err)
	}
	// Sent again (an agent's retry at a deduping target): replayed.
	if res, err = f.c.Execute(ctx, op); err != nil || res.ObjectID != ref {
		t.Fatalf("again: %+v %v", res, err)
	}
	if got := f.sim.Effects(sim.OneCOData, ref); got != 1 {
		t.Fatalf("effects = %d", got)
	}

	// A retry sent while the late commit is still held lands first; the
	// late commit is then refused by 1C's key.
	op2 := invoiceOp("k-late-2")
	ref2 := onecodata.RefKey("buh", "invoice.create", op2.Key)
	f.sim.Inject(sim.Fault{Target: sim.OneCOData, Fault: sim.FaultLateCommit, DelayMS: 500})
	f.c.Execute(ctx, op2)
	if _, err := f.c.Execute(ctx, op2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	if got := f.sim.Effects(sim.OneCOData, ref2); got != 1 {
		t.Fatalf("effects = %d after a late commit and a retry", got)
	}
}

func TestExecute_BaseIgnoringClientKeys(t *testing.T) {
	t.Parallel()
	f := setup(t, 2*time.Second, nil)
	f.sim.SetODataSettings(sim.ODataSettings{IgnoreClientKeys: true})
	ctx := context.Background()
	op := invoiceOp("k-ignored")
	_, err := f.c.Execute(ctx, op)
	ae := adapterstest.WantError(t, err, adapters.Final, codes.TargetIgnoresKeys, "")
	if ae.ObjectID == "" || ae.ObjectID == onecodata.RefKey("buh", "invoice.create", op.Key) {
		t.Fatalf("the document 1C made is not named: %+v", ae)
	}
	// Further creates are refused before anything is sent.
	posts := f.posts.Load()
	_, err = f.c.Execute(ctx, invoiceOp("k-next"))
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetIgnoresKeys, "")
	if f.posts.Load() != posts {
		t.Fatal("a create was sent to a base that ignores client keys")
	}
	if _, err := f.c.Lookup(ctx, op); errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) != adapters.Reconcile {
		t.Fatalf("look-up at a base that ignores keys: %v", err)
	}
	if _, err := f.c.Probe(ctx); err == nil || !strings.Contains(err.Error(), codes.TargetIgnoresKeys) {
		t.Fatalf("check does not show it: %v", err)
	}
}

func TestExecute_Posting(t *testing.T) {
	t.Parallel()
	f := setup(t, 2*time.Second, nil)
	ctx := context.Background()
	res, err := f.c.Execute(ctx, invoiceOp("k-doc"))
	if err != nil {
		t.Fatal(err)
	}
	post := adapters.Op{Key: "k-post", Intent: "sales_order.post", Version: 1, Payload: json.RawMessage(`{"order_id":"` + res.ObjectID + `"}`)}
	f.sim.SetODataSettings(sim.ODataSettings{RefusePosting: "{Документ.СчетНаОплатуПокупателю.МодульОбъекта(42)}: Недостаточно товара на складе «Основной склад»\n" +
		`SELECT Ссылка FROM Документ.СчетНаОплату; Srvr="srv-1c.corp.local";Pwd="S3cr3t"`})
	_, err = f.c.Execute(ctx, post)
	ae := adapterstest.WantError(t, err, adapters.Final, codes.PostingRefused, "")
	if ae.Message != "Недостаточно товара на складе «Основной склад»" {
		t.Fatalf("message %q", ae.Message)
	}
	if _, err := f.c.Lookup(ctx, post); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("look-up of a refused posting: %v", err)
	}
	f.sim.SetODataSettings(sim.ODataSettings{})
	for range 2 { // posted, then already posted: success again, nothing sent
		got, err := f.c.Execute(ctx, post)
		if err != nil || got.ObjectID != res.ObjectID || got.Data["state"] != "posted" {
			t.Fatalf("post: %+v %v", got, err)
		}
	}
	if got, err := f.c.Lookup(ctx, post); err != nil || got.Data["state"] != "posted" {
		t.Fatalf("look-up of the posting: %+v %v", got, err)
	}
	missing := adapters.Op{Key: "k-post-2", Intent: "sales_order.post", Version: 1, Payload: json.RawMessage(`{"order_id":"` + onecodata.RefKey("x", "y", "z") + `"}`)}
	_, err = f.c.Execute(ctx, missing)
	if ae := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "order_id"); ae.Field != "order_id" {
		t.Fatalf("field %q", ae.Field)
	}
}

func TestExecute_References(t *testing.T) {
	t.Parallel()
	refs := onecodata.DefaultReferences()
	f := setup(t, 2*time.Second, refs)
	ctx := context.Background()
	for _, tc := range []struct{ customer, product, code, field string }{
		{"customer-404", "product-778", codes.ReferenceNotFound, "customer_id"},
		{"customer-1042", "product-deleted-1", codes.ReferenceInactive, "items[0].product_id"},
		{"customer-blocked-1", "product-778", codes.ReferenceInactive, "customer_id"},
	} {
		op := adapters.Op{Key: "k-" + tc.customer + tc.product, Intent: "invoice.create", Version: 1, Payload: declaredInvoice(tc.customer, tc.product)}
		_, err := f.c.Execute(ctx, op)
		if ae := adapterstest.WantError(t, err, adapters.Final, tc.code, tc.field); ae.Field != tc.field {
			t.Errorf("%s: field %q, want %q", tc.code, ae.Field, tc.field)
		}
	}
	if f.posts.Load() != 0 {
		t.Fatal("a create was sent with an unresolved reference")
	}

	// By ИНН, the branches of one firm are ambiguous; by ИНН+КПП, one.
	refs["customer"] = onecodata.Reference{Catalog: "Catalog_Контрагенты", By: []string{"ИНН"}}
	f = setup(t, 2*time.Second, refs)
	_, err := f.c.Execute(ctx, adapters.Op{Key: "k-amb", Intent: "invoice.create", Version: 1, Payload: declaredInvoice("7707083893", "product-778")})
	adapterstest.WantError(t, err, adapters.Final, codes.ReferenceAmbiguous, "customer_id")
	refs["customer"] = onecodata.Reference{Catalog: "Catalog_Контрагенты", By: []string{"ИНН", "КПП"}}
	f = setup(t, 2*time.Second, refs)
	plan, err := f.c.Validate(ctx, adapters.Op{Key: "k-kpp", Intent: "invoice.create", Version: 1, Payload: declaredInvoice("7707083893:165502001", "product-778")})
	if err != nil || plan.Data["body"].(map[string]any)["Контрагент_Key"] != sim.ODataRef("Catalog_Контрагенты", "customer-branch-b") {
		t.Fatalf("by ИНН+КПП: %v %v", plan.Data, err)
	}
	if _, err := onecodata.ParseBy("Description"); err == nil {
		t.Fatal("Description accepted as an identifying property")
	}
}

// Validate resolves every reference and names each 1C lacks, by its
// field, in the mapping's order; execute sends no create.
func TestValidate_EveryReference(t *testing.T) {
	t.Parallel()
	f := setup(t, 2*time.Second, onecodata.DefaultReferences())
	op := adapters.Op{Key: "k-every", Intent: "invoice.create", Version: 1, Payload: json.RawMessage(`{"order_id":"order-1",
		"organization_id":"org-main","customer_id":"customer-404","currency":"RUB",
		"items":[{"product_id":"product-404","quantity":1,"price_minor":100},{"product_id":"product-778","quantity":1,"price_minor":100},
		{"product_id":"product-deleted-1","quantity":1,"price_minor":100}]}`)}
	type problem struct{ code, field string }
	want := []problem{{codes.ReferenceNotFound, "customer_id"}, {codes.ReferenceNotFound, "items[0].product_id"},
		{codes.ReferenceInactive, "items[2].product_id"}}
	for _, call := range []func() error{
		func() error { _, err := f.c.Validate(context.Background(), op); return err },
		func() error { _, err := f.c.Execute(context.Background(), op); return err },
	} {
		e := adapterstest.WantError(t, call(), adapters.Final, want[0].code, want[0].field)
		got := []problem{{e.Code, e.Field}}
		for _, a := range e.Also {
			got = append(got, problem{a.Code, a.Field})
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("refused %v, want %v", got, want)
		}
	}
	if f.posts.Load() != 0 {
		t.Fatal("a create was sent with an unresolved reference")
	}
}
