package server

import (
	"fmt"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
)

// MissingSecrets lists the configuration keys whose environment variable
// is empty although the target is configured, for serve to warn about.
func (c Config) MissingSecrets(env func(string) string) []string {
	var out []string
	if c.Targets.YooKassa.BaseURL != "" && (c.Targets.YooKassa.SecretKeyEnv == "" || env(c.Targets.YooKassa.SecretKeyEnv) == "") {
		out = append(out, "targets.yookassa.secret_key_env")
	}
	if c.Targets.OneC.BaseURL != "" && c.Targets.OneC.PasswordEnv != "" && env(c.Targets.OneC.PasswordEnv) == "" {
		out = append(out, "targets.onec.password_env")
	}
	return out
}

// Simulated lists the target systems that nothing in the configuration
// points at, and that the built-in simulators will therefore serve.
func (c Config) Simulated(env func(string) string) []string {
	var out []string
	if c.Targets.OneC.BaseURL == "" {
		out = append(out, "onec")
	}
	if c.Targets.Bitrix24.WebhookURLEnv == "" || env(c.Targets.Bitrix24.WebhookURLEnv) == "" {
		out = append(out, "bitrix24")
	}
	if c.Targets.YooKassa.BaseURL == "" {
		out = append(out, "yookassa")
	}
	return out
}

// BuildTargets makes the adapters of the three target systems. Secrets
// are read from the environment variables the configuration names; a
// target the configuration leaves out talks to the simulators at simURL.
// Errors name the configuration key, never a secret.
func BuildTargets(c Config, simURL string, env func(string) string) (map[string]adapters.Target, error) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t := c.Targets

	oc := onec.Config{BaseURL: t.OneC.BaseURL, Timeout: ms(t.OneC.TimeoutMS)}
	if oc.BaseURL == "" {
		oc.BaseURL = simURL + "/onec"
	} else {
		if t.OneC.UsernameEnv != "" {
			oc.Username = env(t.OneC.UsernameEnv)
		}
		if t.OneC.PasswordEnv != "" {
			oc.Password = env(t.OneC.PasswordEnv)
		}
	}
	one, err := onec.New(oc)
	if err != nil {
		return nil, fmt.Errorf("targets.onec: %w", err)
	}

	webhook := ""
	if t.Bitrix24.WebhookURLEnv != "" {
		webhook = env(t.Bitrix24.WebhookURLEnv)
	}
	if webhook == "" {
		webhook = simURL + "/bitrix24/rest/1/sim-webhook/"
	}
	crm, err := bitrix24.New(bitrix24.Config{WebhookURL: webhook, Timeout: ms(t.Bitrix24.TimeoutMS)})
	if err != nil {
		return nil, fmt.Errorf("targets.bitrix24 (the URL in $%s): %w", t.Bitrix24.WebhookURLEnv, err)
	}

	yc := yookassa.Config{BaseURL: t.YooKassa.BaseURL, ShopID: t.YooKassa.ShopID, Timeout: ms(t.YooKassa.TimeoutMS)}
	if t.YooKassa.SecretKeyEnv != "" {
		yc.SecretKey = env(t.YooKassa.SecretKeyEnv)
	}
	if yc.BaseURL == "" {
		yc.BaseURL = simURL + "/yookassa/v3"
	}
	if yc.SecretKey == "" {
		// No secret in the environment: the simulators' own default, so a
		// demo against `oncegate sim` works; a real YooKassa refuses it and
		// payments fail with TARGET_PERMISSION_DENIED. Serve warns.
		yc.SecretKey = simSecret(env)
	}
	pay, err := yookassa.New(yc)
	if err != nil {
		return nil, fmt.Errorf("targets.yookassa: %w", err)
	}
	return map[string]adapters.Target{"onec": one, "crm": crm, "payments": pay}, nil
}

// simSecret is the secret the built-in YooKassa simulator expects.
func simSecret(env func(string) string) string {
	if s := env("YOOKASSA_SECRET_KEY"); s != "" {
		return s
	}
	return sim.DefaultYooKassaSecret
}
