// Package redact is the gateway's one redaction: the targets' configured
// secrets (a password, a secret key, a webhook URL's secret) in every
// encoding they may take in text, the 1C user's name, and the patterns of
// credentials in general (tokens, Basic and Bearer headers, password=…,
// URL user info, card numbers). Every output that may carry a target's
// words goes through one Redactor: the log, the journal's failure details
// and so the audit trail, the admin pages and their CSV, and oncegate check.
//
// It imports nothing of the gateway, so targets, the engine and the
// command line all use it.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mask is what a secret is replaced with.
const Mask = "***"

// minValue is the shortest secret value masked wherever it appears: a
// shorter one would mask pieces of ordinary words. A shorter password is
// still masked inside its credentials (the Basic header, user:password).
const minValue = 4

// minWord is the shortest name masked as a whole word in a target's text;
// a shorter one is masked only where it stands as a user (user=…, //…@).
const minWord = 3

// Secret is one configured credential: the values masked wherever they
// appear (each with its encodings), and the names masked where they stand
// as a user.
type Secret struct {
	values []string // masked with their encodings
	exact  []string // masked as they are (already an encoding)
	names  []string // a user's name: in credential shapes, and as a word in a target's text
}

// Value is a secret used as it is: a key, a token, a password.
func Value(v string) Secret {
	return Secret{values: []string{v}}
}

// Basic is HTTP Basic credentials: the password as a Value, and the pair
// user:password with its base64 forms (the Authorization header). The
// user is not masked by itself (a shop id is no secret); see Name.
func Basic(user, password string) Secret {
	if user == "" && password == "" {
		return Secret{}
	}
	pair := user + ":" + password
	s := Secret{values: []string{password, pair}}
	for _, enc := range encodings {
		s.exact = append(s.exact, enc.EncodeToString([]byte(pair)))
	}
	return s
}

// Name is a user's name that outputs must not show (the 1C user): masked
// where it stands as a user (user=…, "login": "…", //…@) in any text, and
// as a whole word in a target's text (Redactor.Foreign).
func Name(n string) Secret {
	return Secret{names: []string{n}}
}

// Webhook is a URL whose path holds its secret, as Bitrix24's inbound
// webhook https://<portal>/rest/<user id>/<secret>/: the secret segment
// and any password in the URL's user info are masked as values.
func Webhook(raw string) Secret {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return Value(raw)
	}
	var s Secret
	if p, ok := u.User.Password(); ok {
		s.values = append(s.values, p)
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := 0; i+2 < len(segs); i++ {
		if segs[i] == "rest" {
			s.values = append(s.values, segs[i+2])
		}
	}
	if len(s.values) == 0 {
		// Not the shape of a webhook: the whole URL is the secret.
		s.values = append(s.values, raw)
	}
	return s
}

// encodings are the base64 forms a credential is sent in.
var encodings = []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}

// Redactor masks a set of secrets and the credential patterns. The zero
// value and nil mask the patterns alone. It is safe for concurrent use.
type Redactor struct {
	values *strings.Replacer // every value's every encoding, longest first
	shapes []rule            // names where they stand as a user
	words  []*regexp.Regexp  // names, case-insensitively (boundaries checked by hand)
}

// New makes the redaction of secrets.
func New(secrets ...Secret) *Redactor {
	seen := map[string]bool{}
	var lits []string
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			lits = append(lits, v)
		}
	}
	r := &Redactor{}
	names := map[string]bool{}
	for _, s := range secrets {
		for _, v := range s.values {
			if utf8.RuneCountInString(v) < minValue {
				continue
			}
			for _, f := range forms(v) {
				add(f)
			}
		}
		for _, v := range s.exact {
			add(v)
		}
		for _, n := range s.names {
			if n == "" || names[n] {
				continue
			}
			names[n] = true
			q := regexp.QuoteMeta(n)
			for _, f := range forms(n) {
				if f != n {
					q += "|" + regexp.QuoteMeta(f)
				}
			}
			r.shapes = append(r.shapes,
				rule{regexp.MustCompile(`(?i)((?:user(?:[ _-]?name)?|login|пользовател\pL*|логин)[\s"'«»=:]{1,6})(?:` + q + `)([^\pL\pN_]|$)`), "${1}" + Mask + "${2}",
					[]string{"user", "login", "пользовател", "логин"}},
				rule{regexp.MustCompile(`(?i)(//)(?:` + q + `)([:@])`), "${1}" + Mask + "${2}", []string{"//"}},
			)
			if utf8.RuneCountInString(n) >= minWord {
				r.words = append(r.words, regexp.MustCompile(`(?i)(?:`+q+`)`))
			}
		}
	}
	if len(lits) > 0 {
		// At one position the Replacer takes the first match in argument
		// order: the longest first, so user:password goes before password.
		slices.SortStableFunc(lits, func(a, b string) int { return len(b) - len(a) })
		pairs := make([]string, 0, 2*len(lits))
		for _, l := range lits {
			pairs = append(pairs, l, Mask)
		}
		r.values = strings.NewReplacer(pairs...)
	}
	return r
}

// forms are v and the encodings it may take in a target's text or a
// request echoed back: URL query and path escapes (with either case of
// hex), base64, JSON and HTML escapes, PHP's escaped slashes and \u
// escapes.
func forms(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v), html.EscapeString(v)}
	for _, f := range out[1:3] {
		out = append(out, percentHex.ReplaceAllStringFunc(f, strings.ToLower))
	}
	if b, err := json.Marshal(v); err == nil {
		j := string(b[1 : len(b)-1])
		php := strings.ReplaceAll(j, "/", `\/`)
		out = append(out, j, php, asciiJSON(j), asciiJSON(php))
	}
	for _, enc := range encodings {
		out = append(out, enc.EncodeToString([]byte(v)))
	}
	return out
}

var percentHex = regexp.MustCompile(`%[0-9A-F]{2}`)

// asciiJSON is a JSON string's body with every non-ASCII rune as \uXXXX
// (PHP's json_encode, Bitrix24's answers).
func asciiJSON(j string) string {
	var b strings.Builder
	for _, r := range j {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// rule is a pattern and its replacement. A text none of whose lower-case
// form holds one of the triggers cannot match, and is not searched: most
// of what the gateway logs holds no credential, and a line's strings are
// each looked at by every rule.
type rule struct {
	re       *regexp.Regexp
	repl     string
	triggers []string // lower case; nil: always searched
}

// lowered is s in lower case as the rules' triggers are written, with the
// one letter whose lower case differs from what (?i) matches folded too:
// ſ (long s) matches s.
func lowered(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, "ſ", "s"))
}

// apply is the rule on s, whose lower-case form is low.
func (p rule) apply(s, low string) string {
	if p.triggers != nil && !slices.ContainsFunc(p.triggers, func(t string) bool { return strings.Contains(low, t) }) {
		return s
	}
	return p.re.ReplaceAllString(s, p.repl)
}

// credentialRules find credentials whatever their value: agent tokens,
// Authorization headers, password=… and the like, URL user info, and a
// webhook's secret path.
var credentialRules = []rule{
	{regexp.MustCompile(`og_[A-Za-z0-9_-]{16,}`), "og_" + Mask, []string{"og_"}},
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), "$1 " + Mask, []string{"bearer", "basic"}},
	{credentialValue, "$1$2$3" + Mask, []string{"passw", "pwd", "secret", "token", "api"}},
	{regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@`), "$1" + Mask + "@", []string{"://"}},
	{regexp.MustCompile(`(/rest/\d+/)[A-Za-z0-9]{6,}`), "$1" + Mask, []string{"/rest/"}},
}

// credentialValue is the value after a credential's name (password,
// token, secret, api_key, …). Assigned (token=…), quoted ("token": "…") or
// glued to the colon (token:…), it is a value whatever it looks like. After
// ": " it may as well be the rest of a sentence that only names the
// credential ("failed to find token: no such file"), so there it is masked
// only when it looks like a secret: it holds a digit or a symbol, a
// punctuation mark inside it, a capital after a small letter, or 24
// letters in a row. An ordinary word — small letters, a capital first, all
// capitals, a full stop after it — stays. A configured secret is masked
// wherever it stands by its value, not here.
var credentialValue = regexp.MustCompile(`(?i)(password|passwd|pwd|secret[_-]?key|secret|token|api[_-]?key)` +
	`(?:(["']?\s*=\s*["']?|["']?\s*:\s*["']|["']?\s*:)` + valueChars + `+` +
	`|(["']?\s*:\s+)` + valueChars + `*?(?:[^\pL\s"',;&.:!?()]|[.:!?()][^\s"',;&.:!?()]|(?-i:\p{Ll}\p{Lu})|\pL{24})` + valueChars + `*)`)

// valueChars are the characters of a credential's value: up to a space, a
// quote or a separator of fields and query parameters.
const valueChars = `[^\s"',;&]`

// cardNumber finds long digit runs (card numbers) in a target's text. The
// gateway's own lines keep them: operation keys and ids may be such runs.
var cardNumber = rule{regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`), "[number masked]", nil}

// Own masks a text of the gateway's own (a log message, a value it
// logs): the secrets' values in every encoding, the user's name where it
// stands as a user, and the credential patterns. Names, keys and numbers
// of the gateway's own stay readable.
func (r *Redactor) Own(s string) string {
	if r != nil && r.values != nil {
		s = r.values.Replace(s)
	}
	low := lowered(s)
	if r != nil {
		for _, p := range r.shapes {
			s = p.apply(s, low)
		}
	}
	for _, p := range credentialRules {
		s = p.apply(s, low)
	}
	return s
}

// Foreign masks a text that came from outside, a target's answer or an
// error quoting one: everything Own masks, the user's name as a whole
// word wherever it appears, and card numbers. The result is valid UTF-8.
func (r *Redactor) Foreign(s string) string {
	s = r.Own(s)
	if r != nil {
		for _, w := range r.words {
			s = maskWords(s, w)
		}
	}
	s = cardNumber.re.ReplaceAllString(s, cardNumber.repl)
	return strings.ToValidUTF8(s, "?")
}

// maskWords masks the matches of w that stand as a word: no letter,
// digit or underscore just before or after (a name inside a longer word
// is that word's business).
func maskWords(s string, w *regexp.Regexp) string {
	idx := w.FindAllStringIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		before, _ := utf8.DecodeLastRuneInString(s[:m[0]])
		after, _ := utf8.DecodeRuneInString(s[m[1]:])
		if m[0] > 0 && isWord(before) || m[1] < len(s) && isWord(after) {
			continue
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(Mask)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

func isWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
