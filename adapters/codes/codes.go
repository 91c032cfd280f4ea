// Package codes is the one catalogue of the stable machine codes an agent
// gets (docs/api.md, section Error codes): each code once, with the HTTP status of an
// answer that carries it and whether the same request, with the same
// key, may be sent again. It imports nothing of the gateway, so the
// adapters, the journal, the contract, the engine and the server all
// speak from it.
package codes

import (
	"net/http"
	"slices"
)

// The request and its key, refused before anything is journaled.
const (
	// KeyMissing: a mutating intent in execute mode came without an
	// operation key.
	KeyMissing = "IDEMPOTENCY_KEY_MISSING"
	// KeyInvalid: a malformed key, the wrong contour, a key of another
	// intent, a secret in the key, or header and request_id carrying
	// different keys.
	KeyInvalid = "IDEMPOTENCY_KEY_INVALID"
	// IntentNotAllowed: the intent is not in the whitelist.
	IntentNotAllowed = "INTENT_NOT_ALLOWED"
	// UnknownField: a field the contract does not define, in the envelope
	// or the payload.
	UnknownField = "UNKNOWN_FIELD"
	// Validation: any other violation of the envelope or the payload's
	// schema (or a target's own validation refusal).
	Validation = "VALIDATION_ERROR"
	// UnsupportedSchema: schema_version is not one this gateway speaks.
	UnsupportedSchema = "UNSUPPORTED_SCHEMA"
	PayloadTooLarge   = "PAYLOAD_TOO_LARGE"
	UnsupportedMedia  = "UNSUPPORTED_MEDIA_TYPE"
	// KeyMismatch: the key was first used with another request.
	KeyMismatch = "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH"
	// KeyForeign: the key was first used by another agent.
	KeyForeign = "IDEMPOTENCY_KEY_FOREIGN"
	// KeyInUse: another attempt with the key holds a live lease.
	KeyInUse = "IDEMPOTENCY_KEY_IN_USE"
	// PlanChanged: what validate showed is no longer what execute would do.
	PlanChanged = "PLAN_CHANGED"
	// IntentChanged: the definition of the intent the key was first
	// accepted under changed in place or is gone; the key never runs
	// under another meaning (a final operation still replays).
	IntentChanged = "INTENT_CHANGED"
)

// Duplicate rules by business key: another key about the same business
// event as a live operation of the same intent.
const (
	// DuplicateSuspected: under a rule that blocks, the request is refused
	// and nothing is journaled (the key stays free); under a rule that
	// warns, it is the warning an answer carries.
	DuplicateSuspected = "DUPLICATE_SUSPECTED"
	// DuplicateReviewRequired: under a rule that holds, the operation
	// waits for a person to decide whether it is a duplicate.
	DuplicateReviewRequired = "DUPLICATE_REVIEW_REQUIRED"
	// DuplicateConfirmed: a person decided the held operation is a
	// duplicate; it is final.
	DuplicateConfirmed = "DUPLICATE_CONFIRMED"
)

// Business limits of the configuration.
const (
	LimitExceeded      = "LIMIT_EXCEEDED"
	CurrencyNotAllowed = "CURRENCY_NOT_ALLOWED"
	UnitNotAllowed     = "UNIT_NOT_ALLOWED"
)

// The gateway itself: access, approvals, the journal.
const (
	Unauthenticated   = "UNAUTHENTICATED"
	PermissionDenied  = "PERMISSION_DENIED"
	RateLimited       = "RATE_LIMITED"
	ApprovalRequired  = "APPROVAL_REQUIRED"
	ApprovalDenied    = "APPROVAL_DENIED"
	ApprovalExpired   = "APPROVAL_EXPIRED"
	OperationNotFound = "OPERATION_NOT_FOUND"
	NotFound          = "NOT_FOUND"
	MethodNotAllowed  = "METHOD_NOT_ALLOWED"
	Internal          = "INTERNAL"
	// JournalUnavailable: the journal could not make the request's write
	// durable (a disk error, a full disk, its server gone); nothing was
	// sent to a target for it.
	JournalUnavailable = "JOURNAL_UNAVAILABLE"
	// GatewayBusy: the gateway holds as many connections open as it is
	// configured to (max_connections); the request was not read.
	GatewayBusy = "GATEWAY_BUSY"
)

// A target's answers: its transport, then its business refusals.
const (
	// TargetUnavailable: the target could not be asked, or refused for
	// now (429, 5xx); nothing was done.
	TargetUnavailable = "TARGET_UNAVAILABLE"
	// OutcomeUnknown: the request may have reached the target; it is
	// reconciled by key before anything is sent again.
	OutcomeUnknown = "OUTCOME_UNKNOWN"
	// TargetPermissionDenied: the target refused the gateway's own
	// credentials or rights (1C's 401 or 403 to the gateway's user).
	TargetPermissionDenied = "TARGET_PERMISSION_DENIED"
	// TargetNotPublished: nothing answers as the target's API at the
	// configured address (a 404 that is not the service's): the gateway's
	// configuration or the target's publication is wrong.
	TargetNotPublished = "TARGET_NOT_PUBLISHED"
	// TargetRejected: the target refused with a code the adapter cannot
	// pass on.
	TargetRejected     = "TARGET_REJECTED"
	ReferenceNotFound  = "REFERENCE_NOT_FOUND"
	ReferenceAmbiguous = "REFERENCE_AMBIGUOUS"
	ReferenceInactive  = "REFERENCE_INACTIVE"
	InvalidState       = "INVALID_STATE"
	InsufficientFunds  = "INSUFFICIENT_FUNDS"
	PaymentDeclined    = "PAYMENT_DECLINED"
	PaymentCanceled    = "PAYMENT_CANCELED"
	RefundCanceled     = "REFUND_CANCELED"
	// PostingRefused: 1C refused to post a document (its configuration's
	// check: a required field, negative stock, a closed period); the
	// message is 1C's, trimmed and safe.
	PostingRefused = "POSTING_REFUSED"
	// ChangeRefused: 1C refused to change an object (mark it for
	// deletion, cancel its posting, set its fields) by its
	// configuration's check, e.g. a closed period; the message is 1C's,
	// trimmed and safe.
	ChangeRefused = "CHANGE_REFUSED"
	// TargetIgnoresKeys: the 1C base answered a create with a key of its
	// own choosing instead of the one the gateway sent, so it cannot
	// refuse a second document for one operation; creates there are
	// refused until an administrator fixes the target.
	TargetIgnoresKeys = "TARGET_IGNORES_KEYS"
	// TargetChangedValue is a warning, never a refusal: the target made
	// the effect but did not keep a value as sent (1C cut a string to its
	// attribute's length, ignored a property); field names it.
	TargetChangedValue = "TARGET_CHANGED_VALUE"
)

// A process: several operations, each step its own (docs/processes.md).
const (
	// ProcessCompensated: a step failed for good and the completed steps
	// were undone as declared; the failed step's code comes with it.
	ProcessCompensated = "PROCESS_COMPENSATED"
	// ProcessNeedsReview: a person must finish the process: a manual
	// compensation, or one the target refused.
	ProcessNeedsReview = "PROCESS_NEEDS_REVIEW"
)

// Events in: a source's notice, refused before anything is journaled
// (docs/events.md).
const (
	// EventSourceUnknown: no source of this gateway is named so.
	EventSourceUnknown = "EVENT_SOURCE_UNKNOWN"
	// EventUnknown: no rule of this gateway runs on the notice's event.
	EventUnknown = "EVENT_UNKNOWN"
	// EventMalformed: the body is not a notice as the source sends it.
	EventMalformed = "EVENT_MALFORMED"
	// EventSenderRefused: the notice came from an address outside the
	// source's notices_from.
	EventSenderRefused = "EVENT_SENDER_REFUSED"
)

// info is what an answer carrying a code is: its HTTP status, and whether
// the same request may be sent again.
type info struct {
	status    int
	retryable bool
}

// catalogue holds every code. A target's business refusal is answered 422
// and final.
var catalogue = map[string]info{
	EventSourceUnknown: {http.StatusNotFound, false},
	EventUnknown:       {http.StatusUnprocessableEntity, false},
	EventMalformed:     {http.StatusBadRequest, false},
	EventSenderRefused: {http.StatusForbidden, false},

	KeyMissing:        {http.StatusBadRequest, false},
	KeyInvalid:        {http.StatusBadRequest, false},
	IntentNotAllowed:  {http.StatusBadRequest, false},
	UnknownField:      {http.StatusBadRequest, false},
	Validation:        {http.StatusBadRequest, false},
	UnsupportedSchema: {http.StatusBadRequest, false},
	PayloadTooLarge:   {http.StatusRequestEntityTooLarge, false},
	UnsupportedMedia:  {http.StatusUnsupportedMediaType, false},
	KeyMismatch:       {http.StatusUnprocessableEntity, false},
	KeyForeign:        {http.StatusConflict, false},
	KeyInUse:          {http.StatusConflict, true},
	PlanChanged:       {http.StatusConflict, false},
	IntentChanged:     {http.StatusConflict, false},

	DuplicateSuspected:      {http.StatusConflict, false},
	DuplicateReviewRequired: {http.StatusAccepted, true},
	DuplicateConfirmed:      {http.StatusUnprocessableEntity, false},

	LimitExceeded:      {http.StatusUnprocessableEntity, false},
	CurrencyNotAllowed: {http.StatusUnprocessableEntity, false},
	UnitNotAllowed:     {http.StatusUnprocessableEntity, false},

	Unauthenticated:    {http.StatusUnauthorized, false},
	PermissionDenied:   {http.StatusForbidden, false},
	RateLimited:        {http.StatusTooManyRequests, true},
	ApprovalRequired:   {http.StatusAccepted, true},
	ApprovalDenied:     {http.StatusUnprocessableEntity, false},
	ApprovalExpired:    {http.StatusUnprocessableEntity, false},
	OperationNotFound:  {http.StatusNotFound, false},
	NotFound:           {http.StatusNotFound, false},
	MethodNotAllowed:   {http.StatusMethodNotAllowed, false},
	Internal:           {http.StatusInternalServerError, false},
	JournalUnavailable: {http.StatusServiceUnavailable, true},
	GatewayBusy:        {http.StatusServiceUnavailable, true},

	TargetUnavailable:      {http.StatusServiceUnavailable, true},
	OutcomeUnknown:         {http.StatusAccepted, true},
	TargetPermissionDenied: {http.StatusUnprocessableEntity, false},
	TargetNotPublished:     {http.StatusUnprocessableEntity, false},
	TargetRejected:         {http.StatusUnprocessableEntity, false},
	ReferenceNotFound:      {http.StatusUnprocessableEntity, false},
	ReferenceAmbiguous:     {http.StatusUnprocessableEntity, false},
	ReferenceInactive:      {http.StatusUnprocessableEntity, false},
	InvalidState:           {http.StatusUnprocessableEntity, false},
	InsufficientFunds:      {http.StatusUnprocessableEntity, false},
	PaymentDeclined:        {http.StatusUnprocessableEntity, false},
	PaymentCanceled:        {http.StatusUnprocessableEntity, false},
	RefundCanceled:         {http.StatusUnprocessableEntity, false},
	PostingRefused:         {http.StatusUnprocessableEntity, false},
	ChangeRefused:          {http.StatusUnprocessableEntity, false},
	TargetIgnoresKeys:      {http.StatusUnprocessableEntity, false},
	TargetChangedValue:     {http.StatusOK, false},

	ProcessCompensated: {http.StatusUnprocessableEntity, false},
	ProcessNeedsReview: {http.StatusAccepted, true},
}

// Status is the HTTP status of an answer that carries code: 422 for a
// code not in the catalogue (a target's own business refusal).
func Status(code string) int {
	if i, ok := catalogue[code]; ok {
		return i.status
	}
	return http.StatusUnprocessableEntity
}

// Retryable reports whether the same request, with the same key, may be
// sent again after an answer that carries code.
func Retryable(code string) bool { return catalogue[code].retryable }

// All lists every code, sorted.
func All() []string {
	list := make([]string, 0, len(catalogue))
	for c := range catalogue {
		list = append(list, c)
	}
	slices.Sort(list)
	return list
}
