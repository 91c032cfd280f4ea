package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/store"
)

// Background work: in-process goroutines started by Run and stopped,
// each after its current item, when its context is done.

var (
	reconcilerCtx = store.Actor{Kind: store.ActorSystem, Name: "reconciler"}
	executorCtx   = store.Actor{Kind: store.ActorSystem, Name: "executor"}
	retentionCtx  = store.Actor{Kind: store.ActorSystem, Name: "retention"}
	processCtx    = store.Actor{Kind: store.ActorSystem, Name: "processes"}
)

// Run starts the reconciler, the executor and retention; they stop when
// ctx is done. The returned function waits for them.
func (e *Engine) Run(ctx context.Context) (wait func()) {
	done := make(chan struct{}, 5)
	loop := func(every time.Duration, wake <-chan struct{}, tick func(context.Context)) {
		defer func() { done <- struct{}{} }()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			tick(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-wake:
			}
		}
	}
	go loop(e.cfg.ReconcileInterval, nil, e.reconcileDue)
	go loop(e.cfg.ReconcileInterval, e.wake, e.executeApproved)
	go loop(10*time.Minute, nil, e.purge)
	paced := map[string]pace{}
	go loop(processTick, nil, func(ctx context.Context) { e.driveProcesses(ctx, paced) })
	go loop(eventTick, nil, e.runDueEvents)
	return func() {
		for range 5 {
			<-done
		}
	}
}

// Wake tells the executor that an approval was decided.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// reconcileDue looks up, at their targets, the operations whose outcome
// is unknown or whose holder died (at a target that documents it, within
// its key window, by sending the same request again under the same key:
// see resends): found → succeeded; certainly not there
// → failed_retryable (the agent's next request executes it again with the
// same key); the target could not tell → still unknown, checked again
// later with backoff, and flagged for a person after review_after tries.
func (e *Engine) reconcileDue(ctx context.Context) {
	due, err := e.store.DueForReconcile(ctx, 50)
	if err != nil {
		e.log.Error("reconciler: list due operations", "err", err)
		return
	}
	for _, op := range due {
		if ctx.Err() != nil {
			return
		}
		e.reconcileOne(store.WithActor(context.WithoutCancel(ctx), reconcilerCtx), op)
	}
}

func (e *Engine) reconcileOne(ctx context.Context, op store.Operation) {
	if !e.inflight.start() {
		return // shutting down: the next run reconciles it
	}
	defer e.inflight.done()
	owner, done := e.useLease()
	defer done()
	// The row as taken is another variable: a failed take returns no row,
	// and the log still names the key.
	taken, err := e.store.TakeForReconcile(ctx, op, owner, e.lease(op.TargetSystem))
	if errors.Is(err, store.ErrLeaseLost) {
		return // an agent's request or another pass took it
	}
	if err != nil {
		e.log.Error("reconciler: take operation", "key", op.Key, "err", err)
		return
	}
	op = taken
	jctx, jcancel := journalCtx(ctx, max(e.lookupBudget(op.TargetSystem), e.budget(op.TargetSystem)))
	defer jcancel()
	if e.resends(op) {
		// Within the key window the target's documented way to learn the
		// outcome is the same request under the same key.
		if err := e.resend(ctx, jctx, op); err != nil {
			e.log.Error("reconciler: settle operation", "key", op.Key, "err", err)
		}
		e.signals.Reconciled.signal(op.Key)
		return
	}
	clear, _, err := e.lookUp(ctx, jctx, op, false)
	if err == nil && clear {
		err = e.store.Fail(jctx, op.Key, op.LeaseOwner, false, store.Failure{Code: codes.TargetUnavailable, Message: "the target has no effect for this key; send the same request again to execute it"})
	}
	if err != nil {
		e.log.Error("reconciler: settle operation", "key", op.Key, "err", err)
	}
	e.signals.Reconciled.signal(op.Key)
}

// lookupBackoff is the wait before the next lookup after n failed ones:
// the interval doubling per failure, up to max_backoff_ms.
func (e *Engine) lookupBackoff(n int) time.Duration {
	d, limit := e.cfg.ReconcileInterval, e.cfg.MaxBackoff
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// executeApproved ends expired approvals, then runs every approved money
// operation, each once.
func (e *Engine) executeApproved(ctx context.Context) {
	wctx := store.WithActor(context.WithoutCancel(ctx), executorCtx)
	if keys, err := e.store.ExpireApprovals(wctx); err != nil {
		e.log.Error("executor: expire approvals", "err", err)
	} else if len(keys) > 0 {
		e.log.Info("executor: approvals expired", "count", len(keys))
		for _, key := range keys {
			e.signals.Expired.signal(key)
		}
	}
	for ctx.Err() == nil && e.executeOneApproved(wctx) {
	}
}

// executeOneApproved runs one approved money operation, if there is one,
// and reports whether it found one.
func (e *Engine) executeOneApproved(ctx context.Context) bool {
	owner, done := e.useLease()
	defer done()
	op, err := e.store.TakeApproved(ctx, owner, e.MaxLease())
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		e.log.Error("executor: take approved operation", "err", err)
		return false
	}
	e.log.Info("executor: running approved operation", "key", op.Key)
	if _, _, err := e.drive(ctx, store.DecisionExecute, op); err != nil {
		e.log.Error("executor: run operation", "key", op.Key, "err", err)
	}
	e.signals.Executed.signal(op.Key)
	return true
}

// purge deletes each target's terminal operations older than its
// retention, in small batches that never hold the journal's writer for
// long.
func (e *Engine) purge(ctx context.Context) {
	for _, system := range e.Systems() {
		cutoff := e.store.Now().Add(-e.retention(system))
		total := 0
		for ctx.Err() == nil {
			n, err := e.store.PurgeTerminal(store.WithActor(ctx, retentionCtx), system, cutoff, 500)
			if err != nil {
				e.log.Error("retention: purge", "target", system, "err", err)
				return
			}
			total += n
			if n < 500 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if total > 0 {
			e.log.Info("retention: purged terminal operations", "target", system, "count", total, "completed_before", cutoff)
		}
		e.signals.Purged.signal(Purge{System: system, Count: total})
	}
	// Delivered webhooks and final processes are kept as long as the
	// longest-kept operations they may name.
	var longest time.Duration
	for _, system := range e.Systems() {
		longest = max(longest, e.retention(system))
	}
	cutoff := e.store.Now().Add(-longest)
	for name, purge := range map[string]func(context.Context, time.Time, int) (int, error){
		"delivered webhooks": e.store.PurgeDelivered, "final processes": e.store.PurgeProcesses, "settled events": e.store.PurgeEvents,
	} {
		for ctx.Err() == nil {
			n, err := purge(store.WithActor(ctx, retentionCtx), cutoff, 500)
			if err != nil {
				e.log.Error("retention: purge", "what", name, "err", err)
				break
			}
			if n > 0 {
				e.log.Info("retention: purged", "what", name, "count", n, "before", cutoff)
			}
			if n < 500 {
				break
			}
		}
	}
}

// ReconcileNow looks one unknown operation up at its target at once, as a
// person asked from the admin UI; the actor in ctx is audited.
func (e *Engine) ReconcileNow(ctx context.Context, key string) (store.Operation, error) {
	op, err := e.store.Get(ctx, key)
	if err != nil {
		return store.Operation{}, err
	}
	if op.Status != store.StatusUnknown && op.Status != store.StatusStarted {
		return op, fmt.Errorf("reconcile %q: %w: it is %s", key, store.ErrConflict, op.Status)
	}
	e.reconcileOne(ctx, op)
	return e.store.Get(ctx, key)
}

// CheckObject asks the target of the operation under key whether id names
// an object there that can be its effect (adapters.ObjectChecker), for a
// person about to settle the operation by hand as found. It writes
// nothing. A target that cannot read an object by its id answers
// adapters.ErrCannotCheck; a Final *adapters.Error's message says why the
// object cannot be the effect, in words safe to show.
func (e *Engine) CheckObject(ctx context.Context, key, id string) (adapters.Result, error) {
	op, err := e.store.Get(ctx, key)
	if err != nil {
		return adapters.Result{}, err
	}
	c, ok := e.targets[op.TargetSystem].(adapters.ObjectChecker)
	if !ok {
		return adapters.Result{}, adapters.ErrCannotCheck
	}
	ctx, cancel := context.WithTimeout(ctx, e.lookupBudget(op.TargetSystem))
	defer cancel()
	return c.CheckObject(ctx, e.targetOp(op), id)
}
