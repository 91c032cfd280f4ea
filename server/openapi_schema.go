package server

// Schema passes over the OpenAPI document (openapi.go): explicit number
// formats, and the effective limits of an intent in its payload schema.

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/intent"
)

// effectiveLimits brings the served copy of a payload schema to the
// limits this gateway enforces (the definition's, or the configuration's
// over them), so that a client generated from the document knows the
// bound it will meet: a quantity's maximum and the lines' maxItems are
// lowered to a tighter limit, and each limited field's description says
// what the gateway allows and that it answers 422 with a limit code
// beyond. The schema the gateway validates with stays the registry's.
func effectiveLimits(schema map[string]any, lim intent.Limits) {
	props, _ := schema["properties"].(map[string]any)
	field := func(m map[string]any, name string) map[string]any {
		if name == "" || m == nil {
			return nil
		}
		f, _ := m[name].(map[string]any)
		return f
	}
	if cur := field(props, lim.CurrencyField); cur != nil && len(lim.Currencies) > 0 {
		note(cur, fmt.Sprintf("This gateway allows %s (%s otherwise).", strings.Join(lim.Currencies, ", "), codes.CurrencyNotAllowed))
	}
	if len(lim.AmountCeiling) > 0 {
		ceiling := ceilings(lim.AmountCeiling)
		if amount := field(props, lim.AmountField); amount != nil {
			note(amount, fmt.Sprintf("This gateway allows at most %s minor units (%s beyond).", ceiling, codes.LimitExceeded))
		} else if items := field(props, lim.ItemsField); items != nil && lim.PriceField != "" {
			note(items, fmt.Sprintf("This gateway allows a total (quantity × price) of at most %s minor units (%s beyond).", ceiling, codes.LimitExceeded))
		}
	}
	items := field(props, lim.ItemsField)
	if items == nil {
		return
	}
	if lim.MaxItems > 0 {
		if lower(items, "maxItems", float64(lim.MaxItems)) {
			note(items, fmt.Sprintf("This gateway allows at most %d lines (%s beyond).", lim.MaxItems, codes.LimitExceeded))
		}
	}
	line, _ := items["items"].(map[string]any)
	lineProps, _ := line["properties"].(map[string]any)
	if q := field(lineProps, lim.QuantityField); q != nil && lim.MaxQuantity > 0 {
		if lower(q, "maximum", lim.MaxQuantity) {
			note(q, fmt.Sprintf("This gateway allows at most %s (%s beyond).", strconv.FormatFloat(lim.MaxQuantity, 'f', -1, 64), codes.LimitExceeded))
		}
	}
	if u := field(lineProps, lim.UnitField); u != nil && len(lim.Units) > 0 {
		note(u, fmt.Sprintf("This gateway allows %s (%s otherwise).", strings.Join(lim.Units, ", "), codes.UnitNotAllowed))
	}
}

// lower sets s's bound keyword to limit unless it is already as tight,
// and reports whether the limit is the tighter one.
func lower(s map[string]any, keyword string, limit float64) bool {
	if cur, ok := number(s[keyword]); ok && cur <= limit {
		return false
	}
	if keyword == "maximum" {
		if cur, ok := number(s["exclusiveMaximum"]); ok && cur <= limit {
			return false
		}
	}
	s[keyword] = json.Number(strconv.FormatFloat(limit, 'f', -1, 64))
	return true
}

// note appends text to s's description.
func note(s map[string]any, text string) {
	if d, _ := s["description"].(string); d != "" {
		text = strings.TrimRight(d, " ") + " " + text
	}
	s["description"] = text
}

// ceilings writes amount ceilings by currency: "10000000000 (RUB)".
func ceilings(c map[string]int64) string {
	var out []string
	for _, cur := range slices.Sorted(maps.Keys(c)) {
		out = append(out, fmt.Sprintf("%d (%s)", c[cur], cur))
	}
	return strings.Join(out, ", ")
}

// numberFormats gives every number and integer schema in v that has no
// format one, so generated clients do not guess a width: a number is a
// double (without it oapi-codegen makes a float32, which cannot hold
// 999999.999), an integer int32 when its bounds fit in 32 bits, else
// int64. It walks the whole document — the intents' payload schemas,
// built-in or declared, and the answers' — but not example or constant
// values.
func numberFormats(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, has := v["format"]; !has {
			switch {
			case hasType(v["type"], "number"):
				v["format"] = "double"
			case hasType(v["type"], "integer"):
				v["format"] = "int64"
				if fitsInt32(v) {
					v["format"] = "int32"
				}
			}
		}
		for k, child := range v {
			switch k {
			case "example", "examples", "const", "enum", "default":
				continue
			}
			numberFormats(child)
		}
	case []any:
		for _, child := range v {
			numberFormats(child)
		}
	}
}

// hasType reports whether a schema's type keyword (a name or a list of
// names) names name.
func hasType(t any, name string) bool {
	switch t := t.(type) {
	case string:
		return t == name
	case []any:
		for _, n := range t {
			if n == name {
				return true
			}
		}
	case []string:
		return slices.Contains(t, name)
	}
	return false
}

// fitsInt32 reports whether an integer schema's bounds keep it within 32
// bits: a lower and an upper bound, both in range.
func fitsInt32(s map[string]any) bool {
	bound := func(names ...string) (float64, bool) {
		for _, n := range names {
			if f, ok := number(s[n]); ok {
				return f, true
			}
		}
		return 0, false
	}
	lo, okLo := bound("minimum", "exclusiveMinimum")
	hi, okHi := bound("maximum", "exclusiveMaximum")
	return okLo && okHi && lo >= math.MinInt32 && hi <= math.MaxInt32
}

// number reads a JSON number as the document holds it.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}
