package onecodata_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

// Failures are classified once, whatever call meets them.
func TestErrorsClassified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// A wrong password: 401, the gateway's user refused, retryable.
	f := setup(t, 2*time.Second, nil)
	bad, _ := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: f.server.URL + "/onec-odata/odata/standard.odata", Username: "buh", Password: "wrong"})
	bad.Bind(nil)
	_, err := bad.Probe(ctx)
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetPermissionDenied, "")

	// An object left out of the composition: 404 that is not code 9.
	f.sim.SetODataSettings(sim.ODataSettings{Unpublished: []string{"Document_СчетНаОплатуПокупателю"}})
	_, err = f.c.Execute(ctx, invoiceOp("k-unpublished"))
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, "")
	_, err = f.c.Probe(ctx)
	if ae := adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, ""); !strings.Contains(ae.Message, "invoice.create v1: not published: Document_СчетНаОплатуПокупателю") {
		t.Fatalf("check: %q", ae.Message)
	}
	f.sim.SetODataSettings(sim.ODataSettings{})
	what, err := f.c.Probe(ctx)
	if err != nil || !strings.Contains(what, "invoice.create v1") {
		t.Fatalf("check: %q %v", what, err)
	}

	// 503 from 1C's web server: nothing done, Retry.
	f.sim.Inject(sim.Fault{Target: sim.OneCOData, Fault: sim.FaultStatus, Status: 503})
	_, err = f.c.Execute(ctx, invoiceOp("k-503"))
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "")

	// A 1C error carrying a stack, SQL and credentials: code -1, final,
	// and none of it in the message.
	f.sim.Inject(sim.Fault{Target: sim.OneCOData, Fault: sim.FaultTargetError})
	_, err = f.c.Execute(ctx, invoiceOp("k-leak"))
	ae := adapterstest.WantError(t, err, adapters.Final, codes.TargetRejected, "")
	for _, leak := range []string{"SELECT", "Pwd", "srv-1c", "Basic ", "(1187)"} {
		if strings.Contains(ae.Message, leak) {
			t.Errorf("message leaks %q: %q", leak, ae.Message)
		}
	}

	// A reverse proxy's HTML pages and a 5xx without a body.
	for _, tc := range []struct {
		status int
		body   string
		code   string
		class  adapters.Class
	}{
		{404, "<html><body>404 - File or directory not found.</body></html>", codes.TargetNotPublished, adapters.Retry},
		{502, "<html><body>Bad Gateway</body></html>", codes.TargetUnavailable, adapters.Retry},
		{500, "", codes.OutcomeUnknown, adapters.Reconcile},
		{504, "<html>Gateway Time-out</html>", codes.OutcomeUnknown, adapters.Reconcile},
	} {
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "$metadata") || r.Method == http.MethodGet {
				f.sim.ServeHTTP(w, r) // reads pass through to 1C
				return
			}
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		}))
		c, _ := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: proxy.URL + "/onec-odata/odata/standard.odata", Username: "buh", Password: "sim"})
		bindInvoice(t, c)
		_, err = c.Execute(ctx, invoiceOp("k-proxy"))
		adapterstest.WantError(t, err, tc.class, tc.code, "")
		proxy.Close()
	}
}

func bindInvoice(t *testing.T, c *onecodata.Client) {
	t.Helper()
	if err := c.Bind(bindings()); err != nil {
		t.Fatal(err)
	}
}

// Bind refuses, with the path inside the definition, what cannot be sent.
func TestBindRefusals(t *testing.T) {
	t.Parallel()
	c, _ := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: "http://127.0.0.1:1/buh/odata/standard.odata", Username: "u"})
	for _, tc := range []struct{ m, want string }{
		{`{"entity":"Document_X","fields":{"Ref_Key":{"from":"order_id"}}}`, "map.fields.Ref_Key"},
		{`{"entity":"InformationRegister_X","fields":{"Комментарий":{"from":"order_id"}}}`, "map.entity"},
		{`{"entity":"Document_X","fields":{"Комментарий":{"from":"nope"}}}`, "map.fields.Комментарий.from"},
		{`{"post":{"entity":"Document_X","document":"nope"}}`, "map.post.document"},
		{`{"entity":"Document_X","method":"x"}`, "map"},
	} {
		err := c.Bind([]adapters.Binding{{Intent: "x.create", Version: 1, Schema: []byte(postSchema), Map: []byte(tc.m)}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.m, err, tc.want)
		}
	}
}

// What goes on the wire is what 1C's documentation and every client seen
// working send: the key segment (guid'…') and the $-options literal, only
// names and values percent-encoded, a space as %20.
func TestURLsLiteralOnTheWire(t *testing.T) {
	t.Parallel()
	s := sim.New()
	var mu sync.Mutex
	var uris []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uris = append(uris, r.Method+" "+r.RequestURI)
		mu.Unlock()
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: srv.URL + sim.ODataPath, Username: "buh", Password: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	bindInvoice(t, c)
	ctx := context.Background()
	res, err := c.Execute(ctx, invoiceOp("k-wire"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(ctx, invoiceOp("k-wire")); err != nil {
		t.Fatal(err)
	}
	post := adapters.Op{Key: "k-wire-post", Intent: "sales_order.post", Version: 1, Payload: json.RawMessage(`{"order_id":"` + res.ObjectID + `"}`)}
	if _, err := c.Execute(ctx, post); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Describe(ctx, "counterparty", "customer-1042"); err != nil {
		t.Fatal(err)
	}

	root := sim.ODataPath + "/"
	invoices := url.PathEscape("Document_СчетНаОплатуПокупателю")
	customers := url.PathEscape("Catalog_Контрагенты")
	for _, want := range []string{
		"POST " + root + invoices + "?$format=json",
		"GET " + root + invoices + "(guid'" + res.ObjectID + "')?$format=json",
		"POST " + root + invoices + "(guid'" + res.ObjectID + "')/Post?PostingModeOperational=false",
		"GET " + root + customers + "?$filter=Code%20eq%20'customer-1042'&$format=json&$select=Ref_Key,DeletionMark&$top=2",
		"GET " + root + customers + "?$filter=Code%20eq%20'customer-1042'&$format=json&$select=Description,%D0%98%D0%9D%D0%9D,%D0%9A%D0%9F%D0%9F&$top=2",
	} {
		if !slices.Contains(uris, want) {
			t.Errorf("never sent %s", want)
		}
	}
	for _, u := range uris {
		if strings.Contains(u, "%28") || strings.Contains(u, "%27") || strings.Contains(u, "%24") || strings.Contains(u, "+") {
			t.Errorf("sent percent-encoded syntax or a '+': %s", u)
		}
	}
	if t.Failed() {
		t.Logf("sent:\n%s", strings.Join(uris, "\n"))
	}
}
