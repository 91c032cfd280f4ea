package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
)

// The journal's state machine. Every change of an operation's status is
// one conditional UPDATE (or the claim's INSERT), in the writer's
// transaction with its audit event; the condition is the fence, and a row
// that no longer meets it changes nothing (ErrLeaseLost or ErrConflict).
//
//	method              from                                   to                                fence
//	Claim (new key)     -                                      started | awaiting_approval |     ON CONFLICT DO NOTHING
//	                                                           failed_final (refused at check)
//	Claim (resume)      unknown | failed_retryable |           started                           status and lease owner as read
//	                    started with an expired lease
//	TakeForReconcile    unknown, check due | started, expired  started                           status, updated_at as read, no live lease
//	TakeApproved        awaiting_approval (approval approved)  started                           status = awaiting_approval
//	DecideApproval (no) awaiting_approval                      failed_final                      status = awaiting_approval
//	ExpireApprovals     awaiting_approval (time ran out)       failed_final                      status = awaiting_approval
//	RecordAttempt       started                                started (attempt, lease renewed)  status, lease_owner = owner
//	Complete            started                                succeeded                         status, lease_owner = owner
//	Fail                started                                failed_final | failed_retryable   status, lease_owner = owner
//	MarkUnknown         started                                unknown                           status, lease_owner = owner
//	LookupFailed        started                                unknown (failures counted)        status, lease_owner = owner
//	OrphanLeases        started, leased by another run         unknown                           that run is dead (data directory lock)
//	ResolveByHand       unknown, no lease                      succeeded | failed_retryable      status = unknown, lease_owner IS NULL
//	PurgeTerminal       succeeded | failed_final               (row deleted)                     completed before the cutoff
//
// succeeded and failed_final never change (Status.Terminal); unknown is
// never retried blind: only a look-up by key at the target, or a person,
// moves it on.

// Status is the state of an operation in the journal.
type Status string

// Journal statuses. unknown is never final and never retried blind.
const (
	StatusAwaitingApproval Status = "awaiting_approval"
	StatusStarted          Status = "started"
	StatusSucceeded        Status = "succeeded"
	StatusFailedRetryable  Status = "failed_retryable"
	StatusFailedFinal      Status = "failed_final"
	StatusUnknown          Status = "unknown"
)

// Terminal reports whether s can never change again.
func (s Status) Terminal() bool { return s == StatusSucceeded || s == StatusFailedFinal }

// Operation is one row of the journal.
type Operation struct {
	Key          string
	Intent       string
	Fingerprint  string
	Status       Status
	TargetSystem string
	Agent        string // the agent identity that first used the key
	ActorID      string
	RequestID    string
	Payload      json.RawMessage // normalized payload
	// IntentVersion and IntentDigest name the definition of the intent
	// the key was accepted under: its version and the SHA-256 of its
	// file ("" for rows from before the journal recorded it).
	IntentVersion int
	IntentDigest  string
	// BusinessKey is the SHA-256 of the operation's business key under
	// its intent's duplicate rule ("" without a rule). DuplicateOf and
	// DuplicateAt name the earlier live operation of the same business
	// event the rule found when this one was claimed (hold or warn).
	BusinessKey string
	DuplicateOf string
	DuplicateAt time.Time

	LeaseOwner    string
	LeaseUntil    time.Time
	AttemptCount  int
	LastAttemptAt time.Time

	TargetObjectID string
	Result         json.RawMessage // minimal normalized result, or nil
	ErrorCode      string
	ErrorField     string
	ErrorMessage   string

	LookupFailures int
	NeedsReview    bool
	NextCheckAt    time.Time

	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt time.Time

	// ResumedFrom is, after DecisionResume, the status the row had before
	// the caller took its lease. It is not stored.
	ResumedFrom Status
	// Suspected reports that this very claim wrote the row and its
	// duplicate rule found an earlier operation (DuplicateOf). It is not
	// stored.
	Suspected bool
}

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

const operationColumns = `operation_key, intent, fingerprint, status, target_system, agent,
	actor_id, request_id, payload, lease_owner, lease_until, attempt_count, last_attempt_at,
	target_object_id, result, error_code, error_field, error_message,
	lookup_failures, needs_review, next_check_at, created_at, updated_at, completed_at,
	intent_version, intent_digest, business_key, duplicate_of, duplicate_at`

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

func (s *Store) claim(ctx context.Context, tx *txn, req ClaimRequest, order any) (Decision, Operation, error) {
	now := stored(s.now())
	// The row a new key gets; written below unless the key has one.
	op := Operation{Key: req.Key, Intent: req.Intent, Fingerprint: req.Fingerprint, Status: StatusStarted,
		TargetSystem: req.TargetSystem, Agent: req.Agent, ActorID: req.ActorID, RequestID: req.RequestID,
		Payload: req.Payload, IntentVersion: max(req.IntentVersion, 1), IntentDigest: req.IntentDigest,
		LeaseOwner: req.Owner, LeaseUntil: stored(now.Add(req.Lease)), AttemptCount: 1, LastAttemptAt: now,
		CreatedAt: now, UpdatedAt: now}
	unleased := func(status Status) {
		op.Status, op.LeaseOwner, op.LeaseUntil, op.AttemptCount, op.LastAttemptAt = status, "", time.Time{}, 0, time.Time{}
	}
	switch {
	case req.Refused != nil:
		unleased(StatusFailedFinal)
		op.ErrorCode, op.ErrorField, op.ErrorMessage, op.CompletedAt = req.Refused.Code, req.Refused.Field, req.Refused.Message, now
	case req.AwaitApproval:
		unleased(StatusAwaitingApproval)
	}
	// The duplicate rule, for a key not seen before: the business key is
	// locked (across gateways), then the earlier live operation of the
	// same business event looked for, all before this claim writes.
	var dup *Operation
	hold := false
	if r := req.Duplicates; r != nil && req.Refused == nil {
		op.BusinessKey = r.BusinessKey
		earlier, err := s.findDuplicate(ctx, tx, req.Intent, *r, req.Key, true)
		if err != nil {
			return 0, Operation{}, err
		}
		if earlier != nil {
			exists, err := keyExists(ctx, tx, req.Key)
			if err != nil {
				return 0, Operation{}, err
			}
			if !exists {
				if r.Action == DuplicateBlock {
					return DecisionDuplicate, *earlier, nil
				}
				dup, op.DuplicateOf, op.DuplicateAt = earlier, earlier.Key, earlier.CreatedAt
				if r.Action == DuplicateHold {
					hold = true
					unleased(StatusAwaitingApproval)
					op.ErrorCode = codes.DuplicateReviewRequired
				}
			}
		}
	}
	// A new key's row is the one built above: the INSERT returns nothing
	// (reading back every column cost more than the statement). A key
	// seen before is read, locked until the claim commits: a concurrent
	// claim of the same key on another gateway waits here, then reads what
	// this one decided.
	res, err := tx.ExecContext(ctx, `
		INSERT INTO operations (operation_key, intent, fingerprint, status, target_system, agent,
			actor_id, request_id, payload, lease_owner, lease_until, attempt_count, last_attempt_at,
			error_code, error_field, error_message, created_at, updated_at, completed_at,
			intent_version, intent_digest, business_key, duplicate_of, duplicate_at, order_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (operation_key) DO NOTHING`,
		op.Key, op.Intent, op.Fingerprint, op.Status, op.TargetSystem, op.Agent,
		op.ActorID, op.RequestID, string(op.Payload), nullString(op.LeaseOwner), nullTime(op.LeaseUntil), op.AttemptCount, nullTime(op.LastAttemptAt),
		nullString(op.ErrorCode), nullString(op.ErrorField), nullString(op.ErrorMessage), formatTime(now), formatTime(now), nullTime(op.CompletedAt),
		op.IntentVersion, op.IntentDigest, nullString(op.BusinessKey), nullString(op.DuplicateOf), nullTime(op.DuplicateAt), order)
	var inserted int64
	if err == nil {
		inserted, err = res.RowsAffected()
	}
	if err == nil && inserted == 0 {
		if req.OnlyNew {
			op, err = getOperation(ctx, tx, req.Key)
			return DecisionExists, op, err
		}
		op, err = scanOperation(tx.QueryRowContext(ctx, getOperationQuery+tx.forUpdate(), req.Key))
	}
	if err != nil {
		return 0, Operation{}, interpretError(err)
	}
	if inserted == 1 {
		detail := map[string]any{"intent": req.Intent, "fingerprint": req.Fingerprint, "target": req.TargetSystem, "request_id": req.RequestID, "actor_id": req.ActorID}
		if req.Refused != nil {
			for k, v := range failureDetail(*req.Refused) {
				detail[k] = v
			}
			return DecisionRefused, op, s.appendAudit(ctx, tx, "operation.failed_final", req.Key, detail)
		}
		if dup != nil {
			op.Suspected = true
			detail["duplicate_of"] = dup.Key
			detail["duplicate_action"] = string(req.Duplicates.Action)
		}
		if req.AwaitApproval || hold {
			kind, thenMoney := ApprovalMoney, 0
			if hold {
				kind = ApprovalDuplicate
				if req.AwaitApproval {
					thenMoney = 1
				}
			}
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO approvals (operation_key, fingerprint, status, expires_at, created_at, kind, then_money)
				VALUES (?, ?, 'pending', ?, ?, ?, ?)`,
				req.Key, req.Fingerprint, formatTime(now.Add(req.ApprovalTTL)), formatTime(now), kind, thenMoney); err != nil {
				return 0, Operation{}, interpretError(err)
			}
			return DecisionAwaitingApproval, op, s.appendAudit(ctx, tx, "operation.awaiting_approval", req.Key, detail)
		}
		return DecisionExecute, op, s.appendAudit(ctx, tx, "operation.started", req.Key, detail)
	}

	// The key was seen before: owner, then fingerprint, then state.
	switch {
	case op.Agent != req.Agent:
		return DecisionForeign, op, s.appendAudit(ctx, tx, "operation.refused", req.Key, map[string]any{"reason": "foreign_key", "agent": req.Agent})
	case op.Fingerprint != req.Fingerprint:
		return DecisionMismatch, op, s.appendAudit(ctx, tx, "operation.refused", req.Key, map[string]any{"reason": "payload_mismatch", "fingerprint": req.Fingerprint})
	case op.Status.Terminal():
		return DecisionReplay, op, nil
	case op.Status == StatusAwaitingApproval:
		return DecisionAwaitingApproval, op, nil
	case s.live(op, now):
		return DecisionInProgress, op, nil
	}

	// unknown, failed_retryable, or started with an expired lease: take the
	// lease, conditional on the row being exactly as read.
	if op, err = s.takeLease(ctx, tx, op, req.Owner, req.Lease); err != nil {
		return 0, Operation{}, err
	}
	return DecisionResume, op, nil
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

// Get returns the operation for key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (Operation, error) {
	ctx, cancel := s.be.readContext(ctx)
	defer cancel()
	op, err := firstOperation(s.getOp.QueryContext(ctx, key))
	if err = interpretError(err); err != nil {
		if !errors.Is(err, ErrNotFound) {
			if lost := s.be.check(); lost != nil {
				err = lost // a reader opened on the empty place of a lost journal
			}
		}
		return Operation{}, fmt.Errorf("get operation: %w", err)
	}
	return op, nil
}

// ByObject returns the operation that made objectID at the target system,
// e.g. the charge a refund names by its payment id.
func (s *Store) ByObject(ctx context.Context, system, objectID string) (Operation, error) {
	row := s.rdb.QueryRowContext(ctx, `SELECT `+operationColumns+` FROM operations
		WHERE target_system = ? AND target_object_id = ? ORDER BY created_at LIMIT 1`, system, objectID)
	op, err := scanOperation(row)
	if err != nil {
		return Operation{}, fmt.Errorf("operation by object: %w", interpretError(err))
	}
	return op, nil
}

// getOperationQuery reads one row by key: prepared once on the readers
// (Store.Get) and kept prepared on the writer's connection (getOperation).
const getOperationQuery = `SELECT ` + operationColumns + ` FROM operations WHERE operation_key = ?`

// getOperation reads the row of key inside the writer's transaction.
func getOperation(ctx context.Context, tx *txn, key string) (Operation, error) {
	op, err := scanOperation(tx.QueryRowContext(ctx, getOperationQuery, key))
	return op, interpretError(err)
}

type scanner interface{ Scan(dest ...any) error }

// firstOperation is the first row of a query's rows, or sql.ErrNoRows.
// A query that finds none costs no scanning (QueryRow's Scan would set up
// every column's destination first).
func firstOperation(rows *sql.Rows, err error) (Operation, error) {
	if err != nil {
		return Operation{}, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return Operation{}, err
		}
		return Operation{}, sql.ErrNoRows
	}
	op, err := scanOperation(rows)
	if err != nil {
		return Operation{}, err
	}
	return op, rows.Close()
}

func scanOperation(sc scanner) (Operation, error) {
	var (
		op                                                        Operation
		payload                                                   string
		leaseOwner, objectID, result, code, field, msg            sql.NullString
		leaseUntil, lastAttempt, nextCheck, created, updated, fin sql.NullString
		review                                                    int
		bk, dupOf, dupAt                                          sql.NullString
	)
	err := sc.Scan(&op.Key, &op.Intent, &op.Fingerprint, &op.Status, &op.TargetSystem, &op.Agent,
		&op.ActorID, &op.RequestID, &payload, &leaseOwner, &leaseUntil, &op.AttemptCount, &lastAttempt,
		&objectID, &result, &code, &field, &msg,
		&op.LookupFailures, &review, &nextCheck, &created, &updated, &fin,
		&op.IntentVersion, &op.IntentDigest, &bk, &dupOf, &dupAt)
	if err != nil {
		return Operation{}, err
	}
	op.BusinessKey, op.DuplicateOf, op.DuplicateAt = bk.String, dupOf.String, parseTime(dupAt)
	op.Payload = json.RawMessage(payload)
	op.LeaseOwner = leaseOwner.String
	op.LeaseUntil = parseTime(leaseUntil)
	op.LastAttemptAt = parseTime(lastAttempt)
	op.TargetObjectID = objectID.String
	if result.Valid {
		op.Result = json.RawMessage(result.String)
	}
	op.ErrorCode, op.ErrorField, op.ErrorMessage = code.String, field.String, msg.String
	op.NeedsReview = review == 1
	op.NextCheckAt = parseTime(nextCheck)
	op.CreatedAt, op.UpdatedAt, op.CompletedAt = parseTime(created), parseTime(updated), parseTime(fin)
	return op, nil
}

// RecordAttempt notes, before it is sent, that attempt n of the operation
// is about to go to the target, and renews the lease. The note is durable
// before anything leaves, so a crash leaves a row known to be attempted.
func (s *Store) RecordAttempt(ctx context.Context, key, owner string, n int, lease time.Duration) error {
	now := s.now()
	return s.transition(ctx, "operation.attempt", key, map[string]any{"attempt": n}, `
		UPDATE operations
		SET attempt_count = CASE WHEN attempt_count > ? THEN attempt_count ELSE ? END,
			last_attempt_at = ?, lease_until = ?, updated_at = ?
		WHERE operation_key = ? AND status = 'started' AND lease_owner = ?`,
		n, n, formatTime(now), formatTime(now.Add(lease)), formatTime(now), key, owner)
}

// completeQuery moves a started operation held by its lease's owner to
// succeeded.
const completeQuery = `
	UPDATE operations
	SET status = 'succeeded', target_object_id = ?, result = ?,
		error_code = NULL, error_field = NULL, error_message = NULL,
		lease_owner = NULL, lease_until = NULL, needs_review = 0, next_check_at = NULL,
		updated_at = ?, completed_at = ?
	WHERE operation_key = ? AND status = 'started' AND lease_owner = ?`

// Complete moves a started operation held by owner to succeeded.
func (s *Store) Complete(ctx context.Context, key, owner, objectID string, result json.RawMessage) error {
	_, err := s.Completed(ctx, Operation{Key: key, LeaseOwner: owner}, objectID, result)
	return err
}

// Completed is Complete of op, the row as its caller holds it (its claim's
// answer), returning the row as it committed: the answer to the agent
// needs no second read. What the completion sets is applied to op; what
// others may have changed since the claim (the attempts recorded, failed
// look-ups) comes back from the UPDATE; the rest of a row never changes.
func (s *Store) Completed(ctx context.Context, op Operation, objectID string, result json.RawMessage) (Operation, error) {
	now := stored(s.now())
	var lastAttempt sql.NullString
	ret := &returning{`attempt_count, last_attempt_at, lookup_failures`, []any{&op.AttemptCount, &lastAttempt, &op.LookupFailures}}
	err := s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.transitionTx(ctx, tx, "operation.succeeded", op.Key, map[string]any{"object_id": objectID}, ret,
			completeQuery, objectID, nullJSON(result), formatTime(now), formatTime(now), op.Key, op.LeaseOwner)
	})
	if err != nil {
		return Operation{}, err
	}
	op.Status, op.TargetObjectID, op.Result = StatusSucceeded, objectID, nil
	if len(result) > 0 {
		op.Result = result
	}
	op.ErrorCode, op.ErrorField, op.ErrorMessage = "", "", ""
	op.LeaseOwner, op.LeaseUntil, op.NeedsReview, op.NextCheckAt = "", time.Time{}, false, time.Time{}
	op.LastAttemptAt, op.UpdatedAt, op.CompletedAt = parseTime(lastAttempt), now, now
	op.ResumedFrom, op.Suspected = "", false // of the claim, not stored
	return op, nil
}

// Failure is why an operation failed, as journaled and replayed.
type Failure struct {
	Code    string
	Field   string
	Message string // safe for an agent
	// Detail is what the target said, secrets already masked: it goes to
	// the audit trail only, never to the row an agent reads.
	Detail string
	// ObjectID is the target's object that ended in failure (a payment
	// the provider declined), kept for people and look-ups.
	ObjectID string
}

func failureDetail(f Failure) map[string]any {
	d := map[string]any{"code": f.Code, "field": f.Field}
	if f.ObjectID != "" {
		d["object_id"] = f.ObjectID
	}
	if f.Detail != "" {
		d["target_detail"] = f.Detail
	}
	return d
}

// Fail moves a started operation held by owner to failed_final (final) or
// failed_retryable.
func (s *Store) Fail(ctx context.Context, key, owner string, final bool, f Failure) error {
	now := s.now()
	status, completed := StatusFailedRetryable, any(nil)
	if final {
		status, completed = StatusFailedFinal, formatTime(now)
	}
	return s.transition(ctx, "operation."+string(status), key, failureDetail(f), `
		UPDATE operations
		SET status = ?, error_code = ?, error_field = ?, error_message = ?,
			target_object_id = coalesce(?, target_object_id),
			lease_owner = NULL, lease_until = NULL, next_check_at = NULL, needs_review = 0,
			updated_at = ?, completed_at = ?
		WHERE operation_key = ? AND status = 'started' AND lease_owner = ?`,
		status, f.Code, nullString(f.Field), f.Message, nullString(f.ObjectID), formatTime(now), completed, key, owner)
}

// MarkUnknown moves a started operation held by owner to unknown: the
// request may have been applied. objectID, when the target named one, is
// kept for later lookups. The row is due for reconciliation at nextCheck.
func (s *Store) MarkUnknown(ctx context.Context, key, owner, objectID string, f Failure, nextCheck time.Time) error {
	now := formatTime(s.now())
	return s.transition(ctx, "operation.unknown", key, map[string]any{"object_id": objectID, "reason": f.Message}, `
		UPDATE operations
		SET status = 'unknown', target_object_id = coalesce(?, target_object_id),
			error_code = ?, error_field = NULL, error_message = ?,
			lease_owner = NULL, lease_until = NULL, next_check_at = ?, updated_at = ?
		WHERE operation_key = ? AND status = 'started' AND lease_owner = ?`,
		nullString(objectID), f.Code, f.Message, formatTime(nextCheck), now, key, owner)
}

// transition runs one conditional update and audits it as event, in one
// transaction; no row changed means the caller lost the lease.
func (s *Store) transition(ctx context.Context, event, key string, detail map[string]any, query string, args ...any) error {
	return s.write(ctx, func(ctx context.Context, tx *txn) error {
		return s.transitionTx(ctx, tx, event, key, detail, nil, query, args...)
	})
}

// returning is what a transition reads back from its UPDATE: the
// columns, and where they go.
type returning struct {
	columns string
	into    []any
}

// transitionTx runs query, an UPDATE of key's row conditional on the
// lease its caller holds, and audits event; ErrLeaseLost when the row was
// not as the condition says. With ret, ret's columns are read back from
// the UPDATE itself (RETURNING).
func (s *Store) transitionTx(ctx context.Context, tx *txn, event, key string, detail map[string]any, ret *returning, query string, args ...any) error {
	n := int64(1)
	if ret != nil {
		err := tx.QueryRowContext(ctx, query+` RETURNING `+ret.columns, args...).Scan(ret.into...)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			n = 0
		case err != nil:
			return fmt.Errorf("%s: %w", event, interpretError(err))
		}
	} else {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("%s: %w", event, interpretError(err))
		}
		if n, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("%s: %w", event, err)
		}
	}
	if n != 1 {
		return fmt.Errorf("%s %q: %w", event, key, ErrLeaseLost)
	}
	return s.appendAudit(ctx, tx, event, key, detail)
}

// OrphanLeases turns every started row whose lease belongs to another run
// than run into unknown: the caller knows every other run is dead, so
// whatever it sent may or may not have been applied. A lease of run is
// owned by run itself or by "run/<claim>". It returns how many rows it
// moved. On a shared journal (Shared) another run may be alive: the
// caller must not ask there.
func (s *Store) OrphanLeases(ctx context.Context, run string) (int, error) {
	var r0 int
	err := s.write(ctx, func(ctx context.Context, tx *txn) (err error) {
		r0, err = s.orphanLeasesTx(ctx, tx, run)
		return err
	})
	return r0, err
}

// orphanQuery finds the started operations of other runs, through the
// index by status.
const orphanQuery = `SELECT operation_key FROM operations
	WHERE status = 'started' AND lease_owner <> ? AND substr(lease_owner, 1, ?) <> ?`

func (s *Store) orphanLeasesTx(ctx context.Context, tx *txn, run string) (int, error) {
	rows, err := tx.QueryContext(ctx, orphanQuery, run, len(run)+1, run+"/")
	if err != nil {
		return 0, fmt.Errorf("orphan leases: %w", err)
	}
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return 0, fmt.Errorf("orphan leases: %w", err)
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("orphan leases: %w", err)
	}
	now := formatTime(s.now())
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `
			UPDATE operations
			SET status = 'unknown', error_code = ?,
				error_message = 'the gateway stopped while the operation was in flight',
				lease_owner = NULL, lease_until = NULL, next_check_at = ?, updated_at = ?
			WHERE operation_key = ?`, codes.OutcomeUnknown, now, now, k); err != nil {
			return 0, fmt.Errorf("orphan leases: %w", err)
		}
		if err := s.appendAudit(ctx, tx, "operation.unknown", k, map[string]any{"reason": "the gateway stopped while the operation was in flight"}); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}
