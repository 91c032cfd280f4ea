package bitrix24_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

const secret = "s3cr3tw3bh00k"

var keySeq atomic.Int64

// testUser is the webhook's user in these tests, an administrator.
const testUser = 7

// newSim returns simulators whose Bitrix24 portal accepts the tests'
// webhook (user testUser, secret) and sets no rate limit, so the tests
// are paced by nothing but themselves.
func newSim() *sim.Server {
	s := sim.New()
	p := sim.DefaultBitrix24Portal()
	p.WebhookUser, p.WebhookSecret, p.Admins = testUser, secret, []int{1, testUser}
	p.PerSecond = 0
	s.SetBitrix24Portal(p)
	return s
}

// setup serves fresh simulators and returns them with a client whose
// timeout is short, so delay faults outlast it.
func setup(t *testing.T) (*sim.Server, *bitrix24.Client, string) {
	t.Helper()
	s := newSim()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	base := srv.URL + "/bitrix24/rest/7/" + secret + "/"
	c, err := bitrix24.New(bitrix24.Config{WebhookURL: base, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return s, c, base
}

// newOp returns a crm.callback.create operation with a fresh key.
func newOp(t *testing.T, customer string) adapters.Op {
	t.Helper()
	payload, err := json.Marshal(map[string]string{
		"customer_id": customer,
		"due_at":      "2026-05-01T10:00:00Z",
		"comment":     "wants to discuss the invoice",
	})
	if err != nil {
		t.Fatal(err)
	}
	return adapters.Op{
		Key:     fmt.Sprintf("test:crm.callback:create:event-%d:v1", keySeq.Add(1)),
		Intent:  bitrix24.Intent,
		Payload: payload,
		Attempt: 1,
	}
}

func assertNoSecret(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, secret) {
			t.Fatalf("error leaks the webhook URL: %s", s)
		}
	}
}

func inject(t *testing.T, s *sim.Server, f sim.Fault) {
	t.Helper()
	f.Target = sim.Bitrix24
	if err := s.Inject(f); err != nil {
		t.Fatalf("inject: %v", err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://portal.bitrix24.ru/rest/1/" + secret + "/", true},
		{"https://portal.bitrix24.ru/rest/1/" + secret, true},
		{"http://127.0.0.1:9001/bitrix24/rest/12/" + secret + "/", true},
		{"", false},
		{"portal.bitrix24.ru/rest/1/" + secret + "/", false},
		{"ftp://portal.bitrix24.ru/rest/1/" + secret + "/", false},
		{"https://portal.bitrix24.ru/rest/" + secret + "/", false},
		{"https://portal.bitrix24.ru/rest/x/" + secret + "/", false},
		{"https://portal.bitrix24.ru/rest/-1/" + secret + "/", false},
		{"https://portal.bitrix24.ru/api/1/" + secret + "/", false},
		{"https://portal.bitrix24.ru/rest/1/" + secret + "/?a=b", false},
		{"https://user:" + secret + "@portal.bitrix24.ru/rest/1/" + secret + "/", false},
		{"https://portal.bitrix24.ru/rest/1/" + secret + "/crm.activity.add.json", false},
		{"https://por tal/rest/1/" + secret + "/%zz", false},
	} {
		c, err := bitrix24.New(bitrix24.Config{WebhookURL: tc.url})
		if got := err == nil; got != tc.ok {
			t.Errorf("New(%q) err = %v, want ok %v", tc.url, err, tc.ok)
		}
		assertNoSecret(t, err)
		if c != nil {
			for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
				if strings.Contains(s, secret) {
					t.Errorf("client prints its secret: %s", s)
				}
			}
		}
	}
	if _, err := bitrix24.New(bitrix24.Config{WebhookURL: "https://p/rest/1/x/", Timeout: -1}); err == nil {
		t.Error("negative timeout accepted")
	}
}

func TestExecute(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		op := newOp(t, "customer-1042")
		res, err := c.Execute(context.Background(), op)
		if err != nil {
			t.Fatalf("execute: %v", err)
		}
		if res.ObjectID == "" || res.Data["activity_id"] != res.ObjectID || res.Data["contact_id"] != "1" {
			t.Fatalf("result = %+v", res)
		}
		if got, want := s.Effects(sim.Bitrix24, op.Key), 1; got != want {
			t.Fatalf("effects = %d, want %d", got, want)
		}
		found, err := c.Lookup(context.Background(), op)
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		if found.ObjectID != res.ObjectID || found.Data["contact_id"] != "1" || found.Data["activity_id"] != res.ObjectID {
			t.Fatalf("lookup = %+v, want %+v", found, res)
		}
	})
	t.Run("ErrReferenceNotFound", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		op := newOp(t, "customer-9999")
		_, err := c.Execute(context.Background(), op)
		e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "customer_id", secret)
		if e.Field != "customer_id" {
			t.Fatalf("field = %q", e.Field)
		}
		if got := s.Calls(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("add calls = %d, want 0", got)
		}
	})
	t.Run("ErrReferenceNotFoundOtherCase", func(t *testing.T) {
		t.Parallel()
		// Bitrix24 filters under a case-insensitive collation; the
		// adapter takes only the exact external id.
		_, c, _ := setup(t)
		_, err := c.Execute(context.Background(), newOp(t, "CUSTOMER-1042"))
		adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "customer_id", secret)
	})
	t.Run("ErrReferenceInactive", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		op := newOp(t, "customer-blocked-1")
		_, err := c.Execute(context.Background(), op)
		e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceInactive, "customer_id", secret)
		if e.Field != "customer_id" {
			t.Fatalf("field = %q", e.Field)
		}
		if got := s.Effects(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
	})
	t.Run("ErrValidation", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		for field, payload := range map[string]string{
			"customer_id": `{"due_at":"2026-05-01T10:00:00Z"}`,
			"due_at":      `{"customer_id":"customer-1042","due_at":"tomorrow"}`,
			"comment":     `{"customer_id":"customer-1042","due_at":"2026-05-01T10:00:00Z","comment":"` + strings.Repeat("я", 501) + `"}`,
			"":            `{"customer_id":"customer-1042","due_at":"2026-05-01T10:00:00Z","method":"crm.deal.delete"}`,
		} {
			op := newOp(t, "customer-1042")
			op.Payload = json.RawMessage(payload)
			_, err := c.Execute(context.Background(), op)
			if e := adapterstest.WantError(t, err, adapters.Final, codes.Validation, field, secret); e.Field != field {
				t.Errorf("field = %q, want %q", e.Field, field)
			}
		}
		op := newOp(t, "customer-1042")
		op.Intent = "payment.charge"
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, codes.IntentNotAllowed, "", secret)
	})
	t.Run("ErrPermissionDenied", func(t *testing.T) {
		t.Parallel()
		s := newSim()
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		for _, path := range []string{
			"/bitrix24/rest/0/" + secret + "/", // 401 NO_AUTH_FOUND: no such webhook
			"/crm/rest/1/" + secret + "/",      // 404: not a REST endpoint at all
		} {
			c, err := bitrix24.New(bitrix24.Config{WebhookURL: srv.URL + path, Timeout: time.Second})
			if err != nil {
				t.Fatalf("new: %v", err)
			}
			op := newOp(t, "customer-1042")
			_, err = c.Execute(context.Background(), op)
			adapterstest.WantError(t, err, adapters.Retry, codes.TargetPermissionDenied, "", secret)
			_, err = c.Lookup(context.Background(), op)
			adapterstest.WantError(t, err, adapters.Retry, codes.TargetPermissionDenied, "", secret)
		}
	})
}

func TestExecute_Faults(t *testing.T) {
	t.Parallel()
	t.Run("Status503", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 503})
		op := newOp(t, "customer-1042")
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
		if got := s.Effects(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
		if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("lookup err = %v, want ErrNotFound", err)
		}
	})
	t.Run("Status429", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 429})
		op := newOp(t, "customer-1042")
		_, err := c.Execute(context.Background(), op)
		if e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret); e.RetryAfter != 1 {
			t.Fatalf("retry after = %d, want 1", e.RetryAfter)
		}
		if got := s.Effects(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
	})
	t.Run("Status502OnLookupOfContact", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		inject(t, s, sim.Fault{Fault: sim.FaultStatus, Status: 502, On: sim.OnLookup})
		op := newOp(t, "customer-1042")
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
		if got := s.Calls(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("add calls = %d, want 0", got)
		}
	})
	t.Run("ResetBeforeRead", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		inject(t, s, sim.Fault{Fault: sim.FaultReset})
		op := newOp(t, "customer-1042")
		_, err := c.Execute(context.Background(), op)
		// Bitrix24 does not dedupe, so a reset after the request was
		// written is Reconcile; a reset that beat the write is Retry.
		var e *adapters.Error
		if !errors.As(err, &e) || (e.Class != adapters.Reconcile && e.Class != adapters.Retry) {
			t.Fatalf("err = %v, want reconcile or retry", err)
		}
		t.Logf("reset before read: %v", err)
		assertNoSecret(t, err)
		if got := s.Effects(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("effects = %d, want 0", got)
		}
		if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("lookup err = %v, want ErrNotFound", err)
		}
		if _, err := c.Execute(context.Background(), op); err != nil {
			t.Fatalf("execute again: %v", err)
		}
		if got := s.Effects(sim.Bitrix24, op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})
	t.Run("DropResponseAfterCommit", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		inject(t, s, sim.Fault{Fault: sim.FaultDropResponse})
		op := newOp(t, "customer-1042")
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
		res, err := c.Lookup(context.Background(), op)
		if err != nil {
			t.Fatalf("lookup: %v", err)
		}
		if res.ObjectID == "" || res.Data["contact_id"] != "1" {
			t.Fatalf("lookup = %+v", res)
		}
		if got := s.Effects(sim.Bitrix24, op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})
	t.Run("DelayPastTimeout", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		inject(t, s, sim.Fault{Fault: sim.FaultDelay, DelayMS: 400})
		op := newOp(t, "customer-1042")
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
		// The simulator commits once the delay is over, caller gone or not.
		deadline := time.Now().Add(3 * time.Second)
		for {
			res, err := c.Lookup(context.Background(), op)
			if err == nil {
				if res.Data["contact_id"] != "1" {
					t.Fatalf("lookup = %+v", res)
				}
				break
			}
			if !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("lookup: %v", err)
			}
			if time.Now().After(deadline) {
				t.Fatal("the delayed add never committed")
			}
			time.Sleep(50 * time.Millisecond)
		}
		if got := s.Effects(sim.Bitrix24, op.Key); got != 1 {
			t.Fatalf("effects = %d, want 1", got)
		}
	})
	t.Run("LookupDelayPastTimeout", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		inject(t, s, sim.Fault{Fault: sim.FaultDelay, DelayMS: 400, On: sim.OnLookup})
		// A read that timed out made no effect: Retry, not Reconcile.
		_, err := c.Lookup(context.Background(), newOp(t, "customer-1042"))
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
	})
}

// TestExecute_NoDedupeAtTarget shows why the gateway serializes calls for a
// key and looks up before executing again: Bitrix24 makes one activity per
// add, whatever ORIGIN_ID says.
func TestExecute_NoDedupeAtTarget(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t)
	op := newOp(t, "customer-2001")
	first, err := c.Execute(context.Background(), op)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	second, err := c.Execute(context.Background(), op)
	if err != nil {
		t.Fatalf("execute again: %v", err)
	}
	if first.ObjectID == second.ObjectID {
		t.Fatalf("both adds answered %s", first.ObjectID)
	}
	if got, want := s.Effects(sim.Bitrix24, op.Key), 2; got != want {
		t.Fatalf("effects = %d, want %d", got, want)
	}
	// Lookup names the lowest id, every time.
	res, err := c.Lookup(context.Background(), op)
	if err != nil {
		t.Fatalf("lookup: %v", err)
	}
	if res.ObjectID != first.ObjectID || res.Data["contact_id"] != "2" {
		t.Fatalf("lookup = %+v, want activity %s", res, first.ObjectID)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	t.Run("ErrNotFound", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		if _, err := c.Lookup(context.Background(), newOp(t, "customer-1042")); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("ExactKeyOnly", func(t *testing.T) {
		t.Parallel()
		// Keys that differ only in case are different operations, though
		// the CRM's filter matches them both.
		_, c, _ := setup(t)
		op := newOp(t, "customer-1042")
		op.Key = "test:crm.callback:create:Event-A:v1"
		if _, err := c.Execute(context.Background(), op); err != nil {
			t.Fatalf("execute: %v", err)
		}
		other := op
		other.Key = "test:crm.callback:create:event-a:v1"
		if _, err := c.Lookup(context.Background(), other); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
		if _, err := c.Lookup(context.Background(), op); err != nil {
			t.Fatalf("lookup own key: %v", err)
		}
	})
	t.Run("ErrKeyTooLong", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		op := newOp(t, "customer-1042")
		op.Key = "test:crm.callback:create:" + strings.Repeat("x", 250) + ":v1"
		_, err := c.Lookup(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, codes.Validation, "", secret)
	})
}

func TestValidate(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t)
		op := newOp(t, "customer-2001")
		plan, err := c.Validate(context.Background(), op)
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		if plan.Data["contact_id"] != "2" || plan.Data["customer_id"] != "customer-2001" ||
			plan.Data["due_at"] != "2026-05-01T10:00:00Z" || plan.Data["responsible_id"] != "1" {
			t.Fatalf("plan = %+v", plan.Data)
		}
		if got := s.Calls(sim.Bitrix24, op.Key); got != 0 {
			t.Fatalf("add calls = %d, want 0", got)
		}
		if _, err := c.Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("validate wrote something: lookup err = %v", err)
		}
	})
	t.Run("ErrReferenceInactive", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t)
		_, err := c.Validate(context.Background(), newOp(t, "customer-blocked-1"))
		if e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceInactive, "customer_id", secret); e.Field != "customer_id" {
			t.Fatalf("field = %q", e.Field)
		}
	})
}

// TestNoSecretInErrors drives every failure path the adapter has over a
// real connection and checks that no error names the webhook.
func TestNoSecretInErrors(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t)
	for _, f := range []sim.Fault{
		{Fault: sim.FaultStatus, Status: 503},
		{Fault: sim.FaultReset},
		{Fault: sim.FaultDropResponse},
		{Fault: sim.FaultDelay, DelayMS: 300},
		{Fault: sim.FaultReset, On: sim.OnLookup},
	} {
		inject(t, s, f)
		_, err := c.Execute(context.Background(), newOp(t, "customer-1042"))
		if err == nil {
			t.Fatalf("fault %+v: no error", f)
		}
		assertNoSecret(t, err)
	}
	// Nothing listening at all.
	srv := httptest.NewServer(newSim())
	url := srv.URL
	srv.Close()
	dead, err := bitrix24.New(bitrix24.Config{WebhookURL: url + "/bitrix24/rest/7/" + secret + "/", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dead.Execute(context.Background(), newOp(t, "customer-1042"))
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
	_, err = dead.Lookup(context.Background(), newOp(t, "customer-1042"))
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetUnavailable, "", secret)
}

// A bare 502 from a proxy in front of the portal may come after the
// portal committed: Bitrix24 does not dedupe, so the write is reconciled,
// never simply sent again.
func TestExecute_ProxyFailureAfterCommit(t *testing.T) {
	t.Parallel()
	s := newSim()
	portal := httptest.NewServer(s)
	t.Cleanup(portal.Close)
	target, _ := url.Parse(portal.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if strings.HasSuffix(resp.Request.URL.Path, "/crm.activity.add.json") {
			resp.Body.Close()
			resp.StatusCode, resp.Status = http.StatusBadGateway, "502 Bad Gateway"
			resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader("<html>bad gateway</html>")), -1
			resp.Header = http.Header{"Content-Type": {"text/html"}}
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	c, err := bitrix24.New(bitrix24.Config{WebhookURL: front.URL + "/bitrix24/rest/7/" + secret + "/", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	op := newOp(t, "customer-1042")
	_, err = c.Execute(context.Background(), op)
	adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
	if n := s.Effects(sim.Bitrix24, op.Key); n != 1 {
		t.Fatalf("the portal has %d activities for the key, want the 1 made behind the proxy's 502", n)
	}
}

// A look-up that cannot read the whole list does not claim "not found".
func TestLookup_ListLongerThanRead(t *testing.T) {
	t.Parallel()
	var served atomic.Int64
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"result":[],"next":%d,"total":100000,"time":{}}`, n*50)
	}))
	t.Cleanup(endless.Close)
	c, err := bitrix24.New(bitrix24.Config{WebhookURL: endless.URL + "/rest/7/" + secret + "/", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Lookup(context.Background(), newOp(t, "customer-1042"))
	if errors.Is(err, adapters.ErrNotFound) {
		t.Fatal("a list read only in part answered not found")
	}
	var ae *adapters.Error
	if !errors.As(err, &ae) || ae.Class == adapters.Final {
		t.Fatalf("err = %v, want a look-up that could not tell", err)
	}
}
