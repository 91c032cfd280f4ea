package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// A rule's triggers only skip texts it cannot match: on every text the
// rule with its prefilter gives what the bare regexp gives.
func TestTriggersSkipOnlyWhatCannotMatch(t *testing.T) {
	t.Parallel()
	r := New(Basic("rtu-обмен", "p@ss/wörd:42"), Name("rtu-обмен"), Name("Admin"))
	rules := append(append([]rule{}, credentialRules...), r.shapes...)
	pieces := []string{
		"og_", "OG_", "abcdefghijklmnopqrstu", "Bearer ", "BASIC ", "bAsIc\t", "PASSWORD", "Passwd", "pwd", "SECRET_KEY",
		"secret-key", "ToKen", "to\u212Aen", "API_KEY", "apikey", "=", ": ", "'", "\"", "https://", "HTTP://", "user:pw@",
		"/rest/7/", "/REST/7/", "q1w2e3r4t5", "user", "uſer", "USERNAME", "User_Name", "login", "LOGIN", "пользователь",
		"ПОЛЬЗОВАТЕЛЯ", "логин", "ЛОГИН", "rtu-обмен", "RTU-ОБМЕН", "admin", "ADMIN", "//", "@", " ", "x", "«", "»",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		for _, p := range rules {
			if got, want := p.apply(s, lowered(s)), p.re.ReplaceAllString(s, p.repl); got != want {
				t.Fatalf("%q by %s: with triggers %q, without %q", s, p.re, got, want)
			}
		}
	}
}
