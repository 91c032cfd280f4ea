package yookassa_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

// Behaviours of the real YooKassa API that the simulator reproduces
// (sim.YooKassaMode), each met as the provider meets it.

// TestSavedDuringPayment: the usual saved card is saved during a payment,
// its id is that payment's id, and GET /payment_methods/{id} does not know
// it. A charge of it passes the check (through the payment that saved it)
// and is made.
func TestSavedDuringPayment(t *testing.T) {
	t.Parallel()
	f := setup(t)
	card := f.sim.YooKassaSavedCard()
	op := chargeOp(t, "test:payment.charge:order-saved:v1", 125000)
	op.Payload = payload(t, map[string]any{"account_id": card, "order_id": "order-saved", "amount_minor": 125000, "currency": "RUB"})

	plan, err := f.client.Validate(context.Background(), op)
	if err != nil {
		t.Fatalf("Validate of a card saved during a payment: %v", err)
	}
	if got, want := plan.Data["account_check"], "saving_payment"; got != want {
		t.Fatalf("account_check = %v, want %v", got, want)
	}
	res := MustExecute(t, f.client, op)
	if res.Data["status"] != "succeeded" || f.effects(op.Key) != 1 {
		t.Fatalf("charge: %+v, effects %d", res, f.effects(op.Key))
	}

	t.Run("ErrNotSavingPayment", func(t *testing.T) {
		// A payment made with a saved method is no saved method itself.
		op := chargeOp(t, "test:payment.charge:order-other:v1", 100)
		op.Payload = payload(t, map[string]any{"account_id": res.ObjectID, "order_id": "order-other", "amount_minor": 100, "currency": "RUB"})
		_, err := f.client.Validate(context.Background(), op)
		var ae *adapters.Error
		if !errors.As(err, &ae) || ae.Class != adapters.Final || ae.Code != codes.ReferenceNotFound {
			t.Fatalf("Validate with a plain payment's id: %v, want final %s", err, codes.ReferenceNotFound)
		}
	})
}

// TestSlowAnswer: YooKassa may take up to 30 s to answer a payment. With
// the default timeouts a payment answered after 20 s is answered, not left
// unknown. Both times are scaled down by the same factor, so the test is
// quick and the proportion is the real one.
func TestSlowAnswer(t *testing.T) {
	t.Parallel()
	const scale = 10
	f := setup(t)
	c := MustNew(t, yookassa.Config{BaseURL: f.url, ShopID: shopID, SecretKey: sim.YooKassaSecret(), Timeout: yookassa.DefaultTimeout / scale})
	f.sim.SetYooKassaMode(sim.YooKassaMode{LatencyMS: int((20 * time.Second / scale).Milliseconds())})
	op := chargeOp(t, "test:payment.charge:order-slow:v1", 5000)
	res, err := c.Execute(context.Background(), op)
	if err != nil {
		t.Fatalf("a payment answered after 20 s (scaled): %v", err)
	}
	if res.Data["status"] != "succeeded" || f.effects(op.Key) != 1 {
		t.Fatalf("charge: %+v, effects %d", res, f.effects(op.Key))
	}
}

// TestProcessing: YooKassa answers 202 {code: request_accepted, retry_after}
// while the request is in progress; the same request under the same key
// after retry_after (milliseconds) answers the payment. The retry policy
// sends it again once and ends with one payment.
func TestProcessing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.sim.SetYooKassaMode(sim.YooKassaMode{Processing: 1, RetryAfterMS: 300})
	op := chargeOp(t, "test:payment.charge:order-202:v1", 5000)
	policy := adapters.RetryPolicy{MaxAttempts: 3, InitialDelay: time.Millisecond, Multiplier: 1, MaxDelay: 5 * time.Second}
	res, n, err := policy.Execute(context.Background(), f.client, op, nil)
	if err != nil {
		t.Fatalf("Execute after 202: %v", err)
	}
	if res.Data["status"] != "succeeded" || n != 2 || f.effects(op.Key) != 1 {
		t.Fatalf("charge: %+v after %d attempts, effects %d; want succeeded after 2, one effect", res, n, f.effects(op.Key))
	}

	t.Run("AttemptsSpentIsUnknown", func(t *testing.T) {
		// Still processing when the attempts run out: the payment may be
		// made, so the outcome is unknown, never "nothing was done".
		f := setup(t)
		f.sim.SetYooKassaMode(sim.YooKassaMode{Processing: 1, RetryAfterMS: 60000})
		op := chargeOp(t, "test:payment.charge:order-202b:v1", 5000)
		one := adapters.RetryPolicy{MaxAttempts: 1}
		_, _, err := one.Execute(context.Background(), f.client, op, nil)
		var ae *adapters.Error
		if !errors.As(err, &ae) || ae.Class != adapters.Reconcile || ae.RetryAfter != 60 {
			t.Fatalf("202 with no attempts left: %v, want reconcile with retry after 60 s", err)
		}
	})
}

// TestRetryAfterInBodies: 429 and 500 carry retry_after (ms) in their JSON
// bodies; the adapter hands it on as seconds. A 500 after the payment was
// made is unknown, and the same request under the same key answers the
// payment.
func TestRetryAfterInBodies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.sim.SetYooKassaMode(sim.YooKassaMode{TooManyRequests: 1, FailAfterCommit: 1, RetryAfterMS: 2500})
	op := chargeOp(t, "test:payment.charge:order-429:v1", 5000)

	_, err := f.client.Execute(context.Background(), op)
	var ae *adapters.Error
	if !errors.As(err, &ae) || ae.Class != adapters.Retry || ae.RetryAfter != 3 {
		t.Fatalf("429: %v, want retry after 3 s", err)
	}
	_, err = f.client.Execute(context.Background(), op)
	if !errors.As(err, &ae) || ae.Class != adapters.Reconcile || ae.RetryAfter != 3 || f.effects(op.Key) != 1 {
		t.Fatalf("500 after commit: %v (effects %d), want reconcile with retry after 3 s and the payment made", err, f.effects(op.Key))
	}
	res := MustExecute(t, f.client, op)
	if res.Data["status"] != "succeeded" || f.effects(op.Key) != 1 {
		t.Fatalf("repeat: %+v, effects %d", res, f.effects(op.Key))
	}
}

// TestWrongCredentials: a shop id or secret the provider does not know is
// refused, and nothing is made.
func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.sim.SetYooKassaMode(sim.YooKassaMode{ShopID: shopID})
	for name, cfg := range map[string]yookassa.Config{
		"Secret": {BaseURL: f.url, ShopID: shopID, SecretKey: "wrong", Timeout: timeout},
		"ShopID": {BaseURL: f.url, ShopID: "other-shop", SecretKey: sim.YooKassaSecret(), Timeout: timeout},
	} {
		op := chargeOp(t, "test:payment.charge:order-cred-"+name+":v1", 5000)
		_, err := MustNew(t, cfg).Execute(context.Background(), op)
		var ae *adapters.Error
		if !errors.As(err, &ae) || ae.Code != codes.TargetPermissionDenied || f.effects(op.Key) != 0 {
			t.Fatalf("%s: %v, effects %d; want %s and nothing made", name, err, f.effects(op.Key), codes.TargetPermissionDenied)
		}
	}
}

// TestPending: a payment or refund not final yet is found, and said to be
// pending (adapters.Error.Pending), not a failed look-up.
func TestPending(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.sim.SetYooKassaMode(sim.YooKassaMode{PendingMS: int(time.Hour.Milliseconds())})
	op := chargeOp(t, "test:payment.charge:order-pending:v1", 5000)
	_, err := f.client.Execute(context.Background(), op)
	var ae *adapters.Error
	if !errors.As(err, &ae) || !ae.Pending || ae.ObjectID == "" || ae.Class != adapters.Reconcile {
		t.Fatalf("pending payment: %v, want reconcile, pending, with its id", err)
	}
	op.ObjectID = ae.ObjectID
	_, err = f.client.Lookup(context.Background(), op)
	if !errors.As(err, &ae) || !ae.Pending {
		t.Fatalf("Lookup of a pending payment: %v, want pending", err)
	}
}

// TestCanceledRefund: a refund the provider cancels ends final, with its id.
func TestCanceledRefund(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:order-cr:v1", 5000))
	f.sim.SetYooKassaMode(sim.YooKassaMode{CancelRefunds: true})
	op := refundOp(t, "test:payment.refund:order-cr:v1", pay.ObjectID, 1000)
	_, err := f.client.Execute(context.Background(), op)
	var ae *adapters.Error
	if !errors.As(err, &ae) || ae.Class != adapters.Final || ae.Code != codes.RefundCanceled || ae.ObjectID == "" {
		t.Fatalf("canceled refund: %v, want final %s with the refund's id", err, codes.RefundCanceled)
	}
}

// TestScanBoundedByLastSend: the list has no metadata filter and is walked
// back from its upper bound. Bounded by when the last send could have
// landed (created_at.lte), a look-up on a busy shop starts at the
// operation's payment instead of behind every payment made since.
func TestScanBoundedByLastSend(t *testing.T) {
	t.Parallel()
	f := setup(t)
	op := chargeOp(t, "test:payment.charge:order-busy:v1", 125000)
	want := MustExecute(t, f.client, op)
	sent := time.Now()
	time.Sleep(50 * time.Millisecond) // the shop's later payments are later
	f.sim.YooKassaBusy(21 * 100)      // more than the pages a look-up reads
	// The adapter adds a margin of 10 minutes for clock skew to SentBy.
	op.SentBy = sent.Add(-10*time.Minute + 25*time.Millisecond)
	res, err := f.client.Lookup(context.Background(), op)
	if err != nil || res.ObjectID != want.ObjectID {
		t.Fatalf("Lookup on a busy shop = %+v, %v; want %s", res, err, want.ObjectID)
	}
}
