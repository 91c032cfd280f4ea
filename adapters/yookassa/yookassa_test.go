package yookassa_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

const (
	shopID  = "demo-shop"
	timeout = 200 * time.Millisecond
)

// fixture is one simulator on loopback and a client pointed at it.
type fixture struct {
	sim    *sim.Server
	url    string // API root, …/yookassa/v3
	client *yookassa.Client
}

func setup(tb testing.TB) *fixture {
	tb.Helper()
	s := sim.New()
	hs := httptest.NewServer(s)
	tb.Cleanup(hs.Close)
	f := &fixture{sim: s, url: hs.URL + "/yookassa/v3"}
	f.client = MustNew(tb, yookassa.Config{BaseURL: f.url, ShopID: shopID, SecretKey: sim.YooKassaSecret(), Timeout: timeout})
	return f
}

func MustNew(tb testing.TB, cfg yookassa.Config) *yookassa.Client {
	tb.Helper()
	c, err := yookassa.New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return c
}

func (f *fixture) inject(tb testing.TB, fault sim.Fault) {
	tb.Helper()
	fault.Target = sim.YooKassa
	if err := f.sim.Inject(fault); err != nil {
		tb.Fatalf("inject: %v", err)
	}
}

func (f *fixture) effects(key string) int {
	return f.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(key))
}

// get reads a raw object from the simulator, as the wire has it.
func (f *fixture) get(tb testing.TB, path string) map[string]any {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
	req.SetBasicAuth(shopID, sim.YooKassaSecret())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		tb.Fatalf("GET %s: %v", path, err)
	}
	return v
}

func payload(tb testing.TB, v map[string]any) json.RawMessage {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func chargeOp(tb testing.TB, key string, minor int64) adapters.Op {
	return adapters.Op{
		Key:    key,
		Intent: yookassa.IntentCharge,
		Payload: payload(tb, map[string]any{
			"account_id": "merchant-account-17", "order_id": "order-48291",
			"amount_minor": minor, "currency": "RUB",
		}),
		Attempt:   1,
		CreatedAt: time.Now(),
	}
}

func refundOp(tb testing.TB, key, paymentID string, minor int64) adapters.Op {
	return adapters.Op{
		Key:    key,
		Intent: yookassa.IntentRefund,
		Payload: payload(tb, map[string]any{
			"payment_id": paymentID, "amount_minor": minor, "currency": "RUB", "reason": "returned goods",
		}),
		Attempt:   1,
		CreatedAt: time.Now(),
	}
}

func MustExecute(tb testing.TB, c *yookassa.Client, op adapters.Op) adapters.Result {
	tb.Helper()
	res, err := c.Execute(context.Background(), op)
	if err != nil {
		tb.Fatalf("Execute(%s): %v", op.Key, err)
	}
	return res
}

func TestExecuteCharge(t *testing.T) {
	t.Parallel()

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-1:v1", 125000)
		res := MustExecute(t, f.client, op)
		if res.ObjectID == "" {
			t.Fatal("no payment id")
		}
		if got, want := res.Data["amount_minor"], int64(125000); got != want {
			t.Fatalf("amount_minor = %v (%T), want %v", got, got, want)
		}
		if got, want := res.Data["currency"], "RUB"; got != want {
			t.Fatalf("currency = %v, want %v", got, want)
		}
		if res.Data["status"] != "succeeded" || res.Data["paid"] != true {
			t.Fatalf("data = %v", res.Data)
		}
		if got, want := f.effects(op.Key), 1; got != want {
			t.Fatalf("effects = %d, want %d", got, want)
		}
		wire := f.get(t, "/payments/"+res.ObjectID)
		amt := wire["amount"].(map[string]any)
		if got, want := amt["value"], "1250.00"; got != want {
			t.Fatalf("amount.value on the wire = %v, want %v", got, want)
		}
		meta := wire["metadata"].(map[string]any)
		if meta["operation_key"] != op.Key || meta["idempotence_key"] != yookassa.IdempotenceKey(op.Key) || meta["order_id"] != "order-48291" {
			t.Fatalf("metadata = %v", meta)
		}
		if wire["payment_method"].(map[string]any)["id"] != "merchant-account-17" {
			t.Fatalf("payment_method = %v", wire["payment_method"])
		}
	})

	t.Run("RepeatReturnsSamePayment", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-2:v1", 125000)
		first := MustExecute(t, f.client, op)
		op.Attempt = 2
		second := MustExecute(t, f.client, op)
		if first.ObjectID != second.ObjectID {
			t.Fatalf("payment ids %s and %s, want one", first.ObjectID, second.ObjectID)
		}
		if got, want := f.effects(op.Key), 1; got != want {
			t.Fatalf("effects = %d, want %d", got, want)
		}
		if got, want := f.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(op.Key)), 2; got != want {
			t.Fatalf("calls = %d, want %d", got, want)
		}
	})

	t.Run("ConcurrentRepeatsMakeOnePayment", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-3:v1", 5000)
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				res, err := f.client.Execute(context.Background(), op)
				if err == nil {
					ids[i] = res.ObjectID
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] || id == "" {
				t.Fatalf("ids = %v, want one payment", ids)
			}
		}
		if got, want := f.effects(op.Key), 1; got != want {
			t.Fatalf("effects = %d, want %d", got, want)
		}
	})

	t.Run("ErrInsufficientFunds", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-4:v1", sim.YooKassaInsufficientFundsMinor)
		_, err := f.client.Execute(context.Background(), op)
		e := adapterstest.WantError(t, err, adapters.Final, "INSUFFICIENT_FUNDS", "")
		if e.ObjectID == "" {
			t.Fatal("canceled payment id not reported")
		}
	})

	t.Run("ErrUnknownAccount", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-5:v1", 1000)
		op.Payload = payload(t, map[string]any{"account_id": "merchant-account-99", "order_id": "o", "amount_minor": 1000, "currency": "RUB"})
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, "REFERENCE_NOT_FOUND", "account_id")
		if got := f.effects(op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
	})

	t.Run("ErrUnsupportedCurrency", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-6:v1", 1000)
		op.Payload = payload(t, map[string]any{"account_id": "merchant-account-17", "order_id": "o", "amount_minor": 1000, "currency": "JPY"})
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, "VALIDATION_ERROR", "currency")
		if got := f.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(op.Key)); got != 0 {
			t.Fatalf("calls = %d, want 0: refused before sending", got)
		}
	})

	t.Run("ErrDescriptionTooLong", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-7:v1", 1000)
		op.Payload = payload(t, map[string]any{"account_id": "merchant-account-17", "order_id": "o", "amount_minor": 1000, "currency": "RUB", "description": strings.Repeat("д", 129)})
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, "VALIDATION_ERROR", "description")
	})

	t.Run("KeyHeldByAnotherBody", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-8:v1", 1000)
		first := MustExecute(t, f.client, op)
		changed := op
		changed.Payload = payload(t, map[string]any{"account_id": "merchant-account-17", "order_id": "order-48291", "amount_minor": 1000, "currency": "RUB", "description": "other"})
		_, err := f.client.Execute(context.Background(), changed)
		adapterstest.WantError(t, err, adapters.Reconcile, "OUTCOME_UNKNOWN", "")
		res, err := f.client.Lookup(context.Background(), changed)
		if err != nil || res.ObjectID != first.ObjectID {
			t.Fatalf("Lookup = %v, %v; want the first payment %s", res.ObjectID, err, first.ObjectID)
		}
	})
}

func TestExecuteRefund(t *testing.T) {
	t.Parallel()

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:order-10:v1", 125000))
		op := refundOp(t, "test:payment.refund:order-10:v1", pay.ObjectID, 50000)
		res := MustExecute(t, f.client, op)
		if res.ObjectID == "" || res.Data["payment_id"] != pay.ObjectID || res.Data["amount_minor"] != int64(50000) || res.Data["status"] != "succeeded" {
			t.Fatalf("result = %+v", res)
		}
		again := MustExecute(t, f.client, op)
		if again.ObjectID != res.ObjectID {
			t.Fatalf("refund ids %s and %s, want one", res.ObjectID, again.ObjectID)
		}
		if got, want := f.effects(op.Key), 1; got != want {
			t.Fatalf("effects = %d, want %d", got, want)
		}
		wire := f.get(t, "/payments/"+pay.ObjectID)
		if got, want := wire["refunded_amount"].(map[string]any)["value"], "500.00"; got != want {
			t.Fatalf("refunded_amount = %v, want %v", got, want)
		}
	})

	t.Run("ErrOverRefund", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:order-11:v1", 125000))
		MustExecute(t, f.client, refundOp(t, "test:payment.refund:order-11:v1", pay.ObjectID, 100000))
		op := refundOp(t, "test:payment.refund:order-11:v2", pay.ObjectID, 25001)
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, "VALIDATION_ERROR", "amount_minor")
		if got := f.effects(op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
	})

	t.Run("ErrUnknownPayment", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := refundOp(t, "test:payment.refund:order-12:v1", "2f3b588d-000f-5000-8000-1d6e87c7fbde", 100)
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, "REFERENCE_NOT_FOUND", "payment_id")
	})

	t.Run("ErrCanceledPayment", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		_, err := f.client.Execute(context.Background(), chargeOp(t, "test:payment.charge:order-13:v1", sim.YooKassaInsufficientFundsMinor))
		e := adapterstest.WantError(t, err, adapters.Final, "INSUFFICIENT_FUNDS", "")
		_, err = f.client.Execute(context.Background(), refundOp(t, "test:payment.refund:order-13:v1", e.ObjectID, 100))
		adapterstest.WantError(t, err, adapters.Final, "VALIDATION_ERROR", "payment_id")
	})
}

func TestLookup(t *testing.T) {
	t.Parallel()

	t.Run("ChargeByScan", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-20:v1", 125000)
		want := MustExecute(t, f.client, op)
		// More than a page of later payments: the list is newest first,
		// so the scan has to follow the cursor to reach it.
		for i := range 130 {
			MustExecute(t, f.client, chargeOp(t, "test:payment.charge:later-"+strconv.Itoa(i)+":v1", 100))
		}
		res, err := f.client.Lookup(context.Background(), op)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		if res.ObjectID != want.ObjectID || res.Data["amount_minor"] != int64(125000) {
			t.Fatalf("Lookup = %+v, want %+v", res, want)
		}
	})

	t.Run("ChargeByID", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-21:v1", 125000)
		want := MustExecute(t, f.client, op)
		op.ObjectID = want.ObjectID
		op.CreatedAt = time.Time{}
		res, err := f.client.Lookup(context.Background(), op)
		if err != nil || res.ObjectID != want.ObjectID {
			t.Fatalf("Lookup = %+v, %v", res, err)
		}
	})

	t.Run("ChargeCanceled", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-22:v1", sim.YooKassaInsufficientFundsMinor)
		f.client.Execute(context.Background(), op)
		_, err := f.client.Lookup(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, "INSUFFICIENT_FUNDS", "")
	})

	t.Run("RefundByScanAndByID", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:order-23:v1", 125000))
		MustExecute(t, f.client, refundOp(t, "test:payment.refund:order-23:v1", pay.ObjectID, 100))
		op := refundOp(t, "test:payment.refund:order-23:v2", pay.ObjectID, 200)
		want := MustExecute(t, f.client, op)
		res, err := f.client.Lookup(context.Background(), op)
		if err != nil || res.ObjectID != want.ObjectID {
			t.Fatalf("Lookup by scan = %+v, %v; want %s", res, err, want.ObjectID)
		}
		op.ObjectID = want.ObjectID
		res, err = f.client.Lookup(context.Background(), op)
		if err != nil || res.ObjectID != want.ObjectID {
			t.Fatalf("Lookup by id = %+v, %v; want %s", res, err, want.ObjectID)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		MustExecute(t, f.client, chargeOp(t, "test:payment.charge:order-24:v1", 100))
		for _, op := range []adapters.Op{
			chargeOp(t, "test:payment.charge:never-sent:v1", 100),
			refundOp(t, "test:payment.refund:never-sent:v1", "2f3b588d-000f-5000-8000-1d6e87c7fbde", 100),
		} {
			if _, err := f.client.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("Lookup(%s) = %v, want ErrNotFound", op.Key, err)
			}
		}
		op := chargeOp(t, "test:payment.charge:never-sent:v1", 100)
		op.ObjectID = "2f3b588d-000f-5000-8000-1d6e87c7fbde"
		if _, err := f.client.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("Lookup by unknown id = %v, want ErrNotFound", err)
		}
	})

	t.Run("FailureStaysUnknown", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.inject(t, sim.Fault{Fault: sim.FaultStatus, Status: 503, On: sim.OnLookup})
		_, err := f.client.Lookup(context.Background(), chargeOp(t, "test:payment.charge:order-25:v1", 100))
		// No answer, and no "not found": the provider could not be asked,
		// so it is asked again.
		if errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) != adapters.Retry {
			t.Fatalf("Lookup during an outage = %v, want Retry", err)
		}
	})
}

func TestExecuteFaults(t *testing.T) {
	t.Parallel()

	t.Run("Status503", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.inject(t, sim.Fault{Fault: sim.FaultStatus, Status: 503})
		op := chargeOp(t, "test:payment.charge:order-30:v1", 1000)
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "")
		if got := f.effects(op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
		MustExecute(t, f.client, op)
		if got := f.effects(op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})

	t.Run("Status429", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.inject(t, sim.Fault{Fault: sim.FaultStatus, Status: 429})
		_, err := f.client.Execute(context.Background(), chargeOp(t, "test:payment.charge:order-31:v1", 1000))
		e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "")
		if got, want := e.RetryAfter, 1; got != want {
			t.Fatalf("RetryAfter = %d, want %d", got, want)
		}
	})

	t.Run("ResetBeforeRead", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.inject(t, sim.Fault{Fault: sim.FaultReset})
		op := chargeOp(t, "test:payment.charge:order-32:v1", 1000)
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "")
		if got := f.effects(op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
	})

	t.Run("DropResponseAfterCommit", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.inject(t, sim.Fault{Fault: sim.FaultDropResponse})
		op := chargeOp(t, "test:payment.charge:order-33:v1", 125000)
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
		found, err := f.client.Lookup(context.Background(), op)
		if err != nil {
			t.Fatalf("Lookup: %v", err)
		}
		again := MustExecute(t, f.client, op)
		if again.ObjectID != found.ObjectID {
			t.Fatalf("Execute after reconcile = %s, Lookup found %s", again.ObjectID, found.ObjectID)
		}
		if got := f.effects(op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})

	t.Run("DelayPastTimeout", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		f.inject(t, sim.Fault{Fault: sim.FaultDelay, DelayMS: 400})
		op := chargeOp(t, "test:payment.charge:order-34:v1", 125000)
		_, err := f.client.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
		res := eventually(t, f.client, op)
		if got := f.effects(op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
		if again := MustExecute(t, f.client, op); again.ObjectID != res.ObjectID {
			t.Fatalf("Execute after reconcile = %s, want %s", again.ObjectID, res.ObjectID)
		}
	})

	t.Run("ErrWrongSecret", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		secret := "wrong-secret-value-123"
		c := MustNew(t, yookassa.Config{BaseURL: f.url, ShopID: shopID, SecretKey: secret, Timeout: timeout})
		op := chargeOp(t, "test:payment.charge:order-35:v1", 1000)
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, "TARGET_PERMISSION_DENIED", "")
		_, lerr := c.Lookup(context.Background(), op)
		_, verr := c.Validate(context.Background(), refundOp(t, "test:payment.refund:order-35:v1", "2f3b588d-000f-5000-8000-1d6e87c7fbde", 100))
		// The reads refused for the gateway's own credentials say so too,
		// as for the write: Retry, so a fixed secret lets the next try through.
		adapterstest.WantError(t, lerr, adapters.Retry, "TARGET_PERMISSION_DENIED", "")
		adapterstest.WantError(t, verr, adapters.Retry, "TARGET_PERMISSION_DENIED", "")
		basic := base64.StdEncoding.EncodeToString([]byte(shopID + ":" + secret))
		for _, e := range []error{err, lerr, verr} {
			if e == nil || strings.Contains(e.Error(), secret) || strings.Contains(e.Error(), basic) {
				t.Fatalf("error %q leaks the secret or is nil", e)
			}
		}
		if got := f.effects(op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
	})
}

// eventually looks op up until the delayed commit shows.
func eventually(tb testing.TB, c *yookassa.Client, op adapters.Op) adapters.Result {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := c.Lookup(context.Background(), op)
		if err == nil {
			return res
		}
		if !errors.Is(err, adapters.ErrNotFound) || time.Now().After(deadline) {
			tb.Fatalf("Lookup: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()

	t.Run("Charge", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		op := chargeOp(t, "test:payment.charge:order-40:v1", 125000)
		plan, err := f.client.Validate(context.Background(), op)
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		if plan.Data["amount_value"] != "1250.00" || plan.Data["amount_minor"] != int64(125000) || plan.Data["account_id"] != "merchant-account-17" {
			t.Fatalf("plan = %v", plan.Data)
		}
		if got := f.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(op.Key)); got != 0 {
			t.Fatalf("calls = %d, want 0", got)
		}
	})

	t.Run("Refund", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		pay := MustExecute(t, f.client, chargeOp(t, "test:payment.charge:order-41:v1", 125000))
		MustExecute(t, f.client, refundOp(t, "test:payment.refund:order-41:v1", pay.ObjectID, 25000))
		op := refundOp(t, "test:payment.refund:order-41:v2", pay.ObjectID, 100000)
		plan, err := f.client.Validate(context.Background(), op)
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		if got, want := plan.Data["refundable_minor"], int64(100000); got != want {
			t.Fatalf("refundable_minor = %v, want %v", got, want)
		}
		if got := f.effects(op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
		op = refundOp(t, "test:payment.refund:order-41:v3", pay.ObjectID, 100001)
		_, err = f.client.Validate(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, "VALIDATION_ERROR", "amount_minor")
	})

	// The saved payment method is checked before anyone approves a charge.
	t.Run("ErrChargeAccount", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for account, code := range map[string]string{
			"merchant-account-99":        "REFERENCE_NOT_FOUND",
			"merchant-account-blocked-1": "REFERENCE_INACTIVE",
			"not/a path":                 "REFERENCE_NOT_FOUND",
		} {
			op := chargeOp(t, "test:payment.charge:order-43:v1", 100)
			op.Payload = payload(t, map[string]any{"account_id": account, "order_id": "order-43", "amount_minor": 100, "currency": "RUB"})
			_, err := f.client.Validate(context.Background(), op)
			adapterstest.WantError(t, err, adapters.Final, code, "account_id")
		}
	})

	t.Run("ErrChargeProviderDown", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		if err := f.sim.Inject(sim.Fault{Target: sim.YooKassa, Fault: sim.FaultStatus, Status: 503, Times: 1, On: sim.OnLookup}); err != nil {
			t.Fatal(err)
		}
		_, err := f.client.Validate(context.Background(), chargeOp(t, "test:payment.charge:order-44:v1", 100))
		var ae *adapters.Error
		if !errors.As(err, &ae) || ae.Class == adapters.Final {
			t.Fatalf("a provider outage during the check is %v, want a non-final error", err)
		}
	})

	t.Run("ErrRefundUnknownPayment", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		_, err := f.client.Validate(context.Background(), refundOp(t, "test:payment.refund:order-42:v1", "2f3b588d-000f-5000-8000-1d6e87c7fbde", 100))
		adapterstest.WantError(t, err, adapters.Final, "REFERENCE_NOT_FOUND", "payment_id")
	})
}

func TestIdempotenceKey(t *testing.T) {
	t.Parallel()
	long := "test:payment.charge:" + strings.Repeat("x", 255-len("test:payment.charge:")-3) + ":v1"
	if len(long) != 255 {
		t.Fatalf("fixture key has %d characters", len(long))
	}
	k := yookassa.IdempotenceKey(long)
	if got, want := k, yookassa.IdempotenceKey(long); got != want {
		t.Fatalf("unstable: %s then %s", want, got)
	}
	if len(k) > 64 {
		t.Fatalf("key has %d characters, YooKassa accepts 64", len(k))
	}
	if strings.Trim(k, "0123456789abcdef") != "" {
		t.Fatalf("key %q is not lowercase hex", k)
	}
	if yookassa.IdempotenceKey(long+"2") == k {
		t.Fatal("different operation keys share a provider key")
	}
	// The longest key is accepted by the simulator, which enforces the limit.
	f := setup(t)
	MustExecute(t, f.client, chargeOp(t, long, 100))
	if got := f.effects(long); got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	const secret = "very-secret-key"
	for name, cfg := range map[string]yookassa.Config{
		"ErrNoBaseURL":      {ShopID: shopID, SecretKey: secret},
		"ErrRelativeURL":    {BaseURL: "/v3", ShopID: shopID, SecretKey: secret},
		"ErrCredentialsURL": {BaseURL: "https://u:" + secret + "@api.yookassa.ru/v3", ShopID: shopID, SecretKey: secret},
		"ErrNoShop":         {BaseURL: "https://api.yookassa.ru/v3", SecretKey: secret},
		"ErrNoSecret":       {BaseURL: "https://api.yookassa.ru/v3", ShopID: shopID},
		"ErrNegativeTime":   {BaseURL: "https://api.yookassa.ru/v3", ShopID: shopID, SecretKey: secret, Timeout: -time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := yookassa.New(cfg)
			if err == nil {
				t.Fatal("New accepted a bad configuration")
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("error %q leaks the secret", err)
			}
		})
	}
	c, err := yookassa.New(yookassa.Config{BaseURL: "https://api.yookassa.ru/v3/", ShopID: shopID, SecretKey: secret})
	if err != nil || c.Name() != "yookassa" {
		t.Fatalf("New = %v, %v", c, err)
	}
}
