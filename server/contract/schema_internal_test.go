package contract

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// TestCompileSchema_Failure: a schema that does not compile is an error, which init
// turns into a panic; nothing half-loaded is ever used.
func TestCompileSchema_Failure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
	}{
		{"NotJSON", `{"type":`},
		{"BadType", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"objekt"}`},
		{"BadPattern", `{"type":"object","properties":{"a":{"type":"string","pattern":"(["}}}`},
		{"BadMaxLength", `{"type":"object","properties":{"a":{"type":"string","maxLength":-1}}}`},
		{"BadRequired", `{"type":"object","required":"a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, _, err := compileSchema("broken", []byte(tt.raw)); err == nil {
				t.Fatal("compiled a broken schema")
			} else if !strings.Contains(err.Error(), "schema broken") {
				t.Fatalf("error %q does not name the schema", err)
			}
		})
	}
}

// TestMustLoad_Panics: init panics on a missing or broken schema.
func TestMustLoad_Panics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fsys fstest.MapFS
	}{
		{"Missing", fstest.MapFS{}},
		{"Broken", fstest.MapFS{"schemas/x.json": {Data: []byte(`{"type":"object","properties":{"a":{"pattern":"(["}}}`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no panic")
				} else if !strings.HasPrefix(r.(string), "contract: ") {
					t.Fatalf("panic %v", r)
				}
			}()
			mustLoad(tt.fsys, []*Intent{{Name: "x"}})
		})
	}
	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		fsys := fstest.MapFS{"schemas/x.json": {Data: []byte(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`)}}
		idx := mustLoad(fsys, []*Intent{{Name: "x"}})
		if idx["x"] == nil || idx["x"].compiled == nil {
			t.Fatal("not loaded")
		}
	})
}

// TestRegistryLoaded: init compiled every schema and read its shape.
func TestRegistryLoaded(t *testing.T) {
	t.Parallel()
	for _, in := range registry {
		if in.compiled == nil || in.shape == nil || len(in.Schema) == 0 {
			t.Fatalf("%s: not loaded", in.Name)
		}
		if byName[in.Name] != in {
			t.Fatalf("%s: not indexed", in.Name)
		}
	}
	if got, want := len(byName), 7; got != want {
		t.Fatalf("len(byName) = %d, want %d", got, want)
	}
	entries, err := schemaFiles.ReadDir("schemas")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(entries), len(registry); got != want {
		t.Fatalf("%d schema files for %d intents: every file must belong to a whitelisted intent", got, want)
	}
}

func TestShape(t *testing.T) {
	t.Parallel()
	inv := byName["invoice.create"].shape
	if got, want := inv.props, []string{"order_id", "organization_id", "customer_id", "currency", "items", "due_date"}; !slices.Equal(got, want) {
		t.Fatalf("props = %v, want %v", got, want)
	}
	if got, want := inv.optional, []string{"due_date"}; !slices.Equal(got, want) {
		t.Fatalf("optional = %v, want %v", got, want)
	}
	if got, want := inv.children["items"].props, []string{"product_id", "quantity", "unit", "price_minor"}; !slices.Equal(got, want) {
		t.Fatalf("items props = %v, want %v", got, want)
	}
	charge := byName["payment.charge"].shape
	if got, want := charge.optional, []string{"customer_id", "description", "receipt"}; !slices.Equal(got, want) {
		t.Fatalf("charge optional = %v, want %v", got, want)
	}
	if got, want := byName["crm.callback.create"].shape.dateTimes, []string{"due_at"}; !slices.Equal(got, want) {
		t.Fatalf("dateTimes = %v, want %v", got, want)
	}
	root := map[string]any{"items": []any{map[string]any{}}}
	if got := inv.at(root, []string{"items", "0"}); got != inv.children["items"] {
		t.Fatalf("at(items/0) = %v", got)
	}
	if got := inv.at(root, []string{"items", "7"}); got != nil {
		t.Fatalf("at(items/7) = %v, want nil", got)
	}
}

func TestFieldPath(t *testing.T) {
	t.Parallel()
	root := map[string]any{
		"items": []any{map[string]any{"quantity": 1}, map[string]any{"x": []any{1}}},
		"0":     map[string]any{"1": true},
	}
	tests := []struct {
		loc  []string
		want string
	}{
		{nil, ""},
		{[]string{"items"}, "items"},
		{[]string{"items", "0", "quantity"}, "items[0].quantity"},
		{[]string{"items", "1", "x", "0"}, "items[1].x[0]"},
		{[]string{"0", "1"}, "0.1"},
		{[]string{"missing", "0"}, "missing.0"},
	}
	for _, tt := range tests {
		if got := fieldPath(root, tt.loc); got != tt.want {
			t.Errorf("fieldPath(%v) = %q, want %q", tt.loc, got, tt.want)
		}
	}
}

func TestLuhn(t *testing.T) {
	t.Parallel()
	for d, want := range map[string]bool{
		"4111111111111111": true, "4111111111111112": false, "79927398713": true, "79927398710": false,
		"378282246310005": true, "6011000990139424": true, "0": true, "18": true, "19": false,
	} {
		if got := luhn(d); got != want {
			t.Errorf("luhn(%s) = %v, want %v", d, got, want)
		}
	}
}
