package engine

import (
	"context"
	"github.com/oncegate/oncegate/store/storetest"
	"testing"
	"time"
)

// A final row past its target's retention is not replayed from memory:
// on a shared journal another gateway's purge may have removed it, and
// that purge does not clear this gateway's cache. A row within its
// retention still is.
func TestFinalCacheForgetsPurgeableRows(t *testing.T) {
	t.Parallel()
	e, st := scriptedEngine(t, storetest.SQLite, &scripted{})
	ctx := context.Background()
	for _, c := range []struct {
		key  string
		age  time.Duration
		kept bool
	}{
		{"test:payment.charge:fresh:v1", time.Hour, true},
		{"test:payment.charge:past-retention:v1", e.retention("payments") + time.Hour, false},
	} {
		st.Now = func() time.Time { return time.Now().Add(-c.age) }
		op := claimed(t, e, st, c.key)
		if err := st.Complete(ctx, c.key, op.LeaseOwner, "pay-"+c.key, nil); err != nil {
			t.Fatal(err)
		}
		st.Now = time.Now
		final, err := st.Get(ctx, c.key)
		if err != nil {
			t.Fatal(err)
		}
		e.replays.put(final)
		seen := &seenRequest{digest: requestDigest("agent-a", "", false, []byte(c.key))}
		e.replays.remember(c.key, seen)
		if _, _, ok := e.replays.byRequest(seen.digest); ok != c.kept {
			t.Errorf("%s: a request replayed from memory: %v, want %v", c.key, ok, c.kept)
		}
		if _, ok := e.replays.get(c.key); ok != c.kept {
			t.Errorf("%s: replayed from memory: %v, want %v", c.key, ok, c.kept)
		}
	}
}
