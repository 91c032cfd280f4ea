package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// TestYooKassaTimeouts: YooKassa may take up to 30 s before it answers a
// payment (with 500, then it tries to cancel), so the default wait for a
// payment is longer than that, and settle_ms is no shorter.
func TestYooKassaTimeouts(t *testing.T) {
	t.Parallel()
	y := config.Default().Targets[config.TargetPayments]
	if y.TimeoutMS < 35000 {
		t.Errorf("targets.yookassa.timeout_ms = %d, want at least 35000", y.TimeoutMS)
	}
	if y.ReadTimeoutMS < 1 || y.ReadTimeoutMS > y.TimeoutMS {
		t.Errorf("targets.yookassa.read_timeout_ms = %d, want 1..timeout_ms", y.ReadTimeoutMS)
	}
	if y.SettleMS < y.TimeoutMS {
		t.Errorf("targets.yookassa.settle_ms = %d, want at least timeout_ms", y.SettleMS)
	}
}

// TestYooKassaReceipts: a shop that issues 54-FZ receipts is configured
// under targets.yookassa.receipts; wrong codes are refused by key.
func TestYooKassaReceipts(t *testing.T) {
	t.Parallel()
	load := func(yaml string) (config.Config, error) {
		path := filepath.Join(t.TempDir(), "oncegate.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return config.Load(path, configtest.NoEnv, []string{"RUB"})
	}
	cfg, err := load("targets:\n  yookassa:\n    receipts: { required: true, tax_system_code: 1, vat_code: 1, payment_subject: commodity, payment_mode: full_payment }\n")
	if err != nil {
		t.Fatal(err)
	}
	want := config.YooKassaReceiptsConfig{Required: true, TaxSystemCode: 1, VatCode: 1, PaymentSubject: "commodity", PaymentMode: "full_payment"}
	if got := cfg.Targets[config.TargetPayments].Receipts; got != want {
		t.Fatalf("receipts = %+v, want %+v", got, want)
	}
	for key, yaml := range map[string]string{
		"targets.yookassa.receipts.tax_system_code": "targets: { yookassa: { receipts: { tax_system_code: 7 } } }\n",
		"targets.yookassa.receipts.vat_code":        "targets: { yookassa: { receipts: { vat_code: 13 } } }\n",
		"targets.yookassa.receipts.payment_mode":    "targets: { yookassa: { receipts: { payment_mode: \"Full Payment\" } } }\n",
	} {
		if _, err := load(yaml); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error naming it", key, err)
		}
	}
}

// TestShopName: the shop payments go to is named for the people who
// approve them under targets.<payments>.shop_name; a name that is blank,
// multi-line or too long is refused by key, and no other kind of target
// takes the setting.
func TestShopName(t *testing.T) {
	t.Parallel()
	load := func(yaml string, env map[string]string) (config.Config, error) {
		path := filepath.Join(t.TempDir(), "oncegate.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return config.Load(path, func(k string) string { return env[k] }, []string{"RUB"})
	}
	cfg, err := load("targets:\n  payments:\n    shop_name: Интернет-магазин «Ромашка»\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Targets[config.TargetPayments].ShopName, "Интернет-магазин «Ромашка»"; got != want {
		t.Fatalf("shop_name = %q, want %q", got, want)
	}
	cfg, err = load("listen: 127.0.0.1:8080\n", map[string]string{"ONCEGATE_TARGETS_PAYMENTS_SHOP_NAME": "Ромашка"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Targets[config.TargetPayments].ShopName, "Ромашка"; got != want {
		t.Fatalf("shop_name from the environment = %q, want %q", got, want)
	}
	for yaml, key := range map[string]string{
		"targets: { payments: { shop_name: \"  \" } }\n":                               "targets.payments.shop_name",
		"targets: { payments: { shop_name: \"a\\nb\" } }\n":                            "targets.payments.shop_name",
		"targets: { payments: { shop_name: \" Ромашка\" } }\n":                         "targets.payments.shop_name",
		"targets: { payments: { shop_name: \"" + strings.Repeat("я", 201) + "\" } }\n": "targets.payments.shop_name",
		"targets: { onec: { shop_name: Ромашка } }\n":                                  "targets.onec.shop_name",
	} {
		if _, err := load(yaml, nil); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error naming %s", yaml, err, key)
		}
	}
}
