package engine

import (
	"strings"
	"testing"
)

func TestMaskSecrets(t *testing.T) {
	for _, c := range []struct{ in, gone, kept string }{
		{"auth failed for og_fjPSCdP_Eh2m6OQqENSGQdwSbybum5xBrwj2gLJbTE0", "fjPSCdP", "og_***"},
		{"Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop", "Bearer ***"},
		{"connect: password=hunter2; host=srv-1c.corp.local", "hunter2", "srv-1c.corp.local"},
		{`{"secret_key":"live_abc123"}`, "live_abc123", "secret_key"},
		{"GET https://shop:topsecret@api.example/v3", "topsecret", "https://***@api.example"},
		{"POST https://portal.bitrix24.ru/rest/1/q1w2e3r4t5y6/crm.activity.add", "q1w2e3r4t5y6", "/rest/1/***"},
		{"card 4111 1111 1111 1111 declined", "4111 1111", "declined"},
	} {
		got := maskSecrets(c.in)
		if strings.Contains(got, c.gone) || !strings.Contains(got, c.kept) {
			t.Errorf("maskSecrets(%q) = %q: want %q gone and %q kept", c.in, got, c.gone, c.kept)
		}
	}
}
