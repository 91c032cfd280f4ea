package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/engine"
	"github.com/oncegate/oncegate/store"
)

// answer is the one JSON object every POST and GET of an operation
// returns (docs/api.md, section Answers). Problem answers add type, title and detail.
type answer struct {
	Type   string `json:"type,omitempty"`
	Title  string `json:"title,omitempty"`
	Detail string `json:"detail,omitempty"`

	OperationKey string `json:"operation_key"`
	RequestID    string `json:"request_id"`
	Operation    string `json:"operation"`
	// State is the operation's state, in every answer.
	State string `json:"state"`
	// Status is set by finish: the state again in a 200 or 202 answer (as
	// v1 always had it), the HTTP status as a number in a problem answer
	// (RFC 9457 section 3.1.3).
	Status         any             `json:"status"`
	TargetSystem   nullable        `json:"target_system"`
	TargetObjectID *string         `json:"target_object_id"`
	Result         json.RawMessage `json:"result"`
	Errors         []ErrorItem     `json:"errors"`
	// Warnings did not stop the operation: a suspected duplicate under a
	// rule that warns (or that held it, whatever a person decided).
	Warnings     []ErrorItem `json:"warnings,omitempty"`
	Fingerprint  nullable    `json:"fingerprint"`
	AttemptCount int         `json:"attempt_count"`
	Replayed     bool        `json:"replayed"`
	// NeedsReview: the outcome could not be established by key and a
	// person has been asked to look at it.
	NeedsReview bool `json:"needs_review,omitempty"`

	// KeyOperation: a request refused because its key holds another
	// request (IDEMPOTENCY_KEY_PAYLOAD_MISMATCH) is told what the key's own
	// operation is, so no agent concludes that nothing happened.
	KeyOperation *codes.KeyOperation `json:"key_operation,omitempty"`
	// ApprovalExpiresAt: an operation awaiting a person's decision ends
	// failed_final APPROVAL_EXPIRED if nobody decides by then (RFC 3339,
	// UTC).
	ApprovalExpiresAt string `json:"approval_expires_at,omitempty"`

	// Steps: a process's steps, in order.
	Steps []stepAnswer `json:"steps,omitempty"`
	// Event: the notice whose rule ran the operation or process, for one
	// no agent asked for.
	Event *eventOfOperation `json:"event,omitempty"`

	// Validate mode only.
	Plan     json.RawMessage `json:"plan,omitempty"`
	PlanHash string          `json:"plan_hash,omitempty"`
}

// nullable is a string field every answer carries, null when not known
// (a request refused before its intent or payload was read).
type nullable string

// MarshalJSON writes "" as null.
func (n nullable) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(n))
}

// Retry-After hints, in seconds, by the state an answer reports.
const (
	retryInProgress = 1
	retryUnknown    = 2
	retryApproval   = 30
)

// operationAnswer renders a journal row as the API's answer, with its HTTP
// status and Retry-After hint (0 for none).
func operationAnswer(op store.Operation, requestID string) (int, int, answer) {
	a := answer{
		OperationKey: op.Key,
		RequestID:    requestID,
		Operation:    op.Intent,
		State:        string(op.Status),
		TargetSystem: nullable(op.TargetSystem),
		Result:       op.Result,
		Fingerprint:  nullable(op.Fingerprint),
		AttemptCount: op.AttemptCount,
		NeedsReview:  op.NeedsReview,
	}
	if a.RequestID == "" {
		a.RequestID = op.RequestID
	}
	if a.RequestID == "" {
		a.RequestID = op.Key // request_id is the key's other carrier
	}
	if op.TargetObjectID != "" {
		id := op.TargetObjectID
		a.TargetObjectID = &id
	}
	if a.Result == nil {
		a.Result = json.RawMessage("null")
	}
	item := func(code, field, msg string) {
		a.Errors = []ErrorItem{{Code: code, Field: field, Message: msg, Retryable: codes.Retryable(code)}}
	}
	switch op.Status {
	case store.StatusSucceeded:
		return http.StatusOK, 0, a
	case store.StatusFailedFinal:
		// A refusal at the target or by a person: always 422, whatever the
		// code's own meaning elsewhere in the API.
		item(op.ErrorCode, op.ErrorField, op.ErrorMessage)
		return http.StatusUnprocessableEntity, 0, a
	case store.StatusFailedRetryable:
		msg := op.ErrorMessage
		if msg == "" || op.ErrorCode != codes.TargetUnavailable {
			msg = "the target is unavailable and retries are spent; send the same request again later"
		}
		item(codes.TargetUnavailable, "", msg)
		return http.StatusServiceUnavailable, 5, a
	case store.StatusUnknown:
		msg := "the request reached the target but its outcome is not known yet; it is being reconciled by key, send the same request again to get the result"
		if engine.Pending(op) {
			msg = "pending: the target holds the effect but it is not final yet (a payment waiting for the payer's bank, say); it is checked until it is, send the same request again later to get the result"
		}
		if op.NeedsReview {
			msg = "the outcome could not be established at the target; a person is reviewing it, send the same request again later"
		}
		item(codes.OutcomeUnknown, "", msg)
		return http.StatusAccepted, retryUnknown, a
	case store.StatusAwaitingApproval:
		if op.ErrorCode == codes.DuplicateReviewRequired {
			item(codes.DuplicateReviewRequired, "", "another operation about the same business event was made earlier (see warnings); a person decides whether this one is a duplicate: send the same request again to learn the decision")
			return http.StatusAccepted, retryApproval, a
		}
		item(codes.ApprovalRequired, "", "a money operation waits for a person's approval; send the same request again to learn the decision")
		return http.StatusAccepted, retryApproval, a
	default: // started: another attempt holds the lease
		item(codes.KeyInUse, "", "another attempt with this key is in progress; send the same request again shortly")
		return http.StatusConflict, retryInProgress, a
	}
}

// writeOperation answers with a journal row.
func (s *Server) writeOperation(c echo.Context, op store.Operation, requestID string, replayed bool) error {
	status, retry, a := operationAnswer(op, requestID)
	a.Replayed = replayed
	s.warn(c, &a, op)
	s.approvalDue(c, &a, op)
	h := c.Response().Header()
	if replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	if retry > 0 {
		h.Set("Retry-After", itoa(retry))
	}
	return s.writeAnswer(c, status, a)
}

// approvalDue tells an operation awaiting a person's decision when that
// decision is due: by then it is approved, denied or expired.
func (s *Server) approvalDue(c echo.Context, a *answer, op store.Operation) {
	if op.Status != store.StatusAwaitingApproval {
		return
	}
	ap, err := s.store.ApprovalByKey(c.Request().Context(), op.Key)
	if err != nil || ap.Status != store.ApprovalPending {
		return // approved and waiting for the executor, or being decided: nothing due
	}
	a.ApprovalExpiresAt = ap.ExpiresAt.UTC().Format(time.RFC3339)
	if len(a.Errors) == 1 {
		a.Errors[0].Message += "; if nobody decides by " + a.ApprovalExpiresAt + " (approval_expires_at), it ends failed_final " + codes.ApprovalExpired
	}
}

// warn adds to a the warnings about op: a suspected duplicate, and each
// value the target did not keep as sent.
func (s *Server) warn(c echo.Context, a *answer, op store.Operation) {
	for _, w := range s.engine.Warnings(c.Request().Context(), op) {
		a.Warnings = append(a.Warnings, ErrorItem{Code: w.Code, Field: w.Field, Message: w.Message})
	}
}

// warnings renders the engine's warnings.
func warnings(ws []engine.Warning) []ErrorItem {
	var out []ErrorItem
	for _, w := range ws {
		out = append(out, ErrorItem{Code: w.Code, Field: w.Field, Message: w.Message})
	}
	return out
}
