package engine

import (
	"context"
	"fmt"
	"github.com/oncegate/oncegate/store/storetest"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

// The replay cache keeps final rows only, without their payload, within
// its bounds in rows and bytes.
func TestFinalCacheBounds(t *testing.T) {
	var f replayCache
	f.put(store.Operation{Key: "open", Status: store.StatusStarted})
	if _, ok := f.get("open"); ok {
		t.Fatal("a row that is not final was kept")
	}
	f.put(store.Operation{Key: "done", Status: store.StatusSucceeded, Payload: []byte(`{"x":1}`)})
	if op, ok := f.get("done"); !ok || op.Payload != nil {
		t.Fatalf("final row: %+v, %v; want it kept without payload", op, ok)
	}
	for i := range finalCacheRows + 100 {
		f.put(store.Operation{Key: fmt.Sprintf("k-%d", i), Status: store.StatusFailedFinal})
	}
	if len(f.rows) > finalCacheRows {
		t.Fatalf("%d rows kept, bound %d", len(f.rows), finalCacheRows)
	}
	big := strings.Repeat("r", finalCacheBytes/128)
	for i := range 200 {
		f.put(store.Operation{Key: fmt.Sprintf("big-%d", i), Status: store.StatusSucceeded, Result: []byte(big)})
	}
	if f.bytes > finalCacheBytes {
		t.Fatalf("%d bytes kept, bound %d", f.bytes, finalCacheBytes)
	}
	f.put(store.Operation{Key: "huge", Status: store.StatusSucceeded, Result: []byte(strings.Repeat("r", finalCacheBytes/32))})
	if _, ok := f.get("huge"); ok {
		t.Fatal("a result larger than the per-row bound was kept")
	}
}

// A purged key is never replayed from memory once the journal forgot it:
// the purge removed only rows the cache no longer answers.
func TestPurgeClearsFinalCache(t *testing.T) {
	t.Parallel()
	e, st := scriptedEngine(t, storetest.SQLite, &scripted{})
	ctx := context.Background()
	const key = "test:payment.charge:purged:v1"
	st.Now = func() time.Time { return time.Now().Add(-1000 * time.Hour) }
	op := claimed(t, e, st, key)
	if err := st.Complete(ctx, key, op.LeaseOwner, "pay-1", nil); err != nil {
		t.Fatal(err)
	}
	st.Now = time.Now
	final, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	e.replays.put(final)
	seen := &seenRequest{digest: requestDigest("agent-a", "", false, []byte(`{}`))}
	e.replays.remember(key, seen)
	e.replays.put(store.Operation{Key: "test:payment.charge:other:v1", Status: store.StatusSucceeded})
	e.purge(ctx)
	if _, err := st.Get(ctx, key); err == nil {
		t.Fatal("the old row was not purged")
	}
	if _, ok := e.replays.get(key); ok {
		t.Fatal("the purged row is still replayed from the cache")
	}
	if _, _, ok := e.replays.byRequest(seen.digest); ok {
		t.Fatal("a request of the purged row is still replayed from the cache")
	}
}

// A row remembers the last request replayed from it; the requests it
// remembers go with it when it is evicted or cleared, and a digest tells
// apart the agent, the key header (present, absent) and the body.
func TestFinalCacheRemembersRequests(t *testing.T) {
	var f replayCache
	body := []byte(`{"intent":"invoice.create"}`)
	digests := map[digest]string{}
	for name, d := range map[string]digest{
		"agent a, key":      requestDigest("agent-a", "k", true, body),
		"agent b, key":      requestDigest("agent-b", "k", true, body),
		"agent a, no key":   requestDigest("agent-a", "", false, body),
		"agent a, empty":    requestDigest("agent-a", "", true, body),
		"agent a, key, ws":  requestDigest("agent-a", "k", true, append(body, ' ')),
		"agent-a + k split": requestDigest("agent-", "ak", true, body),
	} {
		if other, ok := digests[d]; ok {
			t.Fatalf("%s and %s have one digest", name, other)
		}
		digests[d] = name
	}

	first := &seenRequest{digest: requestDigest("agent-a", "k", true, body)}
	second := &seenRequest{digest: requestDigest("agent-a", "k", true, append(body, ' '))}
	f.remember("k", first) // no row: nothing to remember
	if _, _, ok := f.byRequest(first.digest); ok {
		t.Fatal("a request was remembered for a row not kept")
	}
	f.put(store.Operation{Key: "k", Status: store.StatusSucceeded})
	f.remember("k", first)
	if op, req, ok := f.byRequest(first.digest); !ok || op.Key != "k" || req != first {
		t.Fatalf("byRequest = %+v, %v, %v", op, req, ok)
	}
	f.remember("k", second)
	if _, _, ok := f.byRequest(first.digest); ok {
		t.Fatal("a row remembers more than its last request")
	}
	for i := 0; ; i++ { // until the row is the arbitrary victim
		if _, ok := f.get("k"); !ok {
			break
		}
		f.put(store.Operation{Key: fmt.Sprintf("k-%d", i), Status: store.StatusSucceeded})
	}
	if _, _, ok := f.byRequest(second.digest); ok || len(f.seen) != 0 {
		t.Fatalf("an evicted row's request is still remembered (%d)", len(f.seen))
	}
}
