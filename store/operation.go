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

const operationColumns = `operation_key, intent, fingerprint, status, target_system, agent,
	actor_id, request_id, payload, lease_owner, lease_until, attempt_count, last_attempt_at,
	target_object_id, result, error_code, error_field, error_message,
	lookup_failures, needs_review, next_check_at, created_at, updated_at, completed_at,
	intent_version, intent_digest, business_key, duplicate_of, duplicate_at`

// Get returns the operation for key, or ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) (Operation, error) {
	ctx, cancel := s.be.readContext(ctx)
	defer cancel()
	noteRead(ctx)
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
