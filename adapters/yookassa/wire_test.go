package yookassa_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

// The recorded-wire corpus of YooKassa (testdata/wire): exchanges of the
// real API from its documentation, its SDKs and shops' logs. The adapter
// is pinned to it by a replay, the simulator by answering its requests.

const wireDir = "testdata/wire"

// wireMethod is the saved payment method the corpus's charges name,
// wireRefund the refund its refunds make.
const (
	wireMethod = "22f4d39f-000f-5000-9000-1549325826d3"
	wireRefund = "216749f7-0016-50be-b000-078d43a63ae4"
)

func wireCharge(tb testing.TB, order string) adapters.Op {
	return adapters.Op{Key: "wire:payment.charge:" + order + ":v1", Intent: yookassa.IntentCharge, Attempt: 1,
		Payload: payload(tb, map[string]any{"account_id": wireMethod, "order_id": order, "amount_minor": 202500, "currency": "RUB"})}
}

// wireWant is what the adapter must make of an answer: the object's id
// for a success, else the error's class, code and field.
type wireWant struct {
	id                string
	notFound          bool
	class             adapters.Class
	code, field       string
	inProgress        bool
	retryAfterAtLeast int
	shopID, secret    string // other credentials than the corpus's shop
	receipts          yookassa.Receipts
	run               func(context.Context, *yookassa.Client) (adapters.Result, error)
	minor             int64 // the amount read, when checked
}

// TestWireReplay: the adapter against a server that answers with the
// corpus, one case per exchange the adapter relies on. A request the
// corpus does not hold fails the test, so the adapter's requests are
// pinned too (method, path and the parts each file matches on).
func TestWireReplay(t *testing.T) {
	t.Parallel()
	corpus := adapterstest.LoadWire(t, wireDir)
	ctx := context.Background()
	execute := func(op adapters.Op) func(context.Context, *yookassa.Client) (adapters.Result, error) {
		return func(ctx context.Context, c *yookassa.Client) (adapters.Result, error) { return c.Execute(ctx, op) }
	}
	lookup := func(op adapters.Op) func(context.Context, *yookassa.Client) (adapters.Result, error) {
		return func(ctx context.Context, c *yookassa.Client) (adapters.Result, error) { return c.Lookup(ctx, op) }
	}
	byID := wireCharge(t, "order-69")
	byID.ObjectID = wireMethod
	unknown := wireCharge(t, "order-69")
	unknown.ObjectID = "00000000-0000-0000-0000-000000000000"
	malformed := wireCharge(t, "order-69")
	malformed.ObjectID = "order-48291"
	declined := wireCharge(t, "order-76")
	declined.Payload = payload(t, map[string]any{"account_id": wireMethod, "order_id": "order-76", "amount_minor": 2000, "currency": "RUB"})
	reused := wireCharge(t, "order-71")
	reused.Payload = payload(t, map[string]any{"account_id": wireMethod, "order_id": "order-71", "amount_minor": 9900, "currency": "RUB"})
	unknownMethod := wireCharge(t, "order-72")
	unknownMethod.Payload = payload(t, map[string]any{"account_id": "2b0d7f33-000f-5000-9000-000000000000", "order_id": "order-72", "amount_minor": 202500, "currency": "RUB"})
	withReceipt := wireCharge(t, "order-vpn")
	withReceipt.Payload = payload(t, map[string]any{"account_id": wireMethod, "order_id": "order-vpn", "amount_minor": 19000, "currency": "RUB",
		"receipt": map[string]any{"email": "payer@example.com", "items": []any{map[string]any{"description": "VPN", "quantity": 1, "price_minor": 19000, "payment_subject": "goods"}}}})
	refundByID := adapters.Op{Key: "wire:payment.refund:order-69:v1", Intent: yookassa.IntentRefund, Attempt: 1, ObjectID: wireRefund,
		Payload: payload(t, map[string]any{"payment_id": "216749da-000f-50be-b000-096747fad91e", "amount_minor": 100, "currency": "RUB"})}
	refund := adapters.Op{Key: "wire:payment.refund:order-69:v1", Intent: yookassa.IntentRefund, Attempt: 1,
		Payload: payload(t, map[string]any{"payment_id": wireMethod, "amount_minor": 100, "currency": "RUB", "reason": "Damaged item"})}

	cases := map[string]wireWant{
		"payment_create_succeeded":       {run: execute(wireCharge(t, "order-69")), id: "2a4c5b1e-000f-5000-8000-1b2c3d4e5f60", minor: 202500},
		"payment_create_processing":      {run: execute(wireCharge(t, "order-70")), class: adapters.Retry, code: codes.OutcomeUnknown, inProgress: true, retryAfterAtLeast: 2},
		"payment_create_key_reused":      {run: execute(reused), class: adapters.Reconcile, code: codes.OutcomeUnknown},
		"payment_create_method_unknown":  {run: execute(unknownMethod), class: adapters.Final, code: codes.ReferenceNotFound, field: "account_id"},
		"payment_create_receipt_refused": {run: execute(withReceipt), class: adapters.Final, code: codes.Validation, field: "receipt", receipts: yookassa.Receipts{VatCode: 1, PaymentMode: "full_payment"}},
		"payment_create_unauthorized":    {run: execute(wireCharge(t, "order-69")), class: adapters.Retry, code: codes.TargetPermissionDenied, shopID: "123456", secret: "wrong"},
		"payment_create_forbidden":       {run: execute(wireCharge(t, "order-73")), class: adapters.Retry, code: codes.TargetPermissionDenied},
		"payment_create_too_many":        {run: execute(wireCharge(t, "order-74")), class: adapters.Retry, code: codes.TargetUnavailable, retryAfterAtLeast: 1},
		"payment_create_unknown":         {run: execute(wireCharge(t, "order-75")), class: adapters.Reconcile, code: codes.OutcomeUnknown},
		"payment_create_declined":        {run: execute(declined), class: adapters.Final, code: codes.PaymentDeclined},
		"payment_get_not_found":          {run: lookup(unknown), notFound: true},
		"payment_get_malformed_id":       {run: lookup(malformed), notFound: true},
		"payment_get_succeeded":          {run: lookup(byID), id: wireMethod},
		"payments_list_other":            {run: lookup(wireCharge(t, "order-69")), notFound: true},
		"payments_list_with_key":         {run: lookup(wireCharge(t, "order-69")), id: "2a4c5b1e-000f-5000-8000-1b2c3d4e5f60"},
		"refund_create_succeeded":        {run: execute(refund), id: wireRefund, minor: 100},
		"refund_get_succeeded":           {run: lookup(refundByID), id: wireRefund, minor: 100},
	}
	for name := range corpus {
		if _, ok := cases[name]; !ok {
			t.Errorf("corpus exchange %s has no replay case: say what the adapter makes of it", name)
		}
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, ok := corpus[name]
			if !ok {
				t.Fatalf("no corpus file %s.txt", name)
			}
			rp := adapterstest.ReplayWire(t, "/v3", e)
			shop, secret := "demo-shop", "corpus-secret"
			if want.shopID != "" {
				shop, secret = want.shopID, want.secret
			}
			c := MustNew(t, yookassa.Config{BaseURL: rp.URL, ShopID: shop, SecretKey: secret, Receipts: want.receipts})
			res, err := want.run(ctx, c)
			if rp.Count(name) == 0 {
				t.Fatalf("the adapter never sent the recorded request (err %v)", err)
			}
			wantWire(t, want, res, err, secret)
		})
	}
}

// wantWire asserts the adapter's outcome of one replayed exchange.
func wantWire(t *testing.T, want wireWant, res adapters.Result, err error, secret string) {
	t.Helper()
	switch {
	case want.id != "":
		if err != nil || res.ObjectID != want.id {
			t.Fatalf("got %+v, %v; want the object %s", res, err, want.id)
		}
		if want.minor != 0 && res.Data["amount_minor"] != want.minor {
			t.Fatalf("amount_minor %v, want %d", res.Data["amount_minor"], want.minor)
		}
	case want.notFound:
		if !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("got %+v, %v; want not found", res, err)
		}
	default:
		e := adapterstest.WantError(t, err, want.class, want.code, want.field, secret)
		if e.InProgress != want.inProgress || e.RetryAfter < want.retryAfterAtLeast {
			t.Fatalf("in progress %v, retry after %d s; want %v, at least %d s", e.InProgress, e.RetryAfter, want.inProgress, want.retryAfterAtLeast)
		}
	}
}

// ykRead are the fields of YooKassa's answers the adapter reads; ykExact
// those whose value it acts on.
var (
	ykRead = []string{"type", "id", "code", "parameter", "retry_after", "status", "paid", "amount.value", "amount.currency",
		"refunded_amount.value", "created_at", "metadata", "cancellation_details.reason", "payment_method.id", "payment_method.saved",
		"payment_id", "items", "items.*.id", "items.*.status", "items.*.metadata", "items.*.amount.value", "next_cursor"}
	ykExact = []string{"type", "code", "parameter", "status", "paid", "amount.currency", "items.*.status"}
)

// TestWireSimulator: the simulator answers each request of the corpus with
// the recorded status, error code and parameter, and an answer of the
// recorded shape in what the adapter reads. Each case first puts the
// simulated shop in the recording's situation; ids the simulator gives are
// put in place of the recording's.
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
			base := hs.URL + "/yookassa"
			replace := ykSituation(t, s, base, e)
			req := adapterstest.WireRequest(t, base, e, replace)
			if req.Header.Get("Authorization") == "" {
				req.SetBasicAuth(shopID, sim.YooKassaSecret())
			}
			status, body := adapterstest.WireDo(t, req)
			if status != e.Status {
				t.Errorf("status %d, recorded %d: %s", status, e.Status, body)
			}
			for _, d := range e.WireShape(body, ykRead, ykExact) {
				t.Errorf("%s (answer %s)", d, body)
			}
		})
	}
}

// ykSituation puts the simulated shop where the recording was and returns
// the ids to put in place of the recording's.
func ykSituation(t *testing.T, s *sim.Server, base string, e adapterstest.WireExchange) map[string]string {
	t.Helper()
	replace := map[string]string{wireMethod: "merchant-account-17"}
	switch e.Name {
	case "payment_create_processing":
		s.SetYooKassaMode(sim.YooKassaMode{Processing: 1, RetryAfterMS: 1800})
	case "payment_create_too_many":
		s.SetYooKassaMode(sim.YooKassaMode{TooManyRequests: 1})
	case "payment_create_unknown":
		s.SetYooKassaMode(sim.YooKassaMode{FailAfterCommit: 1})
	case "payment_create_key_reused":
		// The key's first request, of another amount.
		first := strings.Replace(string(e.Body), `"99.00"`, `"2025.00"`, 1)
		ykPost(t, base, "/v3/payments", e.Header.Get("Idempotence-Key"), strings.ReplaceAll(first, wireMethod, "merchant-account-17"))
	case "payment_create_declined":
		// The simulated network declines from an amount on.
		replace[`"20.00"`] = `"1000000.00"`
	case "payment_create_receipt_refused":
		s.SetYooKassaMode(sim.YooKassaMode{RequireReceipts: true})
	case "payments_list_other":
		// A payment another integration made, without the operation's keys.
		ykPost(t, base, "/v3/payments", "wire-setup-other", `{"amount":{"value":"2025.00","currency":"RUB"},"capture":true,"payment_method_id":"merchant-account-17","metadata":{"order_id":"69"}}`)
	case "refund_get_succeeded":
		// A refund of a payment the simulator made, read by its id.
		body := `{"amount":{"value":"2025.00","currency":"RUB"},"capture":true,"payment_method_id":"merchant-account-17"}`
		pay := ykPost(t, base, "/v3/payments", "wire-setup-pay", body)
		ref := ykPost(t, base, "/v3/refunds", "wire-setup-ref", `{"payment_id":"`+pay+`","amount":{"value":"1.00","currency":"RUB"}}`)
		replace = map[string]string{wireRefund: ref}
	case "payment_get_succeeded", "refund_create_succeeded", "payments_list_with_key":
		// The payment the recording reads or refunds, made by the charge
		// of payment_create_succeeded's request.
		key := "wire-setup-" + e.Name
		body := fmt.Sprintf(`{"amount":{"value":"2025.00","currency":"RUB"},"capture":true,"payment_method_id":"merchant-account-17","metadata":{"operation_key":"wire:payment.charge:order-69:v1","idempotence_key":%q}}`, yookassa.IdempotenceKey("wire:payment.charge:order-69:v1"))
		id := ykPost(t, base, "/v3/payments", key, body)
		replace = map[string]string{wireMethod: id}
	}
	return replace
}

// ykPost makes an object at the simulator and returns its id.
func ykPost(t *testing.T, base, path, key, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(shopID, sim.YooKassaSecret())
	req.Header.Set("Idempotence-Key", key)
	req.Header.Set("Content-Type", "application/json")
	status, answer := adapterstest.WireDo(t, req)
	var v struct {
		ID string `json:"id"`
	}
	if status != http.StatusOK || json.Unmarshal(answer, &v) != nil || v.ID == "" {
		t.Fatalf("setting up: %d %s", status, answer)
	}
	return v.ID
}
