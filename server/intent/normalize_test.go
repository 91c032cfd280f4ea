package intent_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/oncegate/oncegate/adapters/codes/codestest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
)

// TestNormalize_Vector is the example of docs/api.md, The fingerprint.
func TestNormalize_Vector(t *testing.T) {
	t.Parallel()
	n, err := mustLookup(t, "payment.charge").Normalize([]byte(
		`{"account_id":"merchant-account-17","order_id":"order-48291","amount_minor":125000,"currency":"rub"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(n.Canonical), `{"account_id":"merchant-account-17","amount_minor":125000,"currency":"RUB","operation":"payment.charge","order_id":"order-48291"}`; got != want {
		t.Fatalf("Canonical = %s, want %s", got, want)
	}
	if got, want := n.Fingerprint, "28a4262860864e5110d391a4556da2ad2f539ae2f87e52871f80cb7381d86aa6"; got != want {
		t.Fatalf("Fingerprint = %s, want %s", got, want)
	}
	if got, want := string(n.Payload), `{"account_id":"merchant-account-17","amount_minor":125000,"currency":"RUB","order_id":"order-48291"}`; got != want {
		t.Fatalf("Payload = %s, want %s", got, want)
	}
}

// TestNormalize_Valid runs every intent's sample payload: accepted, fingerprint is the
// SHA-256 of Canonical, and normalizing the result again changes nothing.
func TestNormalize_Valid(t *testing.T) {
	t.Parallel()
	for _, in := range builtins.All() {
		t.Run(in.Name, func(t *testing.T) {
			t.Parallel()
			n, err := in.Normalize([]byte(validPayloads[in.Name]))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(n.Canonical)
			if got, want := n.Fingerprint, hex.EncodeToString(sum[:]); got != want {
				t.Fatalf("Fingerprint = %s, want %s", got, want)
			}
			if !strings.Contains(string(n.Canonical), `"operation":"`+in.Name+`"`) || strings.Contains(string(n.Payload), `"operation"`) {
				t.Fatalf("operation misplaced: %s / %s", n.Canonical, n.Payload)
			}
			again, err := in.Normalize(n.Payload)
			if err != nil {
				t.Fatalf("normalized payload refused: %v", err)
			}
			if again.Fingerprint != n.Fingerprint || string(again.Payload) != string(n.Payload) {
				t.Fatalf("not idempotent: %s then %s", n.Payload, again.Payload)
			}
		})
	}
}

// TestNormalize_SameFingerprint: payloads that mean the same hash the same.
func TestNormalize_SameFingerprint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		intent string
		a, b   string
	}{
		{"payment.charge",
			`{"account_id":"merchant-account-17","order_id":"order-48291","amount_minor":125000,"currency":"rub"}`,
			"{\n  \"currency\" : \"RUB\",\n\t\"amount_minor\":125000 , \"order_id\":\"order-48291\",\"account_id\":\"merchant-account-17\"\n}"},
		{"payment.charge",
			`{"account_id":"merchant-account-17","order_id":"order-1","amount_minor":125000,"currency":"RUB"}`,
			`{"account_id":" merchant-account-17","order_id":" order-1 ","amount_minor":125000,"currency":" rub\t"}`},
		{"payment.charge",
			`{"account_id":"a","order_id":"o","amount_minor":125000,"currency":"RUB"}`,
			`{"account_id":"a","order_id":"o","amount_minor":1.25e5,"currency":"RUB","description":"   ","customer_id":""}`},
		{"payment.charge",
			`{"account_id":"a","order_id":"o","amount_minor":125000,"currency":"RUB"}`,
			`{"account_id":"a","order_id":"o","amount_minor":125000.0,"currency":"RUB","description":null}`},
		{"invoice.create",
			`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":2.5,"unit":"kg","price_minor":100}]}`,
			`{"items":[{"price_minor":100,"unit":" kg ","quantity":2.50,"product_id":"p"}],"currency":"rub","customer_id":"c","organization_id":"g","order_id":"o","due_date":""}`},
		{"crm.callback.create",
			`{"customer_id":"c","due_at":"2026-12-03T07:00:00Z"}`,
			`{"customer_id":"c","due_at":"2026-12-03T10:00:00+03:00","comment":" "}`},
		{"crm.callback.create",
			`{"customer_id":"c","due_at":"2026-12-03T07:00:00Z"}`,
			`{"customer_id":"c","due_at":"2026-12-03t07:00:00.000z"}`},
		{"crm.callback.create",
			`{"customer_id":"c","due_at":"2026-12-03T07:00:00Z"}`,
			`{"customer_id":"c","due_at":"2026-12-02T21:00:00-10:00"}`},
	}
	for i, tt := range tests {
		in := mustLookup(t, tt.intent)
		a, err := in.Normalize([]byte(tt.a))
		if err != nil {
			t.Fatalf("%d a: %v", i, err)
		}
		b, err := in.Normalize([]byte(tt.b))
		if err != nil {
			t.Fatalf("%d b: %v", i, err)
		}
		if a.Fingerprint != b.Fingerprint {
			t.Errorf("%d: fingerprints differ:\n%s\n%s", i, a.Canonical, b.Canonical)
		}
	}
}

// TestNormalize_DifferentFingerprint: any change of business meaning changes the hash.
func TestNormalize_DifferentFingerprint(t *testing.T) {
	t.Parallel()
	base := `{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":2,"unit":"pcs","price_minor":100}]}`
	variants := []string{
		`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":3,"unit":"pcs","price_minor":100}]}`,
		`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":2.000001,"unit":"pcs","price_minor":100}]}`,
		`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":2,"unit":"pcs","price_minor":101}]}`,
		`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"USD","items":[{"product_id":"p","quantity":2,"unit":"pcs","price_minor":100}]}`,
		`{"order_id":"O","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":2,"unit":"pcs","price_minor":100}]}`,
		`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":2,"unit":"pcs","price_minor":100}],"due_date":"2026-12-31"}`,
		`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":2,"unit":"pcs","price_minor":100},{"product_id":"p","quantity":2,"unit":"pcs","price_minor":100}]}`,
	}
	in := mustLookup(t, "invoice.create")
	b, err := in.Normalize([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range variants {
		n, err := in.Normalize([]byte(v))
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if n.Fingerprint == b.Fingerprint {
			t.Errorf("%d: same fingerprint as the base: %s", i, n.Canonical)
		}
	}
	// The same payload under another intent is another operation.
	get, err := mustLookup(t, "sales_order.get_status").Normalize([]byte(`{"order_id":"SO-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	post, err := mustLookup(t, "sales_order.post").Normalize([]byte(`{"order_id":"SO-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if get.Fingerprint == post.Fingerprint {
		t.Error("get_status and post of the same order share a fingerprint")
	}
}

// withField returns payload with member name set to the raw JSON value, at the top
// level or in items[0].
func withField(t *testing.T, payload string, inItems bool, name, value string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		t.Fatal(err)
	}
	if !inItems {
		m[name] = json.RawMessage(value)
	} else {
		var items []map[string]json.RawMessage
		if err := json.Unmarshal(m["items"], &items); err != nil {
			t.Fatal(err)
		}
		items[0][name] = json.RawMessage(value)
		b, _ := json.Marshal(items)
		m["items"] = b
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withoutField returns payload without the top-level member name.
func withoutField(t *testing.T, payload, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, name)
	b, _ := json.Marshal(m)
	return string(b)
}

// TestNormalize_UnknownFields: every schema refuses unknown fields at every level, with
// the exact path, and the fields no contract has (docs/api.md, A request).
func TestNormalize_UnknownFields(t *testing.T) {
	t.Parallel()
	names := []string{"discount", "method", "query", "script", "posted", "privileged_mode", "operation", "Order_id", ""}
	for _, in := range builtins.All() {
		for _, name := range names {
			t.Run(in.Name+"/"+name, func(t *testing.T) {
				t.Parallel()
				p := withField(t, validPayloads[in.Name], false, name, `"x"`)
				_, err := in.Normalize([]byte(p))
				ce := codestest.WantRefusal(t, err, codes.UnknownField, name)
				if !strings.Contains(ce.Message, fmt.Sprintf("unknown field %q in the payload; allowed: ", name)) {
					t.Fatalf("message %q", ce.Message)
				}
			})
		}
	}
	for _, intent := range withItems {
		in := mustLookup(t, intent)
		for _, name := range names {
			t.Run(intent+"/items/"+name, func(t *testing.T) {
				t.Parallel()
				p := withField(t, validPayloads[intent], true, name, `1`)
				_, err := in.Normalize([]byte(p))
				ce := codestest.WantRefusal(t, err, codes.UnknownField, "items[0]."+name)
				if !strings.Contains(ce.Message, fmt.Sprintf("unknown field %q in items[0]; allowed: product_id, quantity, unit", name)) {
					t.Fatalf("message %q", ce.Message)
				}
			})
		}
	}
	t.Run("InvoiceMessage", func(t *testing.T) {
		t.Parallel()
		p := withField(t, validPayloads["invoice.create"], true, "discount", `5`)
		_, err := mustLookup(t, "invoice.create").Normalize([]byte(p))
		ce := codestest.WantRefusal(t, err, codes.UnknownField, "items[0].discount")
		if got, want := ce.Message, `unknown field "discount" in items[0]; allowed: product_id, quantity, unit, price_minor`; got != want {
			t.Fatalf("message = %q, want %q", got, want)
		}
	})
	t.Run("BannedFieldsSayWhy", func(t *testing.T) {
		t.Parallel()
		p := withField(t, validPayloads["sales_order.post"], false, "posted", `true`)
		_, err := mustLookup(t, "sales_order.post").Normalize([]byte(p))
		ce := codestest.WantRefusal(t, err, codes.UnknownField, "posted")
		if !strings.Contains(ce.Message, "declarative intents only") {
			t.Fatalf("message %q", ce.Message)
		}
	})
	t.Run("UnknownWinsOverViolations", func(t *testing.T) {
		t.Parallel()
		p := `{"order_id":"","organization_id":7,"currency":"rubles","items":[{"product_id":"p","quantity":0,"unit":"pcs","price_minor":1,"discount":1}],"script":"x"}`
		_, err := mustLookup(t, "invoice.create").Normalize([]byte(p))
		codestest.WantRefusal(t, err, codes.UnknownField, "script") // top level before items[0]
	})
	t.Run("UnknownInSecondItem", func(t *testing.T) {
		t.Parallel()
		p := `{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[
			{"product_id":"p","quantity":1,"unit":"pcs","price_minor":1},
			{"product_id":"p","quantity":1,"unit":"pcs","price_minor":1,"zeta":1,"alpha":2}]}`
		_, err := mustLookup(t, "invoice.create").Normalize([]byte(p))
		codestest.WantRefusal(t, err, codes.UnknownField, "items[1].alpha")
	})
}

func TestNormalize_Violations(t *testing.T) {
	t.Parallel()
	inv := validPayloads["invoice.create"]
	draft := validPayloads["sales_order.create_draft"]
	cb := validPayloads["crm.callback.create"]
	charge := validPayloads["payment.charge"]
	refund := validPayloads["payment.refund"]
	item := `{"product_id":"p","quantity":1,"unit":"pcs","price_minor":1}`
	items501 := "[" + strings.TrimSuffix(strings.Repeat(item+",", 501), ",") + "]"
	items500 := "[" + strings.TrimSuffix(strings.Repeat(item+",", 500), ",") + "]"

	tests := []struct {
		name    string
		intent  string
		payload string
		field   string // "" means accepted
		msg     string // part of the message
	}{
		{"QuantityZero", "invoice.create", withField(t, inv, true, "quantity", `0`), "items[0].quantity", "must be greater than 0"},
		{"QuantityNegative", "invoice.create", withField(t, inv, true, "quantity", `-1`), "items[0].quantity", "greater than 0"},
		{"QuantityNegativeDraft", "sales_order.create_draft", withField(t, draft, true, "quantity", `-1`), "items[0].quantity", "greater than 0"},
		{"QuantityTiny", "invoice.create", withField(t, inv, true, "quantity", `0.001`), "", ""},
		{"QuantityFractional", "invoice.create", withField(t, inv, true, "quantity", `2.5`), "", ""},
		{"QuantityMax", "invoice.create", withField(t, inv, true, "quantity", `1e9`), "", ""},
		{"QuantityOverMax", "invoice.create", withField(t, inv, true, "quantity", `1000000000.5`), "items[0].quantity", "at most 1000000000"},
		{"QuantityString", "invoice.create", withField(t, inv, true, "quantity", `"2"`), "items[0].quantity", "must be a number (got a string)"},
		{"QuantityUnderflow", "invoice.create", withField(t, inv, true, "quantity", `1e-400`), "items[0].quantity", "out of range"},
		{"QuantityHugeExponent", "invoice.create", withField(t, inv, true, "quantity", `1e10000000`), "items[0].quantity", "out of range"},
		{"QuantityHugeNegativeExponent", "invoice.create", withField(t, inv, true, "quantity", `1e-10000000`), "items[0].quantity", "out of range"},
		{"QuantityZeroHugeExponent", "invoice.create", withField(t, inv, true, "quantity", `0e99999999`), "items[0].quantity", "out of range"},
		{"QuantityLongLiteral", "invoice.create", withField(t, inv, true, "quantity", `1.`+strings.Repeat("0", 100)), "items[0].quantity", "out of range"},
		{"QuantityTinyOK", "invoice.create", withField(t, inv, true, "quantity", `1e-300`), "", ""},
		{"IDHugeNumber", "invoice.create", withField(t, inv, false, "order_id", `1e99999999`), "order_id", "out of range"},
		{"IDNumber", "invoice.create", withField(t, inv, false, "order_id", `48291`), "order_id", "must be a string (got a number)"},
		{"QuantityMissing", "invoice.create", `{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","unit":"pcs","price_minor":1}]}`,
			"items[0].quantity", `missing required field "quantity" in items[0]`},
		{"PriceZero", "invoice.create", withField(t, inv, true, "price_minor", `0`), "", ""},
		{"PriceNegative", "invoice.create", withField(t, inv, true, "price_minor", `-1`), "items[0].price_minor", "at least 0"},
		{"PriceFraction", "invoice.create", withField(t, inv, true, "price_minor", `625.5`), "items[0].price_minor", "must be an integer"},
		{"PriceTooBig", "invoice.create", withField(t, inv, true, "price_minor", `1000000000000001`), "items[0].price_minor", "at most 1000000000000000"},
		{"PriceHuge", "invoice.create", withField(t, inv, true, "price_minor", `1e400`), "items[0].price_minor", "out of range"},
		{"PriceExponentForm", "invoice.create", withField(t, inv, true, "price_minor", `6.25e4`), "", ""},
		{"AmountZero", "payment.charge", withField(t, charge, false, "amount_minor", `0`), "amount_minor", "at least 1"},
		{"AmountRefundZero", "payment.refund", withField(t, refund, false, "amount_minor", `0`), "amount_minor", "at least 1"},
		{"AmountMax", "payment.charge", withField(t, charge, false, "amount_minor", `1000000000000000`), "", ""},
		{"AmountString", "payment.charge", withField(t, charge, false, "amount_minor", `"125000"`), "amount_minor", "integer"},
		{"CurrencyLong", "payment.charge", withField(t, charge, false, "currency", `"rubles"`), "currency", "ISO 4217"},
		{"CurrencyDigits", "payment.charge", withField(t, charge, false, "currency", `"R1B"`), "currency", "ISO 4217"},
		{"CurrencyCyrillic", "payment.charge", withField(t, charge, false, "currency", `"руб"`), "currency", "ISO 4217"},
		{"CurrencyEmpty", "payment.charge", withField(t, charge, false, "currency", `""`), "currency", ""},
		{"CurrencyMissing", "payment.charge", withoutField(t, charge, "currency"), "currency", `missing required field "currency" in the payload`},
		{"RequiredEmpty", "invoice.create", withField(t, inv, false, "customer_id", `"  "`), "customer_id", "must not be empty"},
		{"RequiredNull", "invoice.create", withField(t, inv, false, "customer_id", `null`), "customer_id", "must be a string (got null)"},
		{"IDBadChars", "invoice.create", withField(t, inv, false, "customer_id", `"customer 1042"`), "customer_id", "stable external id"},
		{"IDLeadingDash", "invoice.create", withField(t, inv, false, "customer_id", `"-c"`), "customer_id", "stable external id"},
		{"IDTooLong", "invoice.create", withField(t, inv, false, "customer_id", `"`+strings.Repeat("c", 129)+`"`), "customer_id", "at most 128"},
		{"ID128", "invoice.create", withField(t, inv, false, "customer_id", `"`+strings.Repeat("c", 128)+`"`), "", ""},
		{"UnitEmpty", "invoice.create", withField(t, inv, true, "unit", `""`), "items[0].unit", "must not be empty"},
		{"UnitLong", "invoice.create", withField(t, inv, true, "unit", `"`+strings.Repeat("u", 17)+`"`), "items[0].unit", "at most 16"},
		{"UnitCyrillic", "invoice.create", withField(t, inv, true, "unit", `"шт"`), "", ""},
		{"ItemsEmpty", "invoice.create", withField(t, inv, false, "items", `[]`), "items", "at least 1"},
		{"Items500", "invoice.create", withField(t, inv, false, "items", items500), "", ""},
		{"Items501", "invoice.create", withField(t, inv, false, "items", items501), "items", "at most 500"},
		{"ItemsObject", "invoice.create", withField(t, inv, false, "items", `{}`), "items", "must be an array"},
		{"ItemNotObject", "invoice.create", withField(t, inv, false, "items", `[1]`), "items[0]", "must be an object"},
		{"DueDateBad", "invoice.create", withField(t, inv, false, "due_date", `"2026-02-30"`), "due_date", "YYYY-MM-DD"},
		{"DueDateDateTime", "invoice.create", withField(t, inv, false, "due_date", `"2026-12-31T00:00:00Z"`), "due_date", "YYYY-MM-DD"},
		{"DueDateSlashes", "invoice.create", withField(t, inv, false, "due_date", `"31/12/2026"`), "due_date", "YYYY-MM-DD"},
		{"DueDateOK", "invoice.create", withField(t, inv, false, "due_date", `" 2026-12-31 "`), "", ""},
		{"DueAtBad", "crm.callback.create", withField(t, cb, false, "due_at", `"tomorrow"`), "due_at", "RFC 3339"},
		{"DueAtNoZone", "crm.callback.create", withField(t, cb, false, "due_at", `"2026-12-03T10:00:00"`), "due_at", "RFC 3339"},
		{"DueAtDateOnly", "crm.callback.create", withField(t, cb, false, "due_at", `"2026-12-03"`), "due_at", "RFC 3339"},
		{"DueAtLeapSecond", "crm.callback.create", withField(t, cb, false, "due_at", `"2026-12-31T23:59:60Z"`), "due_at", "RFC 3339"},
		{"DueAtYearZeroUTC", "crm.callback.create", withField(t, cb, false, "due_at", `"0001-01-01T00:00:00+01:00"`), "due_at", "out of range"},
		{"DueAtMissing", "crm.callback.create", withoutField(t, cb, "due_at"), "due_at", "missing required field"},
		{"Comment500", "crm.callback.create", withField(t, cb, false, "comment", `"`+strings.Repeat("к", 500)+`"`), "", ""},
		{"Comment501", "crm.callback.create", withField(t, cb, false, "comment", `"`+strings.Repeat("к", 501)+`"`), "comment", "at most 500"},
		{"Comment501Trimmed", "crm.callback.create", withField(t, cb, false, "comment", `"  `+strings.Repeat("к", 500)+`  "`), "", ""},
		{"DraftComment1024", "sales_order.create_draft", withField(t, draft, false, "comment", `"`+strings.Repeat("x", 1024)+`"`), "", ""},
		{"DraftComment1025", "sales_order.create_draft", withField(t, draft, false, "comment", `"`+strings.Repeat("x", 1025)+`"`), "comment", "at most 1024"},
		{"CommentNumber", "sales_order.create_draft", withField(t, draft, false, "comment", `5`), "comment", "must be a string"},
		{"Description128", "payment.charge", withField(t, charge, false, "description", `"`+strings.Repeat("d", 128)+`"`), "", ""},
		{"Description129", "payment.charge", withField(t, charge, false, "description", `"`+strings.Repeat("d", 129)+`"`), "description", "at most 128"},
		{"Reason250", "payment.refund", withField(t, refund, false, "reason", `"`+strings.Repeat("r", 250)+`"`), "", ""},
		{"Reason251", "payment.refund", withField(t, refund, false, "reason", `"`+strings.Repeat("r", 251)+`"`), "reason", "at most 250"},
		{"ChargeCustomerOptional", "payment.charge", withField(t, charge, false, "customer_id", `"customer-1042"`), "", ""},
		{"ChargeCustomerBad", "payment.charge", withField(t, charge, false, "customer_id", `"customer 1042"`), "customer_id", "stable external id"},
		{"PostOrderMissing", "sales_order.post", `{}`, "order_id", `missing required field "order_id" in the payload`},
		{"FirstOfSeveral", "payment.charge", `{"amount_minor":0,"currency":"x"}`, "account_id", "missing required field"},
		{"DuplicateTop", "payment.charge", `{"account_id":"a","account_id":"b","order_id":"o","amount_minor":1,"currency":"RUB"}`, "account_id", "duplicate field"},
		{"DuplicateInItem", "invoice.create", `{"items":[{"unit":"a","unit":"b"}]}`, "items[0].unit", "duplicate field"},
		{"NotObject", "payment.charge", `[]`, "payload", "JSON object"},
		{"Null", "payment.charge", `null`, "payload", "JSON object"},
		{"Empty", "payment.charge", ``, "payload", "not valid JSON"},
		{"Trailing", "payment.charge", charge + `{}`, "payload", "not valid JSON"},
		{"BadUTF8", "payment.charge", "{\"account_id\":\"\xff\"}", "payload", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := mustLookup(t, tt.intent)
			n, err := in.Normalize([]byte(tt.payload))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if _, err := in.Normalize(n.Payload); err != nil {
					t.Fatalf("normalized payload refused: %v", err)
				}
				return
			}
			ce := codestest.WantRefusal(t, err, codes.Validation, tt.field)
			if !strings.Contains(ce.Message, tt.msg) {
				t.Fatalf("message %q lacks %q", ce.Message, tt.msg)
			}
		})
	}
}

func TestNormalize_Forms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		intent  string
		payload string
		want    string // Normalized.Payload
	}{
		{"DueAtUTC", "crm.callback.create", `{"customer_id":"c","due_at":"2026-12-03T10:00:00+03:00"}`,
			`{"customer_id":"c","due_at":"2026-12-03T07:00:00Z"}`},
		{"DueAtFraction", "crm.callback.create", `{"customer_id":"c","due_at":"2026-12-03t10:00:00.250000+03:00"}`,
			`{"customer_id":"c","due_at":"2026-12-03T07:00:00.25Z"}`},
		{"DueAtDayChange", "crm.callback.create", `{"customer_id":"c","due_at":"2026-12-31T22:30:00-05:00"}`,
			`{"customer_id":"c","due_at":"2027-01-01T03:30:00Z"}`},
		{"DueDateKept", "invoice.create",
			`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"rub","items":[{"product_id":"p","quantity":1,"unit":"pcs","price_minor":1}],"due_date":"2026-12-31"}`,
			`{"currency":"RUB","customer_id":"c","due_date":"2026-12-31","items":[{"price_minor":1,"product_id":"p","quantity":1,"unit":"pcs"}],"order_id":"o","organization_id":"g"}`},
		{"InnerWhitespaceKept", "crm.callback.create", `{"customer_id":"c","due_at":"2026-12-03T07:00:00Z","comment":"  call  back <after> 5 & \"ask\"\n"}`,
			`{"comment":"call  back <after> 5 & \"ask\"","customer_id":"c","due_at":"2026-12-03T07:00:00Z"}`},
		{"Numbers", "invoice.create",
			`{"order_id":"o","organization_id":"g","customer_id":"c","currency":"RUB","items":[{"product_id":"p","quantity":2.50,"unit":"kg","price_minor":6.25e4},{"product_id":"q","quantity":1E-3,"unit":"kg","price_minor":0}]}`,
			`{"currency":"RUB","customer_id":"c","items":[{"price_minor":62500,"product_id":"p","quantity":2.5,"unit":"kg"},{"price_minor":0,"product_id":"q","quantity":0.001,"unit":"kg"}],"order_id":"o","organization_id":"g"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, err := mustLookup(t, tt.intent).Normalize([]byte(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if got := string(n.Payload); got != tt.want {
				t.Fatalf("Payload = %s\nwant      %s", got, tt.want)
			}
		})
	}
}

// TestNormalize_Concurrent runs the compiled schemas from many goroutines (under -race).
func TestNormalize_Concurrent(t *testing.T) {
	t.Parallel()
	done := make(chan error)
	for i := range 16 {
		go func() {
			in := builtins.All()[i%7]
			_, err := in.Normalize([]byte(validPayloads[in.Name]))
			done <- err
		}()
	}
	for range 16 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// Of several numbers to refuse, the answer names the first in field
// order, whatever order the walk that finds them meets them in.
func TestFirstRefusedNumberInFieldOrder(t *testing.T) {
	in := mustLookup(t, "invoice.create")
	inv := validPayloads["invoice.create"]
	payloads := map[string]string{
		"items[0].quantity": withField(t, withField(t, inv, false, "order_id", `1e99999999`), true, "quantity", `1e-400`),
		"due_date":          withField(t, withField(t, inv, false, "order_id", `1e99999999`), false, "due_date", `1e99999999`),
	}
	for field, p := range payloads {
		for range 30 { // map order differs from run to run
			_, err := in.Normalize([]byte(p))
			codestest.WantRefusal(t, err, codes.Validation, field)
		}
	}
}
