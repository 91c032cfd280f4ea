package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store/storetest"
)

// Webhooks from the real binary: a receiver on loopback records what
// reaches it, byte for byte, and answers as the test says.

// hookSecret and hookPreviousSecret are the endpoint's secrets during a
// rotation, in the variables hookConfig names.
var (
	hookSecret         = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the receiver's current secret 32"))
	hookPreviousSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the secret the rotation replaces"))
)

// hookEnv gives serve the endpoint's secrets.
func hookEnv() rigOption {
	return withEnv("E2E_HOOK_SECRET="+hookSecret, "E2E_HOOK_OLD_SECRET="+hookPreviousSecret)
}

// hookConfig is the rigs' settings with one endpoint at url hearing
// events, signed with both secrets.
func hookConfig(url string, events ...string) rigOption {
	return withSettings(rigRetry + fmt.Sprintf(`webhooks:
  - name: erp
    url: %q
    secret_env: E2E_HOOK_SECRET
    previous_secret_env: E2E_HOOK_OLD_SECRET
    events: [%s]
`, url, strings.Join(events, ", ")))
}

// hookRequest is one request the receiver got: its signed headers and
// its body as it arrived.
type hookRequest struct {
	Headers map[string]string `json:"headers"`
	Body    []byte            `json:"body"` // base64 in JSON, as webhooks.mjs reads it
}

// hookReceiver is an endpoint on loopback; answer gives the status for
// the nth request (from 0).
type hookReceiver struct {
	url    string
	mu     sync.Mutex
	got    []hookRequest
	answer func(n int) int
}

func newHookReceiver(t *testing.T, answer func(n int) int) *hookReceiver {
	t.Helper()
	h := &hookReceiver{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r := hookRequest{Headers: map[string]string{}, Body: body}
		for _, name := range []string{"webhook-id", "webhook-timestamp", "webhook-signature", "content-type"} {
			r.Headers[name] = req.Header.Get(name)
		}
		h.mu.Lock()
		n := len(h.got)
		h.got = append(h.got, r)
		h.mu.Unlock()
		w.WriteHeader(h.answer(n))
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL + "/hooks/oncegate"
	return h
}

func (h *hookReceiver) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookRequest(nil), h.got...)
}

// await waits up to 20 s for n requests and returns them.
func (h *hookReceiver) await(t *testing.T, n int) []hookRequest {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); len(h.requests()) < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d requests, want %d", len(h.requests()), n)
		}
	}
	return h.requests()
}

// quiet checks no request beyond n arrives for 1.5 s, longer than a
// dispatcher's idle sleep.
func (h *hookReceiver) quiet(t *testing.T, n int, why string) {
	t.Helper()
	time.Sleep(1500 * time.Millisecond)
	if got := h.requests(); len(got) != n {
		t.Fatalf("%d requests reached the receiver, want %d: %s", len(got), n, why)
	}
}

// A delivery the receiver refused is sent again by the gateway restarted
// after kill -9, with the same webhook-id, on its retry schedule; once
// it is accepted it is not sent again.
func TestE2EWebhookAfterKill9(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t, func(n int) int {
		if n == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	r := newRig(t, hookConfig(hooks.url, "operation.succeeded"), hookEnv())
	const key = "test:invoice.create:order-hook-kill:v1"
	if code, body, err := r.post(key, fmt.Sprintf(e2eInvoice, "order-hook-kill", 1)); err != nil || code != 200 {
		t.Fatalf("%d %v %v", code, body, err)
	}
	first := hooks.await(t, 1)[0]
	// Killed once the refusal is journaled: killed between the answer
	// and its record, the delivery would wait out its two-minute lease.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.dataDir, "journal.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The operation's one delivery, once no attempt holds it.
	journaled := func() (id string, n int, state string) {
		db.QueryRowContext(context.Background(), `SELECT webhook_id, attempts, state FROM webhook_deliveries
			WHERE operation_key = ? AND lease_until IS NULL`, key).Scan(&id, &n, &state)
		return id, n, state
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if id, n, state := journaled(); n > 0 {
			if id != first.Headers["webhook-id"] || n != 1 || state != "pending" {
				t.Fatalf("the receiver got webhook-id %q; the journal has %q %s after %d attempts, want it pending for its retry", first.Headers["webhook-id"], id, state, n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refused attempt was never journaled")
		}
	}
	r.gateway.kill9()
	r.serve()
	// The retry is due 5 s after the refusal.
	got := hooks.await(t, 2)
	if got[1].Headers["webhook-id"] != first.Headers["webhook-id"] || string(got[1].Body) != string(first.Body) {
		t.Fatalf("after the restart: webhook-id %q body %s; before: %q %s", got[1].Headers["webhook-id"], got[1].Body, first.Headers["webhook-id"], first.Body)
	}
	hooks.quiet(t, 2, "an accepted delivery is sent once")
	if _, n, state := journaled(); n != 2 || state != "delivered" {
		t.Fatalf("the journal has the delivery %s after %d attempts, want delivered after 2", state, n)
	}
}

// Two gateways on one PostgreSQL journal, one endpoint: each delivery
// reaches it exactly once, whichever gateway made the operation and
// whichever sends it. The receiver takes its time to answer, so both
// dispatchers are busy at once.
func TestE2EWebhookSharedJournal(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t, func(int) int {
		time.Sleep(300 * time.Millisecond)
		return http.StatusOK
	})
	c := newRig(t, hookConfig(hooks.url, "operation.succeeded"), hookEnv(), onJournal(storetest.Database(t)))
	other := c.addInstance(t)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		addr := []string{c.addr, other.addr}[i%2]
		wg.Go(func() {
			order := fmt.Sprintf("order-hook-shared-%d", i)
			if code, ans := postTo(t, addr, c.token, "test:invoice.create:"+order+":v1", fmt.Sprintf(e2eInvoice, order, 1)); code != 200 {
				t.Errorf("%s at %s: %d %v", order, addr, code, ans)
			}
		})
	}
	wg.Wait()
	got := hooks.await(t, n)
	hooks.quiet(t, n, "each delivery once over two gateways")
	ids, keys := map[string]int{}, map[string]int{}
	for _, d := range got {
		ids[d.Headers["webhook-id"]]++
		var body struct {
			Data struct {
				Key string `json:"operation_key"`
			} `json:"data"`
		}
		if err := json.Unmarshal(d.Body, &body); err != nil {
			t.Fatal(err)
		}
		keys[body.Data.Key]++
	}
	for id, k := range ids {
		if k != 1 {
			t.Errorf("webhook-id %s reached the receiver %d times", id, k)
		}
	}
	if len(ids) != n || len(keys) != n {
		t.Fatalf("%d distinct webhook-ids for %d operations' keys, want %d of each", len(ids), len(keys), n)
	}
}
