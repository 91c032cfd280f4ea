package contract

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxSafeInteger is 2^53, beyond which a double no longer holds every integer.
const maxSafeInteger = 1 << 53

// Canonicalize serializes a decoded JSON value per RFC 8785 (JSON Canonicalization
// Scheme): object members sorted by the UTF-16 code units of their names, no
// insignificant whitespace, strings escaped as ECMAScript's JSON.stringify does (only ",
// \ and control characters; no HTML escaping), numbers in ECMAScript Number-to-String
// form (125000, 2.5, 1e+21, 0.000001, 1e-7).
//
// v is made of map[string]any, []any, string, json.Number, float64, bool and nil.
// Refused: any other type, strings that are not valid UTF-8, NaN and infinities, a
// json.Number that is not a JSON number, underflows to zero, or whose magnitude is beyond
// 2^53 (precision there would be silently lost; the contract's schemas cap numbers far
// below it), and nesting deeper than 32 levels.
func Canonicalize(v any) ([]byte, error) {
	var b []byte
	b, err := appendCanonical(b, v, 0)
	if err != nil {
		return nil, fmt.Errorf("canonicalize: %w", err)
	}
	return b, nil
}

// appendCanonical appends the canonical form of v to b.
func appendCanonical(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case string:
		return appendString(b, t)
	case json.Number:
		f, err := numberValue(t)
		if err != nil {
			return nil, err
		}
		return append(b, formatNumber(f)...), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, errors.New("NaN and infinities have no JSON form")
		}
		return append(b, formatNumber(t)...), nil
	case []any:
		b = append(b, '[')
		for i, e := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendString(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendCanonical(b, t[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("unsupported type %T", v)
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785 section 3.2.3 asks.
// It differs from Go's byte order only when characters above U+FFFF meet ones in
// U+E000–U+FFFF.
//
// It compares without converting: strings agree up to their first different
// characters, and those order as their first UTF-16 units (a character above U+FFFF
// as its high surrogate), then, between two such characters with the same high
// surrogate, as their code points (their low surrogates order so).
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if c := cmp.Compare(firstUnit(ra), firstUnit(rb)); c != 0 {
				return c
			}
			return cmp.Compare(ra, rb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// firstUnit is the first UTF-16 code unit of r: r itself in the Basic
// Multilingual Plane, its high surrogate above it.
func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xD800 + (r-0x10000)>>10
}

// appendString appends s as a JSON string per RFC 8785 section 3.2.2.2.
func appendString(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("string is not valid UTF-8")
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c) // multi-byte UTF-8 is copied byte by byte
		}
	}
	return append(b, '"'), nil
}

// numberValue is the double a json.Number stands for, refusing what Canonicalize refuses.
func numberValue(n json.Number) (float64, error) {
	s := string(n)
	if !isJSONNumber(s) {
		return 0, fmt.Errorf("%q is not a JSON number", truncate(s, maxEcho))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.Abs(f) > maxSafeInteger {
		return 0, fmt.Errorf("number %s is beyond ±2^53", truncate(s, maxEcho))
	}
	if math.Abs(f) == maxSafeInteger { // rounding may have hidden a larger magnitude
		r, ok := new(big.Rat).SetString(s)
		if !ok || new(big.Rat).Abs(r).Cmp(new(big.Rat).SetInt64(maxSafeInteger)) > 0 {
			return 0, fmt.Errorf("number %s is beyond ±2^53", truncate(s, maxEcho))
		}
	}
	if f == 0 && strings.ContainsAny(strings.SplitN(strings.ToLower(s), "e", 2)[0], "123456789") {
		return 0, fmt.Errorf("number %s is too close to zero for a double", truncate(s, maxEcho))
	}
	return f, nil
}

// isJSONNumber reports whether s matches RFC 8259's number grammar:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// formatNumber renders a finite double as ECMAScript's Number::toString does
// (ECMA-262 section 6.1.6.1.20), which RFC 8785 section 3.2.2.3 adopts.
func formatNumber(f float64) string {
	if f == 0 {
		return "0" // also -0
	}
	if f < 0 {
		return "-" + formatNumber(-f)
	}
	// Shortest round-tripping digits: "d.ddde±x" → digits s (k of them) and exponent n
	// such that f = 0.s × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k, n := len(digits), x+1
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	sign := "+"
	if n-1 < 0 {
		sign = "-"
	}
	exponent := "e" + sign + strconv.Itoa(abs(n-1))
	if k == 1 {
		return digits + exponent
	}
	return digits[:1] + "." + digits[1:] + exponent
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
