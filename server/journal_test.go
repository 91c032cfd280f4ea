package server_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// A request whose claim the journal cannot make durable is answered 503
// JOURNAL_UNAVAILABLE with Retry-After, and nothing reaches the target;
// the same request succeeds once the journal writes again, with one
// effect.
func TestJournalWriteFailsNothingSent(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:disk-full-1:v1"
	g.store.SetBeforeCommit(func() error { return errors.New("disk I/O error (injected)") })
	r := g.post(key, invoice("disk-full-1", 1))
	g.store.SetBeforeCommit(nil)
	expect(t, r, http.StatusServiceUnavailable, "rejected", "JOURNAL_UNAVAILABLE")
	if r.Header.Get("Retry-After") == "" || r.Body["errors"].([]any)[0].(map[string]any)["retryable"] != true {
		t.Fatalf("answer without Retry-After or retryable: %v %s", r.Header, r.Raw)
	}
	if r.Body["type"] != "urn:oncegate:error:journal-unavailable" || r.Body["title"] != "Service unavailable" {
		t.Fatalf("problem type and title: %s", r.Raw)
	}
	if got := g.sim.Effects(sim.OneC, key); got != 0 {
		t.Fatalf("effects at 1C = %d after a claim that did not commit, want 0", got)
	}
	if got := g.do("GET", "/v1/operations/"+key, g.token, nil, nil); got.Code != http.StatusNotFound {
		t.Fatalf("GET after a failed claim: %d %s, want 404", got.Code, got.Raw)
	}

	again := g.post(key, invoice("disk-full-1", 1))
	expect(t, again, http.StatusOK, "succeeded", "")
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects at 1C = %d, want 1", got)
	}
}

// A retry of a key whose earlier request reached the target, at a moment
// the journal cannot write, is told the outcome is unknown and to send
// the same key again, not that nothing was sent: an agent believing that
// would move to a new key and make a second effect.
func TestJournalWriteFailsAfterEarlierSend(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:invoice.create:disk-full-2:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultDropResponse, Times: 1})
	expect(t, g.post(key, invoice("disk-full-2", 1)), http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")

	g.store.SetBeforeCommit(func() error { return errors.New("disk I/O error (injected)") })
	r := g.post(key, invoice("disk-full-2", 1))
	g.store.SetBeforeCommit(nil)
	expect(t, r, http.StatusAccepted, "unknown", "OUTCOME_UNKNOWN")
	if r.Header.Get("Retry-After") == "" {
		t.Fatalf("unknown without Retry-After: %v", r.Header)
	}
	if strings.Contains(r.Raw, "nothing was sent") {
		t.Fatalf("a key the target has was answered nothing was sent: %s", r.Raw)
	}

	expect(t, g.post(key, invoice("disk-full-2", 1)), http.StatusOK, "succeeded", "")
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("effects at 1C = %d, want 1", got)
	}
}
