package contract

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters/codes"
)

// Limits of an operation key (docs/api.md, section Operation keys).
const (
	MinKeyLen = 8
	MaxKeyLen = 255
)

// KeyFromRequest picks the operation key out of a request. The Idempotency-Key header
// holds it bare or as an RFC 8941 sf-string ("prod:…" with \" and \\ escapes; parameters
// after the string are not accepted); request_id in the body is an alternative carrier,
// and when both are present they must be equal. hasHeader tells an empty header from an
// absent one: an empty header is refused rather than read as "no key".
//
// It returns "" and no error when neither carries a key: whether a key is required is
// the caller's decision (see ErrKeyMissing). The key returned is not yet checked; pass it
// to CheckKey. Messages never echo the key; their example key is of contour and intent,
// the gateway's own contour and the intent asked for.
func KeyFromRequest(header string, hasHeader bool, requestID, contour, intent string) (string, error) {
	var key string
	if hasHeader {
		h := strings.Trim(header, " \t")
		switch {
		case h == "":
			return "", codes.Refusef(codes.KeyInvalid, KeyField,
				"the Idempotency-Key header is empty; send the operation key, e.g. %s, or leave the header out", ExampleKey(contour, intent))
		case h[0] == '"':
			k, ok := parseSFString(h)
			if !ok {
				return "", codes.Refusef(codes.KeyInvalid, KeyField,
					`the Idempotency-Key header starts with a quote but is not a valid RFC 8941 quoted string; `+
						`send the key bare (%s) or quoted as a whole, with only \" and \\ escapes`, ExampleKey(contour, intent))
			}
			if k == "" {
				return "", codes.Refusef(codes.KeyInvalid, KeyField,
					"the Idempotency-Key header holds an empty quoted string; send the operation key, e.g. %s", ExampleKey(contour, intent))
			}
			key = k
		default:
			key = h
		}
	}
	if requestID != "" {
		if key == "" {
			return requestID, nil
		}
		if key != requestID {
			return "", codes.Refusef(codes.KeyInvalid, "request_id",
				"the Idempotency-Key header and request_id carry different keys; they must be equal: send the same operation key in both, or only one of them")
		}
	}
	return key, nil
}

// parseSFString parses an RFC 8941 sf-string (section 4.2.5): a quoted string of
// printable ASCII where only \" and \\ are escapes. Nothing may follow the closing quote.
func parseSFString(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i == len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", false
			}
			b.WriteByte(s[i])
		case c == '"':
			return b.String(), i == len(s)-1
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}

// CheckKey enforces the key rules (docs/api.md, Operation keys) for a key used with intent on a gateway whose
// contour is contour: 8–255 characters of A-Z a-z 0-9 . _ : -; at least four
// ":"-separated non-empty segments; the first is the contour; the last is v<digits>; the
// segments between the contour and the last two, joined with ".", are the intent name.
// A key that holds a card number (a 13–19 digit run passing the Luhn check, digits
// possibly grouped by runs of - . _ or :) or anything shaped like a secret is refused, and
// the message then never echoes the key: keys are stored and logged in clear.
//
// Secret checks are heuristics biased towards refusal: a segment containing a word such
// as password, secret, token or apikey; our own agent token shape (og_…); a JWT (eyJ…);
// common provider secret prefixes (sk_live_, whsec_, live_…/test_… YooKassa keys, …); a
// run of 32 or more letters and digits without separators that mixes both (so a UUID
// written without dashes, or a SHA-256 hex, is refused; with dashes it is fine).
func CheckKey(key, contour, intent string) error {
	// Shape: length and alphabet.
	if n := utf8.RuneCountInString(key); n < MinKeyLen || n > MaxKeyLen {
		return codes.Refusef(codes.KeyInvalid, KeyField,
			"the operation key must be %d to %d characters long (got %d), e.g. %s",
			MinKeyLen, MaxKeyLen, n, ExampleKey(contour, intent))
	}
	for i := 0; i < len(key); i++ {
		if !isKeyChar(key[i]) {
			return codes.Refusef(codes.KeyInvalid, KeyField,
				"the operation key has a character that is not allowed at position %d; use only A-Z a-z 0-9 . _ : -",
				utf8.RuneCountInString(key[:i])+1)
		}
	}

	// Secrets before anything that might quote a part of the key.
	if what := secretIn(key); what != "" {
		return codes.Refusef(codes.KeyInvalid, KeyField,
			"the operation key looks like it carries %s; keys are stored and logged in clear and must never hold "+
				"card numbers, tokens, passwords or other secrets: build the key from business ids only, "+
				"e.g. %s", what, ExampleKey(contour, intent))
	}

	// Structure: <contour>:<operation…>:<intent-id>:v<digits>.
	segs := strings.Split(key, ":")
	if len(segs) < 4 {
		return codes.Refusef(codes.KeyInvalid, KeyField,
			"the operation key must have at least four ':'-separated segments, <contour>:<operation>:<intent-id>:<version>, "+
				"e.g. %s (got %d)", ExampleKey(contour, intent), len(segs))
	}
	for i, s := range segs {
		if s == "" {
			return codes.Refusef(codes.KeyInvalid, KeyField,
				"segment %d of the operation key is empty; every ':'-separated segment must be non-empty", i+1)
		}
	}
	if segs[0] != contour {
		return codes.Refusef(codes.KeyInvalid, KeyField,
			"the operation key must start with this gateway's contour %q (got %s); e.g. %s",
			contour, quoteShort(segs[0]), ExampleKey(contour, intent))
	}
	if v := segs[len(segs)-1]; !isVersion(v) {
		return codes.Refusef(codes.KeyInvalid, KeyField,
			"the last segment of the operation key must be the key version v<digits>, e.g. v1 (got %s)", quoteShort(v))
	}
	if op := strings.Join(segs[1:len(segs)-2], "."); op != intent {
		return codes.Refusef(codes.KeyInvalid, KeyField,
			"the operation key names the operation %s but the intent is %q; the segments between the contour and "+
				"the last two, joined with '.', must equal the intent, e.g. %s:%s:order-48291:v1",
			quoteShort(op), intent, contour, intent)
	}
	return nil
}

// ExampleKey is the example key messages give: of the gateway's contour and
// the intent asked for (invoice.create when the name is not one an intent
// may have, or a contour that is not one).
func ExampleKey(contour, intent string) string {
	if !contourWord.MatchString(contour) {
		contour = "test"
	}
	return contour + ":" + exampleOperation(intent) + ":order-48291:v1"
}

// contourWord is the form of a contour (config: contour).
var contourWord = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// exampleOperation is the intent for an example key, or a placeholder when the name
// is not one an intent may have.
func exampleOperation(intent string) string {
	if intentName.MatchString(intent) {
		return intent
	}
	return "invoice.create"
}

// intentName is the form of every intent's name: dotted lower-case words.
var intentName = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

// isKeyChar reports whether c is in the key alphabet A-Z a-z 0-9 . _ : -.
func isKeyChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == ':' || c == '-'
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool  { return isDigit(c) || isLetter(c) }

// isVersion reports whether s is v<digits>.
func isVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
