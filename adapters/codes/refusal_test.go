package codes

import "testing"

func TestRefusal_Error(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *Refusal
		want string
	}{
		{&Refusal{Status: 400, Code: "VALIDATION_ERROR", Field: "items[0].quantity", Message: "must be greater than 0"},
			"VALIDATION_ERROR (items[0].quantity): must be greater than 0"},
		{&Refusal{Status: 400, Code: "VALIDATION_ERROR", Message: "the body is not a JSON object"},
			"VALIDATION_ERROR: the body is not a JSON object"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
