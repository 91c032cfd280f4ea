package engine

import (
	"net/http"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/intent"
	"github.com/oncegate/oncegate/store"
)

// keyMismatch and keyForeign are the refusals of a key that was first
// used with another request, or by another agent. The mismatch says what
// the key's own operation is (op, the journal's row): this request is
// refused, but the key did not do nothing.
func keyMismatch(op store.Operation) error {
	r := codes.New(codes.KeyMismatch, "", "this key was first used with a different request; a changed request needs a new key. "+
		"The key's own operation (its first request) is "+string(op.Status))
	if op.TargetObjectID != "" {
		r.Message += ", object " + op.TargetObjectID
	}
	r.Message += "; read it with GET /v1/operations/{key}"
	r.KeyOperation = &codes.KeyOperation{State: string(op.Status), TargetObjectID: op.TargetObjectID}
	return r
}

func keyForeign() error {
	return codes.New(codes.KeyForeign, "", "this key was first used by another agent")
}

// targetUnavailableRetryAfter is the Retry-After, in seconds, of a check
// at the target that could not be asked.
const targetUnavailableRetryAfter = 5

// targetRefusal is a check at the target that failed before anything was
// journaled, so the key stays free: a business refusal is 422 rejected
// with the target's code and the adapter's safe message; a target that
// could not be asked (unavailable) is answered as a transient target
// failure (docs/api.md, Error codes), 503 failed_retryable. The refusal names the intent, key and
// fingerprint it was about.
func targetRefusal(def *intent.Intent, key, fingerprint string, unavailable bool, code, field, message string) *codes.Refusal {
	r := &codes.Refusal{Code: code, Field: field, Message: message, Status: http.StatusUnprocessableEntity,
		Intent: def.Name, Target: def.Target, Key: key, Fingerprint: fingerprint}
	if unavailable {
		r.Code, r.Field, r.Message = codes.TargetUnavailable, "", "the target could not be asked; send the same request again later"
		r.Status, r.RetryAfter, r.State = http.StatusServiceUnavailable, targetUnavailableRetryAfter, string(store.StatusFailedRetryable)
	}
	return r
}
