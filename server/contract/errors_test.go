package contract_test

import (
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
)

func TestErrIntentNotAllowed(t *testing.T) {
	t.Parallel()
	allowed := []string{"invoice.create", "payment.refund"}
	ce := mustRefuse(t, contract.ErrIntentNotAllowed("sql.exec", allowed), codes.IntentNotAllowed, "intent")
	for _, w := range []string{`"sql.exec"`, "invoice.create", "payment.refund"} {
		if !strings.Contains(ce.Message, w) {
			t.Errorf("message %q lacks %q", ce.Message, w)
		}
	}
	long := strings.Repeat("x", 5000) + "\x00\n"
	ce = mustRefuse(t, contract.ErrIntentNotAllowed(long, allowed), codes.IntentNotAllowed, "intent")
	if strings.Contains(ce.Message, strings.Repeat("x", 65)) || strings.ContainsAny(ce.Message, "\x00\n") {
		t.Fatalf("message reflects the input verbatim: %.200s", ce.Message)
	}
	ce = mustRefuse(t, contract.ErrIntentNotAllowed("\xff\xfe<script>", allowed), codes.IntentNotAllowed, "intent")
	if strings.Contains(ce.Message, "\xff") {
		t.Fatalf("message carries invalid UTF-8: %q", ce.Message)
	}
}

func TestErrKeyMissing(t *testing.T) {
	t.Parallel()
	ce := mustRefuse(t, contract.ErrKeyMissing(), codes.KeyMissing, contract.KeyField)
	if !strings.Contains(ce.Message, "Idempotency-Key") {
		t.Fatalf("message %q does not say where the key goes", ce.Message)
	}
}

func TestError_Error(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *contract.Error
		want string
	}{
		{&contract.Error{Status: 400, Code: "VALIDATION_ERROR", Field: "items[0].quantity", Message: "must be greater than 0"},
			"VALIDATION_ERROR (items[0].quantity): must be greater than 0"},
		{&contract.Error{Status: 400, Code: "VALIDATION_ERROR", Message: "the body is not a JSON object"},
			"VALIDATION_ERROR: the body is not a JSON object"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
