package mapping

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Ref is one external id a mapping needs resolved.
type Ref struct {
	// Field is the payload field holding it, with row indexes where it is
	// inside a tabular section (items[2].product_id): what an error names.
	Field string
	// Path is the field's declared path (items.product_id), as in
	// Options.References.
	Path string
	// Kind is the reference's declared kind ("customer").
	Kind string
	// ID is the external id.
	ID string
}

// Resolver gives the target's value for an external id (a contact's ID, a
// catalog item's Ref_Key). Its error is returned by Apply as it is.
type Resolver func(ctx context.Context, ref Ref) (any, error)

// ValueError is a payload value the mapping cannot carry: Field names the
// payload field, Msg says why. The gateway has checked the payload against
// its schema, so only what a schema cannot say is left (an unknown
// currency, an amount too large).
type ValueError struct {
	Field string
	Msg   string
}

// Error implements error.
func (e *ValueError) Error() string { return e.Field + ": " + e.Msg }

// Apply computes the target fields from payload. A payload field that is
// absent (an optional field left out) leaves its target field out. Values
// pass as they are (strings, json.Number, booleans); a tabular section is
// a []map[string]any.
func (f *Fields) Apply(ctx context.Context, payload json.RawMessage, resolve Resolver) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, &ValueError{Field: "", Msg: "the payload is not JSON"}
	}
	return f.apply(ctx, root, root, "", resolve)
}

// apply maps the object obj; prefix is its payload path for errors
// ("" at the root, "items[2]." in a row).
func (f *Fields) apply(ctx context.Context, root, obj any, prefix string, resolve Resolver) (map[string]any, error) {
	out := make(map[string]any, len(f.list))
	for _, fld := range f.list {
		if fld.HasValue {
			out[fld.Name] = fld.Value
			continue
		}
		if fld.Ref != "" {
			v, ok := At(obj, fld.Ref)
			if !ok {
				continue
			}
			id, isString := v.(string)
			if !isString {
				return nil, &ValueError{Field: prefix + fld.Ref, Msg: "is not a string"}
			}
			if resolve == nil {
				return nil, errors.New("mapping: a reference with no resolver")
			}
			r, err := resolve(ctx, Ref{Field: prefix + fld.Ref, Path: fld.ref, Kind: fld.RefKind, ID: id})
			if err != nil {
				return nil, err
			}
			out[fld.Name] = r
			continue
		}
		v, ok := At(obj, fld.From)
		if !ok {
			continue
		}
		name := prefix + fld.From
		switch {
		case fld.Money != "":
			cur, ok := At(root, fld.Currency)
			code, isString := cur.(string)
			if !ok || !isString {
				return nil, &ValueError{Field: fld.Currency, Msg: "the currency of " + name + " is missing"}
			}
			var times any
			if fld.Times != "" {
				if times, ok = At(obj, fld.Times); !ok {
					return nil, &ValueError{Field: prefix + fld.Times, Msg: "is missing; " + name + " is multiplied by it"}
				}
			}
			s, err := minorToDecimal(v, times, strings.ToUpper(code), fld)
			if err != nil {
				return nil, &ValueError{Field: name, Msg: err.Error()}
			}
			out[fld.Name] = s
		case fld.Date != "":
			s, isString := v.(string)
			if d, err := time.Parse(time.DateOnly, s); isString && err == nil {
				out[fld.Name] = d.Format(LocalLayout) // a calendar date is the same day everywhere
				break
			}
			t, err := time.Parse(time.RFC3339, s)
			if !isString || err != nil {
				return nil, &ValueError{Field: name, Msg: "is not an RFC 3339 date-time or full-date"}
			}
			out[fld.Name] = t.In(fld.zone).Format(LocalLayout)
		case fld.Row != nil:
			list, isList := v.([]any)
			if !isList {
				return nil, &ValueError{Field: name, Msg: "is not an array"}
			}
			rows := make([]map[string]any, 0, len(list))
			for i, item := range list {
				r, err := fld.Row.apply(ctx, root, item, name+"["+strconv.Itoa(i)+"].", resolve)
				if err != nil {
					return nil, err
				}
				rows = append(rows, r)
			}
			out[fld.Name] = rows
		default:
			if _, isObj := v.(map[string]any); isObj {
				return nil, &ValueError{Field: name, Msg: "is not a single value"}
			}
			if _, isList := v.([]any); isList {
				return nil, &ValueError{Field: name, Msg: "is not a single value"}
			}
			if v == nil {
				continue // null is absent
			}
			out[fld.Name] = v
		}
	}
	return out, nil
}

// At walks a dotted path through decoded JSON objects; false when a
// member is absent or null on the way.
func At(v any, dotted string) (any, bool) {
	for _, seg := range strings.Split(dotted, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return v, v != nil
}

// minorToDecimal renders an integer amount in minor units, multiplied by
// times when it is not nil, as a decimal string with the currency's
// exponent of digits after the point.
func minorToDecimal(v, times any, code string, fld *Field) (string, error) {
	n, isNumber := v.(json.Number)
	if !isNumber {
		return "", errors.New("is not an integer amount in minor units")
	}
	minor, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		return "", errors.New("is not an integer amount in minor units")
	}
	if times != nil {
		if minor, err = multiply(minor, times); err != nil {
			return "", err
		}
	}
	digits, ok := fld.minorDigits(code)
	if !ok {
		return "", fmt.Errorf("is in %q, which is no ISO 4217 currency", code)
	}
	return FormatMinor(minor, digits), nil
}

// multiply is minor × factor exactly, rounded half away from zero to a
// whole minor unit; an amount beyond int64 is refused.
func multiply(minor int64, factor any) (int64, error) {
	n, isNumber := factor.(json.Number)
	f, ok := new(big.Rat).SetString(string(n))
	if !isNumber || !ok {
		return 0, errors.New("is multiplied by a value that is not a number")
	}
	p := f.Mul(f, new(big.Rat).SetInt64(minor))
	q, r := new(big.Int).QuoRem(p.Num(), p.Denom(), new(big.Int))
	if twice := new(big.Int).Abs(r); twice.Lsh(twice, 1).Cmp(p.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(p.Sign())))
	}
	if !q.IsInt64() {
		return 0, errors.New("times its factor is too large an amount")
	}
	return q.Int64(), nil
}

// FormatMinor renders minor units with digits after the point: 150000, 2 →
// "1500.00"; -5, 2 → "-0.05"; 7, 0 → "7".
func FormatMinor(minor int64, digits int) string {
	neg := minor < 0
	u := uint64(minor)
	if neg {
		u = uint64(-minor) // -MinInt64 wraps to itself, whose uint64 is right
	}
	s := strconv.FormatUint(u, 10)
	if digits > 0 {
		if len(s) <= digits {
			s = strings.Repeat("0", digits-len(s)+1) + s
		}
		s = s[:len(s)-digits] + "." + s[len(s)-digits:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
