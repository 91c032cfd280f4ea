package sim_test

import (
	"net/http"
	"testing"

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
