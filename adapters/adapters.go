// Package adapters defines the seam between the gateway and the systems it
// acts in: one Target per system (1C, the CRM, the payment provider), the
// classification of their failures, and the retry policy around Execute.
//
// Adapters never import the server or the store; they see an operation only
// as an Op and answer with a Result or a classified *Error.
package adapters

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
)

// Op is one operation as a target sees it.
type Op struct {
	// Key is the operation key. It (or a key derived from it) goes to the
	// target on every attempt, so the target can recognise a repeat.
	Key string
	// Intent is the whitelisted intent name, e.g. "invoice.create".
	Intent string
	// Version is the version of the intent's definition the operation was
	// accepted under (0 where the journal predates versions: version 1).
	Version int
	// Fingerprint is the SHA-256 of the canonical request (lowercase hex).
	Fingerprint string
	// Payload is the normalized payload (the canonical request without
	// "operation"), as JSON.
	Payload json.RawMessage
	// Attempt is the 1-based number of this execute attempt.
	Attempt int
	// ObjectID is the target object id an earlier attempt learned, if any;
	// lookups use it once the provider's key window has passed.
	ObjectID string
	// CreatedAt is when the operation was first accepted; lookups that scan
	// a provider's recent objects start there.
	CreatedAt time.Time
	// SentBy, when set, is by when every send of the operation could have
	// reached the target (its last attempt, the drive's budget and the
	// target's settle time); lookups that scan a provider's objects newest
	// first start there instead of at the present.
	SentBy time.Time
}

// Result is the minimal normalized outcome of an operation at its target.
type Result struct {
	// ObjectID is the target's id of the created or changed object
	// (the API's target_object_id).
	ObjectID string
	// Data is the small normalized result given back to the agent, e.g.
	// {"number": "000123"}. Never full target responses, never secrets.
	Data map[string]any
}

// ChangedKey is the key of a Result's Data listing the values the target
// did not keep as sent (a string it cut, a property it ignored, a value
// it did not store), each {"field", "property", "message"}: answered
// and shown as TARGET_CHANGED_VALUE warnings, never a silent success.
const ChangedKey = "target_changed"

// Plan is what a target would do for an operation, checked without writing.
type Plan struct {
	// Data is the normalized plan (resolved references, totals).
	Data map[string]any
}

// Target is one business system reached over its real protocol.
type Target interface {
	// Name is the adapter's name ("onec", "bitrix24", "yookassa").
	Name() string
	// Execute creates the effect of op at the target, carrying op.Key.
	Execute(ctx context.Context, op Op) (Result, error)
	// Lookup finds the effect of an earlier attempt of op by its key.
	// It returns ErrNotFound only when the target certainly has no such
	// effect; a Final *Error carrying an ObjectID when the effect exists
	// and ended in failure (a canceled payment); any other error when the
	// target could not tell (the operation stays unknown).
	Lookup(ctx context.Context, op Op) (Result, error)
}

// Reader is a target that serves read-only intents (scope read, not
// journaled: sales_order.get_status): Read reads the object op's payload
// names and answers its state, writing nothing. op.Key is empty. An
// object the target does not know is a Final REFERENCE_NOT_FOUND naming
// the payload field.
type Reader interface {
	Read(ctx context.Context, op Op) (Result, error)
}

// Deduper is a target that makes at most one effect per key however often
// the key is sent (1C's key register, YooKassa's Idempotence-Key): sending
// the same key again is harmless. A target that is no Deduper (Bitrix24)
// must be looked up, and found empty once nothing can still land, before
// anything is sent again.
type Deduper interface {
	DedupesByKey() bool
}

// Rechecker is a target whose Execute runs every check its Validate runs,
// in the same transaction as the effect (the 1C service's module checks
// references and business rules under the key's lock before it writes):
// a refusal comes back from Execute with the same code and field, and
// nothing is made. For such a target a check before the claim only asks
// the same question twice; the engine skips it unless the agent pinned a
// plan (plan_hash) or a person decides before anything is sent.
type Rechecker interface {
	ChecksOnExecute() bool
}

// PagedLookup is a target whose Lookup may make several calls, the pages of a
// list it scans for the key (YooKassa's payments, Bitrix24's activities):
// LookupCalls is the most one Lookup makes, each bounded by the target's
// call timeout, and the gateway gives a look-up that much time. A target
// that is no PagedLookup looks an effect up in one call.
type PagedLookup interface {
	LookupCalls() int
}

// ReadTimer is a target whose reads (look-ups, checks) have a timeout of
// their own, shorter than the one of the requests that make effects: a
// provider that may take long to make a payment answers a read at once,
// and a look-up that pages through a list should not wait as long per page.
type ReadTimer interface {
	ReadTimeout() time.Duration
}

// Resender is a Deduper whose key holds for a bounded window after the
// operation's first send (YooKassa's Idempotence-Key: 24 hours). Within
// the window, sending the same request again with the same key answers the
// effect already made, or makes the one the operation was sent to make: it
// is how such a target documents finding the outcome of a request whose
// answer was lost. KeyWindow is the window; past it the key may be
// forgotten and only a look-up is safe.
type Resender interface {
	Deduper
	KeyWindow() time.Duration
}

// ErrNotFound is returned by Lookup when the target holds no effect for the key.
var ErrNotFound = errors.New("no effect at the target for this key")

// Class says what the gateway may do after a failed call.
type Class int

const (
	// Retry: the target made no effect (refused before reading, 429, 502,
	// 503, or a repeat is harmless because the target dedupes by key);
	// the same call may be sent again after a backoff.
	Retry Class = iota + 1
	// Reconcile: the request may have been applied (timeout after sending,
	// connection lost while waiting); the operation becomes unknown and is
	// looked up by key before anything is sent again.
	Reconcile
	// Final: the target refused on business grounds; sending again cannot help.
	Final
)

// String names the class for logs.
func (c Class) String() string {
	switch c {
	case Retry:
		return "retry"
	case Reconcile:
		return "reconcile"
	case Final:
		return "final"
	}
	return "unclassified"
}

// Error is a classified failure of a target call. It is not a
// codes.Refusal, the one shape of a refused request: the engine reads its
// Class (and InProgress, Pending, ObjectID) to decide what becomes of a
// journaled operation, and the journal keeps its code and message; only
// a Final Error from a check before anything was journaled becomes a
// Refusal (the engine's targetRefusal).
type Error struct {
	// Class says what may happen next.
	Class Class
	// Code is the stable machine code given to the agent, e.g.
	// "REFERENCE_NOT_FOUND", "INSUFFICIENT_FUNDS", "TARGET_UNAVAILABLE".
	Code string
	// Field names the payload field the error is about, if any.
	Field string
	// Message is safe for a model to read: no stack traces, SQL, host
	// names or credentials.
	Message string
	// RetryAfter is the target's own hint (Retry-After on 429/503, or the
	// provider's retry_after in its body), in seconds, if any.
	RetryAfter int
	// InProgress: the target holds the request and is still working on it
	// (YooKassa's 202 processing). It is Retry, because the same key is how
	// to learn the outcome; once the attempts are spent the outcome is
	// unknown (RetryPolicy.Execute answers it as Reconcile).
	InProgress bool
	// Pending: the effect exists at the target and is not final yet (a
	// payment waiting for the payer's bank). It is Reconcile; a look-up
	// that finds it is an answer, not a failed look-up, so it is polled
	// again later without counting toward a person's review.
	Pending bool
	// ObjectID is the target's object id when the target named one before
	// the outcome became clear (a payment still pending, say); the journal
	// keeps it for later lookups.
	ObjectID string
	// Err is the underlying cause, for logs only (secrets masked by the
	// adapter); it never reaches an agent.
	Err error
	// Also are further Final refusals of the same check, each naming its
	// field (every reference a validate could not resolve, not the first
	// only); see Refusals. Only their code, field and message are read.
	Also []*Error
}

// Error implements error. It prints the safe part and the cause.
func (e *Error) Error() string {
	s := e.Class.String() + ": " + e.Code
	if e.Field != "" {
		s += " (" + e.Field + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ClassOf reports the class of err. An error that is not an *Error was not
// classified by an adapter; it is treated as Reconcile, the only choice that
// is safe whatever happened at the target.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) && e.Class != 0 {
		return e.Class
	}
	return Reconcile
}

// Misconfigured is the target refusing the gateway itself (credentials,
// rights, a wrong URL): no business answer about the operation, and
// nothing was done. It is Retry, so an operator's fix lets the agent's
// next try with the same key go through, instead of burning the key as a
// final refusal.
func Misconfigured(code, message string, err error) *Error {
	return &Error{Class: Retry, Code: code, Message: message, Err: err}
}

// ReadFailure classifies the failure of a request that only reads (a
// look-up, or a check before executing): a refusal stays Final; anything
// else, an answer that never came included, is Retry: a read changes
// nothing, so it is simply made again. ErrNotFound passes through.
func ReadFailure(err error) error {
	var e *Error
	switch {
	case err == nil || errors.Is(err, ErrNotFound):
		return err
	case !errors.As(err, &e):
		return &Error{Class: Retry, Code: codes.TargetUnavailable, Message: "the target could not be reached", Err: err}
	case e.Class == Final || e.Class == Retry:
		return err
	}
	m := *e
	m.Class, m.Code = Retry, codes.TargetUnavailable
	return &m
}

// LookupFailure classifies the failure of a look-up of an operation's
// effect by its key. A target that could not be asked is asked again
// (ReadFailure); a refusal to read is Reconcile, not Final: it tells
// nothing about the effect, so the operation stays unknown. It is never
// "not found", which only an answer can say.
func LookupFailure(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return &Error{Class: Reconcile, Code: codes.OutcomeUnknown, Message: "the target could not be asked about the operation", Err: err}
	}
	if e.Class != Final {
		return ReadFailure(e)
	}
	m := *e
	m.Class = Reconcile
	return &m
}
