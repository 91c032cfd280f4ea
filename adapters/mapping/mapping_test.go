package mapping_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/mapping"
)

// dealSchema is the deal.create payload of docs/intents.md (A definition), with an optional date,
// a nested object and a tabular section for the cases below.
const dealSchema = `{
  "type": "object", "additionalProperties": false,
  "required": ["customer_id", "title", "amount_minor", "currency"],
  "$defs": {"line": {"type": "object", "additionalProperties": false,
    "properties": {"product_id": {"type": "string", "maxLength": 64}, "quantity": {"type": "integer"},
                   "price_minor": {"type": "integer"}}}},
  "properties": {
    "customer_id":  {"type": "string", "minLength": 1, "maxLength": 128},
    "title":        {"type": "string", "minLength": 1, "maxLength": 255},
    "amount_minor": {"type": "integer", "minimum": 1},
    "ratio":        {"type": "number"},
    "currency":     {"type": "string", "maxLength": 3},
    "fee_currency": {"type": "string", "maxLength": 3},
    "due_at":       {"type": "string", "format": "date-time", "maxLength": 64},
    "urgent":       {"type": "boolean"},
    "contact":      {"type": "object", "additionalProperties": false,
                     "properties": {"phone": {"type": "string", "maxLength": 32}}},
    "items":        {"type": "array", "maxItems": 10, "items": {"$ref": "#/$defs/line"}},
    "tags":         {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}}
  }
}`

func digits(code string) (int, bool) {
	switch code {
	case "RUB", "USD":
		return 2, true
	case "JPY":
		return 0, true
	case "KWD":
		return 3, true
	}
	return 0, false
}

func moscow(t *testing.T) *time.Location {
	t.Helper()
	z, err := time.LoadLocation("Europe/Moscow")
	if err != nil {
		z = time.FixedZone("MSK", 3*60*60)
	}
	return z
}

func options(t *testing.T) mapping.Options {
	return mapping.Options{
		References:  map[string]string{"customer_id": "customer", "items.product_id": "product"},
		MinorDigits: digits,
		Zone:        moscow(t),
		Rows:        true,
	}
}

func mustParse(t *testing.T, m string, opts mapping.Options) *mapping.Fields {
	t.Helper()
	f, err := mapping.Parse(json.RawMessage(m), "map.fields", json.RawMessage(dealSchema), opts)
	if err != nil {
		t.Fatalf("parse %s: %v", m, err)
	}
	return f
}

// resolver answers "C-<id>" for every reference and records what it was
// asked.
func resolver(asked *[]mapping.Ref) mapping.Resolver {
	return func(_ context.Context, r mapping.Ref) (any, error) {
		*asked = append(*asked, r)
		if r.ID == "missing" {
			return nil, errors.New("not found: " + r.Field)
		}
		return "C-" + r.ID, nil
	}
}

func TestApply(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `{
		"CONTACT_ID":  {"ref": "customer_id"},
		"TITLE":       {"from": "title"},
		"OPPORTUNITY": {"from": "amount_minor", "money": "minor"},
		"CURRENCY_ID": {"from": "currency"},
		"TYPE_ID":     {"value": "SALE"},
		"PROBABILITY": {"value": 40},
		"OPENED":      {"value": true},
		"CLOSEDATE":   {"from": "due_at", "date": "local"},
		"PHONE":       {"from": "contact.phone"},
		"URGENT":      {"from": "urgent"}
	}`, options(t))
	if got, want := f.Names(), []string{"CLOSEDATE", "CONTACT_ID", "CURRENCY_ID", "OPENED", "OPPORTUNITY", "PHONE", "PROBABILITY", "TITLE", "TYPE_ID", "URGENT"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	if got, want := f.Field("CONTACT_ID").RefKind, "customer"; got != want {
		t.Fatalf("ref kind = %q, want %q", got, want)
	}

	t.Run("OK", func(t *testing.T) {
		var asked []mapping.Ref
		got, err := f.Apply(context.Background(), json.RawMessage(`{"customer_id":"customer-1042","title":"Boiler","amount_minor":150000,
			"currency":"RUB","due_at":"2026-05-01T10:00:00Z","contact":{"phone":"+79000000001"},"urgent":false}`), resolver(&asked))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{
			"CONTACT_ID": "C-customer-1042", "TITLE": "Boiler", "OPPORTUNITY": "1500.00", "CURRENCY_ID": "RUB",
			"TYPE_ID": "SALE", "PROBABILITY": json.Number("40"), "OPENED": true,
			"CLOSEDATE": "2026-05-01T13:00:00", "PHONE": "+79000000001", "URGENT": false,
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fields = %#v\nwant %#v", got, want)
		}
		if want := []mapping.Ref{{Field: "customer_id", Path: "customer_id", Kind: "customer", ID: "customer-1042"}}; !reflect.DeepEqual(asked, want) {
			t.Fatalf("asked %v, want %v", asked, want)
		}
	})

	t.Run("AbsentOptionalFieldsLeftOut", func(t *testing.T) {
		var asked []mapping.Ref
		got, err := f.Apply(context.Background(), json.RawMessage(`{"customer_id":"c","title":"T","amount_minor":1,"currency":"JPY","contact":{}}`), resolver(&asked))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"CLOSEDATE", "PHONE", "URGENT"} {
			if v, ok := got[name]; ok {
				t.Errorf("%s = %v, want it left out", name, v)
			}
		}
		if got, want := got["OPPORTUNITY"], "1"; got != want {
			t.Errorf("OPPORTUNITY = %v, want %v (JPY has no minor unit)", got, want)
		}
	})

	t.Run("ErrUnknownCurrency", func(t *testing.T) {
		_, err := f.Apply(context.Background(), json.RawMessage(`{"customer_id":"c","title":"T","amount_minor":1,"currency":"XXY"}`), resolver(new([]mapping.Ref)))
		var ve *mapping.ValueError
		if !errors.As(err, &ve) || ve.Field != "amount_minor" {
			t.Fatalf("err = %v, want a ValueError on amount_minor", err)
		}
	})

	t.Run("FullDateIsThatDay", func(t *testing.T) {
		got, err := f.Apply(context.Background(), json.RawMessage(`{"customer_id":"c","title":"T","amount_minor":1,"currency":"RUB","due_at":"2026-12-31"}`), resolver(new([]mapping.Ref)))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := got["CLOSEDATE"], "2026-12-31T00:00:00"; got != want {
			t.Fatalf("CLOSEDATE = %v, want %v", got, want)
		}
	})

	t.Run("ErrBadDate", func(t *testing.T) {
		_, err := f.Apply(context.Background(), json.RawMessage(`{"customer_id":"c","title":"T","amount_minor":1,"currency":"RUB","due_at":"tomorrow"}`), resolver(new([]mapping.Ref)))
		var ve *mapping.ValueError
		if !errors.As(err, &ve) || ve.Field != "due_at" {
			t.Fatalf("err = %v, want a ValueError on due_at", err)
		}
	})

	t.Run("ErrResolver", func(t *testing.T) {
		_, err := f.Apply(context.Background(), json.RawMessage(`{"customer_id":"missing","title":"T","amount_minor":1,"currency":"RUB"}`), resolver(new([]mapping.Ref)))
		if err == nil || err.Error() != "not found: customer_id" {
			t.Fatalf("err = %v, want the resolver's own", err)
		}
	})
}

func TestApplyMoney(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `{"SUM": {"from": "amount_minor", "money": "minor", "currency": "fee_currency"}}`, options(t))
	for _, tc := range []struct {
		amount   string
		currency string
		want     string
	}{
		{"150000", "RUB", "1500.00"},
		{"5", "rub", "0.05"},
		{"100", "USD", "1.00"},
		{"1234", "KWD", "1.234"},
		{"7", "KWD", "0.007"},
		{"1500", "JPY", "1500"},
		{"-5", "RUB", "-0.05"},
		{"100000000000", "RUB", "1000000000.00"},
	} {
		got, err := f.Apply(context.Background(), json.RawMessage(fmt.Sprintf(`{"amount_minor":%s,"currency":"USD","fee_currency":%q}`, tc.amount, tc.currency)), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.amount, tc.currency, err)
		}
		if got := got["SUM"]; got != tc.want {
			t.Errorf("%s %s = %v, want %s", tc.amount, tc.currency, got, tc.want)
		}
	}
	for _, bad := range []string{`1.5`, `1e3`, `99999999999999999999`} {
		_, err := f.Apply(context.Background(), json.RawMessage(`{"amount_minor":`+bad+`,"fee_currency":"RUB"}`), nil)
		var ve *mapping.ValueError
		if !errors.As(err, &ve) || ve.Field != "amount_minor" {
			t.Errorf("amount %s: err = %v, want a ValueError on amount_minor", bad, err)
		}
	}
}

// A line's sum is its price times its quantity, exact, rounded half away
// from zero to the currency's minor unit.
func TestApplyMoneyTimes(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `{"T": {"from": "items", "row": {"S": {"from": "price_minor", "money": "minor", "times": "quantity"}}}}`, options(t))
	for _, tc := range []struct{ price, quantity, want string }{
		{"62500", "2", "1250.00"},
		{"12050", "3", "361.50"},
		{"1", "0.5", "0.01"},     // 0.5 kopeck rounds up
		{"-1", "0.5", "-0.01"},   // and away from zero
		{"1", "0.49", "0.00"},    // below half rounds down
		{"333", "0.333", "1.11"}, // 110.889 kopecks
		{"100", "1e3", "1000.00"},
		{"0", "7", "0.00"},
	} {
		got, err := f.Apply(context.Background(), json.RawMessage(`{"currency":"RUB","items":[{"price_minor":`+tc.price+`,"quantity":`+tc.quantity+`}]}`), nil)
		if err != nil {
			t.Fatalf("%s × %s: %v", tc.price, tc.quantity, err)
		}
		if got := got["T"].([]map[string]any)[0]["S"]; got != tc.want {
			t.Errorf("%s × %s = %v, want %s", tc.price, tc.quantity, got, tc.want)
		}
	}
	_, err := f.Apply(context.Background(), json.RawMessage(`{"currency":"RUB","items":[{"price_minor":9000000000000000000,"quantity":10}]}`), nil)
	var ve *mapping.ValueError
	if !errors.As(err, &ve) || ve.Field != "items[0].price_minor" {
		t.Fatalf("an overflowing sum: err = %v, want a ValueError on items[0].price_minor", err)
	}
	_, err = f.Apply(context.Background(), json.RawMessage(`{"currency":"RUB","items":[{"price_minor":5}]}`), nil)
	if !errors.As(err, &ve) || ve.Field != "items[0].quantity" {
		t.Fatalf("a missing factor: err = %v, want a ValueError on items[0].quantity", err)
	}
}

func TestFormatMinor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		minor  int64
		digits int
		want   string
	}{
		{0, 2, "0.00"}, {1, 2, "0.01"}, {10, 2, "0.10"}, {100, 2, "1.00"}, {-1, 3, "-0.001"},
		{7, 0, "7"}, {-9223372036854775808, 2, "-92233720368547758.08"},
	} {
		if got := mapping.FormatMinor(tc.minor, tc.digits); got != tc.want {
			t.Errorf("FormatMinor(%d, %d) = %q, want %q", tc.minor, tc.digits, got, tc.want)
		}
	}
}

func TestApplyRows(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `{
		"Товары": {"from": "items", "row": {
			"Номенклатура_Key": {"ref": "product_id"},
			"Количество": {"from": "quantity"},
			"Цена": {"from": "price_minor", "money": "minor"}}}
	}`, options(t))
	var asked []mapping.Ref
	got, err := f.Apply(context.Background(), json.RawMessage(`{"currency":"RUB","items":[
		{"product_id":"product-778","quantity":2,"price_minor":12050},
		{"product_id":"product-779","quantity":1,"price_minor":5}]}`), resolver(&asked))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"Товары": []map[string]any{
		{"Номенклатура_Key": "C-product-778", "Количество": json.Number("2"), "Цена": "120.50"},
		{"Номенклатура_Key": "C-product-779", "Количество": json.Number("1"), "Цена": "0.05"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields = %#v\nwant %#v", got, want)
	}
	if got, want := asked[1], (mapping.Ref{Field: "items[1].product_id", Path: "items.product_id", Kind: "product", ID: "product-779"}); got != want {
		t.Fatalf("second reference = %+v, want %+v", got, want)
	}

	t.Run("DeclaredWithBrackets", func(t *testing.T) {
		opts := options(t)
		opts.References = map[string]string{"items[].product_id": "product"}
		f := mustParse(t, `{"T": {"from": "items", "row": {"P": {"ref": "product_id"}}}}`, opts)
		if got, want := f.Field("T").Row.Field("P").RefKind, "product"; got != want {
			t.Fatalf("kind = %q, want %q", got, want)
		}
	})
}

// TestParseRefusals: every refusal names the path inside the mapping.
func TestParseRefusals(t *testing.T) {
	t.Parallel()
	noMoney := options(t)
	noMoney.MinorDigits = nil
	noZone := options(t)
	noZone.Zone = nil
	noRows := options(t)
	noRows.Rows = false
	for _, tc := range []struct {
		name    string
		mapping string
		opts    *mapping.Options
		want    string
	}{
		{"NotAnObject", `[]`, nil, `map.fields: must be a mapping of target fields`},
		{"Empty", `{}`, nil, `map.fields: maps no field`},
		{"BadFieldName", `{"A B": {"from": "title"}}`, nil, `map.fields.A B: is not a field name`},
		{"FieldNotObject", `{"TITLE": "title"}`, nil, `map.fields.TITLE: must be one of {from: …}, {ref: …}, {value: …}`},
		{"UnknownKey", `{"TITLE": {"from": "title", "trim": true}}`, nil, `map.fields.TITLE.trim: unknown key (want from, ref or value, and money, currency, times, date or row)`},
		{"NoSource", `{"TITLE": {"money": "minor"}}`, nil, `map.fields.TITLE: needs exactly one of from, ref and value`},
		{"TwoSources", `{"TITLE": {"from": "title", "value": "x"}}`, nil, `map.fields.TITLE: needs exactly one of from, ref and value`},
		{"FromEmpty", `{"TITLE": {"from": ""}}`, nil, `map.fields.TITLE.from: must be a non-empty string`},
		{"FromNotString", `{"TITLE": {"from": 3}}`, nil, `map.fields.TITLE.from: must be a non-empty string`},
		{"FromUnknownField", `{"TITLE": {"from": "name"}}`, nil, `map.fields.TITLE.from: the schema has no payload field "name"`},
		{"FromUnknownNested", `{"PHONE": {"from": "contact.fax"}}`, nil, `map.fields.PHONE.from: the schema has no payload field "contact.fax"`},
		{"FromNotAPath", `{"PHONE": {"from": "/contact/phone"}}`, nil, `map.fields.PHONE.from: "/contact/phone" is not a payload path (names joined by dots)`},
		{"FromObject", `{"C": {"from": "contact"}}`, nil, `map.fields.C.from: payload field "contact" is not a single value; map its members`},
		{"FromArray", `{"C": {"from": "tags"}}`, nil, `map.fields.C.from: payload field "tags" is not a single value; map its members`},
		{"ValueNull", `{"T": {"value": null}}`, nil, `map.fields.T.value: must be a string, a number or a boolean`},
		{"ValueObject", `{"T": {"value": {"a": 1}}}`, nil, `map.fields.T.value: must be a string, a number or a boolean`},
		{"ValueWithTransform", `{"T": {"value": 100, "money": "minor"}}`, nil, `map.fields.T.money: applies only to a {from: …} field`},
		{"RefWithDate", `{"T": {"ref": "customer_id", "date": "local"}}`, nil, `map.fields.T.date: applies only to a {from: …} field`},
		{"RefUnknownField", `{"CONTACT_ID": {"ref": "client_id"}}`, nil, `map.fields.CONTACT_ID.ref: the schema has no payload field "client_id"`},
		{"RefNotDeclared", `{"CONTACT_ID": {"ref": "title"}}`, nil, `map.fields.CONTACT_ID.ref: payload field "title" is not declared in references`},
		{"RefNotString", `{"CONTACT_ID": {"ref": "amount_minor"}}`, nil, `map.fields.CONTACT_ID.ref: payload field "amount_minor" is not a string; an external id is`},
		{"UnknownMoney", `{"OPPORTUNITY": {"from": "amount_minor", "money": "major"}}`, nil, `map.fields.OPPORTUNITY.money: unknown transform "major" (want "minor")`},
		{"MoneyNotInteger", `{"OPPORTUNITY": {"from": "ratio", "money": "minor"}}`, nil, `map.fields.OPPORTUNITY.money: payload field "ratio" is not an integer; amounts are integers in minor units`},
		{"MoneyOnString", `{"OPPORTUNITY": {"from": "title", "money": "minor"}}`, nil, `map.fields.OPPORTUNITY.money: payload field "title" is not an integer; amounts are integers in minor units`},
		{"MoneyUnknownCurrencyField", `{"OPPORTUNITY": {"from": "amount_minor", "money": "minor", "currency": "cur"}}`, nil, `map.fields.OPPORTUNITY.currency: the schema has no payload field "cur"`},
		{"MoneyCurrencyNotString", `{"OPPORTUNITY": {"from": "amount_minor", "money": "minor", "currency": "amount_minor"}}`, nil, `map.fields.OPPORTUNITY.currency: payload field "amount_minor" is not a string; a currency code is`},
		{"MoneyNotTaken", `{"OPPORTUNITY": {"from": "amount_minor", "money": "minor"}}`, &noMoney, `map.fields.OPPORTUNITY.money: this target takes no amounts`},
		{"CurrencyWithoutMoney", `{"T": {"from": "title", "currency": "currency"}}`, nil, `map.fields.T.currency: applies only with money: minor`},
		{"TimesWithoutMoney", `{"T": {"from": "amount_minor", "times": "amount_minor"}}`, nil, `map.fields.T.times: applies only with money: minor`},
		{"TimesUnknownField", `{"T": {"from": "items", "row": {"S": {"from": "price_minor", "money": "minor", "times": "qty"}}}}`, nil, `map.fields.T.row.S.times: the schema has no payload field "qty"`},
		{"TimesNotNumber", `{"T": {"from": "items", "row": {"S": {"from": "price_minor", "money": "minor", "times": "product_id"}}}}`, nil, `map.fields.T.row.S.times: payload field "product_id" is not a number`},
		{"UnknownDate", `{"CLOSEDATE": {"from": "due_at", "date": "utc"}}`, nil, `map.fields.CLOSEDATE.date: unknown transform "utc" (want "local")`},
		{"DateNotString", `{"CLOSEDATE": {"from": "amount_minor", "date": "local"}}`, nil, `map.fields.CLOSEDATE.date: payload field "amount_minor" is not a string; a date-time is`},
		{"DateNoZone", `{"CLOSEDATE": {"from": "due_at", "date": "local"}}`, &noZone, `map.fields.CLOSEDATE.date: this target has no time zone for local dates`},
		{"TwoTransforms", `{"X": {"from": "amount_minor", "money": "minor", "date": "local"}}`, nil, `map.fields.X.date: payload field "amount_minor" is not a string; a date-time is`},
		{"RowsNotTaken", `{"T": {"from": "items", "row": {"P": {"from": "quantity"}}}}`, &noRows, `map.fields.T.row: this target takes no tabular sections`},
		{"RowOfScalars", `{"T": {"from": "tags", "row": {"P": {"from": "x"}}}}`, nil, `map.fields.T.from: payload field "tags" is not an array of objects; a tabular section needs one`},
		{"RowOfNonArray", `{"T": {"from": "title", "row": {"P": {"from": "x"}}}}`, nil, `map.fields.T.from: payload field "title" is not an array of objects; a tabular section needs one`},
		{"RowUnknownField", `{"T": {"from": "items", "row": {"P": {"from": "title"}}}}`, nil, `map.fields.T.row.P.from: the schema has no payload field "title"`},
		{"RowUnknownKey", `{"T": {"from": "items", "row": {"P": {"from": "quantity", "sum": 1}}}}`, nil, `map.fields.T.row.P.sum: unknown key (want from, ref or value, and money, currency, times, date or row)`},
		{"RowRefNotDeclared", `{"T": {"from": "items", "row": {"P": {"ref": "product_id"}}}}`, &mapping.Options{References: map[string]string{"product_id": "product"}, Rows: true}, `map.fields.T.row.P.ref: payload field "items.product_id" is not declared in references`},
		{"RowEmpty", `{"T": {"from": "items", "row": {}}}`, nil, `map.fields.T.row: maps no field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := options(t)
			if tc.opts != nil {
				opts = *tc.opts
			}
			_, err := mapping.Parse(json.RawMessage(tc.mapping), "map.fields", json.RawMessage(dealSchema), opts)
			var me *mapping.Error
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a *mapping.Error", err)
			}
			if got := err.Error(); got != tc.want {
				t.Fatalf("err = %s\nwant  %s", got, tc.want)
			}
		})
	}
}

func TestParseBadSchema(t *testing.T) {
	t.Parallel()
	_, err := mapping.Parse(json.RawMessage(`{"T": {"from": "title"}}`), "map.fields", json.RawMessage(`[]`), mapping.Options{})
	if err == nil || err.Error() != "schema: not a JSON Schema object" {
		t.Fatalf("err = %v", err)
	}
}
