package contract

import (
	"testing"
)

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
