package onecodata_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/onecodata/wirecorpus"
)

// replayRoot is where the replaying server publishes the interface.
const replayRoot = "/buh/odata/standard.odata/"

// ownKey is the Ref_Key 1C chooses in the corpus's {own}.
const ownKey = "0c2b8a7e-5d1f-11ef-8b2a-0050569f3a11"

// replayMap writes what the corpus's create sends: the organization and
// the product as constants, the customer by its Code, the order's id
// into Комментарий (or into Number, for the truncation).
func replayMap(orderInto string) string {
	return `{"entity":"Document_СчетНаОплатуПокупателю","fields":{
 "Организация_Key":{"value":"a1000000-0000-1000-8000-000000000001"},"Контрагент_Key":{"ref":"customer_id"},
 "` + orderInto + `":{"from":"order_id"},
 "Товары":{"from":"items","row":{"Номенклатура_Key":{"value":"a3000000-0000-1000-8000-000000000778"},"Количество":{"from":"quantity"},
  "Цена":{"from":"price_minor","money":"minor"}}}}}`
}

// replay is a server answering the adapter with the corpus's exchanges
// named, and a test failure for any request none of them is.
type replay struct {
	t    *testing.T
	ref  string
	base string
	mu   sync.Mutex
	seen []string
	ex   []wirecorpus.Exchange
}

func (rp *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	got := r.Method + " " + wirecorpus.Canonical(strings.TrimPrefix(r.URL.EscapedPath(), replayRoot), r.URL.RawQuery, true)
	rp.mu.Lock()
	rp.seen = append(rp.seen, got)
	rp.mu.Unlock()
	for _, ex := range rp.ex {
		path, query := wirecorpus.Split(wirecorpus.Fill(ex.Request.Path, rp.ref, ownKey, rp.base))
		if got != ex.Request.Method+" "+wirecorpus.Canonical(path, query, false) {
			continue
		}
		a := ex.Answer
		for k, v := range a.Headers {
			w.Header().Set(k, wirecorpus.Fill(v, rp.ref, ownKey, rp.base))
		}
		switch {
		case a.XML != "":
			w.Header().Set("Content-Type", a.ContentType+";charset=utf-8")
			w.WriteHeader(a.Status)
			io.WriteString(w, a.XML)
		case len(a.Body) > 0:
			w.Header().Set("Content-Type", "application/json;charset=utf-8")
			w.WriteHeader(a.Status)
			w.Write(wirecorpus.FillJSON(a.Body, rp.ref, ownKey, rp.base))
		default:
			w.WriteHeader(a.Status)
		}
		return
	}
	rp.t.Errorf("the adapter sent %s, which no exchange of the scenario is", got)
	w.WriteHeader(http.StatusTeapot)
}

// TestWireCorpus_Adapter drives the adapter against a server that replays
// the recorded corpus: what it makes of each answer 1C gives is what a
// user relies on (one document, "exists" settled by the key, the
// configuration's refusal with its message, a cut value named).
func TestWireCorpus_Adapter(t *testing.T) {
	t.Parallel()
	corpus, err := wirecorpus.Load("testdata/wire")
	if err != nil {
		t.Fatal(err)
	}
	const key = "k-wire"
	ref := onecodata.RefKey("buh", "invoice.create", key)
	payload := func(order string) json.RawMessage {
		return json.RawMessage(`{"order_id":"` + order + `","organization_id":"org-main","customer_id":"customer-1042","currency":"RUB","items":[{"product_id":"p","quantity":2,"price_minor":62500}]}`)
	}
	create := adapters.Op{Key: key, Intent: "invoice.create", Version: 1, Payload: payload("order-1"), Attempt: 1}
	post := adapters.Op{Key: "k-post", Intent: "sales_order.post", Version: 1, Payload: json.RawMessage(`{"order_id":"` + ref + `"}`), Attempt: 1}
	for _, tc := range []struct {
		name      string
		files     []string
		orderInto string
		keyField  string
		run       func(*onecodata.Client) outcome
		check     func(*testing.T, outcome)
	}{
		{"Create", []string{"metadata.json", "lookup-reference.json", "create.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), create)
				return outcome{r, err}
			},
			func(t *testing.T, o outcome) {
				if o.err != nil || o.r.ObjectID != ref || o.r.Data["number"] != "0000-000001" || o.r.Data[onecodata.ChangedKey] != nil {
					t.Fatalf("%+v %v, want the document under the operation's key", o.r, o.err)
				}
			}},
		{"DuplicateSettledByKey", []string{"metadata.json", "lookup-reference.json", "duplicate.json", "get-by-key.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), create)
				return outcome{r, err}
			},
			func(t *testing.T, o outcome) {
				if o.err != nil || o.r.ObjectID != ref {
					t.Fatalf("%+v %v, want the existing document as this operation's", o.r, o.err)
				}
			}},
		{"IgnoredKey", []string{"metadata.json", "lookup-reference.json", "create-ignoring-key.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), create)
				return outcome{r, err}
			},
			wantCode(codes.TargetIgnoresKeys, "")},
		{"LookupByKeyField", []string{"metadata.json", "lookup-by-key-field.json"}, "Комментарий", "КлючОперации",
			func(c *onecodata.Client) outcome {
				r, err := c.Lookup(context.Background(), create)
				return outcome{r, err}
			},
			func(t *testing.T, o outcome) {
				if o.err != nil || o.r.ObjectID != ref {
					t.Fatalf("%+v %v, want the document found by its key_field", o.r, o.err)
				}
			}},
		{"LookupNotFound", []string{"get-not-found.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Lookup(context.Background(), create)
				return outcome{r, err}
			},
			func(t *testing.T, o outcome) {
				if !errors.Is(o.err, adapters.ErrNotFound) {
					t.Fatalf("%v, want not found", o.err)
				}
			}},
		{"RefusedByConfiguration", []string{"metadata.json", "lookup-reference.json", "refused-by-configuration.json", "get-not-found.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), create)
				return outcome{r, err}
			},
			wantCode(codes.TargetRejected, "1C refused: Документ с таким номером заказа уже введен")},
		{"InternalError", []string{"metadata.json", "lookup-reference.json", "internal-error.json", "get-not-found.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), create)
				return outcome{r, err}
			},
			wantCode(codes.OutcomeUnknown, "1C failed internally")},
		{"Truncated", []string{"metadata.json", "lookup-reference.json", "truncated.json"}, "Number", "",
			func(c *onecodata.Client) outcome {
				op := create
				op.Payload = payload("order-2026-000123")
				r, err := c.Execute(context.Background(), op)
				return outcome{r, err}
			},
			func(t *testing.T, o outcome) {
				ch, _ := o.r.Data[onecodata.ChangedKey].([]map[string]any)
				if o.err != nil || len(ch) != 1 || ch[0]["field"] != "order_id" || !strings.Contains(ch[0]["message"].(string), "cut Number to 11 characters") {
					t.Fatalf("%+v %v, want the cut Number named", o.r, o.err)
				}
			}},
		{"UnknownPropertyNeverSent", []string{"metadata.json"}, "НетТакогоСвойства", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), create)
				return outcome{r, err}
			},
			wantCode(codes.TargetNotPublished, "НетТакогоСвойства")},
		{"NotPublished", []string{"metadata.json", "lookup-reference.json", "not-published.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), create)
				return outcome{r, err}
			},
			wantCode(codes.TargetNotPublished, "")},
		{"AuthFailed", []string{"auth-failed.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Lookup(context.Background(), create)
				return outcome{r, err}
			},
			wantCode(codes.TargetPermissionDenied, "")},
		{"PostRefused", []string{"metadata.json", "get-by-key.json", "post-refused.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), post)
				return outcome{r, err}
			},
			wantCode(codes.PostingRefused, `Не удалось провести "X"`)},
		{"PostRefusedXML", []string{"metadata.json", "get-by-key.json", "post-refused-xml.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), post)
				return outcome{r, err}
			},
			wantCode(codes.PostingRefused, "Error running processor — 'ОбработкаУдаленияПроведения'")},
		{"PostOK", []string{"metadata.json", "get-by-key.json", "post-ok.json"}, "Комментарий", "",
			func(c *onecodata.Client) outcome {
				r, err := c.Execute(context.Background(), post)
				return outcome{r, err}
			},
			func(t *testing.T, o outcome) {
				if o.err != nil || o.r.Data["state"] != "posted" {
					t.Fatalf("%+v %v, want posted", o.r, o.err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rp := &replay{t: t, ref: ref}
			for _, f := range tc.files {
				ex, ok := corpus[f]
				if !ok {
					t.Fatalf("no %s in the corpus", f)
				}
				rp.ex = append(rp.ex, ex)
			}
			srv := httptest.NewServer(rp)
			defer srv.Close()
			rp.base = srv.URL + replayRoot
			c, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: srv.URL + strings.TrimSuffix(replayRoot, "/"),
				Username: "buh", Password: "secret", Timeout: 2 * time.Second, KeyField: tc.keyField})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Bind([]adapters.Binding{
				{Intent: "invoice.create", Version: 1, Schema: json.RawMessage(invoiceSchema), Map: json.RawMessage(replayMap(tc.orderInto)),
					References: map[string]string{"customer_id": "customer"}},
				{Intent: "sales_order.post", Version: 1, Schema: json.RawMessage(postSchema), Map: json.RawMessage(postMap)},
			})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, tc.run(c))
		})
	}
}

// outcome is what the adapter made of a scenario.
type outcome struct {
	r   adapters.Result
	err error
}

// wantCode checks an outcome is a refusal with code whose message holds msg.
func wantCode(code, msg string) func(*testing.T, outcome) {
	return func(t *testing.T, o outcome) {
		t.Helper()
		var ae *adapters.Error
		if !errors.As(o.err, &ae) || ae.Code != code || !strings.Contains(ae.Message, msg) {
			t.Fatalf("%+v %v, want %s saying %q", o.r, o.err, code, msg)
		}
	}
}
