// Package engine is the gateway's operation engine: it checks a request
// against the contract and the business limits, binds its key to one
// effect in the journal, drives the operation to its target, looks
// unclear outcomes up by key, and runs the background work (the
// reconciler, the executor of approved money operations, retention). It
// knows nothing of HTTP: the server hands it a request and renders what
// it returns.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// Config is what the engine needs of the gateway's configuration.
type Config struct {
	// Contour is the contour every operation key must name.
	Contour string
	// Retry is the retry policy of a drive's attempts.
	Retry adapters.RetryPolicy
	// Targets are each target instance's times, by its name; one not
	// listed has a 5 s call timeout and the default retention.
	Targets map[string]TargetConfig
	// Retention is how long terminal operations are kept where their
	// target names no retention of its own.
	Retention time.Duration
	// ReconcileInterval is how often the reconciler and the executor run;
	// MaxBackoff caps the wait between failed look-ups of one operation,
	// and after ReviewAfter failed look-ups a person is asked to look.
	ReconcileInterval time.Duration
	MaxBackoff        time.Duration
	ReviewAfter       int
	// ApprovalTTL is how long a money operation waits for a decision.
	ApprovalTTL time.Duration
	// Catalog is the whitelist: every intent's definition, its schema
	// and business limits.
	Catalog *intent.Catalog
	// OnDecision, when set, is told what the journal decided for each
	// submitted operation (for the metrics).
	OnDecision func(intent string, d store.Decision)
	// OnDuplicate, when set, is told each time a duplicate rule found an
	// earlier operation of a new key's business event, with the rule's
	// action (block, hold, warn).
	OnDuplicate func(intent, action string)
	// Events are the rules that turn sources' notices into operations,
	// and Sources the targets that send them, by name (events.go).
	Events  []*intent.EventRule
	Sources map[string]adapters.EventSource
}

// TargetConfig are one target system's times.
type TargetConfig struct {
	// Timeout is one call's timeout.
	Timeout time.Duration
	// Settle is how long the target may take to commit a request after
	// the gateway stopped waiting (never less than Timeout).
	Settle time.Duration
	// Retention is how long its terminal operations are kept; 0 is the
	// default retention.
	Retention time.Duration
}

// Engine binds each operation key to one effect.
type Engine struct {
	cfg     Config
	store   *store.Store
	targets map[string]adapters.Target // by target instance: onec, crm, payments, …
	policy  adapters.RetryPolicy
	owner   string    // lease owner id of this run
	started time.Time // when this run began, on its monotonic clock
	log     *slog.Logger
	redact  *redact.Redactor // of what the targets say: their secrets, the 1C user

	// inflight counts operations being driven, so shutdown can wait for them.
	inflight work
	// landing is what this run sent whose outcome it does not know.
	landing landing
	// restored is the journal's last restore, while keys it does not know
	// are looked up before their first send (restore.go).
	restored restoreHorizon
	// wake pokes the executor when an approval was decided.
	wake    chan struct{}
	replays replayCache // final rows, for replays
	plans   planCache   // validate mode only
	signals TestSignals
	// processes are the processes this run is driving, each by one
	// pass at a time.
	processes keyLocks
	// eventRuns bound the notices read back and run at once (events.go).
	eventRuns chan struct{}
}

// New builds the engine over an open journal and its targets, keyed by
// target instance ("onec", "crm", "payments", and any the firm named).
func New(cfg Config, st *store.Store, targets map[string]adapters.Target, log *slog.Logger) *Engine {
	buf := make([]byte, 8)
	rand.Read(buf)
	e := &Engine{
		cfg:     cfg,
		store:   st,
		targets: make(map[string]adapters.Target, len(targets)),
		policy:  cfg.Retry,
		owner:   "run-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(buf),
		started: time.Now(),
		log:     log,
		wake:    make(chan struct{}, 1),

		eventRuns: make(chan struct{}, eventRunners),
	}
	for system, t := range targets {
		e.targets[system] = t
	}
	e.redact = adapters.Redactor(e.targets)
	e.replays.stale = e.purgeable
	return e
}

// Systems are the names of the target instances the engine drives
// operations to (the journal's target_system), in alphabetical order.
func (e *Engine) Systems() []string {
	return slices.Sorted(maps.Keys(e.targets))
}

// Owner is this run's id, the prefix of every lease it takes.
func (e *Engine) Owner() string { return e.owner }

// leaseOwner is a fresh owner for one claim of a lease: this run's id and
// a random suffix. Every transition of the claim names it, so a driver
// whose lease expired and was taken again can no longer change the row.
func (e *Engine) leaseOwner() string {
	buf := make([]byte, 6)
	rand.Read(buf)
	return e.owner + "/" + hex.EncodeToString(buf)
}

// useLease is a fresh lease owner (leaseOwner) marked in use by this run
// until done is called (store.Store.Use): call done once the drive that
// used the lease ended. While it is in use no other claim of this run takes
// the lease, whatever the clock says.
func (e *Engine) useLease() (owner string, done func()) {
	owner = e.leaseOwner()
	return owner, e.store.Use(owner)
}

// Start prepares the journal for this run: rows left started by a
// previous run, which is known dead (serve holds the data directory's
// lock), become unknown so they are reconciled at once instead of waiting
// for their leases to expire. On a journal other gateways share, another
// run's lease may be a live gateway's: its rows are left to run out, and
// the reconciler of any gateway takes them then.
func (e *Engine) Start(ctx context.Context) error {
	if err := e.readRestore(ctx); err != nil {
		return err
	}
	if e.store.Shared() {
		return nil
	}
	n, err := e.store.OrphanLeases(ctx, e.owner)
	if err != nil {
		return err
	}
	if n > 0 {
		e.log.Warn("operations left in flight by a previous run are now unknown and will be reconciled", "count", n)
	}
	if n, err = e.store.OrphanProcessLeases(ctx, e.owner); err != nil {
		return err
	}
	if n > 0 {
		e.log.Warn("processes left in flight by a previous run go on", "count", n)
	}
	return nil
}

// Drain waits for the operations being driven and starts no more: a
// request that reaches its drive from now on answers in progress, and
// the next run reconciles its row. Call it once the HTTP server and the
// workers stopped.
func (e *Engine) Drain() { e.inflight.closeAndWait() }

// work counts the operations being driven, so that shutdown can wait for
// them. Once shutdown waits, no more start: a sync.WaitGroup must not be
// added to while it is waited on, and a request or look-up that outlived
// the HTTP shutdown's grace would otherwise start one then.
type work struct {
	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

// start counts one more operation being driven, and reports false, counting
// nothing, once shutdown waits.
func (w *work) start() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.running.Add(1)
	return true
}

// closing reports whether shutdown waits: work not begun is left.
func (w *work) closing() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// done ends what start counted.
func (w *work) done() { w.running.Done() }

// closeAndWait refuses new work, then waits for the work running.
func (w *work) closeAndWait() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.running.Wait()
}
