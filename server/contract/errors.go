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

// ErrIntentNotAllowed is the refusal of an intent that is not in the whitelist. The name
// is quoted and cut to a safe length, so arbitrary input is never reflected verbatim.
func ErrIntentNotAllowed(name string) *Error {
	names := make([]string, 0, len(registry))
	for _, in := range registry {
		names = append(names, in.Name)
	}
	return &Error{
		Status: http.StatusBadRequest,
		Code:   codes.IntentNotAllowed,
		Field:  "intent",
		Message: fmt.Sprintf("intent %s is not in the whitelist; allowed intents: %s",
			quoteShort(name), strings.Join(names, ", ")),
	}
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
