package yookassa_test

import (
	"context"
	"errors"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

// receipt is a payload's 54-FZ receipt of 2.5 × 500.00 = 1250.00.
func receipt() map[string]any {
	return map[string]any{
		"email": "buyer@example.com",
		"items": []any{map[string]any{"description": "Tea, kg", "quantity": 2.5, "price_minor": 50000}},
	}
}

func chargeWith(t *testing.T, key string, rec map[string]any) adapters.Op {
	op := chargeOp(t, key, 125000)
	p := map[string]any{"account_id": "merchant-account-17", "order_id": "order-48291", "amount_minor": 125000, "currency": "RUB"}
	if rec != nil {
		p["receipt"] = rec
	}
	op.Payload = payload(t, p)
	return op
}

// TestReceipts: a shop that issues 54-FZ receipts refuses a payment
// without one (400, parameter receipt: a final refusal, nothing made) and
// takes one with it; a gateway configured for such a shop refuses before
// sending, so no one approves a charge that cannot be made.
func TestReceipts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.sim.SetYooKassaMode(sim.YooKassaMode{RequireReceipts: true})
	cfg := yookassa.Receipts{VatCode: 1, PaymentSubject: "commodity", PaymentMode: "full_payment", TaxSystemCode: 1}
	c := MustNew(t, yookassa.Config{BaseURL: f.url, ShopID: shopID, SecretKey: sim.YooKassaSecret(), Timeout: timeout, Receipts: cfg})

	without := chargeWith(t, "test:payment.charge:order-no-receipt:v1", nil)
	_, err := c.Execute(context.Background(), without)
	var ae *adapters.Error
	if !errors.As(err, &ae) || ae.Class != adapters.Final || ae.Field != "receipt" || f.effects(without.Key) != 0 {
		t.Fatalf("without a receipt: %v (effects %d), want a final refusal of receipt", err, f.effects(without.Key))
	}

	with := chargeWith(t, "test:payment.charge:order-receipt:v1", receipt())
	if _, err := c.Validate(context.Background(), with); err != nil {
		t.Fatalf("Validate with a receipt: %v", err)
	}
	res := MustExecute(t, c, with)
	if res.Data["status"] != "succeeded" || f.effects(with.Key) != 1 {
		t.Fatalf("with a receipt: %+v, effects %d", res, f.effects(with.Key))
	}
	pay := f.get(t, "/payments/"+res.ObjectID)
	if pay["status"] != "succeeded" {
		t.Fatalf("payment %v", pay)
	}

	t.Run("Required", func(t *testing.T) {
		cfg := cfg
		cfg.Required = true
		c := MustNew(t, yookassa.Config{BaseURL: f.url, ShopID: shopID, SecretKey: sim.YooKassaSecret(), Timeout: timeout, Receipts: cfg})
		op := chargeWith(t, "test:payment.charge:order-required:v1", nil)
		_, err := c.Validate(context.Background(), op)
		if !errors.As(err, &ae) || ae.Class != adapters.Final || ae.Code != codes.Validation || ae.Field != "receipt" {
			t.Fatalf("Validate without a receipt: %v", err)
		}
		if n := f.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(op.Key)); n != 0 {
			t.Fatalf("%d requests sent", n)
		}
	})

	t.Run("LinesAddUp", func(t *testing.T) {
		rec := receipt()
		rec["items"] = []any{map[string]any{"description": "Tea, kg", "quantity": 2, "price_minor": 50000}}
		_, err := c.Validate(context.Background(), chargeWith(t, "test:payment.charge:order-sum:v1", rec))
		if !errors.As(err, &ae) || ae.Field != "receipt.items" {
			t.Fatalf("lines of 1000.00 for 1250.00: %v", err)
		}
	})

	t.Run("Refund", func(t *testing.T) {
		op := refundOp(t, "test:payment.refund:order-receipt:v1", res.ObjectID, 50000)
		_, err := c.Execute(context.Background(), op)
		if !errors.As(err, &ae) || ae.Field != "receipt" {
			t.Fatalf("refund without a receipt: %v", err)
		}
		op.Payload = payload(t, map[string]any{"payment_id": res.ObjectID, "amount_minor": 50000, "currency": "RUB",
			"receipt": map[string]any{"phone": "79001234567", "items": []any{map[string]any{"description": "Tea, kg", "quantity": 1, "price_minor": 50000}}}})
		if r := MustExecute(t, c, op); r.Data["status"] != "succeeded" {
			t.Fatalf("refund with a receipt: %+v", r)
		}
	})
}
