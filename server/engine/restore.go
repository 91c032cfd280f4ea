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

// After a restore. A journal restored from a backup has forgotten the keys
// used after the backup was taken, and an agent may send one of them again:
// at a target that does not recognise keys itself (Bitrix24) that would
// make its effect twice. So for a while after a restore, a key the journal
// does not know is looked up at its target before its first send, and
// found there it is adopted as succeeded with the target's object instead
// of being sent.

// restoreHorizon is while new keys are looked up before their first send:
// objects made since the backup's newest operation (since) are searched,
// until the journal has been back for as long as the gap it forgot plus
// the longest an agent is told to come back in (until).
type restoreHorizon struct {
	since, until time.Time
}

// restoreRetryWindow is the least time after a restore during which keys
// sent before it are expected again: agents retry over hours, and one told
// its money operation awaits approval comes back within approval.ttl.
const restoreRetryWindow = 24 * time.Hour

// readRestore reads the journal's last restore, if any, into e.restored.
func (e *Engine) readRestore(ctx context.Context) error {
	r, ok, err := e.store.LastRestore(ctx)
	if err != nil || !ok {
		return err
	}
	gap := max(r.At.Sub(r.BackupNewest), 0)
	if r.BackupNewest.IsZero() {
		gap = 0
	}
	e.restored = restoreHorizon{since: r.BackupNewest, until: r.At.Add(gap + max(restoreRetryWindow, e.cfg.ApprovalTTL))}
	if e.store.Now().Before(e.restored.until) {
		e.log.Warn("the journal was restored from a backup: keys it does not know are looked up at their targets before their first send",
			"restored_at", r.At, "backup_newest_operation", r.BackupNewest, "until", e.restored.until)
	}
	return nil
}

// lookFirst reports whether op, claimed as new, is looked up before its
// first send: it was accepted within the horizon of a restore.
func (e *Engine) lookFirst(op store.Operation) bool {
	return !e.restored.until.IsZero() && op.CreatedAt.Before(e.restored.until)
}

// adopt looks a new key up at its target before its first send after a
// restore and journals what the target holds: found → succeeded with the
// target's object (adopted reports it); found failed → failed_final;
// certainly not there → nothing journaled, the caller sends it; the
// target could not tell → failed_retryable, nothing sent, for the agent to
// send again (a resumed operation is looked up first, as always).
func (e *Engine) adopt(ctx, jctx context.Context, op store.Operation) (adopted, settled bool, err error) {
	aop := e.targetOp(op)
	if !e.restored.since.IsZero() {
		aop.CreatedAt = e.restored.since // made after the backup, before this claim
	}
	lctx, cancel := context.WithTimeout(ctx, e.lookupBudget(op.TargetSystem))
	res, err := e.targets[op.TargetSystem].Lookup(lctx, aop)
	cancel()
	switch {
	case err == nil:
		e.log.Warn("after a restore: the target already has this key's effect; adopted, not sent again", "key", op.Key, "object", res.ObjectID)
		if err := e.complete(jctx, op, res); err != nil {
			return false, true, err
		}
		return true, true, e.store.Audit(jctx, "operation.adopted", op.Key, map[string]any{"object_id": res.ObjectID, "reason": "found at the target before its first send after a restore"})
	case finalAtTarget(err):
		var ae *adapters.Error
		errors.As(err, &ae)
		return false, true, e.store.Fail(jctx, op.Key, op.LeaseOwner, true, store.Failure{Code: ae.Code, Field: ae.Field, Message: ae.Message, ObjectID: ae.ObjectID})
	case errors.Is(err, adapters.ErrNotFound):
		return false, false, nil
	}
	e.log.Warn("after a restore: the target could not be asked for this key before its first send; nothing was sent", "key", op.Key, "err", e.detail(err))
	return false, true, e.store.Fail(jctx, op.Key, op.LeaseOwner, false, store.Failure{Code: codes.TargetUnavailable,
		Message: "the journal was restored from a backup and the target could not be asked whether this key was already sent; nothing was sent; send the same request again later",
		Detail:  fmt.Sprint(e.detail(err))})
}
