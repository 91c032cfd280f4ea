package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/store"
	"github.com/oncegate/oncegate/store/storetest"
)

// gated is a payments target whose executes wait for the test to open the
// gate; it counts the executes each key received.
type gated struct {
	gate  chan struct{}
	mu    sync.Mutex
	calls map[string]int
}

func (t *gated) Name() string { return "gated" }

func (t *gated) Execute(_ context.Context, op adapters.Op) (adapters.Result, error) {
	t.mu.Lock()
	t.calls[op.Key]++
	t.mu.Unlock()
	<-t.gate
	return adapters.Result{ObjectID: "pay-" + op.Key}, nil
}

func (t *gated) Lookup(context.Context, adapters.Op) (adapters.Result, error) {
	return adapters.Result{}, adapters.ErrNotFound
}

func (t *gated) executes(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[key]
}

// Once shutdown waits for the drives in flight, no drive starts: the
// operation keeps its lease and nothing reaches the target, while the
// drive already running finishes and is waited for.
func TestNoDriveStartsOnceShutdownWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	target := &gated{gate: make(chan struct{}), calls: map[string]int{}}
	e := New(testConfig(), st, map[string]adapters.Target{"payments": target}, slog.New(slog.NewTextHandler(io.Discard, nil)))

	const running, late = "test:payment.charge:shut-running:v1", "test:payment.charge:shut-late:v1"
	first := claimed(t, e, st, running)
	driven := make(chan store.Operation, 1)
	go func() {
		op, _, _ := e.drive(ctx, store.DecisionExecute, first)
		driven <- op
	}()
	for target.executes(running) == 0 {
		time.Sleep(time.Millisecond)
	}
	// Shutdown, as Serve does once the HTTP server and the workers stopped.
	waited := make(chan struct{})
	go func() {
		e.inflight.closeAndWait()
		close(waited)
	}()
	for closed := false; !closed; time.Sleep(time.Millisecond) {
		e.inflight.mu.Lock()
		closed = e.inflight.closed
		e.inflight.mu.Unlock()
	}

	// A request that outlived the HTTP shutdown's grace reaches its drive.
	second := claimed(t, e, st, late)
	type outcome struct {
		op    store.Operation
		found bool
		err   error
	}
	lateDrive := make(chan outcome, 1)
	go func() {
		op, found, err := e.drive(ctx, store.DecisionExecute, second)
		lateDrive <- outcome{op, found, err}
	}()
	select {
	case r := <-lateDrive:
		if r.err != nil || r.found || r.op.Status != store.StatusStarted || r.op.LeaseOwner != second.LeaseOwner {
			t.Fatalf("a drive after shutdown began: %+v, %v, %v", r.op, r.found, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a drive after shutdown began is running (%d executes sent)", target.executes(late))
	}
	if got := target.executes(late); got != 0 {
		t.Fatalf("a drive after shutdown began sent %d executes", got)
	}
	select {
	case <-waited:
		t.Fatal("shutdown did not wait for the drive in flight")
	default:
	}
	close(target.gate)
	if op := <-driven; op.Status != store.StatusSucceeded {
		t.Fatalf("the drive in flight ended %+v", op)
	}
	<-waited
}

// A run starts by turning the rows a previous run left started into
// unknown, so they are reconciled at once: on SQLite serve holds the data
// directory's lock, so that run is dead. On PostgreSQL another gateway
// sharing the journal may be alive and mid-call: its rows and this run's
// own stay started, and run out by their leases instead.
func TestStartOrphansDeadRunsLeases(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, j storetest.Journal) {
		ctx := context.Background()
		e, st := scriptedEngine(t, j, &scripted{})
		const previous, own = "test:payment.charge:orphan-previous:v1", "test:payment.charge:orphan-own:v1"
		claimed(t, e, st, own)
		_, _, err := st.Claim(ctx, store.ClaimRequest{
			Key: previous, Intent: "payment.charge", Fingerprint: strings.Repeat("ab", 32), TargetSystem: "payments",
			Agent: "agent-a", Payload: []byte(`{}`), Owner: "run-previous/1a2b", Lease: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		want := store.StatusUnknown
		if j.Postgres() {
			want = store.StatusStarted
		}
		for key, want := range map[string]store.Status{previous: want, own: store.StatusStarted} {
			if op, err := st.Get(ctx, key); err != nil || op.Status != want {
				t.Errorf("%s: %s (%v), want %s", key, op.Status, err, want)
			}
		}
	})
}
