package engine

import (
	"regexp"
	"strings"
)

// secretPatterns find what must never reach a log line, the audit trail
// or an answer, in text that came from a target (error bodies, transport
// errors). Host names and stack frames are kept for operators: they are
// not secrets, and they never reach agents anyway.
var secretPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`og_[A-Za-z0-9_-]{16,}`), "og_***"},
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`), "$1 ***"},
	{regexp.MustCompile(`(?i)(password|passwd|pwd|secret[_-]?key|secret|token|api[_-]?key)(["']?\s*[=:]\s*["']?)[^\s"',;&]+`), "$1$2***"},
	{regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@`), "$1***@"},
	{regexp.MustCompile(`(/rest/\d+/)[A-Za-z0-9]{6,}`), "$1***"},
	{regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`), "[number masked]"},
}

// maskSecrets returns s with credentials, tokens, passwords, webhook
// secrets and long digit runs (card numbers) masked.
func maskSecrets(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
