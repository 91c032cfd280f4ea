// Package contract is the pure core of oncegate's agent contract (docs/api.md: A
// request, Operation keys, The fingerprint): operation keys, the request envelope, the
// intent whitelist with its JSON Schemas, payload normalization and the canonical form
// that fingerprints hash.
//
// Nothing here talks HTTP or touches the journal. Every refusal is a *codes.Refusal that the
// server turns into a 400 answer; a refused request binds nothing.
package contract

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters/codes"
)

// KeyField is the Field of errors about the operation key.
const KeyField = "Idempotency-Key"

// ErrKeyMissing is the refusal of a mutating execute request of intent that carries no
// operation key, neither in the Idempotency-Key header nor in request_id, on a gateway of
// contour.
func ErrKeyMissing(contour, intent string) *codes.Refusal {
	return codes.New(codes.KeyMissing, KeyField, "this intent changes a business system, so it needs an operation key: send it in the "+
		"Idempotency-Key header (or as request_id in the body), e.g. "+ExampleKey(contour, intent)+", "+
		"and re-send the same key on every retry")
}

// ErrIntentNotAllowed is the refusal of an intent that is not in the whitelist, which
// holds allowed (the names this gateway serves, in its order). The name is quoted and cut
// to a safe length, so arbitrary input is never reflected verbatim.
func ErrIntentNotAllowed(name string, allowed []string) *codes.Refusal {
	list := strings.Join(allowed, ", ")
	if len(allowed) == 0 {
		list = "none (this gateway serves no intents)"
	}
	return codes.Refusef(codes.IntentNotAllowed, "intent", "intent %s is not in the whitelist; allowed intents: %s", quoteShort(name), list)
}

// UnknownField is the refusal of a member name, shown as shown (cut to MaxEcho), at the
// field path field in where, which allows the members allowed.
func UnknownField(shown, field, where string, allowed []string) *codes.Refusal {
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
