package intent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Normalize checks payload against the intent's schema and computes its canonical form
// and fingerprint (docs/api.md, The fingerprint). The steps, in order:
//
//  1. Decode (contract.DecodePayload): one JSON object, numbers kept exact, duplicate
//     member names refused; every string trimmed of surrounding whitespace.
//  2. Normalize: the fields the definition declares upper-case (normalize: upper, such
//     as an ISO 4217 currency) are upper-cased (ASCII); an optional top-level member
//     whose value is null, or a string that is empty after trimming, is dropped, i.e.
//     treated as absent. Required members are never dropped: an empty required string
//     is refused.
//  3. Validate against the compiled schema: an unknown field anywhere is UNKNOWN_FIELD
//     with its path, anything else VALIDATION_ERROR; one refusal listing every problem,
//     one per field, in a fixed order (schemaError).
//  4. Dates: date-time members become RFC 3339 in UTC (2026-12-03T10:00:00+03:00 →
//     2026-12-03T07:00:00Z); dates stay YYYY-MM-DD.
//  5. Numbers, canonical JSON and fingerprint (contract.Seal): integers exact, fractions
//     in their shortest ECMAScript form; RFC 8785 of the payload and of the payload plus
//     "operation": the intent's name; the lowercase hex SHA-256 of the latter.
//
// Normalize is idempotent: normalizing Normalized.Payload again gives the same result.
func (def *Intent) Normalize(payload json.RawMessage) (contract.Normalized, error) {
	if def == nil || def.compiled == nil {
		return contract.Normalized{}, errors.New("normalize: the intent is not from a catalog")
	}

	// 1. Decode.
	obj, err := contract.DecodePayload(def.Name, payload)
	if err != nil {
		return contract.Normalized{}, err
	}
	return def.normalize(obj)
}

// NormalizeEnvelope is Normalize of env's payload, taking the value the
// envelope's decode already read instead of decoding it again
// (Envelope.TakePayload).
func (def *Intent) NormalizeEnvelope(env *contract.Envelope) (contract.Normalized, error) {
	if def == nil || def.compiled == nil {
		return contract.Normalized{}, errors.New("normalize: the intent is not from a catalog")
	}
	obj, err := env.TakePayload(def.Name)
	if err != nil {
		return contract.Normalized{}, err
	}
	return def.normalize(obj)
}

// normalize runs Normalize's steps 2 to 5 on a decoded payload, which it
// changes.
func (def *Intent) normalize(obj map[string]any) (contract.Normalized, error) {

	// 2. Declared upper-casing; drop empty optional members.
	for _, name := range def.Upper {
		if s, ok := obj[name].(string); ok {
			obj[name] = asciiUpper(s)
		}
	}
	for _, name := range def.shape.optional {
		switch s, present := obj[name]; {
		case !present:
		case s == nil, s == "":
			delete(obj, name)
		}
	}

	// 3. Validate.
	if err := def.compiled.Validate(any(obj)); err != nil {
		var verr *jsonschema.ValidationError
		if !errors.As(err, &verr) {
			return contract.Normalized{}, fmt.Errorf("normalize %s: %w", def.Name, err)
		}
		return contract.Normalized{}, def.schemaError(obj, verr)
	}

	// 4. Dates and times.
	for _, name := range def.shape.dateTimes {
		s, ok := obj[name].(string)
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339, strings.ToUpper(s))
		if err != nil {
			return contract.Normalized{}, codes.Refusef(codes.Validation, name,
				"%s must be an RFC 3339 date-time with a time zone, e.g. 2026-12-03T10:00:00+03:00 (leap seconds are not accepted)", name)
		}
		t = t.UTC()
		if y := t.Year(); y < 1 || y > 9999 {
			return contract.Normalized{}, codes.Refusef(codes.Validation, name, "%s is out of range: the year in UTC must be 0001 to 9999", name)
		}
		obj[name] = t.Format(time.RFC3339Nano)
	}

	// 5. Numbers, canonical forms, fingerprint.
	return contract.Seal(def.Name, obj)
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
