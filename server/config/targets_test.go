package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// load is Load of body with the variables of vars.
func load(t *testing.T, body string, vars map[string]string) (config.Config, error) {
	t.Helper()
	return config.Load(configtest.Write(t, body), func(k string) string { return vars[k] }, currencies)
}

// mustLoad is load that fails the test on an error.
func mustLoad(t *testing.T, body string, vars map[string]string) config.Config {
	t.Helper()
	cfg, err := load(t, body, vars)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// wantErr fails the test unless err holds every one of want.
func wantErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want an error with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

// The targets are named instances of a kind; the old keys onec, bitrix24
// and yookassa without a kind mean the instances onec, crm and payments.
func TestTargets(t *testing.T) {
	t.Parallel()
	t.Run("Defaults", func(t *testing.T) {
		cfg := mustLoad(t, "", nil)
		if got, want := strings.Join(cfg.Targets.Names(), ","), "onec,crm,payments"; got != want {
			t.Fatalf("targets %s, want %s", got, want)
		}
		for name, kind := range map[string]string{"onec": "onec", "crm": "bitrix24", "payments": "yookassa"} {
			if got := cfg.Targets[name].Kind; got != kind {
				t.Errorf("%s is of kind %s, want %s", name, got, kind)
			}
		}
		if got, want := strings.Join(cfg.Simulated(configtest.NoEnv), ","), "onec,crm,payments"; got != want {
			t.Errorf("simulated %s, want %s", got, want)
		}
	})

	t.Run("EmptyTargets", func(t *testing.T) {
		cfg := mustLoad(t, "targets:\n", nil)
		if got, want := strings.Join(cfg.Simulated(configtest.NoEnv), ","), "onec,crm,payments"; got != want {
			t.Errorf("simulated %s, want %s", got, want)
		}
	})

	t.Run("OldKeys", func(t *testing.T) {
		cfg := mustLoad(t, `targets:
  onec:     { base_url: "https://1c.example/acc", username_env: ONEC_USER, password_env: ONEC_PASSWORD, timeout_ms: 1500 }
  bitrix24: { webhook_url_env: B24_WEBHOOK, settle_ms: 45000, rate: { per_second: 5, burst: 250 } }
  yookassa: { base_url: "https://api.yookassa.ru/v3", shop_id: "123456", secret_key_env: SHOP_SECRET }
retention: { bitrix24: 8760h }
`, nil)
		if got, want := strings.Join(cfg.Targets.Names(), ","), "onec,crm,payments"; got != want {
			t.Fatalf("targets %s, want %s", got, want)
		}
		onec, crm, pay := cfg.Targets["onec"], cfg.Targets["crm"], cfg.Targets["payments"]
		if onec.Kind != "onec" || onec.BaseURL != "https://1c.example/acc" || onec.TimeoutMS != 1500 || onec.PasswordEnv != "ONEC_PASSWORD" {
			t.Errorf("onec %+v", onec)
		}
		if crm.Kind != "bitrix24" || crm.Key != "bitrix24" || crm.WebhookURLEnv != "B24_WEBHOOK" || crm.SettleMS != 45000 || crm.Rate.Burst != 250 || crm.TimeoutMS != 5000 {
			t.Errorf("crm %+v", crm)
		}
		if pay.Kind != "yookassa" || pay.Key != "yookassa" || pay.ShopID != "123456" || pay.TimeoutMS != 35000 || pay.ReadTimeoutMS != 10000 {
			t.Errorf("payments %+v", pay)
		}
		if got, want := cfg.TargetRetention("crm"), 8760*time.Hour; got != want {
			t.Errorf("crm's retention %v, want %v", got, want)
		}
		if got := cfg.Simulated(configtest.NoEnv); len(got) != 0 {
			t.Errorf("simulated %v, want none", got)
		}
		// Messages name the key as configured.
		if got := cfg.MissingSecrets(configtest.NoEnv); len(got) != 4 || got[2].Key != "targets.bitrix24.webhook_url_env" || got[3].Key != "targets.yookassa.secret_key_env" {
			t.Errorf("missing secrets %v", got)
		}
	})

	t.Run("Named", func(t *testing.T) {
		cfg := mustLoad(t, `targets:
  onec: { kind: onec, base_url: "https://1c.example/main" }
  bitrix24: { webhook_url_env: B24_WEBHOOK }
  buh:
    kind: onec
    base_url: https://1c.example/buh
    username_env: BUH_USER
    password_env: BUH_PASSWORD
    timeout_ms: 7000
    settle_ms: 120000
    retention: 2160h
  trade: { kind: onec }
  shop2: { kind: yookassa, base_url: "https://api.yookassa.ru/v3", shop_id: "777", secret_key_env: SHOP2_SECRET }
`, nil)
		if got, want := strings.Join(cfg.Targets.Names(), ","), "onec,crm,payments,buh,shop2,trade"; got != want {
			t.Fatalf("targets %s, want %s", got, want)
		}
		buh := cfg.Targets["buh"]
		if buh.Kind != "onec" || buh.Key != "buh" || buh.TimeoutMS != 7000 || buh.SettleMS != 120000 || buh.PasswordEnv != "BUH_PASSWORD" {
			t.Errorf("buh %+v", buh)
		}
		if got, want := cfg.TargetRetention("buh"), 2160*time.Hour; got != want {
			t.Errorf("buh's retention %v, want %v", got, want)
		}
		if got := cfg.TargetRetention("trade"); got != 0 {
			t.Errorf("trade's retention %v, want 0 (retention.default)", got)
		}
		if got := cfg.Targets["shop2"]; got.TimeoutMS != 35000 || got.SettleMS != 60000 {
			t.Errorf("shop2 lacks its kind's defaults: %+v", got)
		}
		if got, want := strings.Join(cfg.Simulated(configtest.NoEnv), ","), "payments,trade"; got != want {
			t.Errorf("simulated %s, want %s", got, want)
		}
	})

	t.Run("ErrNamedTwice", func(t *testing.T) {
		_, err := load(t, "targets:\n  bitrix24: { webhook_url_env: A }\n  crm: { kind: bitrix24, webhook_url_env: B }\n", nil)
		wantErr(t, err, "targets.crm: the target crm is configured already, as targets.bitrix24")
		_, err = load(t, "targets:\n  payments: { kind: yookassa }\n  yookassa: { shop_id: \"1\" }\n", nil)
		wantErr(t, err, "targets.yookassa: the target payments is configured already, as targets.payments")
		_, err = load(t, "targets:\n  bitrix24: { kind: bitrix24 }\n  crm: { kind: bitrix24 }\n", nil)
		wantErr(t, err, "the target crm is configured already")
	})

	t.Run("ErrKind", func(t *testing.T) {
		_, err := load(t, "targets:\n  buh: { kind: sap, base_url: \"https://x.example\" }\n", nil)
		wantErr(t, err, `targets.buh.kind: "sap" is not a kind of target (onec, onec_odata, bitrix24, yookassa)`)
		_, err = load(t, "targets:\n  buh: { base_url: \"https://x.example\" }\n", nil)
		wantErr(t, err, "targets.buh.kind: not set")
		_, err = load(t, "targets:\n  bitrix24: { kind: onec }\n", nil)
		wantErr(t, err, "targets.bitrix24: this key means the target crm, of kind bitrix24")
		_, err = load(t, "targets:\n  payments: { kind: bitrix24 }\n", nil)
		wantErr(t, err, "targets.payments.kind: payments is a built-in target, which the built-in intents run on: its kind is yookassa, not bitrix24")
		if _, err = load(t, "targets:\n  crm: { kind: bitrix24, time_zone: Europe/Kaliningrad }\n", nil); err != nil {
			t.Errorf("a CRM target's time zone: %v", err)
		}
		_, err = load(t, "targets:\n  crm: { kind: bitrix24, time_zone: Mars/Olympus }\n", nil)
		wantErr(t, err, "targets.crm.time_zone", "Mars/Olympus")
		if _, err = load(t, "targets:\n  onec: { kind: onec_odata }\n", nil); err != nil {
			t.Errorf("the built-in 1C target of kind onec_odata: %v", err)
		}
	})

	t.Run("KeyField", func(t *testing.T) {
		cfg, err := load(t, "targets:\n  buh: { kind: onec_odata, key_field: КлючОперации }\n", nil)
		if err != nil || cfg.Targets["buh"].KeyField != "КлючОперации" {
			t.Fatalf("key_field of an onec_odata target: %v", err)
		}
		_, err = load(t, "targets:\n  buh: { kind: onec_odata, key_field: \"Ключ Операции\" }\n", nil)
		wantErr(t, err, "targets.buh.key_field", "must name a string attribute")
		_, err = load(t, "targets:\n  buh: { kind: onec, key_field: КлючОперации }\n", nil)
		wantErr(t, err, "targets.buh", "key_field")
	})

	t.Run("ErrSettingOfAnotherKind", func(t *testing.T) {
		_, err := load(t, "targets:\n  buh: { kind: onec, shop_id: \"1\" }\n", nil)
		wantErr(t, err, "line 2: targets.buh.shop_id: not a setting of a target of kind onec")
		if strings.Count(err.Error(), "line 2") != 1 {
			t.Errorf("the line is named more than once: %v", err)
		}
		_, err = load(t, "targets:\n  bitrix24: { base_url: \"https://b24.example\" }\n", nil)
		wantErr(t, err, "targets.bitrix24.base_url: not a setting of a target of kind bitrix24")
		_, err = load(t, "targets:\n  crm: { kind: bitrix24, rate: { per_secnd: 1 } }\n", nil)
		wantErr(t, err, "targets.crm:", "per_secnd")
	})

	t.Run("ErrName", func(t *testing.T) {
		_, err := load(t, "targets:\n  Buh.Main: { kind: onec }\n", nil)
		wantErr(t, err, "targets.Buh.Main: a target's name is")
	})

	t.Run("ErrValuesNamedByInstance", func(t *testing.T) {
		_, err := load(t, `targets:
  buh: { kind: onec, base_url: "ftp://1c.example", password_env: "not a name", timeout_ms: 0, settle_ms: -1, retention: 1h }
  shop2: { kind: yookassa, base_url: "https://api.yookassa.ru/v3" }
  onec: { retention: 48h }
retention: { onec: 72h }
`, nil)
		wantErr(t, err, "targets.buh.base_url:", "targets.buh.password_env: is not an environment variable name", "targets.buh.timeout_ms:",
			"targets.buh.settle_ms:", "targets.buh.retention: must be at least 24h", "targets.shop2: base_url needs shop_id and secret_key_env",
			"targets.onec.retention: retention.onec says it too")
	})

	t.Run("Env", func(t *testing.T) {
		cfg := mustLoad(t, "targets:\n  buh: { kind: onec }\n", map[string]string{
			"ONCEGATE_TARGETS_BITRIX24_TIMEOUT_MS":      "2500", // the old name of crm
			"ONCEGATE_TARGETS_BUH_BASE_URL":             "https://1c.example/buh",
			"ONCEGATE_TARGETS_BUH_RETENTION":            "48h",
			"ONCEGATE_TARGETS_ONEC_TIMEOUT_MS":          "1500",
			"ONCEGATE_TARGETS_YOOKASSA_READ_TIMEOUT_MS": "3000",
			"ONCEGATE_TARGETS_CRM_RATE_BURST":           "25",
		})
		if got := cfg.Targets["crm"]; got.TimeoutMS != 2500 || got.Rate.Burst != 25 {
			t.Errorf("crm %+v", got)
		}
		if got := cfg.Targets["buh"]; got.BaseURL != "https://1c.example/buh" || got.Retention != config.Duration(48*time.Hour) {
			t.Errorf("buh %+v", got)
		}
		if cfg.Targets["onec"].TimeoutMS != 1500 || cfg.Targets["payments"].ReadTimeoutMS != 3000 {
			t.Errorf("onec %+v, payments %+v", cfg.Targets["onec"], cfg.Targets["payments"])
		}
		_, err := load(t, "targets:\n  buh: { kind: onec }\n", map[string]string{"ONCEGATE_TARGETS_BUH_SHOP_ID": "1"})
		wantErr(t, err, "ONCEGATE_TARGETS_BUH_SHOP_ID: shop_id is not a setting of a target of kind onec")
	})

	// The configuration docs/targets.md shows (Setting it up) loads as it is written.
	t.Run("OneCODataAndReferences", func(t *testing.T) {
		cfg := mustLoad(t, `targets:
  buh:
    kind: onec_odata
    base_url: https://1c.example/buh/odata/standard.odata
    username_env: BUH_USER
    password_env: BUH_PASSWORD
    time_zone: Europe/Moscow
    timeout_ms: 5000
    settle_ms: 120000
    references:
      organization: { catalog: Catalog_Организации, by: ИНН }
      counterparty: { catalog: Catalog_Контрагенты, by: ИНН }
      product:      { catalog: Catalog_Номенклатура, by: Code }
      warehouse:    { catalog: Catalog_Склады, by: Code }
  crm:
    kind: bitrix24
    webhook_url_env: BITRIX24_WEBHOOK_URL
    references:
      customer: { entity: contact }
      company:  { entity: company }
`, nil)
		if got := cfg.Targets["buh"].References["counterparty"]; got.Catalog != "Catalog_Контрагенты" || got.By != "ИНН" {
			t.Errorf("buh's counterparty reference %+v", got)
		}
		if got := cfg.Targets["crm"].References["customer"].Entity; got != "contact" {
			t.Errorf("crm's customer reference is entity %q", got)
		}
		_, err := load(t, "targets:\n  crm: { kind: bitrix24, references: { customer: { catalog: X, by: Code } } }\n", nil)
		wantErr(t, err, "targets.crm.references.customer: needs entity")
	})
}

// The secrets of every instance configured at a real system are required,
// each named by its key: targets.buh.password_env.
func TestTargetSecrets(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, `targets:
  buh:   { kind: onec, base_url: "https://1c.example/buh", username_env: BUH_USER, password_env: BUH_PASSWORD }
  trade: { kind: onec, base_url: "https://1c.example/trade", username_env: TRADE_USER, password_env: TRADE_PASSWORD }
  other: { kind: onec, username_env: OTHER_USER }
`, nil)
	vars := map[string]string{"BUH_USER": "u", "BUH_PASSWORD": "p", "TRADE_USER": "u"}
	env := func(k string) string { return vars[k] }
	got := cfg.MissingSecrets(env)
	if len(got) != 1 || got[0] != (config.SecretSetting{Key: "targets.trade.password_env", Env: "TRADE_PASSWORD"}) {
		t.Fatalf("missing %v, want trade's password alone (other is simulated)", got)
	}
	err := cfg.CheckSecrets(env)
	wantErr(t, err, "targets.trade.password_env: $TRADE_PASSWORD is empty or unset")
	vars["TRADE_PASSWORD"] = "p"
	if err := cfg.CheckSecrets(env); err != nil {
		t.Fatal(err)
	}
	if err := cfg.CheckSecrets(configtest.NoEnv); err == nil || len(strings.Split(err.Error(), "\n")) != 4 {
		t.Errorf("want four settings named: %v", err)
	}

	// Over OData a 1C user and its password are always required, even
	// unnamed; an instance left unconfigured needs neither.
	cfg = mustLoad(t, `targets:
  buh:   { kind: onec_odata, base_url: "https://1c.example/buh/odata/standard.odata", password_env: BUH_PASSWORD }
  trade: { kind: onec_odata, username_env: TRADE_USER, password_env: TRADE_PASSWORD }
`, nil)
	want := []config.SecretSetting{{Key: "targets.buh.username_env"}, {Key: "targets.buh.password_env", Env: "BUH_PASSWORD"}}
	if got := cfg.MissingSecrets(configtest.NoEnv); !slices.Equal(got, want) {
		t.Fatalf("missing %v, want %v", got, want)
	}
	wantErr(t, cfg.CheckSecrets(configtest.NoEnv), "targets.buh.username_env: not set")
}
