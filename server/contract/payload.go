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

	"github.com/oncegate/oncegate/adapters/codes"
)

// Normalized is a payload in canonical form, with the fingerprint that binds it to its
// operation key.
type Normalized struct {
	Payload     json.RawMessage // normalized payload, RFC 8785 canonical JSON, without "operation"
	Canonical   []byte          // RFC 8785 of payload fields + "operation": intent name
	Fingerprint string          // lowercase hex SHA-256 of Canonical

	// value is Payload as the normalization left it decoded (numbers as
	// json.Number), so its readers need not decode Payload again.
	value map[string]any
}

// Object is the normalized payload decoded, numbers as json.Number: what
// decoding Payload gives, kept by Seal. It is shared; callers only read it.
func (n Normalized) Object() map[string]any { return n.value }

// DecodePayload is the first, intent-blind part of a payload's normalization (docs/api.md,
// section The fingerprint): the payload of intent decoded as one JSON object, numbers kept exact and
// within sane bounds, duplicate member names and control characters refused, and every
// string trimmed of surrounding whitespace. What the intent's schema says (its declared
// upper-casing, optional members, validation, dates) is the catalog's part; Seal ends it.
func DecodePayload(intent string, payload json.RawMessage) (map[string]any, error) {
	v, err := decodeStrict(payload)
	if err != nil {
		return nil, payloadError(err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, codes.Refusef(codes.Validation, "payload",
			"the payload must be a JSON object with the fields of %s (got %s)", intent, jsonType(v))
	}
	return checkedPayload(obj)
}

// checkedPayload applies the payload's own rules to a decoded object: its
// numbers, and its strings trimmed.
func checkedPayload(obj map[string]any) (map[string]any, error) {
	if !eachNumber(obj, func(n json.Number) (json.Number, bool) { return n, saneNumber(string(n)) }) {
		return nil, checkNumbers(obj, obj, nil) // names the first, in field order
	}
	trimStrings(obj)
	return obj, nil
}

// Seal ends a payload's normalization: numbers in their canonical form (integers exact,
// fractions in their shortest ECMAScript form), the RFC 8785 canonical JSON of the payload
// and of the payload plus "operation": intent, and the fingerprint, the lowercase hex
// SHA-256 of the latter. obj is changed in place.
func Seal(intent string, obj map[string]any) (Normalized, error) {
	if !eachNumber(obj, normalNumber) {
		// normalizeNumbers names the first refused, in field order (the
		// numbers normalized already stay as they are).
		_, err := normalizeNumbers(obj, obj, nil)
		return Normalized{}, err
	}
	canonPayload, err := Canonicalize(obj)
	if err != nil {
		return Normalized{}, fmt.Errorf("normalize %s: %w", intent, err)
	}
	withOp := make(map[string]any, len(obj)+1)
	for k, v := range obj {
		withOp[k] = v
	}
	withOp["operation"] = intent
	canonical, err := Canonicalize(withOp)
	if err != nil {
		return Normalized{}, fmt.Errorf("normalize %s: %w", intent, err)
	}
	sum := sha256.Sum256(canonical)
	return Normalized{Payload: canonPayload, Canonical: canonical, Fingerprint: hex.EncodeToString(sum[:]), value: obj}, nil
}

// payloadError maps a decodeStrict error on a payload.
func payloadError(err error) *codes.Refusal {
	var dup *dupKeyError
	var ctl *controlError
	switch {
	case errors.As(err, &dup):
		where := "the payload"
		if dup.Path != "" {
			where = dup.Path
		}
		return codes.Refusef(codes.Validation, truncate(dup.Field(), MaxStringLen),
			"duplicate field %s in %s; each field may appear only once, the input is ambiguous", quoteShort(dup.Key), where)
	case errors.As(err, &ctl):
		return controlRefusal(ctl.Field, ctl.Rune)
	case errors.Is(err, errTooDeep):
		return codes.Refusef(codes.Validation, "payload", "the payload is nested more than %d levels deep", maxDepth)
	case errors.Is(err, errNotUTF8):
		return codes.Refusef(codes.Validation, "payload", "the payload is not valid UTF-8")
	}
	return codes.Refusef(codes.Validation, "payload", "the payload is missing or is not valid JSON; send one JSON object")
}

// controlRefusal is the refusal of a control character r in field.
func controlRefusal(field string, r rune) *codes.Refusal {
	if field == "" {
		field = "payload"
	}
	return codes.Refusef(codes.Validation, truncate(field, MaxStringLen),
		"%s holds a control character (U+%04X); send plain one-line text, without line breaks, tabs, NUL or escapes", truncate(field, MaxStringLen), r)
}

// trimStrings trims every string inside v of surrounding whitespace, in place, and
// returns v's replacement.
func trimStrings(v any) any {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(t)
	case map[string]any:
		for k, e := range t {
			t[k] = trimStrings(e)
		}
	case []any:
		for i, e := range t {
			t[i] = trimStrings(e)
		}
	}
	return v
}

// Bounds on number literals, checked before the schema validator sees them: it turns
// numbers into exact rationals, and 1e99999999 would cost it seconds (or crash it).
const (
	maxNumberLen      = 100  // characters of one number literal
	maxNumberExponent = 1000 // magnitude of its decimal exponent
)

// eachNumber calls f on every number inside v, in no set order, putting
// what f returns in its place, and reports false at the first f refuses.
// The walks that name a refused number's field (checkNumbers,
// normalizeNumbers) go in field order and build paths: they run only when
// this one met a number to refuse.
func eachNumber(v any, f func(json.Number) (json.Number, bool)) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			n, isNumber, ok := numberIn(e, f)
			if !ok {
				return false
			}
			if isNumber {
				t[k] = n
			}
		}
	case []any:
		for i, e := range t {
			n, isNumber, ok := numberIn(e, f)
			if !ok {
				return false
			}
			if isNumber {
				t[i] = n
			}
		}
	}
	return true
}

// numberIn is eachNumber of one member or element e: f of e when e is a
// number (isNumber; its place is the caller's to set), else the walk into
// e. ok is false when f refused a number.
func numberIn(e any, f func(json.Number) (json.Number, bool)) (n json.Number, isNumber, ok bool) {
	if n, isNumber = e.(json.Number); !isNumber {
		return "", false, eachNumber(e, f)
	}
	n, ok = f(n)
	return n, true, ok
}

// normalNumber is n in the normal form normalizeNumbers gives it; false
// when n cannot be represented exactly.
func normalNumber(n json.Number) (json.Number, bool) {
	f, err := numberValue(n)
	if err != nil {
		return n, false
	}
	return json.Number(formatNumber(f)), true
}

// checkNumbers refuses number literals inside v, located at loc in root, that are too
// long, have a huge exponent, overflow a double or underflow it to zero.
func checkNumbers(root, v any, loc []string) error {
	switch t := v.(type) {
	case json.Number:
		if !saneNumber(string(t)) {
			field := fieldPath(root, loc)
			return codes.Refusef(codes.Validation, field,
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
			return nil, codes.Refusef(codes.Validation, field,
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
