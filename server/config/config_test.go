package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// currencies are the currencies the gateway knows, as main passes them.
var currencies = yookassa.Currencies()

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	t.Run("Defaults", func(t *testing.T) {
		cfg, err := config.Load("", configtest.NoEnv, currencies)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Listen != "127.0.0.1:8080" || cfg.Contour != "test" || cfg.Retry.MaxAttempts != 4 || time.Duration(cfg.Approval.TTL) != 24*time.Hour {
			t.Fatalf("defaults %+v", cfg)
		}
		if got := cfg.Simulated(configtest.NoEnv); len(got) != 3 {
			t.Fatalf("simulated %v", got)
		}
	})
	t.Run("FileThenEnv", func(t *testing.T) {
		p := configtest.Write(t, "contour: prod\nretry: { max_attempts: 2 }\ntargets:\n  onec: { base_url: \"https://1c.example/acc\", password_env: ONEC_PW }\n")
		env := map[string]string{"ONCEGATE_RETRY_MAX_ATTEMPTS": "3", "ONCEGATE_TARGETS_ONEC_TIMEOUT_MS": "1500", "ONCEGATE_RETRY_JITTER": "false", "ONCEGATE_RETENTION_BITRIX24": "8760h", "ONCEGATE_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}
		cfg, err := config.Load(p, func(k string) string { return env[k] }, currencies)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Contour != "prod" || cfg.Retry.MaxAttempts != 3 || cfg.Targets["onec"].TimeoutMS != 1500 || cfg.RetryPolicy().Jitter {
			t.Fatalf("config %+v", cfg)
		}
		if cfg.Retention.Bitrix24 != config.Duration(8760*time.Hour) || cfg.Retention.OneC != 0 {
			t.Fatalf("retention %+v", cfg.Retention)
		}
		if nets, err := cfg.ProxyNets(); err != nil || len(nets) != 2 || nets[0].String() != "127.0.0.1/32" || nets[1].String() != "10.0.0.0/8" {
			t.Fatalf("trusted proxies %v: %v %v", cfg.TrustedProxies, nets, err)
		}
		if got := cfg.Simulated(configtest.NoEnv); strings.Join(got, ",") != "crm,payments" {
			t.Fatalf("simulated %v", got)
		}
	})
	t.Run("ErrUnknownKey", func(t *testing.T) {
		_, err := config.Load(configtest.Write(t, "retry: { max_attempt: 2 }\n"), configtest.NoEnv, currencies)
		if err == nil || !strings.Contains(err.Error(), "max_attempt") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrValuesNamed", func(t *testing.T) {
		p := configtest.Write(t, `listen: nowhere
contour: "has space"
targets:
  onec: { base_url: "https://user:pw@1c.example", timeout_ms: 0 }
  yookassa: { base_url: "https://api.yookassa.ru/v3", shop_id: "1" }
retention: { default: 1h, yookassa: 2h }
trusted_proxies: [127.0.0.1, "proxy.example"]
limits:
  invoice.delete: { max_items: 1 }
`)
		_, err := config.Load(p, configtest.NoEnv, currencies)
		if err == nil {
			t.Fatal("bad config accepted")
		}
		for _, want := range []string{"listen:", "contour:", "targets.onec.base_url: must not hold credentials", "targets.onec.timeout_ms", "targets.yookassa: base_url needs shop_id and secret_key_env", "retention.default", "retention.yookassa: must be at least 24h", "trusted_proxies: \"proxy.example\" is neither"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
		if strings.Contains(err.Error(), "pw@") {
			t.Errorf("error echoes a credential: %v", err)
		}
	})
	t.Run("ErrEnvValue", func(t *testing.T) {
		_, err := config.Load("", func(k string) string {
			if k == "ONCEGATE_RETRY_MAX_ATTEMPTS" {
				return "many"
			}
			return ""
		}, currencies)
		if err == nil || !strings.Contains(err.Error(), "ONCEGATE_RETRY_MAX_ATTEMPTS") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("SecretsFromEnvOnly", func(t *testing.T) {
		p := configtest.Write(t, "targets:\n  yookassa: { base_url: \"https://api.yookassa.ru/v3\", shop_id: \"1\", secret_key_env: \"live_sk_123 456\" }\n")
		_, err := config.Load(p, configtest.NoEnv, currencies)
		if err == nil || !strings.Contains(err.Error(), "targets.yookassa.secret_key_env") || strings.Contains(err.Error(), "live_sk_123") {
			t.Fatalf("err = %v", err)
		}
	})
}

// Currency codes in limits are compared with requests' codes, which are
// upper case: any spelling of a known code is upper-cased at load, and a
// code the gateway does not know is refused, naming the setting.
func TestLimitsCurrencyCodes(t *testing.T) {
	t.Parallel()
	for _, spelling := range []string{"rub", "RUB", "Rub"} {
		t.Run(spelling, func(t *testing.T) {
			p := configtest.Write(t, fmt.Sprintf("limits:\n  payment.charge: { currencies: [%[1]s], amount_ceiling: { %[1]s: 1000 } }\n", spelling))
			cfg, err := config.Load(p, configtest.NoEnv, currencies)
			if err != nil {
				t.Fatal(err)
			}
			lim := cfg.Limits["payment.charge"]
			if got, want := strings.Join(lim.Currencies, ","), "RUB"; got != want {
				t.Errorf("currencies = %q, want %q", got, want)
			}
			if got, want := lim.AmountCeiling["RUB"], int64(1000); got != want || len(lim.AmountCeiling) != 1 {
				t.Errorf("amount_ceiling = %v, want RUB: %d", lim.AmountCeiling, want)
			}
		})
	}
	t.Run("ErrUnknownCode", func(t *testing.T) {
		p := configtest.Write(t, "limits:\n  payment.charge: { currencies: [RUB, rubles], amount_ceiling: { xyz: 1000 } }\n  payment.refund: { amount_ceiling: { rub: 1, RUB: 2 } }\n")
		_, err := config.Load(p, configtest.NoEnv, currencies)
		if err == nil {
			t.Fatal("unknown currency codes accepted")
		}
		for _, want := range []string{
			`limits.payment.charge.currencies: "rubles" is not a three-letter ISO 4217 currency code`,
			`limits.payment.charge.amount_ceiling.xyz: "xyz" is not a three-letter ISO 4217 currency code`,
			"limits.payment.refund.amount_ceiling: RUB and rub are the same currency",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		}
	})
}

// duplicates: reads each intent's window and action.
func TestDuplicatesOverride(t *testing.T) {
	t.Parallel()
	p := configtest.Write(t, "duplicates:\n  invoice.create: { window: 72h, action: warn }\n  payment.refund: { action: off }\n")
	cfg, err := config.Load(p, configtest.NoEnv, currencies)
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Duplicates["invoice.create"]; time.Duration(d.Window) != 72*time.Hour || d.Action != "warn" || cfg.Duplicates["payment.refund"].Action != "off" {
		t.Fatalf("duplicates = %+v", cfg.Duplicates)
	}
	if _, err := config.Load(configtest.Write(t, "duplicates:\n  invoice.create: { windw: 72h }\n"), configtest.NoEnv, currencies); err == nil {
		t.Fatal("an unknown key under duplicates was accepted")
	}
}

// time_zone names where the people who decide are; unset, the system's.
func TestTimeZone(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(configtest.Write(t, "time_zone: Europe/Moscow\n"), configtest.NoEnv, currencies)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Location().String(); got != "Europe/Moscow" {
		t.Fatalf("location %q", got)
	}
	if cfg, _ := config.Load(configtest.Write(t, "contour: test\n"), configtest.NoEnv, currencies); cfg.Location() != time.Local {
		t.Fatalf("unset: %v, want the system's", cfg.Location())
	}
	if _, err := config.Load(configtest.Write(t, "time_zone: Moscow/Kremlin\n"), configtest.NoEnv, currencies); err == nil || !strings.Contains(err.Error(), "time_zone") {
		t.Fatalf("an unknown zone: %v", err)
	}
}

// max_connections bounds the connections held open at once: a default
// within the memory goal, set by the file or ONCEGATE_MAX_CONNECTIONS,
// and at least 1.
func TestMaxConnections(t *testing.T) {
	t.Parallel()
	t.Run("Default", func(t *testing.T) {
		cfg, err := config.Load("", configtest.NoEnv, currencies)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.MaxConnections, config.DefaultMaxConnections; got != want {
			t.Fatalf("max_connections = %d, want %d", got, want)
		}
	})
	t.Run("FileThenEnv", func(t *testing.T) {
		p := configtest.Write(t, "max_connections: 2000\n")
		cfg, err := config.Load(p, configtest.NoEnv, currencies)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.MaxConnections, 2000; got != want {
			t.Fatalf("from the file: %d, want %d", got, want)
		}
		cfg, err = config.Load(p, func(k string) string {
			if k == "ONCEGATE_MAX_CONNECTIONS" {
				return "64"
			}
			return ""
		}, currencies)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.MaxConnections, 64; got != want {
			t.Fatalf("from the environment: %d, want %d", got, want)
		}
	})
	t.Run("ErrInvalid", func(t *testing.T) {
		for _, v := range []string{"0", "-1"} {
			_, err := config.Load(configtest.Write(t, "max_connections: "+v+"\n"), configtest.NoEnv, currencies)
			if err == nil || !strings.Contains(err.Error(), "max_connections: "+v+" must be at least 1") {
				t.Errorf("max_connections: %s: err = %v", v, err)
			}
		}
		_, err := config.Load("", func(k string) string {
			if k == "ONCEGATE_MAX_CONNECTIONS" {
				return "many"
			}
			return ""
		}, currencies)
		if err == nil || !strings.Contains(err.Error(), "ONCEGATE_MAX_CONNECTIONS") {
			t.Errorf("ONCEGATE_MAX_CONNECTIONS=many: err = %v", err)
		}
		if _, err := config.Load(configtest.Write(t, "max_connections: lots\n"), configtest.NoEnv, currencies); err == nil {
			t.Error("max_connections: lots accepted")
		}
	})
}
