package bitrix24_test

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
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

// The recorded-wire corpus of Bitrix24 (testdata/wire): exchanges of the
// REST API from its reference, integrators' reports and the
// documentation team's own corrections. The adapter is pinned to it by a
// replay, the simulator by answering its requests.

const (
	wireDir     = "testdata/wire"
	wireWebhook = "/rest/1/corpus-secret/" // the corpus's webhook
	wireRevoked = "/rest/1/revoked-secret/"
)

// wireCallback is the crm.callback.create of the corpus's requests: for
// customer-1042, due 2026-05-01 10:00 UTC, with its event number's key.
func wireCallback(t *testing.T, event string) adapters.Op {
	op := newOp(t, "customer-1042")
	op.Key = "wire:crm.callback.create:" + event + ":v1"
	return op
}

// b24Case is one replay: the exchanges mounted, what the adapter is asked,
// and what it must make of the answers.
type b24Case struct {
	files    []string
	webhook  string // wireWebhook when empty
	declared bool   // the client has deal.create bound
	run      func(context.Context, *bitrix24.Client) (adapters.Result, error)
	id       string // the object, for a success
	notFound bool
	class    adapters.Class
	code     string
	field    string
	words    []string // the message says each
}

// TestWireReplay: the adapter against a server that answers with the
// corpus. A request the mounted exchanges do not hold fails the test, so
// the adapter's requests are pinned too (method, path, and the filter or
// fields each file matches on); every corpus file is mounted by a case.
func TestWireReplay(t *testing.T) {
	t.Parallel()
	corpus := adapterstest.LoadWire(t, wireDir)
	execute := func(op adapters.Op) func(context.Context, *bitrix24.Client) (adapters.Result, error) {
		return func(ctx context.Context, c *bitrix24.Client) (adapters.Result, error) { return c.Execute(ctx, op) }
	}
	lookup := func(op adapters.Op) func(context.Context, *bitrix24.Client) (adapters.Result, error) {
		return func(ctx context.Context, c *bitrix24.Client) (adapters.Result, error) { return c.Lookup(ctx, op) }
	}
	check := func(op adapters.Op, id string) func(context.Context, *bitrix24.Client) (adapters.Result, error) {
		return func(ctx context.Context, c *bitrix24.Client) (adapters.Result, error) {
			return c.CheckObject(ctx, op, id)
		}
	}
	unknownCustomer := newOp(t, "customer-9999")
	unknownCustomer.Key = "wire:crm.callback.create:event-7:v1"
	deal := dealOp(t, defaultDeal())
	deal.Key = "wire:deal.create:d-1:v1"
	denied := adapters.Retry // a webhook that cannot act: Misconfigured
	cases := map[string]b24Case{
		"callback made":             {files: []string{"contact_list_customer", "activity_add_callback"}, run: execute(wireCallback(t, "event-1")), id: "999"},
		"customer unknown":          {files: []string{"contact_list_none"}, run: execute(unknownCustomer), class: adapters.Final, code: codes.ReferenceNotFound, field: "customer_id"},
		"callback found by key":     {files: []string{"activity_list_by_origin"}, run: lookup(wireCallback(t, "event-1")), id: "999"},
		"callback not found":        {files: []string{"activity_list_none", "user_admin_true"}, run: lookup(wireCallback(t, "event-2")), notFound: true},
		"callback hidden by rights": {files: []string{"activity_list_none", "user_admin_false"}, run: lookup(wireCallback(t, "event-2")), class: adapters.Reconcile, code: codes.OutcomeUnknown},
		"activity id unknown":       {files: []string{"activity_get_not_found"}, run: check(wireCallback(t, "event-1"), "424242"), notFound: true},
		"deal made":                 {files: []string{"contact_list_customer", "deal_add"}, declared: true, run: execute(deal), id: "394"},
		"deal found by key":         {files: []string{"deal_list_by_origin"}, declared: true, run: lookup(deal), id: "394"},
		"deal id unknown":           {files: []string{"deal_get_not_found"}, declared: true, run: check(deal, "424242"), notFound: true},
		"webhook unknown":           {files: []string{"wrong_webhook"}, webhook: wireRevoked, run: lookup(wireCallback(t, "event-1")), class: denied, code: codes.TargetPermissionDenied},
		"webhook credentials":       {files: []string{"invalid_credentials"}, webhook: wireRevoked, run: lookup(wireCallback(t, "event-1")), class: denied, code: codes.TargetPermissionDenied},
		"no crm scope":              {files: []string{"method_not_found"}, run: lookup(wireCallback(t, "event-1")), class: denied, code: codes.TargetPermissionDenied},
		"no REST on the plan":       {files: []string{"rest_not_on_plan"}, run: lookup(wireCallback(t, "event-1")), class: denied, code: codes.TargetPermissionDenied, words: []string{"plan", "REST"}},
		"request rate":              {files: []string{"contact_list_customer", "query_limit"}, run: execute(wireCallback(t, "event-3")), class: adapters.Retry, code: codes.TargetUnavailable},
		"method time":               {files: []string{"contact_list_customer", "operation_time_limit"}, run: execute(wireCallback(t, "event-4")), class: adapters.Retry, code: codes.TargetUnavailable},
		"plan ended":                {files: []string{"contact_list_customer", "payment_required"}, run: execute(wireCallback(t, "event-5")), class: adapters.Retry, code: codes.TargetUnavailable},
		"no right to add":           {files: []string{"contact_list_customer", "activity_add_access_denied"}, run: execute(wireCallback(t, "event-6")), class: denied, code: codes.TargetPermissionDenied},
	}
	mounted := map[string]bool{}
	for _, tc := range cases {
		for _, f := range tc.files {
			mounted[f] = true
		}
	}
	for name := range corpus {
		if !mounted[name] {
			t.Errorf("corpus exchange %s is mounted by no replay case: say what the adapter makes of it", name)
		}
	}
	for name, tc := range cases {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			var exchanges []adapterstest.WireExchange
			for _, f := range tc.files {
				e, ok := corpus[f]
				if !ok {
					t.Fatalf("no corpus file %s.txt", f)
				}
				exchanges = append(exchanges, e)
			}
			webhook := tc.webhook
			if webhook == "" {
				webhook = wireWebhook
			}
			rp := adapterstest.ReplayWire(t, webhook, exchanges...)
			c, err := bitrix24.New(bitrix24.Config{WebhookURL: rp.URL, Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if tc.declared {
				mustBind(t, c, dealBinding(dealMap))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := tc.run(ctx, c)
			for _, f := range tc.files {
				if rp.Count(f) == 0 {
					t.Errorf("the adapter never sent %s's request (result %+v, err %v)", f, res, err)
				}
			}
			switch {
			case tc.id != "":
				if err != nil || res.ObjectID != tc.id {
					t.Fatalf("got %+v, %v; want the record %s", res, err, tc.id)
				}
			case tc.notFound:
				if !errors.Is(err, adapters.ErrNotFound) {
					t.Fatalf("got %+v, %v; want not found", res, err)
				}
			default:
				e := adapterstest.WantError(t, err, tc.class, tc.code, tc.field, "corpus-secret", "revoked-secret")
				for _, w := range tc.words {
					if !strings.Contains(e.Message, w) {
						t.Errorf("message %q does not say %q", e.Message, w)
					}
				}
			}
		})
	}
}

// b24Read are the fields of Bitrix24's answers the adapter reads; the
// code, error, is compared exactly, error_description less a final
// period (the reference's tables drop it, the portal's answers have it).
var b24Read = []string{"result", "result.*.ID", "result.*.OWNER_ID", "result.*.OWNER_TYPE_ID", "result.*.ORIGINATOR_ID",
	"result.*.ORIGIN_ID", "result.*.ASSIGNED_BY_ID", "result.*.PHONE", "result.*.PHONE.*.VALUE",
	"result.*.UF_CRM_ONCEGATE_BLOCKED", "total", "next", "time", "error", "error_description"}

// TestWireSimulator: the simulated portal answers each request of the
// corpus with the recorded status and error code and text, and an answer
// of the recorded shape in what the adapter reads. Each case first puts
// the portal in the recording's situation; the portal's own ids are put
// in place of the recording's (contact 75 is its customer-1042, 1).
func TestWireSimulator(t *testing.T) {
	t.Parallel()
	corpus := adapterstest.LoadWire(t, wireDir)
	for name, e := range corpus {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if why := e.Field("simulator"); why != "" {
				t.Skip("not played by the simulator: " + why)
			}
			s := sim.New()
			hs := httptest.NewServer(s)
			t.Cleanup(hs.Close)
			webhook := "/bitrix24" + sim.Bitrix24WebhookPath()
			replace := map[string]string{wireWebhook: webhook, wireRevoked: "/bitrix24" + wireRevoked, `"75"`: `"1"`}
			b24Situation(t, s, hs.URL+webhook, e, corpus, replace)
			status, body := adapterstest.WireDo(t, adapterstest.WireRequest(t, hs.URL, e, replace))
			if status != e.Status {
				t.Errorf("status %d, recorded %d: %s", status, e.Status, body)
			}
			for _, d := range e.WireShape(body, b24Read, []string{"error"}) {
				t.Errorf("%s (answer %s)", d, body)
			}
			var rec, got struct {
				Description *string `json:"error_description"`
			}
			json.Unmarshal(e.RespBody, &rec)
			json.Unmarshal(body, &got)
			if rec.Description != nil && (got.Description == nil || strings.TrimSuffix(*got.Description, ".") != strings.TrimSuffix(*rec.Description, ".")) {
				t.Errorf("error_description %v, recorded %q", b24Text(got.Description), *rec.Description)
			}
		})
	}
}

func b24Text(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}

// b24Situation puts the simulated portal where the recording was: the
// records it reads made, its limits reached, its plan ended.
func b24Situation(t *testing.T, s *sim.Server, base string, e adapterstest.WireExchange, all map[string]adapterstest.WireExchange, replace map[string]string) {
	t.Helper()
	portal := sim.DefaultBitrix24Portal()
	body := func(name string) string {
		b := string(all[name].Body)
		for old, repl := range replace {
			b = strings.ReplaceAll(b, old, repl)
		}
		return b
	}
	switch e.Name {
	case "activity_list_by_origin":
		b24Post(t, base, "crm.activity.add", body("activity_add_callback"), http.StatusOK)
	case "deal_list_by_origin":
		b24Post(t, base, "crm.deal.add", body("deal_add"), http.StatusOK)
	case "user_admin_false":
		portal.Admins = nil
		s.SetBitrix24Portal(portal)
	case "query_limit":
		portal.PerSecond, portal.Bucket = 0.001, 1
		s.SetBitrix24Portal(portal)
		b24Post(t, base, "user.admin", `{}`, http.StatusOK)
	case "operation_time_limit":
		portal.OperatingBudget, portal.OperatingPerCall = time.Second, 2*time.Second
		s.SetBitrix24Portal(portal)
		b24Post(t, base, "crm.activity.add", body("activity_add_callback"), http.StatusOK)
	case "payment_required":
		portal.SubscriptionEnded = true
		s.SetBitrix24Portal(portal)
	}
}

// b24Post calls the simulated portal to set a situation up.
func b24Post(t *testing.T, base, method, body string, want int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+method+".json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if status, answer := adapterstest.WireDo(t, req); status != want {
		t.Fatalf("setting up with %s: %d %s", method, status, answer)
	}
}
