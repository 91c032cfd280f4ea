package intent

import (
	"slices"
	"strings"
	"testing"
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

func TestShape(t *testing.T) {
	t.Parallel()
	inv := builtinCatalog.byName["invoice.create"].shape
	if got, want := inv.props, []string{"order_id", "organization_id", "customer_id", "currency", "items", "due_date"}; !slices.Equal(got, want) {
		t.Fatalf("props = %v, want %v", got, want)
	}
	if got, want := inv.optional, []string{"due_date"}; !slices.Equal(got, want) {
		t.Fatalf("optional = %v, want %v", got, want)
	}
	if got, want := inv.children["items"].props, []string{"product_id", "quantity", "unit", "price_minor"}; !slices.Equal(got, want) {
		t.Fatalf("items props = %v, want %v", got, want)
	}
	charge := builtinCatalog.byName["payment.charge"].shape
	if got, want := charge.optional, []string{"customer_id", "description", "receipt"}; !slices.Equal(got, want) {
		t.Fatalf("charge optional = %v, want %v", got, want)
	}
	if got, want := builtinCatalog.byName["crm.callback.create"].shape.dateTimes, []string{"due_at"}; !slices.Equal(got, want) {
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

// builtinCatalog is the catalog of the built-ins.
var builtinCatalog = Builtin()
