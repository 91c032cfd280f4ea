package store

import (
	"strconv"
	"strings"
	"sync"
)

// The journal's SQL is written once, in the dialect both backends share:
// "?" placeholders, ON CONFLICT DO NOTHING, RETURNING, conditional
// updates. Where PostgreSQL needs its own words (row locks, advisory
// locks, "$n" placeholders) the backend supplies them (backend.go);
// nothing else knows which one it has.

// numbered rewrites "?" placeholders as PostgreSQL's $1, $2, …, leaving
// quoted text alone. The journal's queries are constants, so each is
// rewritten once.
func numbered(query string) string {
	if q, ok := numberedCache.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n, quoted := 0, false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case c == '?' && !quoted:
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	q := b.String()
	numberedCache.Store(query, q)
	return q
}

var numberedCache sync.Map // query → numbered query
