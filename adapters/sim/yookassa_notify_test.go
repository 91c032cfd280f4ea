package sim_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
)

// fast is a short schedule of attempts for tests.
var fast = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}

// wantNotification checks a YooKassa notification's request and that its
// object is what GET path answers, and returns the object.
func (f *ykFixture) wantNotification(tb testing.TB, got received, event, path string) map[string]any {
	tb.Helper()
	if got.contentType != "application/json" {
		tb.Fatalf("Content-Type = %q, want application/json", got.contentType)
	}
	if !strings.HasPrefix(got.body, `{"type":"notification","event":"`+event+`","object":{`) {
		tb.Fatalf("body = %s, want a notification of %s", got.body, event)
	}
	var n struct {
		Type   string         `json:"type"`
		Event  string         `json:"event"`
		Object map[string]any `json:"object"`
	}
	if err := json.Unmarshal([]byte(got.body), &n); err != nil {
		tb.Fatalf("body %s: %v", got.body, err)
	}
	status, read := f.call(tb, http.MethodGet, path, "", "", nil)
	if status != http.StatusOK || !reflect.DeepEqual(n.Object, read) {
		tb.Fatalf("notified object\n %v\nGET %s answers %d\n %v", n.Object, path, status, read)
	}
	return n.Object
}

func TestYooKassaNotify(t *testing.T) {
	t.Parallel()

	t.Run("PaymentSucceeded", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t)
		f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: fast})
		pay := f.mustPay(t, "n-1", "150.00")
		obj := f.wantNotification(t, rc.wait(t, 1)[0], sim.YooKassaPaymentSucceeded, "/payments/"+pay["id"].(string))
		if obj["status"] != "succeeded" || obj["id"] != pay["id"] {
			t.Fatalf("object = %v", obj)
		}
		// The attempt is recorded once its answer is back, after the
		// receiver saw the request.
		waitFor(t, func() bool { n := f.sim.YooKassaNotices(); return len(n) == 1 && len(n[0].Attempts) == 1 })
		notices := f.sim.YooKassaNotices()
		if len(notices) != 1 || !notices[0].Delivered || !reflect.DeepEqual(notices[0].Attempts, []int{200}) ||
			notices[0].Event != sim.YooKassaPaymentSucceeded || notices[0].URL != rc.url {
			t.Fatalf("notices = %+v", notices)
		}
	})

	t.Run("WaitingAndCanceled", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t)
		f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: fast})
		body := ykPaymentBody("10.00")
		body["capture"] = false
		status, held := f.call(t, http.MethodPost, "/payments", "n-hold", "", body)
		if status != http.StatusOK || held["status"] != "waiting_for_capture" {
			t.Fatalf("payment = %d %v", status, held)
		}
		f.wantNotification(t, rc.wait(t, 1)[0], sim.YooKassaWaitingForCapture, "/payments/"+held["id"].(string))
		poor := f.mustPay(t, "n-poor", "1000000.00")
		obj := f.wantNotification(t, rc.event(t, 2, sim.YooKassaPaymentCanceled), sim.YooKassaPaymentCanceled, "/payments/"+poor["id"].(string))
		if obj["cancellation_details"].(map[string]any)["reason"] != "insufficient_funds" {
			t.Fatalf("object = %v", obj)
		}
	})

	t.Run("Refund", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t)
		f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: fast})
		pay := f.mustPay(t, "n-r", "100.00")
		status, ref := f.call(t, http.MethodPost, "/refunds", "n-r-1", "", map[string]any{
			"payment_id": pay["id"], "amount": map[string]any{"value": "30.00", "currency": "RUB"}})
		if status != http.StatusOK {
			t.Fatalf("refund = %d %v", status, ref)
		}
		f.wantNotification(t, rc.event(t, 2, sim.YooKassaRefundSucceeded), sim.YooKassaRefundSucceeded, "/refunds/"+ref["id"].(string))
		if n := f.sim.YooKassaNotices(); len(n) != 2 || n[0].Event != sim.YooKassaPaymentSucceeded || n[1].Event != sim.YooKassaRefundSucceeded {
			t.Fatalf("notices = %+v", n)
		}
	})

	t.Run("RetriedUntil200", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t, 500, 500)
		f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: fast})
		pay := f.mustPay(t, "n-retry", "5.00")
		got := rc.wait(t, 3)
		if got[0].body != got[1].body || got[1].body != got[2].body {
			t.Fatalf("attempts differ: %v", got)
		}
		f.wantNotification(t, got[2], sim.YooKassaPaymentSucceeded, "/payments/"+pay["id"].(string))
		waitFor(t, func() bool { n := f.sim.YooKassaNotices(); return len(n) == 1 && n[0].Delivered })
		time.Sleep(80 * time.Millisecond) // a fourth attempt would have come by now
		if n := f.sim.YooKassaNotices(); rc.count() != 3 || !reflect.DeepEqual(n[0].Attempts, []int{500, 500, 200}) {
			t.Fatalf("receiver got %d, notices = %+v", rc.count(), n)
		}
	})

	t.Run("GivesUpAfterSchedule", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t, 503, 503, 503, 503, 503)
		f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: fast[:1]})
		f.mustPay(t, "n-gone", "5.00")
		rc.wait(t, 2)
		waitFor(t, func() bool { return len(f.sim.YooKassaNotices()[0].Attempts) == 2 })
		time.Sleep(80 * time.Millisecond)
		if n := f.sim.YooKassaNotices(); rc.count() != 2 || n[0].Delivered {
			t.Fatalf("receiver got %d, notices = %+v", rc.count(), n)
		}
	})

	t.Run("NoURL", func(t *testing.T) {
		t.Parallel()
		f := ykSetup(t)
		f.mustPay(t, "n-none", "5.00")
		if n := f.sim.YooKassaNotices(); len(n) != 0 {
			t.Fatalf("notices without a URL: %+v", n)
		}
	})

	t.Run("Copies", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t)
		f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: fast, Copies: 2})
		f.mustPay(t, "n-twice", "5.00")
		got := rc.wait(t, 2)
		if got[0].body != got[1].body {
			t.Fatalf("copies differ:\n %s\n %s", got[0].body, got[1].body)
		}
		waitFor(t, func() bool { n := f.sim.YooKassaNotices(); return len(n) == 2 && n[1].Delivered })
	})

	t.Run("PendingSettlesUnread", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t)
		f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: fast})
		f.sim.SetYooKassaMode(sim.YooKassaMode{PendingMS: 400}) // long enough to look before it settles
		pay := f.mustPay(t, "n-pending", "5.00")
		if pay["status"] != "pending" || len(f.sim.YooKassaNotices()) != 0 {
			t.Fatalf("payment %v, notices %+v", pay, f.sim.YooKassaNotices())
		}
		f.wantNotification(t, rc.wait(t, 1)[0], sim.YooKassaPaymentSucceeded, "/payments/"+pay["id"].(string))
		if n := f.sim.YooKassaNotices(); len(n) != 1 {
			t.Fatalf("notices = %+v", n) // the read settles nothing a second time
		}
	})

	t.Run("ControlAPI", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t, 500)
		base := strings.TrimSuffix(f.url, "/yookassa/v3")
		for _, bad := range []string{`{"url":"ftp://x"}`, `{"url":"` + rc.url + `","retry_ms":[0]}`, `{"uri":"x"}`, `{"copies":-1}`} {
			if got := postStatus(t, base+"/_sim/yookassa/notify", bad); got != http.StatusBadRequest {
				t.Fatalf("POST %s = %d, want 400", bad, got)
			}
		}
		if got := postStatus(t, base+"/_sim/yookassa/notify", `{"url":"`+rc.url+`","retry_ms":[20]}`); got != http.StatusOK {
			t.Fatalf("POST notify = %d", got)
		}
		f.sim.Reset() // the shop's setting outlives a reset
		f.mustPay(t, "n-ctl", "5.00")
		rc.wait(t, 2)
		var list struct{ Notifications []sim.Notice }
		waitFor(t, func() bool {
			getJSON(t, base+"/_sim/yookassa/notifications", &list)
			return len(list.Notifications) == 1 && list.Notifications[0].Delivered
		})
		if n := list.Notifications[0]; !reflect.DeepEqual(n.Attempts, []int{500, 200}) || n.Event != sim.YooKassaPaymentSucceeded {
			t.Fatalf("notifications = %+v", list)
		}
	})

	t.Run("CloseStops", func(t *testing.T) {
		t.Parallel()
		f, rc := ykSetup(t), newReceiver(t, 500, 500, 500, 500, 500, 500, 500, 500)
		f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: []time.Duration{10 * time.Millisecond, time.Hour}})
		f.mustPay(t, "n-close", "5.00")
		rc.wait(t, 2) // now waiting an hour for the third attempt
		done := make(chan struct{})
		go func() { f.sim.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatal("Close waited on a notice's schedule")
		}
		f.mustPay(t, "n-after", "5.00")
		if n := f.sim.YooKassaNotices(); len(n) != 1 || rc.count() != 2 {
			t.Fatalf("after Close: receiver got %d, notices %+v", rc.count(), n)
		}
	})
}

// waitFor polls cond for up to five seconds.
func waitFor(tb testing.TB, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// postStatus posts a JSON body and returns the status.
func postStatus(tb testing.TB, url, body string) int {
	tb.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// getJSON decodes a GET's JSON answer into v.
func getJSON(tb testing.TB, url string, v any) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
}

// TestYooKassaCapture: a payment waiting for capture is captured (in part)
// or canceled once per key, and each is notified.
func TestYooKassaCapture(t *testing.T) {
	t.Parallel()
	f, rc := ykSetup(t), newReceiver(t)
	f.sim.SetYooKassaNotify(sim.YooKassaNotify{URL: rc.url, Retry: fast})
	hold := func(key string) string {
		body := ykPaymentBody("100.00")
		body["capture"] = false
		status, p := f.call(t, http.MethodPost, "/payments", key, "", body)
		if status != http.StatusOK || p["status"] != "waiting_for_capture" {
			t.Fatalf("payment = %d %v", status, p)
		}
		return p["id"].(string)
	}
	id := hold("c-pay")
	part := map[string]any{"amount": map[string]any{"value": "60.00", "currency": "RUB"}}
	status, p := f.call(t, http.MethodPost, "/payments/"+id+"/capture", "c-cap", "", part)
	if status != http.StatusOK || p["status"] != "succeeded" || p["amount"].(map[string]any)["value"] != "60.00" || p["captured_at"] == nil {
		t.Fatalf("capture = %d %v", status, p)
	}
	if status, again := f.call(t, http.MethodPost, "/payments/"+id+"/capture", "c-cap", "", part); status != http.StatusOK || again["id"] != id {
		t.Fatalf("repeat of the capture = %d %v", status, again)
	}
	status, got := f.call(t, http.MethodPost, "/payments/"+id+"/capture", "c-cap-2", "", map[string]any{})
	wantYKError(t, status, got, http.StatusBadRequest, "invalid_request", "payment_id")
	f.wantNotification(t, rc.event(t, 2, sim.YooKassaPaymentSucceeded), sim.YooKassaPaymentSucceeded, "/payments/"+id)
	if f.sim.Effects(sim.YooKassa, "c-cap") != 1 {
		t.Fatalf("capture effects = %d", f.sim.Effects(sim.YooKassa, "c-cap"))
	}

	other := hold("c-pay-2")
	status, p = f.call(t, http.MethodPost, "/payments/"+other+"/cancel", "c-cancel", "", map[string]any{})
	if status != http.StatusOK || p["status"] != "canceled" || p["paid"] != false ||
		!reflect.DeepEqual(p["cancellation_details"], map[string]any{"party": "merchant", "reason": "canceled_by_merchant"}) {
		t.Fatalf("cancel = %d %v", status, p)
	}
	f.wantNotification(t, rc.event(t, 4, sim.YooKassaPaymentCanceled), sim.YooKassaPaymentCanceled, "/payments/"+other)
	status, got = f.call(t, http.MethodPost, "/payments/2f3b588d-000f-5000-8000-1d6e87c7fbde/cancel", "c-none", "", map[string]any{})
	wantYKError(t, status, got, http.StatusNotFound, "not_found", "payment_id")
}
