package contract_test

import (
	"github.com/oncegate/oncegate/adapters/codes/codestest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
)

func TestErrIntentNotAllowed(t *testing.T) {
	t.Parallel()
	allowed := []string{"invoice.create", "payment.refund"}
	ce := codestest.WantRefusal(t, contract.ErrIntentNotAllowed("sql.exec", allowed), codes.IntentNotAllowed, "intent")
	for _, w := range []string{`"sql.exec"`, "invoice.create", "payment.refund"} {
		if !strings.Contains(ce.Message, w) {
			t.Errorf("message %q lacks %q", ce.Message, w)
		}
	}
	long := strings.Repeat("x", 5000) + "\x00\n"
	ce = codestest.WantRefusal(t, contract.ErrIntentNotAllowed(long, allowed), codes.IntentNotAllowed, "intent")
	if strings.Contains(ce.Message, strings.Repeat("x", 65)) || strings.ContainsAny(ce.Message, "\x00\n") {
		t.Fatalf("message reflects the input verbatim: %.200s", ce.Message)
	}
	ce = codestest.WantRefusal(t, contract.ErrIntentNotAllowed("\xff\xfe<script>", allowed), codes.IntentNotAllowed, "intent")
	if strings.Contains(ce.Message, "\xff") {
		t.Fatalf("message carries invalid UTF-8: %q", ce.Message)
	}
}

func TestErrKeyMissing(t *testing.T) {
	t.Parallel()
	ce := codestest.WantRefusal(t, contract.ErrKeyMissing("test", "invoice.create"), codes.KeyMissing, contract.KeyField)
	if !strings.Contains(ce.Message, "Idempotency-Key") {
		t.Fatalf("message %q does not say where the key goes", ce.Message)
	}
}
