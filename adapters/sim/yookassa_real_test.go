package sim_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

// TestYooKassaCurrencies: the simulated shop takes the currencies YooKassa
// lists for amount.currency and refuses the others, CNY among them.
func TestYooKassaCurrencies(t *testing.T) {
	t.Parallel()
	f := ykSetup(t)
	body := ykPaymentBody("10.00")
	body["amount"] = map[string]any{"value": "10.00", "currency": "CNY"}
	status, got := f.call(t, http.MethodPost, "/payments", "cur-1", "", body)
	wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", "amount.currency")
	if n := f.sim.Effects(sim.YooKassa, "cur-1"); n != 0 {
		t.Fatalf("effects %d, want 0", n)
	}
}

// ykMode sets the shop's behaviour through the control API, as a demo does.
func (f *ykFixture) mode(tb testing.TB, m string) {
	tb.Helper()
	resp, err := http.Post(strings.TrimSuffix(f.url, "/yookassa/v3")+"/_sim/yookassa", "application/json", strings.NewReader(m))
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("POST /_sim/yookassa %s: %d", m, resp.StatusCode)
	}
}

// TestYooKassaRealBehaviours: what the real API does beyond answering at
// once, each as YooKassa documents it.
func TestYooKassaRealBehaviours(t *testing.T) {
	t.Parallel()

	t.Run("SavedDuringPayment", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		card := f.sim.YooKassaSavedCard()
		status, got := f.call(t, http.MethodGet, "/payment_methods/"+card, "", "", nil)
		wantYKError(t, status, got, http.StatusNotFound, "not_found", "payment_method_id")
		status, pay := f.call(t, http.MethodGet, "/payments/"+card, "", "", nil)
		pm, _ := pay["payment_method"].(map[string]any)
		if status != http.StatusOK || pm["id"] != card || pm["saved"] != true {
			t.Fatalf("the saving payment: %d %v", status, pay)
		}
		body := ykPaymentBody("10.00")
		body["payment_method_id"] = card
		if status, p := f.call(t, http.MethodPost, "/payments", "s-1", "", body); status != http.StatusOK || p["status"] != "succeeded" {
			t.Fatalf("charge of the saved card: %d %v", status, p)
		}
	})

	t.Run("ReceiptsRequired", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		f.mode(t, `{"require_receipts": true}`)
		status, got := f.call(t, http.MethodPost, "/payments", "r-1", "", ykPaymentBody("10.00"))
		wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", "receipt")
		body := ykPaymentBody("10.00")
		body["receipt"] = map[string]any{"customer": map[string]any{"email": "a@example.com"},
			"items": []any{map[string]any{"description": "x", "quantity": "2", "amount": map[string]any{"value": "5.00", "currency": "RUB"}, "vat_code": 1}}}
		if status, p := f.call(t, http.MethodPost, "/payments", "r-2", "", body); status != http.StatusOK {
			t.Fatalf("with a receipt: %d %v", status, p)
		}
		if f.sim.Effects(sim.YooKassa, "r-1") != 0 || f.sim.Effects(sim.YooKassa, "r-2") != 1 {
			t.Fatal("effects")
		}
	})

	t.Run("Processing", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		f.mode(t, `{"processing": 1, "retry_after_ms": 60000}`)
		status, got := f.call(t, http.MethodPost, "/payments", "p-1", "", ykPaymentBody("10.00"))
		if status != http.StatusAccepted || got["type"] != "error" || got["code"] != "request_accepted" || got["retry_after"] != float64(60000) {
			t.Fatalf("202: %d %v", status, got)
		}
		if status, got := f.call(t, http.MethodPost, "/payments", "p-1", "", ykPaymentBody("10.00")); status != http.StatusAccepted {
			t.Fatalf("a repeat before retry_after: %d %v, want 202 again", status, got)
		}
		if f.sim.Effects(sim.YooKassa, "p-1") != 1 {
			t.Fatal("the request in progress made no payment, or two")
		}
	})

	t.Run("ErrorsWithRetryAfter", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		f.mode(t, `{"too_many_requests": 1, "fail_after_commit": 1, "retry_after_ms": 1500}`)
		status, got := f.call(t, http.MethodPost, "/payments", "e-1", "", ykPaymentBody("10.00"))
		if status != http.StatusTooManyRequests || got["code"] != "too_many_requests" || got["retry_after"] != float64(1500) {
			t.Fatalf("429: %d %v", status, got)
		}
		status, got = f.call(t, http.MethodPost, "/payments", "e-1", "", ykPaymentBody("10.00"))
		if status != http.StatusInternalServerError || got["code"] != "internal_server_error" || got["retry_after"] != float64(1500) || f.sim.Effects(sim.YooKassa, "e-1") != 1 {
			t.Fatalf("500 after commit: %d %v", status, got)
		}
		if status, p := f.call(t, http.MethodPost, "/payments", "e-1", "", ykPaymentBody("10.00")); status != http.StatusOK || f.sim.Effects(sim.YooKassa, "e-1") != 1 {
			t.Fatalf("repeat: %d %v", status, p)
		}
	})

	t.Run("PendingThenSettled", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		f.mode(t, `{"pending_ms": 100, "cancel_refunds": true}`)
		p := f.mustPay(t, "pd-1", "10.00")
		if p["status"] != "pending" || p["paid"] != false {
			t.Fatalf("new payment %v, want pending", p)
		}
		id := p["id"].(string)
		deadline := time.Now().Add(5 * time.Second)
		for {
			if _, got := f.call(t, http.MethodGet, "/payments/"+id, "", "", nil); got["status"] == "succeeded" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the pending payment never settled")
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, r := f.call(t, http.MethodPost, "/refunds", "pd-2", "", map[string]any{"payment_id": id, "amount": map[string]any{"value": "5.00", "currency": "RUB"}})
		if r["status"] != "pending" {
			t.Fatalf("refund %v, want pending", r)
		}
		for {
			_, got := f.call(t, http.MethodGet, "/refunds/"+r["id"].(string), "", "", nil)
			if got["status"] == "canceled" {
				if cd, _ := got["cancellation_details"].(map[string]any); cd["reason"] == nil {
					t.Fatalf("canceled refund without a reason: %v", got)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the pending refund never ended")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, got := f.call(t, http.MethodGet, "/payments/"+id, "", "", nil); got["refunded_amount"].(map[string]any)["value"] != "0.00" {
			t.Fatalf("a canceled refund still counts: %v", got)
		}
	})

	// A payment id the shop does not have: one of YooKassa's form (a
	// UUID) is 404 not_found, an id of no payment's form 400
	// invalid_request, each naming payment_id.
	t.Run("UnknownPaymentID", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		status, got := f.call(t, http.MethodGet, "/payments/2f3b588d-000f-5000-8000-1d6e87c7fbde", "", "", nil)
		wantYKError(t, status, got, http.StatusNotFound, "not_found", "payment_id")
		if d, _ := got["description"].(string); !strings.HasPrefix(d, "Incorrect payment_id.") {
			t.Fatalf("description %q", d)
		}
		for _, id := range []string{"merchant-account-99", "2f3b588d", "2F3B588D-000F-5000-8000-1D6E87C7FBDE-1"} {
			status, got = f.call(t, http.MethodGet, "/payments/"+id, "", "", nil)
			wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", "payment_id")
		}
	})

	t.Run("OneShop", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		f.mode(t, `{"shop_id": "shop-42"}`)
		status, got := f.call(t, http.MethodGet, "/payments", "", "", nil) // as demo-shop
		wantYKError(t, status, got, http.StatusUnauthorized, "invalid_credentials", "Authorization")
	})
}
