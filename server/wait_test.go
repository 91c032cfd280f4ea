package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// longPoll sends GET /v1/operations/{key}?wait=… in the background.
func (g *gateway) longPoll(token, key, wait string) <-chan reply {
	out := make(chan reply, 1)
	go func() { out <- g.do("GET", "/v1/operations/"+key+"?wait="+wait, token, nil, nil) }()
	return out
}

// awaitWatching waits until n long-polls watch st's keys.
func awaitWatching(tb testing.TB, st *store.Store, n int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for st.Watching() < n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d long-polls watching, want %d", st.Watching(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A long-poll is answered when the operation's state changes — here an
// approval decided and the charge made — with the new state, and at its
// bound with the state as it was when nothing changed.
func TestLongPollAnsweredAtTheChange(t *testing.T) {
	t.Parallel()
	g := setup(t)
	payer := g.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-wait-1:v1"
	expect(t, g.charge(payer, key, "order-wait-1", 125000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")

	start := time.Now()
	quiet := <-g.longPoll(payer, key, "1s")
	expect(t, quiet, http.StatusOK, "awaiting_approval", "APPROVAL_REQUIRED")
	if held := time.Since(start); held < time.Second {
		t.Fatalf("a long-poll with nothing changing was answered after %v, want its wait of 1s", held)
	}

	polled := g.longPoll(payer, key, "30s")
	awaitWatching(t, g.store, 1)
	if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, true, "anna", "checked"); err != nil {
		t.Fatal(err)
	}
	r := <-polled
	expect(t, r, http.StatusOK, "succeeded", "")
	if r.str("target_object_id") == "" {
		t.Fatalf("the long-poll's answer names no payment: %s", r.Raw)
	}
	if n := g.store.Watching(); n != 0 {
		t.Fatalf("%d watches left open after the long-polls ended", n)
	}

	// A final operation is answered at once, whatever the wait.
	expect(t, <-g.longPoll(payer, key, "60s"), http.StatusOK, "succeeded", "")
}

// A wait that is no duration is refused; nothing is held.
func TestLongPollBadWait(t *testing.T) {
	t.Parallel()
	g := setup(t)
	r := g.do("GET", "/v1/operations/test:invoice.create:order-1:v1?wait=soon", g.token, nil, nil)
	expect(t, r, http.StatusBadRequest, "rejected", "VALIDATION_ERROR")
	if r.errField() != "wait" {
		t.Fatalf("the refusal names field %q, want wait", r.errField())
	}
}

// On a shared PostgreSQL journal a change made through one gateway
// answers a long-poll held by another.
func TestLongPollAcrossGateways(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	loc := storetest.Database(t)
	open := func() *store.Store {
		st, err := store.Open(context.Background(), loc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	sims := simulated(t, cfg)
	a, b := serveAt(t, cfg, open(), sims), serveAt(t, cfg, open(), sims)
	payer := a.MustToken("agent-pay", "pay")
	const key = "test:payment.charge:order-wait-2:v1"
	expect(t, a.charge(payer, key, "order-wait-2", 99000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")

	polled := b.longPoll(payer, key, "30s")
	awaitWatching(t, b.store, 1)
	for !b.store.Hears() {
		time.Sleep(5 * time.Millisecond)
	}
	if err := a.store.DecideApproval(context.Background(), a.approval(key).ID, false, "anna", "not ours"); err != nil {
		t.Fatal(err)
	}
	expect(t, <-polled, http.StatusOK, "failed_final", "APPROVAL_DENIED")
}
