// Package contract is the pure core of oncegate's agent contract (API.md sections 3, 4
// and 6): operation keys, the request envelope, the intent whitelist with its JSON
// Schemas, payload normalization and the canonical form that fingerprints hash.
//
// Nothing here talks HTTP or touches the journal. Every refusal is an *Error that the
// server turns into a 400 answer; a refused request binds nothing.
package contract

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters/codes"
)

// KeyField is the Field of errors about the operation key.
const KeyField = "Idempotency-Key"

// Error is a refusal of a request before anything is journaled.
type Error struct {
	Status  int    // HTTP status (400 for all of this package's codes)
	Code    string // stable machine code
	Field   string // field path, "" if none
	Message string // safe for a model to read
}

// Error renders the code, the field when there is one, and the message.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + " (" + e.Field + "): " + e.Message
}

// ErrKeyMissing is the refusal of a mutating execute request that carries no operation
// key, neither in the Idempotency-Key header nor in request_id.
func ErrKeyMissing() *Error {
	return &Error{
		Status: http.StatusBadRequest,
		Code:   codes.KeyMissing,
		Field:  KeyField,
		Message: "this intent changes a business system, so it needs an operation key: send it in the " +
			"Idempotency-Key header (or as request_id in the body), e.g. prod:invoice.create:order-48291:v1, " +
			"and re-send the same key on every retry",
	}
}

// ErrIntentNotAllowed is the refusal of an intent that is not in the whitelist, which
// holds allowed (the names this gateway serves, in its order). The name is quoted and cut
// to a safe length, so arbitrary input is never reflected verbatim.
func ErrIntentNotAllowed(name string, allowed []string) *Error {
	list := strings.Join(allowed, ", ")
	if len(allowed) == 0 {
		list = "none (this gateway serves no intents)"
	}
	return &Error{
		Status:  http.StatusBadRequest,
		Code:    codes.IntentNotAllowed,
		Field:   "intent",
		Message: fmt.Sprintf("intent %s is not in the whitelist; allowed intents: %s", quoteShort(name), list),
	}
}

// Refuse builds a 400 *Error with a message made of format and args: the refusal of a
// request before anything is journaled, for the catalog's checks of a payload.
func Refuse(code, field, format string, args ...any) *Error {
	return badRequest(code, field, format, args...)
}

// UnknownField is the refusal of a member name, shown as shown (cut to MaxEcho), at the
// field path field in where, which allows the members allowed.
func UnknownField(shown, field, where string, allowed []string) *Error {
	return unknownField(Truncate(shown, MaxEcho), field, where, allowed)
}

// MaxEcho is how many characters of client input a message may quote.
const MaxEcho = maxEcho

// Truncate cuts s to at most n characters, marking the cut with "…"; invalid UTF-8 is
// replaced, so the result is safe to put in a message.
func Truncate(s string, n int) string { return truncate(s, n) }

// FieldPath renders a location inside the decoded payload root as a field path: object
// members dotted, array elements as [i] ("items[0].quantity").
func FieldPath(root any, loc []string) string { return fieldPath(root, loc) }

// FieldPathIn is FieldPath followed by a member name; an empty loc gives the bare name.
func FieldPathIn(root any, loc []string, member string) string {
	return fieldPathIn(root, loc, member)
}

// badRequest builds a 400 *Error.
func badRequest(code, field, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// maxEcho is how many characters of client input a message may quote.
const maxEcho = 64

// quoteShort quotes s for a message, cut to maxEcho characters, with control
// characters and invalid UTF-8 escaped.
func quoteShort(s string) string {
	return fmt.Sprintf("%q", truncate(s, maxEcho))
}

// truncate cuts s to at most n characters, marking the cut with "…".
func truncate(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
