package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

// ykFixture is one simulator on loopback.
type ykFixture struct {
	sim *sim.Server
	url string // …/yookassa/v3
}

func ykSetup(tb testing.TB) *ykFixture {
	tb.Helper()
	s := sim.New()
	hs := httptest.NewServer(s)
	tb.Cleanup(hs.Close)
	return &ykFixture{sim: s, url: hs.URL + "/yookassa/v3"}
}

// call sends one request with the shop's credentials (secret "" means the
// simulator's own) and decodes the JSON answer.
func (f *ykFixture) call(tb testing.TB, method, path, key, secret string, body any) (int, map[string]any) {
	tb.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tb.Fatal(err)
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	if secret == "" {
		secret = sim.YooKassaSecret()
	}
	req.SetBasicAuth("demo-shop", secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotence-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		tb.Fatalf("%s %s: decode: %v", method, path, err)
	}
	return resp.StatusCode, v
}

func ykPaymentBody(value string) map[string]any {
	return map[string]any{
		"amount":            map[string]any{"value": value, "currency": "RUB"},
		"capture":           true,
		"payment_method_id": "merchant-account-17",
		"description":       "Order order-48291",
		"metadata":          map[string]any{"operation_key": "test:payment.charge:order-48291:v1", "order_id": "order-48291"},
	}
}

func (f *ykFixture) mustPay(tb testing.TB, key, value string) map[string]any {
	tb.Helper()
	status, p := f.call(tb, http.MethodPost, "/payments", key, "", ykPaymentBody(value))
	if status != http.StatusOK {
		tb.Fatalf("create payment: %d %v", status, p)
	}
	return p
}

// wantYKError checks YooKassa's error body.
func wantYKError(tb testing.TB, status int, body map[string]any, wantStatus int, code, parameter string) {
	tb.Helper()
	if status != wantStatus || body["type"] != "error" || body["code"] != code || body["parameter"] != parameter {
		tb.Fatalf("answer %d %v, want %d error %s parameter %q", status, body, wantStatus, code, parameter)
	}
	if id, _ := body["id"].(string); id == "" {
		tb.Fatalf("error without id: %v", body)
	}
}

var ykTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func TestYooKassaPayment(t *testing.T) {
	t.Parallel()

	t.Run("Wire", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		p := f.mustPay(t, "key-wire-1", "1250.00")
		id, _ := p["id"].(string)
		if len(id) != 36 {
			t.Fatalf("id %q, want 36 characters like YooKassa's", id)
		}
		if p["status"] != "succeeded" || p["paid"] != true || p["refundable"] != true || p["test"] != true {
			t.Fatalf("payment = %v", p)
		}
		amt := p["amount"].(map[string]any)
		if amt["value"] != "1250.00" || amt["currency"] != "RUB" {
			t.Fatalf("amount = %v", amt)
		}
		for _, field := range []string{"created_at", "captured_at"} {
			if s, _ := p[field].(string); !ykTimestamp.MatchString(s) {
				t.Fatalf("%s = %q, want UTC RFC 3339 with milliseconds", field, s)
			}
		}
		if p["recipient"].(map[string]any)["account_id"] != "demo-shop" {
			t.Fatalf("recipient = %v", p["recipient"])
		}
		pm := p["payment_method"].(map[string]any)
		if pm["id"] != "merchant-account-17" || pm["saved"] != true || pm["type"] != "bank_card" {
			t.Fatalf("payment_method = %v", pm)
		}
		if p["metadata"].(map[string]any)["order_id"] != "order-48291" {
			t.Fatalf("metadata = %v", p["metadata"])
		}
		if _, ok := p["cancellation_details"]; ok {
			t.Fatalf("cancellation_details on a succeeded payment: %v", p)
		}
		status, got := f.call(t, http.MethodGet, "/payments/"+id, "", "", nil)
		if status != http.StatusOK || got["id"] != id || got["created_at"] != p["created_at"] {
			t.Fatalf("GET = %d %v", status, got)
		}
		if got, want := f.sim.Effects(sim.YooKassa, "key-wire-1"), 1; got != want {
			t.Fatalf("effects = %d, want %d", got, want)
		}
	})

	t.Run("Idempotence", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		first := f.mustPay(t, "key-idem-1", "10.00")
		again := f.mustPay(t, "key-idem-1", "10.00")
		if again["id"] != first["id"] {
			t.Fatalf("repeat made %v, want %v", again["id"], first["id"])
		}
		status, body := f.call(t, http.MethodPost, "/payments", "key-idem-1", "", ykPaymentBody("11.00"))
		wantYKError(t, status, body, http.StatusBadRequest, "invalid_request", "Idempotence-Key")
		if body["description"] != "Duplicate idempotence key" {
			t.Fatalf("description = %v", body["description"])
		}
		status, body = f.call(t, http.MethodPost, "/refunds", "key-idem-1", "", map[string]any{"payment_id": first["id"], "amount": map[string]any{"value": "1.00", "currency": "RUB"}})
		wantYKError(t, status, body, http.StatusBadRequest, "invalid_request", "Idempotence-Key")
		if got, want := f.sim.Effects(sim.YooKassa, "key-idem-1"), 1; got != want {
			t.Fatalf("effects = %d, want %d", got, want)
		}
		if got, want := f.sim.Calls(sim.YooKassa, "key-idem-1"), 4; got != want {
			t.Fatalf("calls = %d, want %d", got, want)
		}
	})

	t.Run("ErrKey", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		status, body := f.call(t, http.MethodPost, "/payments", "", "", ykPaymentBody("10.00"))
		wantYKError(t, status, body, http.StatusBadRequest, "invalid_request", "Idempotence-Key")
		status, body = f.call(t, http.MethodPost, "/payments", strings.Repeat("k", 65), "", ykPaymentBody("10.00"))
		wantYKError(t, status, body, http.StatusBadRequest, "invalid_request", "Idempotence-Key")
		f.mustPay(t, strings.Repeat("k", 64), "10.00")
	})

	t.Run("InsufficientFunds", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		p := f.mustPay(t, "key-funds-1", "1000000.00")
		cd, _ := p["cancellation_details"].(map[string]any)
		if p["status"] != "canceled" || p["paid"] != false || cd["reason"] != "insufficient_funds" || cd["party"] != "payment_network" {
			t.Fatalf("payment = %v", p)
		}
		if p := f.mustPay(t, "key-funds-2", "999999.99"); p["status"] != "succeeded" {
			t.Fatalf("payment below the threshold = %v", p["status"])
		}
	})

	t.Run("ErrRequest", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		body := ykPaymentBody("10.00")
		body["payment_method_id"] = "merchant-account-99"
		status, got := f.call(t, http.MethodPost, "/payments", "key-bad-1", "", body)
		wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", "payment_method_id")
		for value, param := range map[string]string{"10.001": "amount.value", "-1.00": "amount.value", "0.00": "amount.value", "1e3": "amount.value"} {
			status, got = f.call(t, http.MethodPost, "/payments", "key-bad-"+value, "", ykPaymentBody(value))
			wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", param)
		}
		body = ykPaymentBody("10.00")
		body["amount"] = map[string]any{"value": "10.00", "currency": "JPY"}
		status, got = f.call(t, http.MethodPost, "/payments", "key-bad-2", "", body)
		wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", "amount.currency")
		body = ykPaymentBody("10.00")
		body["description"] = strings.Repeat("д", 129)
		status, got = f.call(t, http.MethodPost, "/payments", "key-bad-3", "", body)
		wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", "description")
		status, got = f.call(t, http.MethodGet, "/payments/2f3b588d-000f-5000-8000-1d6e87c7fbde", "", "", nil)
		wantYKError(t, status, got, http.StatusNotFound, "not_found", "payment_id")
		for _, key := range []string{"key-bad-1", "key-bad-2", "key-bad-3"} {
			if got := f.sim.Effects(sim.YooKassa, key); got != 0 {
				t.Fatalf("effects of refused %s = %d", key, got)
			}
		}
	})

	t.Run("ErrCredentials", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		status, got := f.call(t, http.MethodPost, "/payments", "key-auth-1", "wrong", ykPaymentBody("10.00"))
		wantYKError(t, status, got, http.StatusUnauthorized, "invalid_credentials", "Authorization")
		status, got = f.call(t, http.MethodGet, "/payments", "", "wrong", nil)
		wantYKError(t, status, got, http.StatusUnauthorized, "invalid_credentials", "Authorization")
		if got := f.sim.Effects(sim.YooKassa, "key-auth-1"); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
	})
}

func TestYooKassaList(t *testing.T) {
	t.Parallel()
	f := ykSetup(t)
	var made []any
	for _, key := range []string{"l1", "l2", "l3", "l4", "l5"} {
		made = append(made, f.mustPay(t, key, "10.00")["id"])
	}
	// Pages of two, newest first, until there is no next_cursor.
	var seen []any
	path := "/payments?limit=2"
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("the cursor does not end")
		}
		status, l := f.call(t, http.MethodGet, path, "", "", nil)
		if status != http.StatusOK || l["type"] != "list" {
			t.Fatalf("list = %d %v", status, l)
		}
		items := l["items"].([]any)
		if len(items) > 2 {
			t.Fatalf("page of %d, limit 2", len(items))
		}
		for _, it := range items {
			seen = append(seen, it.(map[string]any)["id"])
		}
		cursor, _ := l["next_cursor"].(string)
		if cursor == "" {
			break
		}
		path = "/payments?limit=2&cursor=" + cursor
	}
	if len(seen) != len(made) {
		t.Fatalf("listed %v, made %v", seen, made)
	}
	for i := range made {
		if seen[i] != made[len(made)-1-i] {
			t.Fatalf("listed %v, want newest first of %v", seen, made)
		}
	}

	future := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	status, l := f.call(t, http.MethodGet, "/payments?created_at.gte="+future, "", "", nil)
	if status != http.StatusOK || len(l["items"].([]any)) != 0 || l["next_cursor"] != nil {
		t.Fatalf("future list = %d %v", status, l)
	}
	past := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	if _, l := f.call(t, http.MethodGet, "/payments?limit=100&created_at.gte="+past, "", "", nil); len(l["items"].([]any)) != 5 {
		t.Fatalf("past list = %v", l)
	}
	if _, l := f.call(t, http.MethodGet, "/payments?status=canceled", "", "", nil); len(l["items"].([]any)) != 0 {
		t.Fatalf("canceled list = %v", l)
	}
	for query, param := range map[string]string{"limit=0": "limit", "limit=101": "limit", "cursor=nonsense": "cursor", "created_at.gte=yesterday": "created_at.gte"} {
		status, got := f.call(t, http.MethodGet, "/payments?"+query, "", "", nil)
		wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", param)
	}
}

func TestYooKassaRefund(t *testing.T) {
	t.Parallel()
	f := ykSetup(t)
	pay := f.mustPay(t, "r-pay", "100.00")
	refund := func(key, value string) (int, map[string]any) {
		return f.call(t, http.MethodPost, "/refunds", key, "", map[string]any{
			"payment_id":  pay["id"],
			"amount":      map[string]any{"value": value, "currency": "RUB"},
			"description": "returned goods",
			"metadata":    map[string]any{"operation_key": "test:payment.refund:" + key + ":v1"},
		})
	}
	status, r := refund("r-1", "60.00")
	if status != http.StatusOK || r["status"] != "succeeded" || r["payment_id"] != pay["id"] || r["amount"].(map[string]any)["value"] != "60.00" {
		t.Fatalf("refund = %d %v", status, r)
	}
	if s, _ := r["created_at"].(string); !ykTimestamp.MatchString(s) || len(r["id"].(string)) != 36 {
		t.Fatalf("refund = %v", r)
	}
	if r["metadata"].(map[string]any)["operation_key"] != "test:payment.refund:r-1:v1" {
		t.Fatalf("metadata = %v", r["metadata"])
	}
	status, got := refund("r-2", "40.01")
	wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", "amount.value")
	if status, _ := refund("r-3", "40.00"); status != http.StatusOK {
		t.Fatalf("refund of the rest = %d", status)
	}
	_, p := f.call(t, http.MethodGet, "/payments/"+pay["id"].(string), "", "", nil)
	if p["refunded_amount"].(map[string]any)["value"] != "100.00" || p["refundable"] != false {
		t.Fatalf("payment after refunds = %v", p)
	}
	status, got = f.call(t, http.MethodPost, "/refunds", "r-4", "", map[string]any{"payment_id": "2f3b588d-000f-5000-8000-1d6e87c7fbde", "amount": map[string]any{"value": "1.00", "currency": "RUB"}})
	wantYKError(t, status, got, http.StatusNotFound, "not_found", "payment_id")

	status, l := f.call(t, http.MethodGet, "/refunds?payment_id="+pay["id"].(string), "", "", nil)
	if status != http.StatusOK || len(l["items"].([]any)) != 2 {
		t.Fatalf("refund list = %d %v", status, l)
	}
	if _, l := f.call(t, http.MethodGet, "/refunds?payment_id=other", "", "", nil); len(l["items"].([]any)) != 0 {
		t.Fatalf("refund list of another payment = %v", l)
	}
	status, got = f.call(t, http.MethodGet, "/refunds/"+r["id"].(string), "", "", nil)
	if status != http.StatusOK || got["id"] != r["id"] {
		t.Fatalf("GET refund = %d %v", status, got)
	}
}

func TestYooKassaFaults(t *testing.T) {
	t.Parallel()

	t.Run("StatusCommitsNothing", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		if err := f.sim.Inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultStatus, Status: 503}); err != nil {
			t.Fatal(err)
		}
		status, _ := f.call(t, http.MethodPost, "/payments", "f-1", "", ykPaymentBody("10.00"))
		if status != http.StatusServiceUnavailable || f.sim.Effects(sim.YooKassa, "f-1") != 0 {
			t.Fatalf("status %d, effects %d", status, f.sim.Effects(sim.YooKassa, "f-1"))
		}
	})

	t.Run("DelayCommitsAfterTheCallerLeft", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		if err := f.sim.Inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultDelay, DelayMS: 300}); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ykPaymentBody("10.00"))
		req, _ := http.NewRequest(http.MethodPost, f.url+"/payments", bytes.NewReader(b))
		req.SetBasicAuth("demo-shop", sim.YooKassaSecret())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotence-Key", "f-2")
		if _, err := (&http.Client{Timeout: 100 * time.Millisecond}).Do(req); err == nil {
			t.Fatal("the delayed call answered within the timeout")
		}
		deadline := time.Now().Add(3 * time.Second)
		for f.sim.Effects(sim.YooKassa, "f-2") != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the delayed payment was never made")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("ResetForgetsObjects", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		p := f.mustPay(t, "f-3", "10.00")
		f.sim.Reset()
		status, got := f.call(t, http.MethodGet, "/payments/"+p["id"].(string), "", "", nil)
		wantYKError(t, status, got, http.StatusNotFound, "not_found", "payment_id")
		if again := f.mustPay(t, "f-3", "10.00"); again["id"] == p["id"] {
			t.Fatal("the key outlived the reset")
		}
	})
}
