package yookassa_test

import (
	"context"
	"slices"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

// TestCurrencies holds the adapter to the currencies YooKassa lists for
// amount.currency: a currency it does not list (CNY) is refused before
// anything is sent, and the simulator refuses it too.
func TestCurrencies(t *testing.T) {
	t.Parallel()
	if got, want := yookassa.Currencies(), []string{"BYN", "EUR", "KZT", "RUB", "USD"}; !slices.Equal(got, want) {
		t.Fatalf("Currencies() = %v, want %v", got, want)
	}
	f := setup(t)
	op := chargeOp(t, "test:payment.charge:order-cny:v1", 1000)
	op.Payload = payload(t, map[string]any{"account_id": "merchant-account-17", "order_id": "order-cny", "amount_minor": 1000, "currency": "CNY"})
	_, err := f.client.Execute(context.Background(), op)
	if got, want := adapters.ClassOf(err), adapters.Final; got != want {
		t.Fatalf("Execute in CNY: class %v (%v), want %v", got, err, want)
	}
	if got := f.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(op.Key)); got != 0 {
		t.Fatalf("Execute in CNY sent %d requests, want none", got)
	}
}
