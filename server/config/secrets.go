package config

import (
	"errors"
	"fmt"
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
// The targets are not built while any is (CheckSecrets).
func (c Config) MissingSecrets(env func(string) string) []SecretSetting {
	var out []SecretSetting
	for _, s := range c.requiredSecrets() {
		if s.Env == "" || env(s.Env) == "" {
			out = append(out, s)
		}
	}
	return out
}

// CheckSecrets refuses targets configured at a real system without their
// secrets, each error naming the key and its variable (never a value): a
// real system is never called with a simulator's secret, another
// variable's, or none.
func (c Config) CheckSecrets(env func(string) string) error {
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
// simulated even when the variable is empty: CheckSecrets refuses it.
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
