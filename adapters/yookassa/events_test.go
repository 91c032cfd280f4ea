package yookassa_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

// noticeBody reads a notice's body from testdata/notice, past its
// commented header (source, date, assumptions).
func noticeBody(tb testing.TB, name string) []byte {
	tb.Helper()
	raw, err := os.ReadFile("testdata/notice/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	var body []string
	for _, line := range strings.Split(string(raw), "\n") {
		if len(body) == 0 && (strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "") {
			continue
		}
		body = append(body, line)
	}
	return []byte(strings.Join(body, "\n"))
}

func TestEvents(t *testing.T) {
	t.Parallel()
	f := setup(t)
	want := []string{"payment.waiting_for_capture", "payment.succeeded", "payment.canceled", "refund.succeeded"}
	if got := f.client.Events(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Events = %v, want %v", got, want)
	}
}

// YooKassa's own example notice parses into its event and payment id; its
// many other fields are let pass, and it carries no token.
func TestParseNotice(t *testing.T) {
	t.Parallel()
	f := setup(t)
	body := noticeBody(t, "payment.waiting_for_capture.txt")
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/json;charset=UTF-8"} {
		n, token, err := f.client.ParseNotice(ct, body)
		if err != nil {
			t.Fatalf("ParseNotice(%q): %v", ct, err)
		}
		if want := (adapters.Notice{Event: "payment.waiting_for_capture", ObjectID: "22d6d597-000f-5000-9000-145f6df21d6f"}); n != want || token != "" {
			t.Fatalf("ParseNotice(%q) = %+v, %q; want %+v, no token", ct, n, token, want)
		}
		if got, want := n.ID(), "payment.waiting_for_capture-22d6d597-000f-5000-9000-145f6df21d6f"; got != want {
			t.Fatalf("ID = %q, want %q", got, want)
		}
	}
	n, _, err := f.client.ParseNotice("application/json", []byte(`{"type":"notification","event":"refund.succeeded","object":{"id":"216749f7-0016-50be-b000-078d43a63ae4","payment_id":"216749da-000f-50be-b000-096747fad91e","status":"succeeded"}}`))
	if err != nil || n.Event != "refund.succeeded" || n.ObjectID != "216749f7-0016-50be-b000-078d43a63ae4" {
		t.Fatalf("a refund's notice = %+v, %v", n, err)
	}
}

// What is not a notice YooKassa sends is refused, saying what is wrong.
func TestParseNoticeRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	good := func(mutate func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(noticeBody(t, "payment.waiting_for_capture.txt"), &m); err != nil {
			t.Fatal(err)
		}
		mutate(m)
		b, _ := json.Marshal(m)
		return b
	}
	object := func(m map[string]any) map[string]any { return m["object"].(map[string]any) }
	sample := noticeBody(t, "payment.waiting_for_capture.txt")
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		want              string
	}{
		{"NoContentType", "", sample, "the notice has no content type; YooKassa sends application/json"},
		{"Form", "application/x-www-form-urlencoded", sample, `the notice's content type is "application/x-www-form-urlencoded", not application/json`},
		{"BadContentType", "json;;", sample, `the notice's content type is "json;;", not application/json`},
		{"Charset", "application/json; charset=windows-1251", sample, `the notice's charset is "windows-1251", not UTF-8`},
		{"NotJSON", "application/json", []byte("event=payment.succeeded"), "the notice is not a JSON object"},
		{"Empty", "application/json", nil, "the notice is not a JSON object"},
		{"Null", "application/json", []byte("null"), "the notice is not a JSON object"},
		{"Array", "application/json", []byte(`[{"type":"notification"}]`), "the notice is not a JSON object"},
		{"TwoValues", "application/json", append(append([]byte{}, sample...), sample...), "the notice is not a JSON object"},
		{"NoType", "application/json", good(func(m map[string]any) { delete(m, "type") }), `the notice has no type "notification"`},
		{"TypeNotString", "application/json", good(func(m map[string]any) { m["type"] = 1 }), `the notice has no type "notification"`},
		{"OtherType", "application/json", good(func(m map[string]any) { m["type"] = "error" }), `the notice's type is "error", not "notification"`},
		{"NoEvent", "application/json", good(func(m map[string]any) { delete(m, "event") }), "the notice names no event"},
		{"EmptyEvent", "application/json", good(func(m map[string]any) { m["event"] = "" }), "the notice names no event"},
		{"OtherEvent", "application/json", good(func(m map[string]any) { m["event"] = "payout.succeeded" }),
			`the notice's event "payout.succeeded" is none this source reads (payment.waiting_for_capture, payment.succeeded, payment.canceled, refund.succeeded)`},
		{"EventCase", "application/json", good(func(m map[string]any) { m["event"] = "Payment.Succeeded" }),
			`the notice's event "Payment.Succeeded" is none this source reads (payment.waiting_for_capture, payment.succeeded, payment.canceled, refund.succeeded)`},
		{"NoObject", "application/json", good(func(m map[string]any) { delete(m, "object") }), "the notice has no object"},
		{"ObjectNotObject", "application/json", good(func(m map[string]any) { m["object"] = "22d6d597-000f-5000-9000-145f6df21d6f" }), "the notice has no object"},
		{"NoID", "application/json", good(func(m map[string]any) { delete(object(m), "id") }), "the notice's object has no id"},
		{"NumericID", "application/json", good(func(m map[string]any) { object(m)["id"] = 17 }), "the notice's object has no id"},
		{"BadID", "application/json", good(func(m map[string]any) { object(m)["id"] = "../payments?limit=100" }),
			"the notice's object id is not a YooKassa id (letters, digits, '-' and '_', at most 64)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, token, err := f.client.ParseNotice(tc.contentType, tc.body)
			// The gateway answers an event the source is not read for as
			// one no rule runs on (422), anything else as malformed (400).
			if notSent := strings.Contains(tc.want, "none this source reads"); err != nil && errors.Is(err, adapters.ErrEventNotSent) != notSent {
				t.Fatalf("errors.Is(%v, ErrEventNotSent) = %v", err, !notSent)
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("ParseNotice = %+v, %q, %v; want the error %q", n, token, err, tc.want)
			}
		})
	}
}

// payWithoutCapture makes a payment at the simulator with capture false,
// as a shop holding the money before it ships does: it waits for capture.
func payWithoutCapture(tb testing.TB, f *fixture) string {
	tb.Helper()
	body := `{"amount":{"value":"990.00","currency":"RUB"},"capture":false,"payment_method_id":"merchant-account-17","description":"Order 77"}`
	req, _ := http.NewRequest(http.MethodPost, f.url+"/payments", strings.NewReader(body))
	req.SetBasicAuth(shopID, sim.YooKassaSecret())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotence-Key", fmt.Sprintf("hold-%d", time.Now().UnixNano()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var p struct{ ID, Status string }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || p.Status != "waiting_for_capture" {
		tb.Fatalf("payment without capture: %d, %+v, %v", resp.StatusCode, p, err)
	}
	return p.ID
}

// objectID is the payment or refund an attempt made, succeeded or not.
func objectID(tb testing.TB, c *yookassa.Client, op adapters.Op) string {
	tb.Helper()
	res, err := c.Execute(context.Background(), op)
	var e *adapters.Error
	switch {
	case err == nil:
		return res.ObjectID
	case errors.As(err, &e) && e.ObjectID != "":
		return e.ObjectID
	}
	tb.Fatalf("Execute(%s): %v", op.Key, err)
	return ""
}

func wantMismatch(tb testing.TB, err error, reason string) {
	tb.Helper()
	got, ok := adapters.IsMismatch(err)
	if !ok || got != reason {
		tb.Fatalf("read-back = %v, want the mismatch %q", err, reason)
	}
}

// A notice is acted on as the shop's payment is now: the object read back
// is the one the provider holds, with its amount as YooKassa writes it;
// one whose status is not the event's is a mismatch saying what it is.
func TestReadBackPayment(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)

	paid := objectID(t, f.client, chargeOp(t, "test:payment.charge:order-rb1:v1", 125050))
	obj, err := f.client.ReadBack(ctx, adapters.Notice{Event: "payment.succeeded", ObjectID: paid})
	if err != nil {
		t.Fatalf("read-back of a succeeded payment: %v", err)
	}
	if want := f.get(t, "/payments/"+paid); !reflect.DeepEqual(obj, want) {
		t.Fatalf("read-back = %v\nwant the payment as the provider answers it: %v", obj, want)
	}
	amount, _ := obj["amount"].(map[string]any)
	if amount["value"] != "1250.50" || amount["currency"] != "RUB" || obj["status"] != "succeeded" || obj["paid"] != true {
		t.Fatalf("read-back = %v, want status succeeded, paid, amount.value \"1250.50\" RUB", obj)
	}
	for _, ev := range []string{"payment.waiting_for_capture", "payment.canceled"} {
		_, err := f.client.ReadBack(ctx, adapters.Notice{Event: ev, ObjectID: paid})
		wantMismatch(t, err, "the payment's status is succeeded, not "+strings.TrimPrefix(ev, "payment."))
	}

	held := payWithoutCapture(t, f)
	if obj, err := f.client.ReadBack(ctx, adapters.Notice{Event: "payment.waiting_for_capture", ObjectID: held}); err != nil || obj["status"] != "waiting_for_capture" || obj["id"] != held {
		t.Fatalf("read-back of a payment waiting for capture = %v, %v", obj, err)
	}
	_, err = f.client.ReadBack(ctx, adapters.Notice{Event: "payment.succeeded", ObjectID: held})
	wantMismatch(t, err, "the payment's status is waiting_for_capture, not succeeded")

	canceled := objectID(t, f.client, chargeOp(t, "test:payment.charge:order-rb2:v1", sim.YooKassaInsufficientFundsMinor))
	if obj, err := f.client.ReadBack(ctx, adapters.Notice{Event: "payment.canceled", ObjectID: canceled}); err != nil || obj["status"] != "canceled" {
		t.Fatalf("read-back of a canceled payment = %v, %v", obj, err)
	}
	_, err = f.client.ReadBack(ctx, adapters.Notice{Event: "payment.succeeded", ObjectID: canceled})
	wantMismatch(t, err, "the payment's status is canceled, not succeeded")

	f.sim.SetYooKassaMode(sim.YooKassaMode{PendingMS: 60_000})
	pending := objectID(t, f.client, chargeOp(t, "test:payment.charge:order-rb3:v1", 5000))
	_, err = f.client.ReadBack(ctx, adapters.Notice{Event: "payment.succeeded", ObjectID: pending})
	wantMismatch(t, err, "the payment's status is pending, not succeeded")
}

func TestReadBackRefund(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	paid := objectID(t, f.client, chargeOp(t, "test:payment.charge:order-rb4:v1", 100000))
	refunded := objectID(t, f.client, refundOp(t, "test:payment.refund:order-rb4:v1", paid, 40000))
	obj, err := f.client.ReadBack(ctx, adapters.Notice{Event: "refund.succeeded", ObjectID: refunded})
	if err != nil {
		t.Fatalf("read-back of a succeeded refund: %v", err)
	}
	if amount, _ := obj["amount"].(map[string]any); obj["status"] != "succeeded" || obj["payment_id"] != paid || amount["value"] != "400.00" {
		t.Fatalf("read-back = %v, want the succeeded refund of 400.00 of %s", obj, paid)
	}
	// A refund's id is no payment's: the event names another kind of object.
	if _, err := f.client.ReadBack(ctx, adapters.Notice{Event: "payment.succeeded", ObjectID: refunded}); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("a refund's id read back as a payment: %v, want not found", err)
	}

	f.sim.SetYooKassaMode(sim.YooKassaMode{PendingMS: 60_000})
	pending := objectID(t, f.client, refundOp(t, "test:payment.refund:order-rb4:v2", paid, 10000))
	_, err = f.client.ReadBack(ctx, adapters.Notice{Event: "refund.succeeded", ObjectID: pending})
	wantMismatch(t, err, "the refund's status is pending, not succeeded")
}

// An id the shop does not have is "not found", whichever way YooKassa
// answers it (404 for an id of its form, 400 for another); an id that is
// no id of YooKassa's is not asked for at all.
func TestReadBackUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	for _, n := range []adapters.Notice{
		{Event: "payment.succeeded", ObjectID: unknownID},
		{Event: "payment.succeeded", ObjectID: "order-48291"},
		{Event: "refund.succeeded", ObjectID: unknownID},
		{Event: "payment.canceled", ObjectID: "../refunds"},
	} {
		if obj, err := f.client.ReadBack(ctx, n); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("ReadBack(%+v) = %v, %v; want not found", n, obj, err)
		}
	}
	_, err := f.client.ReadBack(ctx, adapters.Notice{Event: "payout.succeeded", ObjectID: unknownID})
	if err == nil || errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) != adapters.Final {
		t.Fatalf("read-back of an event it does not read: %v, want a final refusal", err)
	}
}

// A provider that could not answer is neither "not found" nor a
// mismatch: the notice stays to be read back again, and no error carries
// the shop's secret key, even from a provider that echoes it.
func TestReadBackUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	secret := sim.YooKassaSecret()
	basic := base64.StdEncoding.EncodeToString([]byte(shopID + ":" + secret))
	wantRetry := func(t *testing.T, what string, err error) {
		t.Helper()
		var e *adapters.Error
		if _, mismatch := adapters.IsMismatch(err); mismatch || errors.Is(err, adapters.ErrNotFound) || !errors.As(err, &e) || e.Class != adapters.Retry {
			t.Fatalf("%s: read-back = %v, want a retryable *adapters.Error", what, err)
		}
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, secret) || strings.Contains(s, basic) {
				t.Fatalf("%s: the error carries the secret key: %s", what, s)
			}
		}
	}

	f := setup(t)
	paid := objectID(t, f.client, chargeOp(t, "test:payment.charge:order-rb5:v1", 2000))
	n := adapters.Notice{Event: "payment.succeeded", ObjectID: paid}
	for _, status := range []int{500, 503, 429} {
		f.inject(t, sim.Fault{Fault: sim.FaultStatus, Status: status, On: sim.OnLookup})
		_, err := f.client.ReadBack(ctx, n)
		wantRetry(t, fmt.Sprint("HTTP ", status), err)
	}
	f.inject(t, sim.Fault{Fault: sim.FaultDelay, DelayMS: 500, On: sim.OnLookup})
	_, err := f.client.ReadBack(ctx, n)
	wantRetry(t, "no answer in time", err)
	if _, err := f.client.ReadBack(ctx, n); err != nil {
		t.Fatalf("read-back once the provider answers again: %v", err)
	}

	// A provider whose error repeats what it was sent.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "id": "1", "code": "internal_server_error",
			"description": "request " + r.Header.Get("Authorization") + " with key " + secret + " failed"})
	}))
	defer echo.Close()
	c := MustNew(t, yookassa.Config{BaseURL: echo.URL + "/yookassa/v3", ShopID: shopID, SecretKey: secret, Timeout: timeout})
	_, err = c.ReadBack(ctx, n)
	wantRetry(t, "an echoing provider", err)

	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	c = MustNew(t, yookassa.Config{BaseURL: down.URL + "/yookassa/v3", ShopID: shopID, SecretKey: secret, Timeout: timeout})
	_, err = c.ReadBack(ctx, n)
	wantRetry(t, "the provider down", err)
}

// front serves the simulator's answers through edit, as a provider
// answering otherwise would.
func front(tb testing.TB, f *fixture, edit func(path string, body []byte) (string, []byte)) *yookassa.Client {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, _ := edit(strings.TrimPrefix(r.URL.Path, "/yookassa/v3"), nil)
		req, _ := http.NewRequest(r.Method, f.url+path, nil)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		_, body = edit(path, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
	}))
	tb.Cleanup(srv.Close)
	return MustNew(tb, yookassa.Config{BaseURL: srv.URL + "/yookassa/v3", ShopID: shopID, SecretKey: sim.YooKassaSecret(), Timeout: timeout})
}

// The object is returned as YooKassa answered it, every field: one it adds
// that the gateway does not know is kept, and a number keeps each of its
// digits, as a json.Number.
func TestReadBackKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	paid := objectID(t, f.client, chargeOp(t, "test:payment.charge:order-rb6:v1", 2000))
	c := front(t, f, func(path string, body []byte) (string, []byte) {
		return path, bytes.Replace(body, []byte(`{`), []byte(`{"authorization_details":{"rrn":"603668680243","auth_code":"000000","three_d_secure":{"applied":false}},"income_amount":{"value":"19.30","currency":"RUB"},"attempt":12345678901234567890,`), 1)
	})
	obj, err := c.ReadBack(context.Background(), adapters.Notice{Event: "payment.succeeded", ObjectID: paid})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := obj["attempt"].(json.Number); !ok || got.String() != "12345678901234567890" {
		t.Fatalf("a number in the answer = %#v, want the json.Number 12345678901234567890", obj["attempt"])
	}
	if income, _ := obj["income_amount"].(map[string]any); income["value"] != "19.30" {
		t.Fatalf("a field the gateway does not read = %#v, want it kept", obj["income_amount"])
	}
	if ds, _ := obj["authorization_details"].(map[string]any)["three_d_secure"].(map[string]any); ds["applied"] != false {
		t.Fatalf("authorization_details = %#v, want it kept", obj["authorization_details"])
	}
}

// An answer that is of another payment than the one asked for, or that
// has no status, tells nothing of the notice's: it is read again later.
func TestReadBackOddAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	one := objectID(t, f.client, chargeOp(t, "test:payment.charge:order-rb7:v1", 2000))
	other := objectID(t, f.client, chargeOp(t, "test:payment.charge:order-rb7:v2", 2000))
	for name, edit := range map[string]func(string, []byte) (string, []byte){
		"OtherPayment": func(path string, body []byte) (string, []byte) {
			return strings.Replace(path, one, other, 1), body
		},
		"NoStatus": func(path string, body []byte) (string, []byte) {
			return path, bytes.Replace(body, []byte(`"status":"succeeded"`), []byte(`"state":"succeeded"`), 1)
		},
		"NotAnObject": func(path string, body []byte) (string, []byte) {
			if body == nil {
				return path, nil
			}
			return path, []byte("null")
		},
	} {
		_, err := front(t, f, edit).ReadBack(context.Background(), adapters.Notice{Event: "payment.succeeded", ObjectID: one})
		if _, mismatch := adapters.IsMismatch(err); err == nil || mismatch || errors.Is(err, adapters.ErrNotFound) || adapters.ClassOf(err) != adapters.Retry {
			t.Fatalf("%s: read-back = %v, want a retryable error", name, err)
		}
	}
}
