package contract_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
)

// FuzzCheckKey: CheckKey never panics, and every key it accepts keeps the key rules,
// re-checked here independently.
func FuzzCheckKey(f *testing.F) {
	for _, s := range []struct{ key, contour, intent string }{
		{"prod:invoice.create:order-48291:v1", "prod", "invoice.create"},
		{"prod:crm.callback:create:event-90173:v1", "prod", "crm.callback.create"},
		{"test:invoice.create:order-demo-1:v1", "test", "invoice.create"},
		{"prod:payment.charge:4111111111111111:v1", "prod", "payment.charge"},
		{"prod:payment.charge:4111-1111-1111-1111:v1", "prod", "payment.charge"},
		{"test:invoice.create:4111--1111__1111-_-1111:v1", "test", "invoice.create"},
		{"prod:invoice.create:550e8400-e29b-41d4-a716-446655440000:v1", "prod", "invoice.create"},
		{"prod:invoice.create:og_AbCdEfGhIjKlMnOpQrStUv:v1", "prod", "invoice.create"},
		{"prod:a::v1", "prod", "a"},
		{"", "", ""},
	} {
		f.Add(s.key, s.contour, s.intent)
	}
	f.Fuzz(func(t *testing.T, key, contour, intent string) {
		if err := contract.CheckKey(key, contour, intent); err != nil {
			if _, ok := err.(*codes.Refusal); !ok {
				t.Fatalf("error %T is not *codes.Refusal", err)
			}
			return
		}
		if len(key) < 8 || len(key) > 255 {
			t.Fatalf("accepted key of length %d", len(key))
		}
		for _, c := range []byte(key) {
			ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._:-", c) >= 0
			if !ok {
				t.Fatalf("accepted key with %q", c)
			}
		}
		segs := strings.Split(key, ":")
		if len(segs) < 4 {
			t.Fatalf("accepted key with %d segments", len(segs))
		}
		for _, s := range segs {
			if s == "" {
				t.Fatal("accepted key with an empty segment")
			}
		}
		if segs[0] != contour {
			t.Fatalf("accepted contour %q, want %q", segs[0], contour)
		}
		v := segs[len(segs)-1]
		if len(v) < 2 || v[0] != 'v' || strings.Trim(v[1:], "0123456789") != "" {
			t.Fatalf("accepted version %q", v)
		}
		if op := strings.Join(segs[1:len(segs)-2], "."); op != intent {
			t.Fatalf("accepted operation %q for intent %q", op, intent)
		}
		// No plain card number and no long mixed blob.
		for _, run := range strings.FieldsFunc(key, func(r rune) bool { return r < '0' || r > '9' }) {
			if len(run) >= 13 && len(run) <= 19 && luhnOK(run) {
				t.Fatalf("accepted a card number run %s", run)
			}
		}
		for _, m := range groupedCard.FindAllStringSubmatch(key, -1) {
			if d := m[1] + m[2] + m[3] + m[4]; luhnOK(d) {
				t.Fatalf("accepted a card number %s written in groups of four", d)
			}
		}
		for _, run := range strings.FieldsFunc(key, func(r rune) bool { return strings.ContainsRune("._:-", r) }) {
			if len(run) >= 32 && strings.ContainsAny(run, "0123456789") && strings.Trim(run, "0123456789") != "" {
				t.Fatalf("accepted a high-entropy run %s", run)
			}
		}
	})
}

// groupedCard is four groups of four digits joined by runs of separators, for the fuzz
// body: a card number as people write it, however the groups are joined.
var groupedCard = regexp.MustCompile(`(?:^|[^0-9])([0-9]{4})[._:-]+([0-9]{4})[._:-]+([0-9]{4})[._:-]+([0-9]{4})(?:[^0-9]|$)`)

// luhnOK is an independent Luhn check for the fuzz body.
func luhnOK(d string) bool {
	sum, double := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		n := int(d[i] - '0')
		if double {
			if n *= 2; n > 9 {
				n -= 9
			}
		}
		sum, double = sum+n, !double
	}
	return sum%10 == 0
}

// FuzzDecodeEnvelope: DecodeEnvelope never panics, and what it accepts is a v1.0
// envelope with a known mode, an intent and an object payload.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"schema_version":"1.0","intent":"invoice.create","request_id":"prod:invoice.create:order-48291:v1","actor_id":"user-42","mode":"execute","payload":{"order_id":"order-48291"}}`,
		`{"schema_version":"1.0","intent":"x","mode":"validate","payload":{},"plan_hash":"abc"}`,
		`{"schema_version":"2.0","intent":"x","payload":{}}`,
		`{"schema_version":"1.0","intent":"x","payload":{"a":1,"a":2}}`,
		`{"schema_version":"1.0","intent":"x","payload":{}} {}`,
		`{"method":"POST"}`,
		`[]`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := contract.DecodeEnvelope(body)
		if err != nil {
			if _, ok := err.(*codes.Refusal); !ok {
				t.Fatalf("error %T is not *codes.Refusal", err)
			}
			return
		}
		if env.SchemaVersion != "1.0" {
			t.Fatalf("accepted schema_version %q", env.SchemaVersion)
		}
		if env.Mode != contract.ModeExecute && env.Mode != contract.ModeValidate {
			t.Fatalf("accepted mode %q", env.Mode)
		}
		if strings.TrimSpace(env.Intent) == "" {
			t.Fatal("accepted an empty intent")
		}
		var p map[string]json.RawMessage
		if err := json.Unmarshal(env.Payload, &p); err != nil || p == nil {
			t.Fatalf("accepted payload %q: %v", env.Payload, err)
		}
	})
}
