package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
)

// ClaimRequest is what the gateway knows of an operation before it runs.
type ClaimRequest struct {
	Key           string
	Intent        string
	Fingerprint   string
	TargetSystem  string
	Agent         string
	ActorID       string
	RequestID     string
	Payload       json.RawMessage
	IntentVersion int           // the definition's version
	IntentDigest  string        // the SHA-256 of the definition's file
	AwaitApproval bool          // money: journal as awaiting_approval, take no lease
	ApprovalTTL   time.Duration // how long a person has to decide
	// Refused, when set, is the target's refusal of the request's checks:
	// a new row is written failed_final at once, with no lease and no
	// attempt (nothing was sent to execute). An existing row ignores it.
	Refused *Failure
	// Duplicates, when set, is the intent's duplicate rule applied to a
	// new key (duplicate.go): decided in the claim's transaction.
	Duplicates *DuplicateCheck
	Owner      string        // lease owner: the id of this serve run
	Lease      time.Duration // how long the lease lasts
	// OnlyNew claims the key only if it has no row, for a caller that has
	// not read it: a key with a row is left as it is (DecisionExists).
	OnlyNew bool
}

// Decision is what the caller of Claim must do next.
type Decision int

// Decisions of Claim.
const (
	// DecisionExecute: a new row was written with the caller's lease and
	// attempt 1; send it to the target.
	DecisionExecute Decision = iota + 1
	// DecisionResume: the caller took the lease of a row attempted before
	// (unknown, failed_retryable, or started with a dead lease); look the
	// key up at the target first, execute only if nothing is there.
	DecisionResume
	// DecisionReplay: the row is final; answer with it.
	DecisionReplay
	// DecisionInProgress: another attempt holds a live lease.
	DecisionInProgress
	// DecisionAwaitingApproval: a person has not decided yet.
	DecisionAwaitingApproval
	// DecisionMismatch: the key is bound to another fingerprint.
	DecisionMismatch
	// DecisionForeign: the key belongs to another agent identity.
	DecisionForeign
	// DecisionRefused: a new row was written failed_final with the
	// target's refusal (ClaimRequest.Refused); answer with it.
	DecisionRefused
	// DecisionDuplicate: the key is new and its business key matches a
	// live operation under a rule that blocks; nothing was journaled and
	// the key stays free. The Operation returned is the earlier one.
	DecisionDuplicate
	// DecisionExists: a claim of a new key only (ClaimRequest.OnlyNew)
	// found the key has a row; nothing was written. The Operation returned
	// is the row as it is.
	DecisionExists
)

// decisionNames are the decisions' names, by value.
var decisionNames = [...]string{DecisionExecute: "execute", DecisionResume: "resume", DecisionReplay: "replay",
	DecisionInProgress: "in_progress", DecisionAwaitingApproval: "awaiting_approval", DecisionMismatch: "mismatch",
	DecisionForeign: "foreign", DecisionRefused: "refused", DecisionDuplicate: "duplicate", DecisionExists: "exists"}

// String names the decision for logs and metrics; a value that is no
// decision is named by its number, Decision(9), rather than panicking.
func (d Decision) String() string {
	if d > 0 && int(d) < len(decisionNames) {
		return decisionNames[d]
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Claim registers the operation or decides what to do with the existing
// row for its key, in one short write transaction: INSERT … ON CONFLICT DO
// NOTHING, then a read of the row, then at most one conditional update
// taking the lease. The returned Operation is the row after the decision.
func (s *Store) Claim(ctx context.Context, req ClaimRequest) (Decision, Operation, error) {
	var d Decision
	var op Operation
	order := orderOf(req.Payload) // read here, not in the one writer
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		d, op, err = s.claim(ctx, tx, req, order)
		return err
	})
	if err != nil {
		return 0, Operation{}, fmt.Errorf("claim operation: %w", err)
	}
	return d, op, nil
}

// claim is Claim inside the writer's transaction, step by step. The order
// of its statements is the order of its locks across gateways on a shared
// journal: the business key, then the key's row.
func (s *Store) claim(ctx context.Context, tx *txn, req ClaimRequest, order any) (Decision, Operation, error) {
	now := stored(s.now())
	op := newRow(req, now)

	// The duplicate rule, before this claim writes.
	sus, err := s.duplicateRule(ctx, tx, req, &op)
	if err != nil {
		return 0, Operation{}, err
	}
	if sus.block {
		return DecisionDuplicate, *sus.earlier, nil
	}

	// The insert: a new key's row is op, and is answered for at once.
	inserted, err := insertRow(ctx, tx, op, order)
	if err != nil {
		return 0, Operation{}, interpretError(err)
	}
	if inserted {
		return s.answerNew(ctx, tx, req, op, sus, now)
	}

	// The key was seen before: its row, locked, answers.
	if req.OnlyNew {
		op, err = getOperation(ctx, tx, req.Key)
		return DecisionExists, op, err
	}
	if op, err = lockRow(ctx, tx, req.Key); err != nil {
		return 0, Operation{}, err
	}
	if d, err := s.answerSeen(ctx, tx, req, op, now); d != 0 {
		return d, op, err
	}

	// The lease: the row is unknown, failed_retryable, or started with an
	// expired lease; take it, conditional on the row being exactly as read.
	if op, err = s.takeLease(ctx, tx, op, req.Owner, req.Lease); err != nil {
		return 0, Operation{}, err
	}
	return DecisionResume, op, nil
}

// newRow is the row a new key gets, written by insertRow unless the key
// has one: started under the caller's lease at attempt 1; failed_final at
// once, with the target's refusal, when it refused the request's checks;
// awaiting_approval for money. Neither of the last two has a lease or an
// attempt.
func newRow(req ClaimRequest, now time.Time) Operation {
	op := Operation{Key: req.Key, Intent: req.Intent, Fingerprint: req.Fingerprint, Status: StatusStarted,
		TargetSystem: req.TargetSystem, Agent: req.Agent, ActorID: req.ActorID, RequestID: req.RequestID,
		Payload: req.Payload, IntentVersion: max(req.IntentVersion, 1), IntentDigest: req.IntentDigest,
		LeaseOwner: req.Owner, LeaseUntil: stored(now.Add(req.Lease)), AttemptCount: 1, LastAttemptAt: now,
		CreatedAt: now, UpdatedAt: now}
	switch {
	case req.Refused != nil:
		op.unleased(StatusFailedFinal)
		op.ErrorCode, op.ErrorField, op.ErrorMessage, op.CompletedAt = req.Refused.Code, req.Refused.Field, req.Refused.Message, now
	case req.AwaitApproval:
		op.unleased(StatusAwaitingApproval)
	}
	return op
}

// unleased sets op, a row not yet written, to status with no lease and no
// attempt.
func (op *Operation) unleased(status Status) {
	op.Status, op.LeaseOwner, op.LeaseUntil, op.AttemptCount, op.LastAttemptAt = status, "", time.Time{}, 0, time.Time{}
}

// suspicion is what the duplicate rule decided for a claim.
type suspicion struct {
	earlier *Operation // the earlier live operation of the same business event, for a new key
	block   bool       // journal nothing: the key stays free
	hold    bool       // journal the key awaiting a person's review
}

// duplicateRule applies the intent's duplicate rule, for a key not seen
// before: the business key is locked (across gateways), then the earlier
// live operation of the same business event looked for, all before this
// claim writes. What it finds is marked on op, the new key's row; a key
// seen before is answered by its own row, not by the rule.
func (s *Store) duplicateRule(ctx context.Context, tx *txn, req ClaimRequest, op *Operation) (suspicion, error) {
	r := req.Duplicates
	if r == nil || req.Refused != nil {
		return suspicion{}, nil
	}
	op.BusinessKey = r.BusinessKey
	earlier, err := s.findDuplicate(ctx, tx, req.Intent, *r, req.Key, true)
	if err != nil || earlier == nil {
		return suspicion{}, err
	}
	exists, err := keyExists(ctx, tx, req.Key)
	if err != nil || exists {
		return suspicion{}, err
	}
	if r.Action == DuplicateBlock {
		return suspicion{earlier: earlier, block: true}, nil
	}
	op.DuplicateOf, op.DuplicateAt = earlier.Key, earlier.CreatedAt
	if r.Action == DuplicateHold {
		op.unleased(StatusAwaitingApproval)
		op.ErrorCode = codes.DuplicateReviewRequired
	}
	return suspicion{earlier: earlier, hold: r.Action == DuplicateHold}, nil
}

// insertRow writes op, a new key's row, unless its key has one, and
// reports whether it did. The INSERT returns nothing (reading back every
// column cost more than the statement): op is the row.
func insertRow(ctx context.Context, tx *txn, op Operation, order any) (bool, error) {
	res, err := tx.ExecContext(ctx, `
		INSERT INTO operations (operation_key, intent, fingerprint, status, target_system, agent,
			actor_id, request_id, payload, lease_owner, lease_until, attempt_count, last_attempt_at,
			error_code, error_field, error_message, created_at, updated_at, completed_at,
			intent_version, intent_digest, business_key, duplicate_of, duplicate_at, order_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (operation_key) DO NOTHING`,
		op.Key, op.Intent, op.Fingerprint, op.Status, op.TargetSystem, op.Agent,
		op.ActorID, op.RequestID, string(op.Payload), nullString(op.LeaseOwner), nullTime(op.LeaseUntil), op.AttemptCount, nullTime(op.LastAttemptAt),
		nullString(op.ErrorCode), nullString(op.ErrorField), nullString(op.ErrorMessage), formatTime(op.CreatedAt), formatTime(op.UpdatedAt), nullTime(op.CompletedAt),
		op.IntentVersion, op.IntentDigest, nullString(op.BusinessKey), nullString(op.DuplicateOf), nullTime(op.DuplicateAt), order)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// lockRow reads the row of a key seen before, locked until the claim
// commits: a concurrent claim of the same key on another gateway waits
// here, then reads what this one decided.
func lockRow(ctx context.Context, tx *txn, key string) (Operation, error) {
	op, err := scanOperation(tx.QueryRowContext(ctx, getOperationQuery+tx.forUpdate(), key))
	return op, interpretError(err)
}

// answerNew audits the row this claim wrote and answers with it: refused,
// awaiting a person (money, or a suspected duplicate held, its approval
// written first), or execute.
func (s *Store) answerNew(ctx context.Context, tx *txn, req ClaimRequest, op Operation, sus suspicion, now time.Time) (Decision, Operation, error) {
	detail := map[string]any{"intent": req.Intent, "fingerprint": req.Fingerprint, "target": req.TargetSystem, "request_id": req.RequestID, "actor_id": req.ActorID}
	if req.Refused != nil {
		for k, v := range failureDetail(*req.Refused) {
			detail[k] = v
		}
		return DecisionRefused, op, s.appendAudit(ctx, tx, "operation.failed_final", req.Key, detail)
	}
	if sus.earlier != nil {
		op.Suspected = true
		detail["duplicate_of"] = sus.earlier.Key
		detail["duplicate_action"] = string(req.Duplicates.Action)
	}
	if req.AwaitApproval || sus.hold {
		if err := insertApproval(ctx, tx, req, sus.hold, now); err != nil {
			return 0, Operation{}, err
		}
		return DecisionAwaitingApproval, op, s.appendAudit(ctx, tx, "operation.awaiting_approval", req.Key, detail)
	}
	return DecisionExecute, op, s.appendAudit(ctx, tx, "operation.started", req.Key, detail)
}

// insertApproval writes the pending approval of a new key's row: of money,
// or, when the duplicate rule holds it, the review of a suspected
// duplicate, then of money if the intent asks for it too.
func insertApproval(ctx context.Context, tx *txn, req ClaimRequest, hold bool, now time.Time) error {
	kind, thenMoney := ApprovalMoney, 0
	if hold {
		kind = ApprovalDuplicate
		if req.AwaitApproval {
			thenMoney = 1
		}
	}
	_, err := tx.ExecContext(ctx, `
		INSERT INTO approvals (operation_key, fingerprint, status, expires_at, created_at, kind, then_money)
		VALUES (?, ?, 'pending', ?, ?, ?, ?)`,
		req.Key, req.Fingerprint, formatTime(now.Add(req.ApprovalTTL)), formatTime(now), kind, thenMoney)
	return interpretError(err)
}

// answerSeen answers a claim of a key seen before from its row: owner,
// then fingerprint, then state. It returns 0 when none answers: the row's
// last attempt is over, and the claim may take its lease.
func (s *Store) answerSeen(ctx context.Context, tx *txn, req ClaimRequest, op Operation, now time.Time) (Decision, error) {
	switch {
	case op.Agent != req.Agent:
		return DecisionForeign, s.appendAudit(ctx, tx, "operation.refused", req.Key, map[string]any{"reason": "foreign_key", "agent": req.Agent})
	case op.Fingerprint != req.Fingerprint:
		return DecisionMismatch, s.appendAudit(ctx, tx, "operation.refused", req.Key, map[string]any{"reason": "payload_mismatch", "fingerprint": req.Fingerprint})
	case op.Status.Terminal():
		return DecisionReplay, nil
	case op.Status == StatusAwaitingApproval:
		return DecisionAwaitingApproval, nil
	case s.live(op, now):
		return DecisionInProgress, nil
	}
	return 0, nil
}

// takeLease moves op, as read in tx, to started under owner's lease, on
// the condition that the row has not changed since, and audits it.
func (s *Store) takeLease(ctx context.Context, tx *txn, op Operation, owner string, lease time.Duration) (Operation, error) {
	now := s.now()
	res, err := tx.ExecContext(ctx, `
		UPDATE operations
		SET status = 'started', lease_owner = ?, lease_until = ?, updated_at = ?
		WHERE operation_key = ? AND status = ? AND coalesce(lease_owner, '') = ?`,
		owner, formatTime(now.Add(lease)), formatTime(now),
		op.Key, op.Status, op.LeaseOwner)
	if err != nil {
		return Operation{}, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return Operation{}, fmt.Errorf("take lease of %q: row changed under the write lock", op.Key)
	}
	prev := op.Status
	if err := s.appendAudit(ctx, tx, "operation.resumed", op.Key, map[string]any{"from": string(prev)}); err != nil {
		return Operation{}, err
	}
	if op, err = getOperation(ctx, tx, op.Key); err != nil {
		return Operation{}, err
	}
	op.ResumedFrom = prev
	return op, nil
}
