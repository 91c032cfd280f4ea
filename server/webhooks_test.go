package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// testWebhookSecrets are the endpoints' secrets the tests' gateways read.
var testWebhookSecrets = map[string]string{
	"WH_SECRET":     "whsec_" + base64.StdEncoding.EncodeToString([]byte("the endpoint's own secret, 32 b")),
	"WH_SECRET_OLD": "whsec_" + base64.StdEncoding.EncodeToString([]byte("the secret before the rotation!")),
}

// received is one delivery as the receiver saw it.
type received struct {
	id, timestamp, signature string
	body                     []byte
	event                    struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
}

// receiver is an endpoint recording what reaches it, answering status.
type receiver struct {
	mu     sync.Mutex
	got    []received
	status atomic.Int32
	srv    *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.status.Store(http.StatusNoContent)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var d received
		d.id, d.timestamp, d.signature = req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
		d.body, _ = io.ReadAll(req.Body)
		json.Unmarshal(d.body, &d.event)
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
		w.WriteHeader(int(r.status.Load()))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// awaitDeliveries waits until the receiver saw n requests.
func (r *receiver) awaitDeliveries(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(r.deliveries()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver saw %d requests, want %d", len(r.deliveries()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r.deliveries()
}

// until polls cond, for what no event announces, and fails the test
// after 15 seconds.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// webhookConfig is the test configuration with one endpoint at r.
func webhookConfig(r *receiver, events ...string) config.Config {
	cfg := testConfig()
	cfg.Webhooks = []config.Webhook{{Name: "erp", URL: r.srv.URL, SecretEnv: "WH_SECRET", Events: events}}
	return cfg
}

// signedWith checks d's signature list holds a v1 signature by the
// secret in env, computed here as Standard Webhooks defines it.
func signedWith(d received, env string) bool {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testWebhookSecrets[env], "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(d.id + "." + d.timestamp + "." + string(d.body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, s := range strings.Fields(d.signature) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

// An operation that succeeds is told to the endpoint once, signed, with
// the answer an agent reads; events it did not ask for are not sent.
func TestWebhookOperationSucceeded(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	g := setupWith(t, webhookConfig(r, config.EventOperationSucceeded))
	const key = "test:invoice.create:order-hook-1:v1"
	reply := g.post(key, invoice("order-hook-1", 2))
	expect(t, reply, http.StatusOK, "succeeded", "")
	got := r.awaitDeliveries(t, 1)
	d := got[0]
	if d.event.Type != config.EventOperationSucceeded || d.event.Data["operation_key"] != key ||
		d.event.Data["state"] != "succeeded" || d.event.Data["target_object_id"] != reply.str("target_object_id") {
		t.Fatalf("the delivery says %s", d.body)
	}
	if !strings.HasPrefix(d.id, "msg_") || !signedWith(d, "WH_SECRET") {
		t.Fatalf("webhook-id %q, signature %q: not signed with the endpoint's secret", d.id, d.signature)
	}
	// A replay changes nothing, and tells nothing.
	expect(t, g.post(key, invoice("order-hook-1", 2)), http.StatusOK, "succeeded", "")
	time.Sleep(300 * time.Millisecond)
	if n := len(r.deliveries()); n != 1 {
		t.Fatalf("%d deliveries for one operation, want 1", n)
	}
	ds, err := g.store.Deliveries(context.Background(), "erp", 10)
	if err != nil || len(ds) != 1 || ds[0].State != store.DeliveryDelivered || ds[0].WebhookID != d.id {
		t.Fatalf("the journal's deliveries: %+v, %v", ds, err)
	}
}

// While the receiver is down, an operation's events wait behind its first,
// retried with the same webhook-id; when it is back they arrive in the
// order they happened. A rotation signs with both secrets.
func TestWebhooksInOrderAfterAnOutage(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	r.status.Store(http.StatusServiceUnavailable)
	cfg := webhookConfig(r, config.EventApprovalWaiting, config.EventApprovalDecided, config.EventOperationSucceeded)
	cfg.Webhooks[0].PreviousSecretEnv = "WH_SECRET_OLD"
	var ahead atomic.Int64 // how far the journal's clock is moved on
	st := openJournal(t)
	st.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	g := serveOver(t, cfg, st)
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-hook-2:v1"
	expect(t, g.charge(payer, key, "order-hook-2", 125000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	first := r.awaitDeliveries(t, 1)[0]
	if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, true, "anna", "checked"); err != nil {
		t.Fatal(err)
	}
	await(t, "the charge", g.executed, func() bool { return g.row(key).Status == store.StatusSucceeded })
	time.Sleep(300 * time.Millisecond)
	if n := len(r.deliveries()); n != 1 {
		t.Fatalf("%d requests while the first delivery waits for its retry, want 1: later events of the operation wait behind it", n)
	}

	// The receiver is back; an hour passes.
	r.status.Store(http.StatusOK)
	ahead.Store(int64(time.Hour))
	got := r.awaitDeliveries(t, 4)[1:]
	var types []string
	for _, d := range got {
		types = append(types, d.event.Type)
		if !signedWith(d, "WH_SECRET") || !signedWith(d, "WH_SECRET_OLD") {
			t.Fatalf("a delivery during a rotation is not signed with both secrets: %q", d.signature)
		}
	}
	if want := "approval.waiting approval.decided operation.succeeded"; strings.Join(types, " ") != want {
		t.Fatalf("deliveries arrived as %v, want %s", types, want)
	}
	if got[0].id != first.id {
		t.Fatalf("the retried delivery's webhook-id %q differs from its first attempt's %q", got[0].id, first.id)
	}
}

// A receiver answering 410 Gone stops its endpoint: nothing more is sent.
func TestWebhookGoneStopsTheEndpoint(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	r.status.Store(http.StatusGone)
	g := setupWith(t, webhookConfig(r, config.EventOperationSucceeded))
	expect(t, g.post("test:invoice.create:order-hook-3:v1", invoice("order-hook-3", 1)), http.StatusOK, "succeeded", "")
	r.awaitDeliveries(t, 1)
	until(t, "the endpoint gone after a 410", func() bool {
		state, _, err := g.store.EndpointState(context.Background(), "erp")
		return err == nil && state == "gone"
	})
	expect(t, g.post("test:invoice.create:order-hook-4:v1", invoice("order-hook-4", 1)), http.StatusOK, "succeeded", "")
	time.Sleep(1500 * time.Millisecond)
	if n := len(r.deliveries()); n != 1 {
		t.Fatalf("%d requests to an endpoint that answered 410, want 1", n)
	}
}

// An endpoint whose deliveries fail for five days is paused: its
// deliveries stay pending, and nothing more is sent to it.
func TestWebhookEndpointPausedAfterFiveDays(t *testing.T) {
	t.Parallel()
	r := newReceiver(t)
	r.status.Store(http.StatusInternalServerError)
	var ahead atomic.Int64
	st := openJournal(t)
	st.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	g := serveOver(t, webhookConfig(r, config.EventOperationSucceeded), st)
	expect(t, g.post("test:invoice.create:order-hook-5:v1", invoice("order-hook-5", 1)), http.StatusOK, "succeeded", "")
	r.awaitDeliveries(t, 1)
	// The clock moves only once the first attempt is journaled: moved
	// while it is still being recorded, the delivery has already failed
	// for six days at its first attempt, and its endpoint rightly pauses
	// before a second.
	until(t, "the first attempt journaled", func() bool {
		ds, err := g.store.Deliveries(context.Background(), "erp", 10)
		return err == nil && len(ds) == 1 && ds[0].Attempts == 1
	})
	ahead.Store(int64(6 * 24 * time.Hour))
	r.awaitDeliveries(t, 2)
	until(t, "the endpoint paused after five days of failures", func() bool {
		state, reason, err := g.store.EndpointState(context.Background(), "erp")
		return err == nil && state == "paused" && strings.Contains(reason, "five days")
	})
	ds, err := g.store.Deliveries(context.Background(), "erp", 10)
	if err != nil || len(ds) != 1 || ds[0].State != store.DeliveryPending || ds[0].Attempts != 2 {
		t.Fatalf("the paused endpoint's delivery: %+v, %v; want pending after two attempts", ds, err)
	}
}
