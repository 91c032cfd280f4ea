package yookassa_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

// handSeq numbers the keys of objects made by hand.
var handSeq atomic.Int64

// byHand makes an object the way the shop's dashboard or another
// integration would: a POST without the gateway's keys in its metadata.
// It returns the new object's id.
func (f *fixture) byHand(tb testing.TB, path string, body map[string]any) string {
	tb.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, f.url+path, bytes.NewReader(raw))
	req.SetBasicAuth(shopID, sim.YooKassaSecret())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotence-Key", "by-hand-"+strconv.FormatInt(handSeq.Add(1), 10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	var v struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK || v.ID == "" {
		tb.Fatalf("POST %s: %d %v", path, resp.StatusCode, err)
	}
	return v.ID
}

// paymentByHand charges the seeded account value (e.g. "1250.00") in
// currency, without the gateway's keys.
func (f *fixture) paymentByHand(tb testing.TB, value, currency string) string {
	tb.Helper()
	return f.byHand(tb, "/payments", map[string]any{
		"amount": map[string]any{"value": value, "currency": currency}, "capture": true,
		"payment_method_id": "merchant-account-17",
	})
}

func TestCheckObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ChargeOK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:check-1:v1", 125000)
		made := MustExecute(t, f.client, op)
		got, err := f.client.CheckObject(ctx, op, made.ObjectID)
		if err != nil {
			t.Fatalf("CheckObject: %v", err)
		}
		want, err := f.client.Lookup(ctx, op)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckObject = %#v, Lookup = %#v", got, want)
		}
	})

	t.Run("ChargeMadeByHand", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		id := f.paymentByHand(t, "1250.00", "RUB")
		got, err := f.client.CheckObject(ctx, chargeOp(t, "test:payment.charge:check-2:v1", 125000), id)
		if err != nil {
			t.Fatalf("CheckObject of a payment without the gateway's keys: %v", err)
		}
		if got.ObjectID != id || got.Data["amount_minor"] != int64(125000) || got.Data["status"] != "succeeded" {
			t.Fatalf("CheckObject = %#v", got)
		}
	})

	t.Run("RefundOK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:check-3:v1", 125000))
		op := refundOp(t, "test:payment.refund:check-3:v1", pay.ObjectID, 5000)
		made := MustExecute(t, f.client, op)
		got, err := f.client.CheckObject(ctx, op, made.ObjectID)
		if err != nil {
			t.Fatalf("CheckObject: %v", err)
		}
		want, err := f.client.Lookup(ctx, op)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckObject = %#v, Lookup = %#v", got, want)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:check-4:v1", 1000))
		unknown := "2f3b588d-000f-5000-8000-1d6e87c7fbde"
		for _, op := range []adapters.Op{
			chargeOp(t, "test:payment.charge:check-4b:v1", 1000),
			refundOp(t, "test:payment.refund:check-4:v1", pay.ObjectID, 100),
		} {
			if _, err := f.client.CheckObject(ctx, op, unknown); !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("CheckObject(%s) of an unknown id = %v, want ErrNotFound", op.Intent, err)
			}
		}
		// A payment's id is no refund's.
		if _, err := f.client.CheckObject(ctx, refundOp(t, "test:payment.refund:check-4:v1", pay.ObjectID, 100), pay.ObjectID); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("CheckObject of a refund by a payment's id = %v, want ErrNotFound", err)
		}
	})

	t.Run("ErrMalformedID", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for _, id := range []string{"", "../payments", "2f3b588d 000f", strings.Repeat("a", 65)} {
			_, err := f.client.CheckObject(ctx, chargeOp(t, "test:payment.charge:check-5:v1", 1000), id)
			adapterstest.WantFinal(t, err, codes.Validation, "payment id")
			_, err = f.client.CheckObject(ctx, refundOp(t, "test:payment.refund:check-5:v1", "2f3b588d-000f-5000-8000-1d6e87c7fbde", 100), id)
			adapterstest.WantFinal(t, err, codes.Validation, "refund id")
		}
	})

	t.Run("ErrOtherOperation", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:check-6:v1", 1000)
		other := chargeOp(t, "test:payment.charge:check-6-other:v1", 1000)
		made := MustExecute(t, f.client, other)
		_, err := f.client.CheckObject(ctx, op, made.ObjectID)
		adapterstest.WantFinal(t, err, codes.InvalidState, "another operation", other.Key)

		rop := refundOp(t, "test:payment.refund:check-6:v1", made.ObjectID, 100)
		rother := refundOp(t, "test:payment.refund:check-6-other:v1", made.ObjectID, 100)
		refund := MustExecute(t, f.client, rother)
		_, err = f.client.CheckObject(ctx, rop, refund.ObjectID)
		adapterstest.WantFinal(t, err, codes.InvalidState, "another operation", rother.Key)
	})

	t.Run("ErrAmount", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:check-7:v1", 125000)
		_, err := f.client.CheckObject(ctx, op, f.paymentByHand(t, "1000.00", "RUB"))
		adapterstest.WantFinal(t, err, codes.InvalidState, "1000.00 RUB", "1250.00 RUB")
		_, err = f.client.CheckObject(ctx, op, f.paymentByHand(t, "1250.00", "USD"))
		adapterstest.WantFinal(t, err, codes.InvalidState, "1250.00 USD", "1250.00 RUB")
	})

	t.Run("ErrCanceled", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:check-8:v1", sim.YooKassaInsufficientFundsMinor)
		_, err := f.client.Execute(ctx, op)
		var ae *adapters.Error
		if !errors.As(err, &ae) || ae.ObjectID == "" {
			t.Fatalf("Execute of a charge the payer cannot pay: %v, want its payment's id", err)
		}
		_, err = f.client.CheckObject(ctx, op, ae.ObjectID)
		adapterstest.WantFinal(t, err, codes.InsufficientFunds, "canceled", "insufficient_funds")
	})

	t.Run("ErrPending", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.sim.SetYooKassaMode(sim.YooKassaMode{PendingMS: int(time.Hour.Milliseconds())})
		op := chargeOp(t, "test:payment.charge:check-9:v1", 5000)
		_, err := f.client.Execute(ctx, op)
		var ae *adapters.Error
		if !errors.As(err, &ae) || !ae.Pending || ae.ObjectID == "" {
			t.Fatalf("Execute of a payment kept pending: %v", err)
		}
		_, err = f.client.CheckObject(ctx, op, ae.ObjectID)
		adapterstest.WantFinal(t, err, codes.InvalidState, "still pending", "look-ups will settle it")
	})

	t.Run("ErrRefundCanceled", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:check-10:v1", 5000))
		f.sim.SetYooKassaMode(sim.YooKassaMode{CancelRefunds: true})
		op := refundOp(t, "test:payment.refund:check-10:v1", pay.ObjectID, 1000)
		_, err := f.client.Execute(ctx, op)
		var ae *adapters.Error
		if !errors.As(err, &ae) || ae.ObjectID == "" {
			t.Fatalf("Execute of a refund the provider cancels: %v", err)
		}
		_, err = f.client.CheckObject(ctx, op, ae.ObjectID)
		adapterstest.WantFinal(t, err, codes.RefundCanceled, "canceled", "rejected_by_payee")
	})

	t.Run("ErrRefundPending", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:check-11:v1", 5000))
		f.sim.SetYooKassaMode(sim.YooKassaMode{PendingMS: int(time.Hour.Milliseconds())})
		op := refundOp(t, "test:payment.refund:check-11:v1", pay.ObjectID, 1000)
		_, err := f.client.Execute(ctx, op)
		var ae *adapters.Error
		if !errors.As(err, &ae) || !ae.Pending {
			t.Fatalf("Execute of a refund kept pending: %v", err)
		}
		_, err = f.client.CheckObject(ctx, op, ae.ObjectID)
		adapterstest.WantFinal(t, err, codes.InvalidState, "still pending")
	})

	t.Run("ErrRefundOfAnotherPayment", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		mine := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:check-12:v1", 5000))
		theirs := f.paymentByHand(t, "50.00", "RUB")
		id := f.byHand(t, "/refunds", map[string]any{"payment_id": theirs, "amount": map[string]any{"value": "10.00", "currency": "RUB"}})
		op := refundOp(t, "test:payment.refund:check-12:v1", mine.ObjectID, 1000)
		_, err := f.client.CheckObject(ctx, op, id)
		adapterstest.WantFinal(t, err, codes.InvalidState, theirs, mine.ObjectID)
		// The same refund, for the payment it is of, is taken.
		op = refundOp(t, "test:payment.refund:check-12:v1", theirs, 1000)
		if got, err := f.client.CheckObject(ctx, op, id); err != nil || got.ObjectID != id || got.Data["payment_id"] != theirs {
			t.Fatalf("CheckObject = %#v, %v", got, err)
		}
	})

	t.Run("ErrUnavailable", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:check-13:v1", 1000)
		made := MustExecute(t, f.client, op)
		f.inject(t, sim.Fault{Fault: sim.FaultStatus, Status: 503, On: sim.OnLookup})
		_, err := f.client.CheckObject(ctx, op, made.ObjectID)
		if err == nil || errors.Is(err, adapters.ErrNotFound) || errors.Is(err, adapters.ErrCannotCheck) || adapters.ClassOf(err) == adapters.Final {
			t.Fatalf("CheckObject during an outage = %v, want an error that says it could not tell", err)
		}
	})
}

// TestCheckObjectUnknownIntent: an intent the target does not serve is
// refused before anything is read.
func TestCheckObjectUnknownIntent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	op := chargeOp(t, "test:invoice.create:check-14:v1", 1000)
	op.Intent = "invoice.create"
	_, err := f.client.CheckObject(context.Background(), op, "2f3b588d-000f-5000-8000-1d6e87c7fbde")
	adapterstest.WantError(t, err, adapters.Final, codes.Validation, "")
}
