package contract_test

import (
	"github.com/oncegate/oncegate/adapters/codes/codestest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
)

func TestDecodeEnvelope(t *testing.T) {
	t.Parallel()
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		body := `{
  "schema_version": "1.0",
  "intent": "invoice.create",
  "request_id": "prod:invoice.create:order-48291:v1",
  "actor_id": "user-42",
  "mode": "execute",
  "payload": { "order_id": "order-48291", "organization_id": "org-main",
               "customer_id": "customer-1042", "currency": "rub",
               "items": [ { "product_id": "product-778", "quantity": 2, "unit": "pcs", "price_minor": 62500 } ] }
}`
		env, err := contract.DecodeEnvelope([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := env.SchemaVersion, "1.0"; got != want {
			t.Fatalf("SchemaVersion = %q, want %q", got, want)
		}
		if got, want := env.Intent, "invoice.create"; got != want {
			t.Fatalf("Intent = %q, want %q", got, want)
		}
		if got, want := env.RequestID, "prod:invoice.create:order-48291:v1"; got != want {
			t.Fatalf("RequestID = %q, want %q", got, want)
		}
		if got, want := env.ActorID, "user-42"; got != want {
			t.Fatalf("ActorID = %q, want %q", got, want)
		}
		if got, want := env.Mode, contract.ModeExecute; got != want {
			t.Fatalf("Mode = %q, want %q", got, want)
		}
		if got, want := env.PlanHash, ""; got != want {
			t.Fatalf("PlanHash = %q, want %q", got, want)
		}
		// The payload goes on to the intent's normalization as it was sent.
		p, err := contract.DecodePayload(env.Intent, env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := p["currency"], "rub"; got != want {
			t.Fatalf("currency = %v, want %v", got, want)
		}
	})
	t.Run("OKDefaults", func(t *testing.T) {
		t.Parallel()
		env, err := contract.DecodeEnvelope([]byte(`{"schema_version":"1.0","intent":"x","payload":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		if env.Mode != contract.ModeExecute || env.RequestID != "" || env.ActorID != "" || env.PlanHash != "" {
			t.Fatalf("defaults: %+v", env)
		}
		if got, want := string(env.Payload), `{}`; got != want {
			t.Fatalf("Payload = %s, want %s", got, want)
		}
	})
	t.Run("OKValidateWithPlanHash", func(t *testing.T) {
		t.Parallel()
		env, err := contract.DecodeEnvelope([]byte(`{"plan_hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","mode":"validate","payload":{"a":1},"intent":"x","schema_version":"1.0"}`))
		if err != nil {
			t.Fatal(err)
		}
		if env.Mode != contract.ModeValidate || env.PlanHash != "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" || string(env.Payload) != `{"a":1}` {
			t.Fatalf("got %+v", env)
		}
	})

	long := strings.Repeat("a", 1025)
	id256 := strings.Repeat("a", 256)
	tests := []struct {
		name  string
		body  string
		code  string
		field string
	}{
		{"ErrEmpty", ``, codes.Validation, ""},
		{"ErrNotJSON", `{"schema_version":`, codes.Validation, ""},
		{"ErrArray", `[]`, codes.Validation, ""},
		{"ErrString", `"x"`, codes.Validation, ""},
		{"ErrNull", `null`, codes.Validation, ""},
		{"ErrTrailing", `{"schema_version":"1.0","intent":"x","payload":{}} {}`, codes.Validation, ""},
		{"ErrTrailingGarbage", `{"schema_version":"1.0","intent":"x","payload":{}}x`, codes.Validation, ""},
		{"ErrBadUTF8", "{\"schema_version\":\"1.0\",\"intent\":\"\xff\",\"payload\":{}}", codes.Validation, ""},
		{"ErrTooDeep", `{"schema_version":"1.0","intent":"x","payload":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40) + `}`,
			codes.Validation, ""},
		{"ErrDuplicateTop", `{"schema_version":"1.0","intent":"x","intent":"y","payload":{}}`, codes.Validation, "intent"},
		{"ErrDuplicateInPayload", `{"schema_version":"1.0","intent":"x","payload":{"order_id":"a","order_id":"b"}}`,
			codes.Validation, "order_id"},
		{"ErrDuplicateInItems", `{"schema_version":"1.0","intent":"x","payload":{"items":[{},{"unit":"a","unit":"b"}]}}`,
			codes.Validation, "items[1].unit"},
		{"ErrUnknownField", `{"schema_version":"1.0","intent":"x","payload":{},"method":"POST"}`, codes.UnknownField, "method"},
		{"ErrUnknownFieldsSorted", `{"zeta":1,"schema_version":"1.0","intent":"x","payload":{},"alpha":1}`, codes.UnknownField, "alpha"},
		{"ErrUnknownBeforeMissing", `{"query":"select 1"}`, codes.UnknownField, "query"},
		{"ErrSchemaVersionMissing", `{"intent":"x","payload":{}}`, codes.UnsupportedSchema, "schema_version"},
		{"ErrSchemaVersionNumber", `{"schema_version":1.0,"intent":"x","payload":{}}`, codes.UnsupportedSchema, "schema_version"},
		{"ErrSchemaVersion2", `{"schema_version":"2.0","intent":"x","payload":{}}`, codes.UnsupportedSchema, "schema_version"},
		{"ErrSchemaVersion2WithNewField", `{"schema_version":"2.0","intent":"x","payload":{},"new":1}`, codes.UnsupportedSchema, "schema_version"},
		{"ErrSchemaVersionEmpty", `{"schema_version":"","intent":"x","payload":{}}`, codes.UnsupportedSchema, "schema_version"},
		{"ErrIntentMissing", `{"schema_version":"1.0","payload":{}}`, codes.Validation, "intent"},
		{"ErrIntentEmpty", `{"schema_version":"1.0","intent":" ","payload":{}}`, codes.Validation, "intent"},
		{"ErrIntentNumber", `{"schema_version":"1.0","intent":7,"payload":{}}`, codes.Validation, "intent"},
		{"ErrIntentLong", `{"schema_version":"1.0","intent":"` + long + `","payload":{}}`, codes.Validation, "intent"},
		{"ErrRequestIDEmpty", `{"schema_version":"1.0","intent":"x","request_id":"","payload":{}}`, codes.Validation, "request_id"},
		{"ErrRequestIDNull", `{"schema_version":"1.0","intent":"x","request_id":null,"payload":{}}`, codes.Validation, "request_id"},
		{"ErrRequestIDLong", `{"schema_version":"1.0","intent":"x","request_id":"` + id256 + `","payload":{}}`, codes.Validation, "request_id"},
		{"ErrActorIDLong", `{"schema_version":"1.0","intent":"x","actor_id":"` + id256 + `","payload":{}}`, codes.Validation, "actor_id"},
		{"ErrActorIDObject", `{"schema_version":"1.0","intent":"x","actor_id":{},"payload":{}}`, codes.Validation, "actor_id"},
		{"ErrMode", `{"schema_version":"1.0","intent":"x","mode":"dry_run","payload":{}}`, codes.Validation, "mode"},
		{"ErrModeEmpty", `{"schema_version":"1.0","intent":"x","mode":"","payload":{}}`, codes.Validation, "mode"},
		{"ErrModeCase", `{"schema_version":"1.0","intent":"x","mode":"Execute","payload":{}}`, codes.Validation, "mode"},
		{"ErrPayloadMissing", `{"schema_version":"1.0","intent":"x"}`, codes.Validation, "payload"},
		{"ErrPayloadNull", `{"schema_version":"1.0","intent":"x","payload":null}`, codes.Validation, "payload"},
		{"ErrPayloadArray", `{"schema_version":"1.0","intent":"x","payload":[]}`, codes.Validation, "payload"},
		{"ErrPayloadString", `{"schema_version":"1.0","intent":"x","payload":"{}"}`, codes.Validation, "payload"},
		{"ErrPlanHashEmpty", `{"schema_version":"1.0","intent":"x","payload":{},"plan_hash":""}`, codes.Validation, "plan_hash"},
		{"ErrPlanHashLong", `{"schema_version":"1.0","intent":"x","payload":{},"plan_hash":"` + long + `"}`, codes.Validation, "plan_hash"},
		{"ErrPlanHashNotHex", `{"schema_version":"1.0","intent":"x","payload":{},"plan_hash":"xyz"}`, codes.Validation, "plan_hash"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := contract.DecodeEnvelope([]byte(tt.body))
			codestest.WantRefusal(t, err, tt.code, tt.field)
		})
	}
}

func TestDecodeEnvelope_Messages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body string
		want []string
	}{
		{`[1]`, []string{"not a JSON object"}},
		{`{"a":1} x`, []string{"not a JSON object"}},
		{`{"schema_version":"1.0","intent":"x","payload":{},"method":"POST"}`,
			[]string{`unknown field "method"`, "allowed: schema_version, intent, request_id, actor_id, mode, payload, plan_hash", "never methods"}},
		{`{"schema_version":"1.0","intent":"x","payload":{"items":[{},{"unit":"a","unit":"b"}]}}`,
			[]string{`duplicate field "unit" in items[1] of the payload`}},
		{`{"schema_version":"3","intent":"x","payload":{}}`, []string{`"3"`, `"1.0"`}},
		{`{"schema_version":"1.0","intent":"x","payload":{},"` + strings.Repeat("k", 500) + `":1}`,
			[]string{strings.Repeat("k", 64) + "…"}},
	}
	for _, tt := range tests {
		_, err := contract.DecodeEnvelope([]byte(tt.body))
		ce := codestest.WantRefusal(t, err, errCode(err), errField(err))
		for _, w := range tt.want {
			if !strings.Contains(ce.Message, w) {
				t.Errorf("DecodeEnvelope(%.40s…) message %q lacks %q", tt.body, ce.Message, w)
			}
		}
		if strings.Contains(ce.Message, strings.Repeat("k", 65)) {
			t.Errorf("message reflects long input: %.100s…", ce.Message)
		}
	}
}

// errCode and errField read a *codes.Refusal's code and field ("" otherwise).
func errCode(err error) string {
	if ce, ok := err.(*codes.Refusal); ok {
		return ce.Code
	}
	return ""
}

func errField(err error) string {
	if ce, ok := err.(*codes.Refusal); ok {
		return ce.Field
	}
	return ""
}

// Control characters in any string an agent sends — the envelope's, a
// payload field's, a member name — are refused at the contract, naming
// the field: they would forge lines or hide text on the approval page,
// in the audit trail, the log and the CSV export. Bidirectional marks are
// not control characters; the admin UI shows them neutralized.
func TestDecodeEnvelope_ControlCharacters(t *testing.T) {
	t.Parallel()
	invoice := func(actor, customer string) string {
		return `{"schema_version":"1.0","intent":"invoice.create","actor_id":` + actor + `,
		  "payload":{"order_id":"order-1","organization_id":"org-main","customer_id":` + customer + `,"currency":"RUB",
		  "items":[{"product_id":"p-1","quantity":1,"unit":"pcs","price_minor":100}]}}`
	}
	for name, c := range map[string]struct{ body, field string }{
		"NULInActor":       {invoice(`"user\u0000-42"`, `"c-1"`), "actor_id"},
		"CRLFInActor":      {invoice(`"user-42\r\nforged: line"`, `"c-1"`), "actor_id"},
		"EscapeInActor":    {invoice(`"user-\u001b[31m42"`, `"c-1"`), "actor_id"},
		"C1InActor":        {invoice(`"user-\u008542"`, `"c-1"`), "actor_id"},
		"LineBreakInField": {invoice(`"user-42"`, `"c-1\nc-2"`), "customer_id"},
		"NULAtTheEnd":      {invoice(`"user-42"`, `"c-1\u0000"`), "customer_id"},
		"TabInMemberName":  {`{"schema_version":"1.0","intent":"invoice.create","payload":{"order\tid":"x"}}`, "order\tid"},
	} {
		_, err := contract.DecodeEnvelope([]byte(c.body))
		if ce := codestest.WantRefusal(t, err, codes.Validation, c.field); !strings.Contains(ce.Message, "control character") {
			t.Errorf("%s: message %q does not name a control character", name, ce.Message)
		}
	}
	// The payload alone, as its normalization decodes it, is held to the same rule.
	_, err := contract.DecodePayload("crm.callback.create", []byte(`{"comment":"call\u0000back"}`))
	if ce := codestest.WantRefusal(t, err, codes.Validation, "comment"); !strings.Contains(ce.Message, "U+0000") {
		t.Errorf("Normalize: message %q does not name U+0000", ce.Message)
	}
	// A right-to-left override is no control character: accepted here.
	if _, err := contract.DecodeEnvelope([]byte(invoice(`"user-\u202e24"`, `"c-1"`))); err != nil {
		t.Fatalf("a bidirectional mark was refused: %v", err)
	}
}

// The payload's first taking is the value the body's decode read; a
// second gets a map of its own, so a normalization under another
// definition does not see what the first changed.
func TestTakePayload(t *testing.T) {
	t.Parallel()
	env, err := contract.DecodeEnvelope([]byte(`{"schema_version":"1.0","intent":"invoice.create","payload":{"order_id":" o-1 ","n":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	first, err := env.TakePayload("invoice.create")
	if err != nil || first["order_id"] != "o-1" {
		t.Fatalf("first: %v, %v (want the strings trimmed)", first, err)
	}
	first["order_id"] = "changed"
	second, err := env.TakePayload("invoice.create")
	if err != nil || second["order_id"] != "o-1" {
		t.Fatalf("second: %v, %v", second, err)
	}
}
