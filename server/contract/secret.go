package contract

import (
	"regexp"
	"strings"
)

// secretWords are words that, anywhere in a key (any case), mark it as carrying a
// credential. Substring match on purpose: a false refusal costs a renamed key, a false
// acceptance writes a secret into the journal for good.
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "apikey", "api_key", "api-key",
	"accesskey", "access_key", "access-key", "privatekey", "private_key", "private-key",
	"credential", "bearer", "token",
}

// secretPrefixes are case-sensitive prefixes of well-known secrets, each with the least
// number of token characters ([A-Za-z0-9_-]) that must follow it. A prefix only counts at
// the start of the key or right after a separator, so ordinary words (blog_…) pass.
var secretPrefixes = []struct {
	prefix string
	min    int
	mixed  bool // the tail must mix upper case, lower case and digits (for prefixes that are also words)
}{
	{"og_", 20, false},     // oncegate agent tokens
	{"eyJ", 10, false},     // JWT / base64url JSON: {"…
	{"sk_live_", 4, false}, // Stripe-style secret keys
	{"sk_test_", 4, false}, //
	{"rk_live_", 4, false}, // restricted keys
	{"rk_test_", 4, false}, //
	{"whsec_", 8, false},   // webhook signing secrets
	{"ghp_", 20, false},    // GitHub tokens
	{"gho_", 20, false},    //
	{"ghs_", 20, false},    //
	{"ghu_", 20, false},    //
	{"github_pat_", 8, false},
	{"glpat-", 16, false}, // GitLab
	{"xoxb-", 8, false},   // Slack
	{"xoxp-", 8, false},   //
	{"AKIA", 16, false},   // AWS access key ids
	{"ASIA", 16, false},   //
	{"AIza", 30, false},   // Google API keys
	{"ya29.", 10, false},  // Google OAuth access tokens
	{"live_", 32, true},   // YooKassa secret keys
	{"test_", 32, true},   //
}

// minBlob is the length from which a separator-free run of letters and digits that mixes
// both is taken for a high-entropy secret.
const minBlob = 32

// secretIn describes the kind of secret key seems to carry, or returns "". The
// description never quotes the key. key is already known to be in the key alphabet.
func secretIn(key string) string {
	if hasCardNumber(key) {
		return "a card number (a 13-19 digit run that passes the Luhn check)"
	}
	lower := strings.ToLower(key)
	for _, w := range secretWords {
		if strings.Contains(lower, w) {
			return "a credential (it contains the word \"" + w + "\")"
		}
	}
	for _, p := range secretPrefixes {
		for i := 0; ; {
			j := strings.Index(key[i:], p.prefix)
			if j < 0 {
				break
			}
			at := i + j
			if at == 0 || isSeparator(key[at-1]) {
				tail := tokenRun(key[at+len(p.prefix):])
				if len(tail) >= p.min && (!p.mixed || mixesCases(tail)) {
					return "a secret token or API key (it has the shape of " + p.prefix + "…)"
				}
			}
			i = at + 1
		}
	}
	for i := 0; i < len(key); {
		if !isAlnum(key[i]) {
			i++
			continue
		}
		j := i
		for j < len(key) && isAlnum(key[j]) {
			j++
		}
		if j-i >= minBlob && mixesLettersDigits(key[i:j]) {
			return "a secret (a run of 32 or more letters and digits without separators, such as a token or hash)"
		}
		i = j
	}
	return ""
}

// isSeparator reports whether c separates words in a key.
func isSeparator(c byte) bool { return c == ':' || c == '.' || c == '_' || c == '-' }

// tokenRun returns the leading run of token characters [A-Za-z0-9_-] of s.
func tokenRun(s string) string {
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '_' && s[i] != '-' {
			return s[:i]
		}
	}
	return s
}

// mixesLettersDigits reports whether s holds at least one letter and one digit.
func mixesLettersDigits(s string) bool {
	var l, d bool
	for i := 0; i < len(s); i++ {
		l = l || isLetter(s[i])
		d = d || isDigit(s[i])
	}
	return l && d
}

// mixesCases reports whether s holds an upper-case letter, a lower-case letter and a digit.
func mixesCases(s string) bool {
	var u, l, d bool
	for i := 0; i < len(s); i++ {
		u = u || 'A' <= s[i] && s[i] <= 'Z'
		l = l || 'a' <= s[i] && s[i] <= 'z'
		d = d || isDigit(s[i])
	}
	return u && l && d
}

// hasCardNumber reports whether s holds a card number: a maximal run of 13–19 digits
// passing the Luhn check, or consecutive digit groups joined by separators laid out as
// card numbers are written (cardLayout) and passing it. Any run of separators joins two
// groups as one does (4111--1111__1111-_-1111): how the digits are joined hides nothing.
// Other chains of numbers — a timestamp and a counter, a date and a number — are
// separate business ids, however many digits they hold together; so is a UUID, the id
// most agents make their keys of, whose groups of hex digits are now and then all
// decimal (about one random UUID in a few thousand would otherwise read as a card).
func hasCardNumber(s string) bool {
	s = uuidPattern.ReplaceAllString(s, "uuid")
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		var groups []string
		for {
			j := i
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			groups = append(groups, s[i:j])
			i = j
			k := j
			for k < len(s) && isSeparator(s[k]) {
				k++
			}
			if k > j && k < len(s) && isDigit(s[k]) {
				i = k
				continue
			}
			break
		}
		for a := range groups {
			digits := ""
			for b := a; b < len(groups) && len(digits) <= 19; b++ {
				digits += groups[b]
				if len(digits) >= 13 && len(digits) <= 19 && cardLayout(groups[a:b+1]) && luhn(digits) {
					return true
				}
			}
		}
	}
	return false
}

// uuidPattern is a UUID as written: 8-4-4-4-12 hex digits.
var uuidPattern = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`)

// cardLayout reports whether digit groups are laid out as a card number is written: one
// run; or groups of four with a last group of one to four (4-4-4-4, 4-4-4-4-3); or four,
// six and four or five (Diners Club, American Express).
func cardLayout(groups []string) bool {
	if len(groups) == 1 {
		return true
	}
	if len(groups) == 3 && len(groups[0]) == 4 && len(groups[1]) == 6 && (len(groups[2]) == 4 || len(groups[2]) == 5) {
		return true
	}
	for i, g := range groups {
		last := i == len(groups)-1
		if len(g) != 4 && !(last && len(g) >= 1 && len(g) <= 4) {
			return false
		}
	}
	return true
}

// luhn reports whether the decimal digit string d passes the Luhn checksum.
func luhn(d string) bool {
	sum := 0
	for i := 0; i < len(d); i++ {
		n := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return sum%10 == 0
}
