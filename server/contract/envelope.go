package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters/codes"
)

// SchemaVersion is the only envelope version this gateway speaks.
const SchemaVersion = "1.0"

// Modes of a request.
const (
	ModeExecute  = "execute"  // run the intent (the default)
	ModeValidate = "validate" // check everything, journal and write nothing
)

// String limits of the envelope, in characters (Unicode code points, as JSON Schema's
// maxLength counts them).
const (
	MaxStringLen = 1024 // any string ("strings ≤ 1 KiB")
	MaxIDLen     = 255  // request_id, actor_id
)

// envelopeFields are the fields an envelope may have, in the order of
// docs/api.md, section A request.
var envelopeFields = []string{"schema_version", "intent", "request_id", "actor_id", "mode", "payload", "plan_hash"}

// forbiddenFields exist in no contract; refusals of them say why.
var forbiddenFields = []string{"method", "query", "script", "posted", "privileged_mode"}

// Envelope is a decoded POST /v1/operations body.
type Envelope struct {
	SchemaVersion string
	Intent        string
	RequestID     string // "" if absent
	ActorID       string // "" if absent
	Mode          string // "execute" (default when absent) or "validate"
	PlanHash      string // optional, "" if absent
	Payload       json.RawMessage

	// decoded is the payload as the body's strict decode read it, kept
	// so that the first normalization does not decode it again; nil once
	// taken (TakePayload).
	decoded map[string]any
}

// DecodeEnvelope decodes and checks a request body: one JSON object, no duplicate
// member names anywhere, only the envelope fields of docs/api.md (A request), each of the right
// type and length. The payload is returned raw and unchecked; Intent.Normalize checks it.
//
// Checks run in a fixed order so the answer is deterministic: JSON well-formedness and
// duplicates; an unsupported schema_version (before unknown fields, because a newer
// version may define fields this one does not know); unknown fields, the first in sorted
// order; then each field in envelopeFields' order. Whether the intent exists is the caller's
// question (Lookup). request_id, when present, must not be empty.
func DecodeEnvelope(body []byte) (Envelope, error) {
	obj, err := decodeObject(body)
	if err != nil {
		return Envelope{}, err
	}
	if err := checkVersionAndFields(obj); err != nil {
		return Envelope{}, err
	}
	var env Envelope
	if err := env.readStrings(obj); err != nil {
		return Envelope{}, err
	}
	if err := checkPayload(obj); err != nil {
		return Envelope{}, err
	}
	if err := env.readPlanHash(obj); err != nil {
		return Envelope{}, err
	}
	// The payload raw, as sent: the body is known to be valid and duplicate-free.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return Envelope{}, fmt.Errorf("decode envelope: %w", err) // unreachable: checked above
	}
	env.Payload = raw["payload"]
	env.decoded, _ = obj["payload"].(map[string]any)
	return env, nil
}

// TakePayload is the payload decoded as DecodePayload decodes it. The
// first call takes the value the body's decode already read (the body's
// checks are the payload's: valid UTF-8 and JSON, no duplicate names, the
// depth bound); later calls decode Payload again, so each caller gets a
// map of its own to change.
func (e *Envelope) TakePayload(intent string) (map[string]any, error) {
	obj := e.decoded
	if obj == nil {
		return DecodePayload(intent, e.Payload)
	}
	e.decoded = nil
	return checkedPayload(obj)
}

// decodeObject decodes body strictly (well-formed, no duplicate member
// names) as one JSON object.
func decodeObject(body []byte) (map[string]any, error) {
	v, err := decodeStrict(body)
	if err != nil {
		return nil, bodyError(err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, codes.Refusef(codes.Validation, "",
			"the body is not a JSON object (got %s); send one object such as "+
				`{"schema_version":"1.0","intent":"invoice.create","payload":{…}}`, jsonType(v))
	}
	return obj, nil
}

// checkVersionAndFields refuses an unsupported schema_version, then the
// members the envelope does not define (every one, in sorted order), then
// a missing schema_version.
func checkVersionAndFields(obj map[string]any) error {
	// "1.0" is the only version; anything else, a missing one or one that
	// is not a string included, is unsupported (docs/api.md, A request).
	if sv, present := obj["schema_version"]; present && sv != SchemaVersion {
		if str, ok := sv.(string); ok {
			return codes.Refusef(codes.UnsupportedSchema, "schema_version",
				"schema_version %s is not supported; this gateway speaks %q only", quoteShort(str), SchemaVersion)
		}
		return codes.Refusef(codes.UnsupportedSchema, "schema_version",
			"schema_version must be the string %q (got %s)", SchemaVersion, jsonType(sv))
	}
	var unknown *codes.Refusal
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if slices.Contains(envelopeFields, k) {
			continue
		}
		r := unknownField(truncate(k, maxEcho), k, "the request body", envelopeFields)
		switch {
		case unknown == nil:
			unknown = r
		case len(unknown.Also) < codes.MaxProblems-1:
			unknown.Also = append(unknown.Also, r)
		}
	}
	if unknown != nil {
		return unknown
	}
	if _, present := obj["schema_version"]; !present {
		return codes.Refusef(codes.UnsupportedSchema, "schema_version",
			"schema_version is missing; send \"schema_version\": %q", SchemaVersion)
	}
	return nil
}

// readStrings reads the envelope's string fields in envelopeFields' order, then
// checks request_id is not empty and mode is one this gateway knows
// (execute when absent).
func (env *Envelope) readStrings(obj map[string]any) error {
	steps := []struct {
		name     string
		dst      *string
		required bool
		max      int
	}{
		{"schema_version", &env.SchemaVersion, true, MaxStringLen},
		{"intent", &env.Intent, true, MaxStringLen},
		{"request_id", &env.RequestID, false, MaxIDLen},
		{"actor_id", &env.ActorID, false, MaxIDLen},
		{"mode", &env.Mode, false, MaxStringLen},
	}
	for _, s := range steps {
		if err := envelopeString(obj, s.name, s.dst, s.required, s.max); err != nil {
			return err
		}
	}
	if _, ok := obj["request_id"]; ok && env.RequestID == "" {
		return codes.Refusef(codes.Validation, "request_id",
			"request_id is empty; send the operation key (the same as the Idempotency-Key header) or leave request_id out")
	}
	if _, ok := obj["mode"]; !ok {
		env.Mode = ModeExecute
	} else if env.Mode != ModeExecute && env.Mode != ModeValidate {
		return codes.Refusef(codes.Validation, "mode",
			"mode must be %q (the default) or %q (got %s)", ModeExecute, ModeValidate, quoteShort(env.Mode))
	}
	return nil
}

// checkPayload refuses a payload that is missing or not a JSON object.
func checkPayload(obj map[string]any) error {
	switch p := obj["payload"].(type) {
	case map[string]any:
		return nil
	case nil:
		if _, present := obj["payload"]; !present {
			return codes.Refusef(codes.Validation, "payload",
				"payload is missing; send the intent's fields as a JSON object in \"payload\" (GET /v1/intents lists them)")
		}
		return codes.Refusef(codes.Validation, "payload", "payload must be a JSON object (got null)")
	default:
		return codes.Refusef(codes.Validation, "payload", "payload must be a JSON object (got %s)", jsonType(p))
	}
}

// readPlanHash reads plan_hash, when present: not empty, and a plan hash.
func (env *Envelope) readPlanHash(obj map[string]any) error {
	if err := envelopeString(obj, "plan_hash", &env.PlanHash, false, MaxStringLen); err != nil {
		return err
	}
	if _, ok := obj["plan_hash"]; ok && env.PlanHash == "" {
		return codes.Refusef(codes.Validation, "plan_hash",
			"plan_hash is empty; send the plan_hash that validate mode returned, or leave it out")
	}
	if env.PlanHash != "" && !isHex64(env.PlanHash) {
		return codes.Refusef(codes.Validation, "plan_hash",
			"plan_hash is not a plan hash (64 lowercase hex digits); send the plan_hash that validate mode returned, as it was")
	}
	return nil
}

// envelopeString reads the string field name of obj into dst.
func envelopeString(obj map[string]any, name string, dst *string, required bool, max int) error {
	v, present := obj[name]
	if !present {
		if required {
			return codes.Refusef(codes.Validation, name, "%s is missing; it is a required string", name)
		}
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return codes.Refusef(codes.Validation, name, "%s must be a string (got %s)", name, jsonType(v))
	}
	if required && strings.TrimSpace(s) == "" {
		return codes.Refusef(codes.Validation, name, "%s must not be empty", name)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return codes.Refusef(codes.Validation, name, "%s is too long: at most %d characters (got %d)", name, max, n)
	}
	*dst = s
	return nil
}

// bodyError maps a decodeStrict error on a request body. Duplicate fields inside the
// payload are named relative to the payload, like every payload field.
func bodyError(err error) *codes.Refusal {
	var dup *dupKeyError
	var ctl *controlError
	switch {
	case errors.As(err, &ctl):
		field, _ := strings.CutPrefix(ctl.Field, "payload.")
		return controlRefusal(field, ctl.Rune)
	case errors.As(err, &dup):
		field, where := dup.Field(), "the request body"
		if rel, ok := strings.CutPrefix(field, "payload."); ok {
			field, where = rel, "the payload"
			if p, ok := strings.CutPrefix(dup.Path, "payload."); ok {
				where = p + " of the payload"
			}
		} else if dup.Path != "" {
			where = dup.Path
		}
		return codes.Refusef(codes.Validation, truncate(field, MaxStringLen),
			"duplicate field %s in %s; each field may appear only once, the input is ambiguous", quoteShort(dup.Key), where)
	case errors.Is(err, errNotUTF8):
		return codes.Refusef(codes.Validation, "", "the body is not a JSON object: it is not valid UTF-8")
	case errors.Is(err, errTooDeep):
		return codes.Refusef(codes.Validation, "", "the body is not a valid request: it is nested more than %d levels deep", maxDepth)
	default:
		return codes.Refusef(codes.Validation, "",
			"the body is not a JSON object: it is not valid JSON, or has data after the object; send exactly one object such as "+
				`{"schema_version":"1.0","intent":"invoice.create","payload":{…}}`)
	}
}

// unknownField is the refusal of member name (shown as shown) at field in where, which
// allows allowed.
func unknownField(shown, field, where string, allowed []string) *codes.Refusal {
	msg := fmt.Sprintf("unknown field %q in %s; allowed: %s", shown, where, strings.Join(allowed, ", "))
	if slices.Contains(forbiddenFields, field[strings.LastIndex(field, ".")+1:]) {
		msg += "; oncegate takes declarative intents only, never methods, queries, scripts or flags such as posted or privileged_mode"
	}
	return codes.Refusef(codes.UnknownField, truncate(field, MaxStringLen), "%s", msg)
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number, float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// isHex64 reports whether s is 64 lowercase hex digits, a SHA-256 as the
// gateway writes it.
func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
