package bitrix24_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/codes"
)

// A portal whose subscription has ended answers every call
// PAYMENT_REQUIRED: the portal's plan, an operator's matter. The target is
// unavailable (retryable, nothing was done), never a refusal of the
// request, and the message says what an operator must do.
func TestSubscriptionEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, status := range []int{http.StatusPaymentRequired, http.StatusForbidden, http.StatusUnauthorized, http.StatusOK} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write([]byte(`{"error":"PAYMENT_REQUIRED","error_description":"Subscription has been ended"}`))
		}))
		c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/rest/7/" + secret + "/", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		op := newOp(t, "customer-1042")
		_, err = c.Execute(ctx, op)
		ae := adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
		if !strings.Contains(ae.Message, "subscription has ended") {
			t.Fatalf("%d: message %q does not tell the operator the portal's subscription has ended", status, ae.Message)
		}
		_, err = c.Lookup(ctx, op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
		_, err = c.Validate(ctx, op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
		if _, err := c.Probe(ctx); err == nil || !strings.Contains(err.Error(), "subscription has ended") {
			t.Fatalf("%d: check: %v", status, err)
		}
		srv.Close()
	}
}

// One odd value in an answer's "time" block (a string for a number, a
// field missing, the block not an object) does not fail an answer that is
// otherwise a success: the activity is made once and found by its key.
func TestTimeBlockLenient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, odd := range []string{
		`{"start":1717171717.1,"finish":1717171717.2,"duration":0.1,"processing":0.01,"date_start":"2024-05-31T19:08:37+03:00","date_finish":"2024-05-31T19:08:37+03:00","operating_reset_at":"1717172317","operating":"0.01"}`,
		`{"start":"1717171717.1","duration":0.1}`,
		`{"operating_reset_at":null,"operating":true}`,
		`"2024-05-31T19:08:37+03:00"`,
		`[]`,
		`null`,
	} {
		s := newSim()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, r)
			var answer map[string]json.RawMessage
			if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &answer) == nil && answer["time"] != nil {
				answer["time"] = json.RawMessage(odd)
				b, _ := json.Marshal(answer)
				rec.Body = bytes.NewBuffer(b)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		}))
		c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/bitrix24/rest/7/" + secret + "/", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		op := newOp(t, "customer-1042")
		res, err := c.Execute(ctx, op)
		if err != nil {
			t.Fatalf("time %s: execute: %v", odd, err)
		}
		got, err := c.Lookup(ctx, op)
		if err != nil || got.ObjectID != res.ObjectID {
			t.Fatalf("time %s: look-up: %+v %v", odd, got, err)
		}
		if n := s.Effects("bitrix24", op.Key); n != 1 {
			t.Fatalf("time %s: %d activities, want 1", odd, n)
		}
		srv.Close()
	}
}

// A wrong webhook secret: the portal answers 401 NO_AUTH_FOUND "Wrong
// authorization data"; the gateway's own configuration is refused
// (TARGET_PERMISSION_DENIED, retryable once an operator fixes the URL).
func TestWrongWebhookSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSim()
	srv := httptest.NewServer(s)
	defer srv.Close()
	c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + "/bitrix24/rest/7/wrong-" + secret + "/", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	op := newOp(t, "customer-1042")
	_, err = c.Execute(ctx, op)
	ae := adapterstest.WantError(t, err, adapters.Retry, codes.TargetPermissionDenied, "", secret)
	if !strings.Contains(ae.Err.Error(), "NO_AUTH_FOUND") || !strings.Contains(ae.Message, "does not accept the webhook") {
		t.Fatalf("cause %v, want the portal's NO_AUTH_FOUND", ae.Err)
	}
	_, err = c.Lookup(ctx, op)
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetPermissionDenied, "", secret)
	if _, err := c.Probe(ctx); err == nil {
		t.Fatal("check passed with a wrong secret")
	} else if ae := new(adapters.Error); !errors.As(err, &ae) || ae.Code != codes.TargetPermissionDenied {
		t.Fatalf("check: %v", err)
	}
	if n := s.Effects("bitrix24", op.Key); n != 0 {
		t.Fatalf("%d activities with a wrong secret", n)
	}
}
