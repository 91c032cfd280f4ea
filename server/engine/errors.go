package engine

import (
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/intent"
)

// Refusal is a request the engine refuses before anything is journaled:
// a stable code, the field it is about, and a message for the agent.
type Refusal struct {
	Code    string
	Field   string
	Message string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// keyMismatch and keyForeign are the refusals of a key that was first
// used with another request, or by another agent.
func keyMismatch() error {
	return &Refusal{Code: codes.KeyMismatch, Message: "this key was first used with a different request; a changed request needs a new key"}
}

func keyForeign() error {
	return &Refusal{Code: codes.KeyForeign, Message: "this key was first used by another agent"}
}

// TargetRefusal is a check at the target that failed before anything was
// journaled, so the key stays free: a business refusal with the target's
// code and the adapter's safe message, or, Unavailable, a target that
// could not be asked. The target's own text went to the log only.
type TargetRefusal struct {
	Intent      *intent.Intent
	Key         string // "" for a read, or a validate without a key
	Fingerprint string
	Unavailable bool
	Code        string // the target's code; "" when Unavailable
	Field       string
	Message     string
}

func (r *TargetRefusal) Error() string {
	if r.Unavailable {
		return codes.TargetUnavailable + ": the target could not be asked"
	}
	return r.Code + ": " + r.Message
}
