package engine

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/redact"
)

// secretTarget is a target that holds a 1C user and password.
type secretTarget struct{ adapters.Target }

func (secretTarget) Secrets() []redact.Secret {
	return []redact.Secret{redact.Basic("rtu", "pa55-w0rd"), redact.Name("rtu")}
}

func (secretTarget) Name() string { return "onec" }

func (secretTarget) Execute(context.Context, adapters.Op) (adapters.Result, error) {
	return adapters.Result{}, nil
}

// What a target said is journaled and logged with the targets' secrets
// and the credential patterns masked, and cut short.
func TestDetail(t *testing.T) {
	e := New(Config{}, nil, map[string]adapters.Target{"onec": secretTarget{}}, nil)
	for _, c := range []struct{ def, gone, kept string }{
		{"user rtu: password pa55-w0rd refused", "rtu", "refused"},
		{"Authorization: Basic cnR1OnBhNTUtdzByZA==", "cnR1OnBh", "Basic ***"},
		{"auth failed for og_fjPSCdP_Eh2m6OQqENSGQdwSbybum5xBrwj2gLJbTE0", "fjPSCdP", "og_***"},
		{"Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop", "Bearer ***"},
		{"connect: password=hunter2; host=srv-1c.corp.local", "hunter2", "srv-1c.corp.local"},
		{`{"secret_key":"live_abc123"}`, "live_abc123", "secret_key"},
		{"GET https://shop:topsecret@api.example/v3", "topsecret", "https://***@api.example"},
		{"POST https://portal.bitrix24.ru/rest/1/q1w2e3r4t5y6/crm.activity.add", "q1w2e3r4t5y6", "/rest/1/***"},
		{"card 4111 1111 1111 1111 declined", "4111 1111", "declined"},
		{strings.Repeat("x", 3000), strings.Repeat("x", 2001), "…"},
	} {
		got := e.detail(errors.New(c.def))
		if strings.Contains(got, c.gone) || !strings.Contains(got, c.kept) {
			t.Errorf("detail(%q) = %q: want %q gone and %q kept", c.def, got, c.gone, c.kept)
		}
	}
	if got := e.detail(nil); got != "" {
		t.Errorf("detail(nil) = %q", got)
	}
}
