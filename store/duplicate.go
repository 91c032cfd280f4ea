package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Duplicate rules by business key. An operation key stops a retry of one
// request; a business key (an intent's chosen payload fields, normalized
// and hashed by the gateway) finds a second request about the same
// business event under another key. The claim of a new key decides it in
// its own transaction: it locks the business key (on PostgreSQL an
// advisory lock, so gateways sharing the journal take turns; SQLite's one
// writer takes turns already), looks for the earliest live operation of
// the same intent and business key within the rule's window, and only
// then writes. So of many requests with one business key exactly one
// finds none.

// DuplicateAction is what a duplicate rule does with a second request.
type DuplicateAction string

// Duplicate actions.
const (
	// DuplicateBlock refuses the new key: nothing is journaled.
	DuplicateBlock DuplicateAction = "block"
	// DuplicateHold journals it awaiting a person's decision.
	DuplicateHold DuplicateAction = "hold"
	// DuplicateWarn lets it go on, marked as a suspected duplicate.
	DuplicateWarn DuplicateAction = "warn"
)

// DuplicateCheck is an intent's duplicate rule applied to one request.
type DuplicateCheck struct {
	// BusinessKey is the lowercase hex SHA-256 of the request's business
	// key; the clear values are never stored.
	BusinessKey string
	// Window is how far back an earlier operation counts.
	Window time.Duration
	Action DuplicateAction
}

// Kinds of approval: a money approval, or the review of a suspected
// duplicate.
const (
	ApprovalMoney     = "money"
	ApprovalDuplicate = "duplicate"
)

// businessKeyLockClass is the first half of the PostgreSQL advisory lock
// of a business key (pg_advisory_xact_lock(int, int)); the second half is
// taken from the key's digest. Two-part locks never meet the one-part
// locks of the audit chain and sign-ins.
const businessKeyLockClass = 0x6f6e6364 // "oncd"

// liveDuplicateQuery finds the earliest live operation of an intent and
// business key since a time, other than the claiming key: live is any
// status but failed_final (refused by the target or a person, nothing
// made). It reads the key only (and whether that one was itself
// suspected): nearly every claim finds none, and the row is read after.
const liveDuplicateQuery = `SELECT operation_key, coalesce(duplicate_of, '') FROM operations
	WHERE intent = ? AND business_key = ? AND created_at > ? AND status <> 'failed_final' AND operation_key <> ?
	ORDER BY created_at, operation_key LIMIT 1`

// liveOriginalQuery is liveDuplicateQuery among the operations that were
// not themselves suspected: the business event's original. Times are
// taken before a claim waits for the business key's lock, so on a shared
// journal a held operation may carry an earlier time than the one that
// went on; a later duplicate names the original all the same.
const liveOriginalQuery = `SELECT operation_key, '' FROM operations
	WHERE intent = ? AND business_key = ? AND created_at > ? AND status <> 'failed_final' AND operation_key <> ? AND duplicate_of IS NULL
	ORDER BY created_at, operation_key LIMIT 1`

// earliestLive is the business event's live original, or else its
// earliest live operation (the original failed or is past the window).
func (s *Store) earliestLive(ctx context.Context, q rowQuerier, intent string, r DuplicateCheck, key string) (Operation, error) {
	since := formatTime(s.now().Add(-r.Window))
	// The earliest live operation is the original unless it was itself
	// suspected: one query for the usual claim, which finds none.
	var found, dupOf string
	err := q.QueryRowContext(ctx, liveDuplicateQuery, intent, r.BusinessKey, since, key).Scan(&found, &dupOf)
	if err != nil {
		return Operation{}, err
	}
	if dupOf != "" {
		var orig string
		switch err := q.QueryRowContext(ctx, liveOriginalQuery, intent, r.BusinessKey, since, key).Scan(&orig, &dupOf); {
		case err == nil:
			found = orig
		case !errors.Is(err, sql.ErrNoRows):
			return Operation{}, err
		}
	}
	return scanOperation(q.QueryRowContext(ctx, getOperationQuery, found))
}

// findDuplicate is the earlier live operation of the same business event
// as a claim of key, or nil. lock takes the business key's lock first.
func (s *Store) findDuplicate(ctx context.Context, tx *txn, intent string, r DuplicateCheck, key string, lock bool) (*Operation, error) {
	if lock {
		if err := tx.lock(ctx, int32(businessKeyLockClass), lockHalf(r.BusinessKey)); err != nil {
			return nil, fmt.Errorf("lock business key: %w", err)
		}
	}
	op, err := s.earliestLive(ctx, tx, intent, r, key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find duplicate: %w", interpretError(err))
	}
	return &op, nil
}

// lockHalf is the second half of a business key's advisory lock: the
// first four bytes of its digest.
func lockHalf(digest string) int32 {
	b, err := hex.DecodeString(digest)
	if err != nil || len(b) < 4 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// keyExists reports whether key has a row.
func keyExists(ctx context.Context, tx *txn, key string) (bool, error) {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM operations WHERE operation_key = ?`, key).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("find key: %w", err)
	}
	return true, nil
}

// FindDuplicate is the earlier live operation of the same business event
// as a request with key under intent and the rule r, or ErrNotFound. It
// reads only and decides nothing (validate mode); the claim decides.
func (s *Store) FindDuplicate(ctx context.Context, intent string, r DuplicateCheck, key string) (Operation, error) {
	op, err := s.earliestLive(ctx, s.rdb, intent, r, key)
	if err != nil {
		return Operation{}, fmt.Errorf("find duplicate: %w", interpretError(err))
	}
	return op, nil
}

// SameBusinessEvent lists the other operations of op's intent with op's
// business key, oldest first, at most limit: the operations a duplicate
// rule counts as one business event with it, for people to see.
func (s *Store) SameBusinessEvent(ctx context.Context, op Operation, limit int) ([]Operation, error) {
	if op.BusinessKey == "" {
		return nil, nil
	}
	ops, err := s.queryOperations(ctx, `SELECT `+operationColumns+` FROM operations
		WHERE intent = ? AND business_key = ? AND operation_key <> ?
		ORDER BY created_at, operation_key LIMIT ?`, op.Intent, op.BusinessKey, op.Key, limit)
	if err != nil {
		return nil, fmt.Errorf("same business event: %w", err)
	}
	return ops, nil
}
