package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Normalized is a payload in canonical form, with the fingerprint that binds it to its
// operation key.
type Normalized struct {
	Payload     json.RawMessage // normalized payload, RFC 8785 canonical JSON, without "operation"
	Canonical   []byte          // RFC 8785 of payload fields + "operation": intent name
	Fingerprint string          // lowercase hex SHA-256 of Canonical
}

// Normalize checks payload against the intent's schema and computes its canonical form
// and fingerprint (API.md section 4). The steps, in order:
//
//  1. Decode: one JSON object, numbers kept exact, duplicate member names refused.
//  2. Normalize: every string is trimmed of surrounding whitespace; every "currency"
//     value is upper-cased (ASCII); an optional top-level member whose value is null, or
//     a string that is empty after trimming (comment, description, reason, payment.charge's
//     customer_id, due_date), is dropped, i.e. treated as absent. Required members are
//     never dropped: an empty required string is refused.
//  3. Validate against the compiled schema: an unknown field anywhere is UNKNOWN_FIELD
//     with its path, anything else VALIDATION_ERROR; one deterministic error.
//  4. Dates: date-time members become RFC 3339 in UTC (2026-12-03T10:00:00+03:00 →
//     2026-12-03T07:00:00Z); dates stay YYYY-MM-DD.
//  5. Numbers: integers stay exact; fractions (a quantity of 2.5) are written in their
//     shortest ECMAScript form.
//  6. Canonical JSON per RFC 8785 of the payload, and of the payload plus
//     "operation": the intent's name.
//  7. Fingerprint: lowercase hex SHA-256 of the latter.
//
// Normalize is idempotent: normalizing Normalized.Payload again gives the same result.
func (in *Intent) Normalize(payload json.RawMessage) (Normalized, error) {
	if in == nil || in.compiled == nil {
		return Normalized{}, errors.New("normalize: the intent is not from the registry (use Lookup)")
	}

	// 1. Decode.
	v, err := decodeStrict(payload)
	if err != nil {
		return Normalized{}, payloadError(err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Normalized{}, badRequest(codes.Validation, "payload",
			"the payload must be a JSON object with the fields of %s (got %s)", in.Name, jsonType(v))
	}
	if err := checkNumbers(obj, obj, nil); err != nil {
		return Normalized{}, err
	}

	// 2. Normalize strings; drop empty optional members.
	normalizeStrings(obj, "")
	for _, name := range in.shape.optional {
		switch s, present := obj[name]; {
		case !present:
		case s == nil, s == "":
			delete(obj, name)
		}
	}

	// 3. Validate.
	if err := in.compiled.Validate(obj); err != nil {
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return Normalized{}, fmt.Errorf("normalize %s: %w", in.Name, err)
		}
		return Normalized{}, in.schemaError(obj, verr)
	}

	// 4. Dates and times.
	for _, name := range in.shape.dateTimes {
		s, ok := obj[name].(string)
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339, strings.ToUpper(s))
		if err != nil {
			return Normalized{}, badRequest(codes.Validation, name,
				"%s must be an RFC 3339 date-time with a time zone, e.g. 2026-12-03T10:00:00+03:00 (leap seconds are not accepted)", name)
		}
		t = t.UTC()
		if y := t.Year(); y < 1 || y > 9999 {
			return Normalized{}, badRequest(codes.Validation, name, "%s is out of range: the year in UTC must be 0001 to 9999", name)
		}
		obj[name] = t.Format(time.RFC3339Nano)
	}

	// 5. Numbers.
	if _, err := normalizeNumbers(obj, obj, nil); err != nil {
		return Normalized{}, err
	}

	// 6. Canonical forms.
	canonPayload, err := Canonicalize(obj)
	if err != nil {
		return Normalized{}, fmt.Errorf("normalize %s: %w", in.Name, err)
	}
	withOp := make(map[string]any, len(obj)+1)
	for k, v := range obj {
		withOp[k] = v
	}
	withOp["operation"] = in.Name
	canonical, err := Canonicalize(withOp)
	if err != nil {
		return Normalized{}, fmt.Errorf("normalize %s: %w", in.Name, err)
	}

	// 7. Fingerprint.
	sum := sha256.Sum256(canonical)
	return Normalized{Payload: canonPayload, Canonical: canonical, Fingerprint: hex.EncodeToString(sum[:])}, nil
}

// payloadError maps a decodeStrict error on a payload.
func payloadError(err error) *Error {
	var dup *dupKeyError
	var ctl *controlError
	switch {
	case errors.As(err, &dup):
		where := "the payload"
		if dup.Path != "" {
			where = dup.Path
		}
		return badRequest(codes.Validation, truncate(dup.Field(), MaxStringLen),
			"duplicate field %s in %s; each field may appear only once, the input is ambiguous", quoteShort(dup.Key), where)
	case errors.As(err, &ctl):
		return controlRefusal(ctl.Field, ctl.Rune)
	case errors.Is(err, errTooDeep):
		return badRequest(codes.Validation, "payload", "the payload is nested more than %d levels deep", maxDepth)
	case errors.Is(err, errNotUTF8):
		return badRequest(codes.Validation, "payload", "the payload is not valid UTF-8")
	}
	return badRequest(codes.Validation, "payload", "the payload is missing or is not valid JSON; send one JSON object")
}

// controlRefusal is the refusal of a control character r in field.
func controlRefusal(field string, r rune) *Error {
	if field == "" {
		field = "payload"
	}
	return badRequest(codes.Validation, truncate(field, MaxStringLen),
		"%s holds a control character (U+%04X); send plain one-line text, without line breaks, tabs, NUL or escapes", truncate(field, MaxStringLen), r)
}

// normalizeStrings trims every string inside v and upper-cases currency codes, in place.
// member is the name v is held under in its parent object ("" otherwise).
func normalizeStrings(v any, member string) any {
	switch t := v.(type) {
	case string:
		s := strings.TrimSpace(t)
		if member == "currency" {
			s = asciiUpper(s)
		}
		return s
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeStrings(e, k)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeStrings(e, "")
		}
	}
	return v
}

// asciiUpper upper-cases ASCII letters only, so no Unicode case mapping can turn a
// non-code into something that passes as one.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Bounds on number literals, checked before the schema validator sees them: it turns
// numbers into exact rationals, and 1e99999999 would cost it seconds (or crash it).
const (
	maxNumberLen      = 100  // characters of one number literal
	maxNumberExponent = 1000 // magnitude of its decimal exponent
)

// checkNumbers refuses number literals inside v, located at loc in root, that are too
// long, have a huge exponent, overflow a double or underflow it to zero.
func checkNumbers(root, v any, loc []string) error {
	switch t := v.(type) {
	case json.Number:
		if !saneNumber(string(t)) {
			field := fieldPath(root, loc)
			return badRequest(codes.Validation, field,
				"%s is out of range: send a plain decimal number within the schema's bounds", field)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if err := checkNumbers(root, t[k], append(slices.Clip(loc), k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range t {
			if err := checkNumbers(root, e, append(slices.Clip(loc), strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// saneNumber reports whether the JSON number literal s is within the bounds above and
// stands for a finite double that is zero only if s is zero.
func saneNumber(s string) bool {
	if len(s) > maxNumberLen {
		return false
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		e, err := strconv.Atoi(exp)
		if err != nil || e > maxNumberExponent || e < -maxNumberExponent {
			return false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	return f != 0 || !strings.ContainsAny(mant, "123456789")
}

// normalizeNumbers rewrites every json.Number inside v, located at loc in root, in its
// canonical form, refusing numbers that have none. It returns v's replacement.
func normalizeNumbers(root, v any, loc []string) (any, error) {
	switch t := v.(type) {
	case json.Number:
		f, err := numberValue(t)
		if err != nil {
			field := fieldPath(root, loc)
			return nil, badRequest(codes.Validation, field,
				"%s cannot be represented exactly; send a plain decimal number within the schema's bounds", field)
		}
		return json.Number(formatNumber(f)), nil
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			n, err := normalizeNumbers(root, t[k], append(slices.Clip(loc), k))
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
	case []any:
		for i, e := range t {
			n, err := normalizeNumbers(root, e, append(slices.Clip(loc), strconv.Itoa(i)))
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
	}
	return v, nil
}
