package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// odataCond is one "Property eq literal" of a $filter.
type odataCond struct {
	prop  string
	value any
}

// parseFilter reads the part of $filter the simulator serves: comparisons
// with eq joined by and, on literals 'text' (a quote doubled inside),
// guid'…', true, false and numbers. Anything else is refused as 1C
// refuses what it cannot parse (400, code 14); `in` is not OData v3.
func parseFilter(t *odataType, f string) ([]odataCond, error) {
	f = strings.TrimSpace(f)
	if f == "" {
		return nil, nil
	}
	var conds []odataCond
	for _, clause := range splitAnd(f) {
		name, rest, ok := strings.Cut(strings.TrimSpace(clause), " ")
		if !ok {
			return nil, fmt.Errorf("%q", clause)
		}
		op, lit, ok := strings.Cut(strings.TrimSpace(rest), " ")
		if !ok || op != "eq" {
			return nil, fmt.Errorf("operator %q is not served", op)
		}
		if _, known := t.prop(name); !known {
			return nil, fmt.Errorf("no property %q", name)
		}
		v, err := odataLiteral(strings.TrimSpace(lit))
		if err != nil {
			return nil, err
		}
		conds = append(conds, odataCond{prop: name, value: v})
	}
	return conds, nil
}

// splitAnd splits on " and " outside quoted literals.
func splitAnd(f string) []string {
	var parts []string
	quoted := false
	start := 0
	for i := 0; i < len(f); i++ {
		switch {
		case f[i] == '\'':
			quoted = !quoted
		case !quoted && strings.HasPrefix(f[i:], " and "):
			parts = append(parts, f[start:i])
			i += len(" and ") - 1
			start = i + 1
		}
	}
	return append(parts, f[start:])
}

func odataLiteral(s string) (any, error) {
	switch {
	case strings.HasPrefix(s, "guid'") && strings.HasSuffix(s, "'"):
		g := strings.ToLower(s[5 : len(s)-1])
		if !odataGUID.MatchString(g) {
			return nil, errors.New("bad guid literal")
		}
		return g, nil
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		inner := s[1 : len(s)-1]
		if strings.Count(inner, "'")%2 != 0 || strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
			return nil, errors.New("bad text literal")
		}
		return strings.ReplaceAll(inner, "''", "'"), nil
	case s == "true", s == "false":
		return s == "true", nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("bad literal %q", s)
	}
	return f, nil
}

func matches(e map[string]any, conds []odataCond) bool {
	for _, c := range conds {
		if e[c.prop] != c.value {
			return false
		}
	}
	return true
}
