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
// real system (not the built-in simulator), target by target: YooKassa's
// secret key once base_url is set; 1C's user and password, each once
// named, with base_url (over OData, both always); Bitrix24's webhook URL (itself a secret) once its
// variable is named.
func (c Config) requiredSecrets() []SecretSetting {
	var out []SecretSetting
	for _, name := range c.Targets.Names() {
		t := c.Targets[name]
		if t.Simulated() {
			continue
		}
		switch t.Kind {
		case KindOneCOData:
			// OData takes Basic auth only: a 1C user and its password,
			// always.
			out = append(out, SecretSetting{t.Setting("username_env"), t.UsernameEnv},
				SecretSetting{t.Setting("password_env"), t.PasswordEnv})
		case KindOneC:
			if t.UsernameEnv != "" {
				out = append(out, SecretSetting{t.Setting("username_env"), t.UsernameEnv})
			}
			if t.PasswordEnv != "" {
				out = append(out, SecretSetting{t.Setting("password_env"), t.PasswordEnv})
			}
		case KindBitrix24:
			out = append(out, SecretSetting{t.Setting("webhook_url_env"), t.WebhookURLEnv})
			if t.ApplicationTokenEnv != "" {
				out = append(out, SecretSetting{t.Setting("application_token_env"), t.ApplicationTokenEnv})
			}
		case KindYooKassa:
			out = append(out, SecretSetting{t.Setting("secret_key_env"), t.SecretKeyEnv})
		}
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

// Simulated lists the target instances that nothing in the configuration
// points at, and that the built-in simulators will therefore serve. A
// target whose configuration names an environment variable is not
// simulated even when the variable is empty: CheckSecrets refuses it.
func (c Config) Simulated(env func(string) string) []string {
	var out []string
	for _, name := range c.Targets.Names() {
		if c.Targets[name].Simulated() {
			out = append(out, name)
		}
	}
	return out
}
