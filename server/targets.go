package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/contract"
)

// SecretSetting is a configuration key naming the environment variable
// that holds a target's secret.
type SecretSetting struct {
	Key string // e.g. targets.yookassa.secret_key_env
	Env string // the variable it names; "" when unset
}

// requiredSecrets are the secret settings of the targets configured at a
// real system (not the built-in simulator): YooKassa's secret key once
// base_url is set; 1C's user and password, each once named, with base_url;
// Bitrix24's webhook URL (itself a secret) once its variable is named.
func (c Config) requiredSecrets() []SecretSetting {
	t := c.Targets
	var out []SecretSetting
	if t.OneC.BaseURL != "" {
		if t.OneC.UsernameEnv != "" {
			out = append(out, SecretSetting{"targets.onec.username_env", t.OneC.UsernameEnv})
		}
		if t.OneC.PasswordEnv != "" {
			out = append(out, SecretSetting{"targets.onec.password_env", t.OneC.PasswordEnv})
		}
	}
	if t.Bitrix24.WebhookURLEnv != "" {
		out = append(out, SecretSetting{"targets.bitrix24.webhook_url_env", t.Bitrix24.WebhookURLEnv})
	}
	if t.YooKassa.BaseURL != "" {
		out = append(out, SecretSetting{"targets.yookassa.secret_key_env", t.YooKassa.SecretKeyEnv})
	}
	return out
}

// MissingSecrets lists the secret settings of targets configured at a
// real system whose environment variable is unnamed, empty or unset.
// BuildTargets refuses to build the targets while any is.
func (c Config) MissingSecrets(env func(string) string) []SecretSetting {
	var out []SecretSetting
	for _, s := range c.requiredSecrets() {
		if s.Env == "" || env(s.Env) == "" {
			out = append(out, s)
		}
	}
	return out
}

// checkSecrets refuses targets configured at a real system without their
// secrets, each error naming the key and its variable (never a value): a
// real system is never called with a simulator's secret, another
// variable's, or none.
func (c Config) checkSecrets(env func(string) string) error {
	var errs []error
	for _, s := range c.MissingSecrets(env) {
		if s.Env == "" {
			errs = append(errs, fmt.Errorf("%s: not set; the target is configured at a real system, so name the environment variable holding its secret", s.Key))
		} else {
			errs = append(errs, fmt.Errorf("%s: $%s is empty or unset; the target is configured at a real system and needs its secret there", s.Key, s.Env))
		}
	}
	return errors.Join(errs...)
}

// Simulated lists the target systems that nothing in the configuration
// points at, and that the built-in simulators will therefore serve. A
// target whose configuration names an environment variable is not
// simulated even when the variable is empty: BuildTargets refuses it.
func (c Config) Simulated(env func(string) string) []string {
	var out []string
	if c.Targets.OneC.BaseURL == "" {
		out = append(out, "onec")
	}
	if c.Targets.Bitrix24.WebhookURLEnv == "" {
		out = append(out, "bitrix24")
	}
	if c.Targets.YooKassa.BaseURL == "" {
		out = append(out, "yookassa")
	}
	return out
}

// Simulators are the built-in simulators that the targets the
// configuration leaves out talk to.
type Simulators struct {
	URL            string // where they answer, e.g. http://127.0.0.1:9001
	YooKassaSecret string // the secret key the YooKassa simulator accepts
}

// BuildTargets makes the adapters of the three target systems. Secrets
// are read from the environment variables the configuration names; a
// target configured at a real system without its secret is refused
// (checkSecrets). A target the configuration leaves out talks to sims,
// with the simulators' own credentials. Errors name the configuration
// key, never a secret.
func BuildTargets(c Config, sims Simulators, env func(string) string) (map[string]adapters.Target, error) {
	if err := c.checkSecrets(env); err != nil {
		return nil, err
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t := c.Targets

	oc := onec.Config{BaseURL: t.OneC.BaseURL, Timeout: ms(t.OneC.TimeoutMS)}
	if oc.BaseURL == "" {
		oc.BaseURL = sims.URL + "/onec"
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

	webhook := sims.URL + "/bitrix24/rest/1/sim-webhook/"
	if t.Bitrix24.WebhookURLEnv != "" {
		webhook = env(t.Bitrix24.WebhookURLEnv)
	}
	crm, err := bitrix24.New(bitrix24.Config{WebhookURL: webhook, Timeout: ms(t.Bitrix24.TimeoutMS)})
	if err != nil {
		return nil, fmt.Errorf("targets.bitrix24 (the URL in $%s): %w", t.Bitrix24.WebhookURLEnv, err)
	}

	yc := yookassa.Config{BaseURL: t.YooKassa.BaseURL, ShopID: t.YooKassa.ShopID, Timeout: ms(t.YooKassa.TimeoutMS)}
	if yc.BaseURL == "" {
		// The built-in simulator knows only its own secret.
		yc.BaseURL, yc.SecretKey = sims.URL+"/yookassa/v3", sims.YooKassaSecret
	} else {
		yc.SecretKey = env(t.YooKassa.SecretKeyEnv)
	}
	pay, err := yookassa.New(yc)
	if err != nil {
		return nil, fmt.Errorf("targets.yookassa: %w", err)
	}
	return map[string]adapters.Target{contract.TargetOneC: one, contract.TargetCRM: crm, contract.TargetPayments: pay}, nil
}
