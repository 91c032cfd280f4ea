package engine

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// A firm's two 1C bases are two target instances of one kind, each with
// its own times: an operation journaled for one is driven to that one
// alone, and each is timed, settled and purged by its own settings.
func TestNamedInstances(t *testing.T) {
	t.Parallel()
	sims := map[string]*sim.Server{}
	targets := map[string]adapters.Target{}
	for _, name := range []string{"buh", "trade"} {
		s := sim.New()
		hs := httptest.NewServer(s)
		t.Cleanup(hs.Close)
		one, err := onec.New(onec.Config{BaseURL: hs.URL + "/onec", Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		sims[name], targets[name] = s, one
	}
	st := storetest.Open(t)
	cfg := testConfig()
	cfg.Targets = map[string]TargetConfig{
		"buh":   {Timeout: 700 * time.Millisecond, Settle: 2 * time.Second, Retention: 48 * time.Hour},
		"trade": {Timeout: time.Second},
	}
	e := New(cfg, st, targets, slog.New(slog.NewTextHandler(io.Discard, nil)))

	if got, want := e.Systems(), []string{"buh", "trade"}; !slices.Equal(got, want) {
		t.Errorf("systems %v, want %v", got, want)
	}
	for _, c := range []struct {
		system                     string
		timeout, settle, retention time.Duration
	}{
		{"buh", 700 * time.Millisecond, 2 * time.Second, 48 * time.Hour},
		{"trade", time.Second, time.Second, cfg.Retention},
	} {
		if tt := e.times(c.system); tt.timeout != c.timeout || tt.settle != c.settle || tt.retention != c.retention {
			t.Errorf("%s: times %+v, want timeout %v, settle %v, retention %v", c.system, tt, c.timeout, c.settle, c.retention)
		}
	}

	ctx := context.Background()
	const key = "test:invoice.create:trade-1:v1"
	d, op, err := st.Claim(ctx, store.ClaimRequest{
		Key: key, Intent: "invoice.create", Fingerprint: strings.Repeat("ef", 32), TargetSystem: "trade", Agent: "agent-a",
		Payload: []byte(`{"currency":"RUB","customer_id":"customer-1042","items":[{"price_minor":62500,"product_id":"product-778","quantity":1,"unit":"pcs"}],"order_id":"trade-1","organization_id":"org-main"}`),
		Owner:   e.leaseOwner(), Lease: e.lease("trade"),
	})
	if err != nil {
		t.Fatal(err)
	}
	row, _, err := e.drive(ctx, d, op)
	if err != nil {
		t.Fatal(err)
	}
	if row.Status != store.StatusSucceeded {
		t.Fatalf("row %+v, want succeeded", row)
	}
	if got := sims["trade"].Effects(sim.OneC, key); got != 1 {
		t.Errorf("trade has %d effects of the key, want 1", got)
	}
	if got := sims["buh"].Calls(sim.OneC, key) + sims["buh"].Effects(sim.OneC, key); got != 0 {
		t.Errorf("buh was called %d times for trade's operation", got)
	}
}
