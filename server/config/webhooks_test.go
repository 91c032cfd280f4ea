package config_test

import (
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// Endpoints that cannot be sent to, or to safely, are refused at load,
// each with its setting named.
func TestWebhooksRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, yaml, want string }{
		{"PlainHTTPOutside", "webhooks:\n  - {url: 'http://erp.example/hook', secret_env: WH, events: [operation.succeeded]}\n", "webhooks[0].url: is plain HTTP outside this machine"},
		{"UnknownEvent", "webhooks:\n  - {url: 'https://erp.example/hook', secret_env: WH, events: [operation.done]}\n", `webhooks[0].events: "operation.done" is no event`},
		{"NoSecret", "webhooks:\n  - {url: 'https://erp.example/hook', events: [operation.succeeded]}\n", "webhooks[0].secret_env: name the environment variable"},
		{"UserInURL", "webhooks:\n  - {url: 'https://u:p@erp.example/hook', secret_env: WH, events: [operation.failed]}\n", "webhooks[0].url: must not carry a user or password"},
		{"SameName", "webhooks:\n  - {url: 'https://erp.example/hook', secret_env: WH, events: [operation.failed]}\n  - {url: 'https://erp.example/hook', secret_env: WH, events: [operation.unknown]}\n", `webhooks[1].name: "erp.example/hook" names two endpoints`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Load(configtest.Write(t, c.yaml), configtest.NoEnv, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("load: %v, want %q", err, c.want)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		cfg, err := config.Load(configtest.Write(t, "webhooks:\n  - {url: 'http://127.0.0.1:9000/hook', secret_env: WH, events: [operation.succeeded, approval.waiting]}\n"), configtest.NoEnv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.WebhookSecrets(func(string) string { return "not-a-secret" }); err == nil || strings.Contains(err.Error(), "not-a-secret") ||
			!strings.Contains(err.Error(), "webhooks[0].secret_env: the variable WH does not hold a secret") {
			t.Fatalf("a malformed secret: %v", err)
		}
		if _, err := cfg.WebhookSecrets(func(string) string { return "whsec_c2VjcmV0IHNlY3JldCBzZWNyZXQh" }); err != nil {
			t.Fatal(err)
		}
	})
}
