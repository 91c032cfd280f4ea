package codes

import "fmt"

// Refusal is the one shape of a request the gateway refuses: the
// contract, the catalog, the engine, the target's checks before anything
// is journaled and the server itself all return a *Refusal, and the
// server renders every one through one table (server/errors.go), to HTTP
// and to MCP alike.
//
// A target call's own failure is not a Refusal: it is an adapters.Error,
// classified Retry, Reconcile or Final, because the engine decides from
// that class what happens to a journaled operation; it becomes a Refusal
// only when it refuses a request before anything was journaled.
type Refusal struct {
	// Code is the stable machine code, from this catalogue (or a target's
	// own business code, which the catalogue answers 422).
	Code string
	// Field is the field path the refusal is about, "" if none.
	Field string
	// Message is safe for a model to read: no stack traces, SQL, host
	// names or credentials.
	Message string
	// Status is the answer's HTTP status; New sets the catalogue's. A
	// target's refusal says its own: 422 whatever the code means in the
	// gateway's own checks.
	Status int
	// RetryAfter is the answer's Retry-After, in seconds; 0 for none.
	RetryAfter int
	// State is the operation state the answer reports; "" is rejected.
	State string

	// What is known of the request that was refused, when the refusal
	// itself knows it (a target's check knows its intent, key and
	// fingerprint). With Intent "", the server names what it read of the
	// request before the refusal.
	Intent      string
	Target      string
	Key         string
	Fingerprint string

	// KeyOperation is, for a key refused because it holds another request
	// (a payload mismatch), the state and object of the operation the key
	// does hold: the refusal is of this request, not a sign that nothing
	// happened under the key.
	KeyOperation *KeyOperation

	// Also are the request's further problems, found by the same check
	// (every unknown field and schema violation of a payload, every
	// reference the target could not resolve), each with its own code,
	// field and message. The answer lists them after this one, in this
	// order, under this one's status, at most MaxProblems in all; only
	// their code, field and message are read.
	Also []*Refusal
}

// MaxProblems is how many problems one refusal lists at most, itself and
// its Also: enough for any request a person or a model wrote, while a
// 64 KiB body of unknown members cannot make an answer many times its
// size.
const MaxProblems = 100

// KeyOperation is what the key's own operation is.
type KeyOperation struct {
	State          string `json:"state"`
	TargetObjectID string `json:"target_object_id,omitempty"`
}

// New is the refusal code, about field, saying message, with the
// catalogue's HTTP status.
func New(code, field, message string) *Refusal {
	return &Refusal{Code: code, Field: field, Message: message, Status: Status(code)}
}

// Refusef is New with a message made of format and args.
func Refusef(code, field, format string, args ...any) *Refusal {
	return New(code, field, fmt.Sprintf(format, args...))
}

// Error renders the code, the field when there is one, and the message.
func (r *Refusal) Error() string {
	if r.Field == "" {
		return r.Code + ": " + r.Message
	}
	return r.Code + " (" + r.Field + "): " + r.Message
}

// Retryable reports whether the same request, with the same key, may be
// sent again.
func (r *Refusal) Retryable() bool { return Retryable(r.Code) }

// HTTPStatus is the answer's HTTP status: Status, or the catalogue's
// when Status is unset.
func (r *Refusal) HTTPStatus() int {
	if r.Status != 0 {
		return r.Status
	}
	return Status(r.Code)
}

// AnswerState is the operation state the answer reports.
func (r *Refusal) AnswerState() string {
	if r.State != "" {
		return r.State
	}
	return "rejected"
}
