package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// credentialsSeen is a simulator behind a recorder of the credentials
// each call carried: the Basic auth user and password, and for Bitrix24
// the webhook path (its secret).
type credentialsSeen struct {
	url  string
	sims *sim.Server
	mu   sync.Mutex
	got  map[string]string // "onec", "bitrix24", "yookassa" → "user:password" or the path
}

func newCredentialsSeen(t *testing.T) *credentialsSeen {
	t.Helper()
	c := &credentialsSeen{got: map[string]string{}}
	simulators := sim.New()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		c.mu.Lock()
		switch target, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); target {
		case sim.Bitrix24:
			c.got[target] = r.URL.Path
		default:
			c.got[target] = user + ":" + pass
		}
		c.mu.Unlock()
		simulators.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	c.url, c.sims = hs.URL, simulators
	return c
}

func (c *credentialsSeen) seen(target string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.got[target]
}

// lookUpAll asks every target for a key it never saw: each answers "not
// found" only when it accepted the gateway's credentials.
func lookUpAll(t *testing.T, targets map[string]adapters.Target) {
	t.Helper()
	ctx := context.Background()
	for system, op := range map[string]adapters.Op{
		"onec":     {Key: "test:invoice.create:cred-1:v1", Intent: "invoice.create", Attempt: 1, CreatedAt: time.Now()},
		"crm":      {Key: "test:crm.callback:create:cred-1:v1", Intent: "crm.callback.create", Attempt: 1, CreatedAt: time.Now()},
		"payments": {Key: "test:payment.charge:cred-1:v1", Intent: "payment.charge", Attempt: 1, CreatedAt: time.Now()},
	} {
		if _, err := targets[system].Lookup(ctx, op); !errors.Is(err, adapters.ErrNotFound) {
			t.Errorf("%s: look-up = %v, want not found", system, err)
		}
	}
}

// A target configured at a real system (not the built-in simulator)
// without its secret refuses to build, naming the setting and its
// variable; it never falls back to the simulator's secret or to another
// variable.
func TestBuildTargetsRefusesMissingSecrets(t *testing.T) {
	t.Parallel()
	// The simulator's own variable is set: it must not stand in.
	vars := map[string]string{"YOOKASSA_SECRET_KEY": "sim-secret-key", "ONEC_USER_SET": "integration"}
	env := func(k string) string { return vars[k] }
	for _, c := range []struct {
		name string
		set  func(*config.Config)
		want []string
	}{
		{"YooKassaUnset", func(cfg *config.Config) {
			cfg.Targets["payments"].BaseURL, cfg.Targets["payments"].SecretKeyEnv = "https://api.yookassa.ru/v3", "SHOP_SECRET"
		}, []string{"targets.payments.secret_key_env", "$SHOP_SECRET"}},
		{"YooKassaUnnamed", func(cfg *config.Config) {
			cfg.Targets["payments"].BaseURL = "https://api.yookassa.ru/v3"
		}, []string{"targets.payments.secret_key_env: not set"}},
		{"OneCPassword", func(cfg *config.Config) {
			cfg.Targets["onec"].BaseURL, cfg.Targets["onec"].UsernameEnv, cfg.Targets["onec"].PasswordEnv = "https://1c.example/acc", "ONEC_USER_SET", "ONEC_PW"
		}, []string{"targets.onec.password_env", "$ONEC_PW"}},
		{"OneCUser", func(cfg *config.Config) {
			cfg.Targets["onec"].BaseURL, cfg.Targets["onec"].UsernameEnv = "https://1c.example/acc", "ONEC_USER"
		}, []string{"targets.onec.username_env", "$ONEC_USER"}},
		{"Bitrix24Webhook", func(cfg *config.Config) {
			cfg.Targets["crm"].Key, cfg.Targets["crm"].WebhookURLEnv = "bitrix24", "B24_WEBHOOK" // configured under its old key
		}, []string{"targets.bitrix24.webhook_url_env", "$B24_WEBHOOK"}},
		{"NamedOneCPassword", func(cfg *config.Config) {
			buh := config.NewTarget("buh", config.KindOneC)
			buh.BaseURL, buh.UsernameEnv, buh.PasswordEnv = "https://1c.example/buh", "ONEC_USER_SET", "BUH_PW"
			cfg.Targets["buh"] = buh
		}, []string{"targets.buh.password_env", "$BUH_PW"}},
		{"NamedYooKassa", func(cfg *config.Config) {
			shop := config.NewTarget("shop2", config.KindYooKassa)
			shop.BaseURL, shop.SecretKeyEnv = "https://api.yookassa.ru/v3", "SHOP2_SECRET"
			cfg.Targets["shop2"] = shop
		}, []string{"targets.shop2.secret_key_env", "$SHOP2_SECRET"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			c.set(&cfg)
			_, err := buildTargets(cfg, builtInSimulators("http://127.0.0.1:9"), env)
			if err == nil {
				t.Fatal("targets built without their secret")
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			if strings.Contains(err.Error(), "sim-secret-key") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

// A target configured at a real URL gets the secrets of the variables its
// configuration names, and nothing else; a target left to the built-in
// simulator gets the simulator's. The "real" systems here are the
// simulators on loopback, configured as a real system is.
func TestBuildTargetsSecrets(t *testing.T) {
	t.Parallel()
	t.Run("Configured", func(t *testing.T) {
		t.Parallel()
		seen := newCredentialsSeen(t)
		// The portal's webhook, not the simulator's own.
		portal := sim.DefaultBitrix24Portal()
		portal.WebhookSecret = "portal-secret"
		seen.sims.SetBitrix24Portal(portal)
		cfg := config.Default()
		cfg.Targets["onec"].BaseURL, cfg.Targets["onec"].UsernameEnv, cfg.Targets["onec"].PasswordEnv = seen.url+"/onec", "ONEC_USER", "ONEC_PW"
		cfg.Targets["crm"].WebhookURLEnv = "B24_WEBHOOK"
		cfg.Targets["payments"].BaseURL, cfg.Targets["payments"].SecretKeyEnv = seen.url+"/yookassa/v3", "SHOP_SECRET"
		vars := map[string]string{
			"ONEC_USER": "integration", "ONEC_PW": "onec-pw",
			"B24_WEBHOOK": seen.url + "/bitrix24/rest/1/portal-secret/",
			"SHOP_SECRET": sim.YooKassaSecret(), // what the simulator accepts
			// A variable the configuration does not name is never read.
			"YOOKASSA_SECRET_KEY": "not-the-shop-secret",
		}
		targets, err := buildTargets(cfg, builtInSimulators("http://127.0.0.1:9"), func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		lookUpAll(t, targets)
		for target, want := range map[string]string{
			sim.OneC:     "integration:onec-pw",
			sim.Bitrix24: "/bitrix24/rest/1/portal-secret/user.admin.json", // the look-up's last call
			sim.YooKassa: "demo-shop:" + sim.YooKassaSecret(),
		} {
			if got := seen.seen(target); got != want {
				t.Errorf("%s received %q, want %q", target, got, want)
			}
		}
	})
	t.Run("Simulator", func(t *testing.T) {
		t.Parallel()
		seen := newCredentialsSeen(t)
		cfg := config.Default()
		// A variable named for a secret does not make a target real.
		cfg.Targets["payments"].SecretKeyEnv = "SHOP_SECRET"
		vars := map[string]string{"SHOP_SECRET": "live-shop-secret"}
		targets, err := buildTargets(cfg, builtInSimulators(seen.url), func(k string) string { return vars[k] })
		if err != nil {
			t.Fatal(err)
		}
		lookUpAll(t, targets)
		for target, want := range map[string]string{
			sim.OneC:     ":",
			sim.Bitrix24: "/bitrix24/rest/1/sim-webhook/user.admin.json", // the look-up's last call
			sim.YooKassa: "demo-shop:" + sim.DefaultYooKassaSecret,
		} {
			if got := seen.seen(target); got != want {
				t.Errorf("%s received %q, want %q", target, got, want)
			}
		}
	})
}

// The settings MissingSecrets names are those buildTargets refuses.
func TestMissingSecrets(t *testing.T) {
	t.Parallel()
	p := configtest.Write(t, "targets:\n  yookassa: { base_url: \"http://127.0.0.1:9001/yookassa/v3\", shop_id: \"demo-shop\", secret_key_env: YOOKASSA_SECRET_KEY }\n")
	cfg, err := config.Load(p, configtest.NoEnv, yookassa.Currencies())
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.MissingSecrets(configtest.NoEnv); len(got) != 1 || got[0].Key != "targets.yookassa.secret_key_env" || got[0].Env != "YOOKASSA_SECRET_KEY" {
		t.Fatalf("missing %v", got)
	}
	// A target at a real URL without its secret is refused at start.
	if _, err := buildTargets(cfg, builtInSimulators("http://127.0.0.1:9001"), configtest.NoEnv); err == nil || !strings.Contains(err.Error(), "targets.yookassa.secret_key_env: $YOOKASSA_SECRET_KEY is empty or unset") {
		t.Fatalf("err = %v", err)
	}
	set := func(k string) string { return map[string]string{"YOOKASSA_SECRET_KEY": "s"}[k] }
	if got := cfg.MissingSecrets(set); len(got) != 0 {
		t.Fatalf("missing %v with the secret set", got)
	}
	if _, err := buildTargets(cfg, builtInSimulators("http://127.0.0.1:9001"), set); err != nil {
		t.Fatal(err)
	}
}

// A firm's two 1C bases are two instances of kind onec: each is built at
// its own address with its own credentials, an operation for one reaches
// that one, and the redaction masks the secrets of both.
func TestBuildTargetsNamedInstances(t *testing.T) {
	t.Parallel()
	seen := newCredentialsSeen(t)
	p := configtest.Write(t, fmt.Sprintf(`targets:
  buh:   { kind: onec, base_url: "%[1]s/onec", username_env: BUH_USER, password_env: BUH_PASSWORD, timeout_ms: 2000 }
  trade: { kind: onec, base_url: "%[1]s/onec", username_env: TRADE_USER, password_env: TRADE_PASSWORD }
`, seen.url))
	vars := map[string]string{"BUH_USER": "buh-user", "BUH_PASSWORD": "buh-secret-pw", "TRADE_USER": "trade-user", "TRADE_PASSWORD": "trade-secret-pw"}
	env := func(k string) string { return vars[k] }
	cfg, err := config.Load(p, env, yookassa.Currencies())
	if err != nil {
		t.Fatal(err)
	}
	targets, err := buildTargets(cfg, builtInSimulators(seen.url), env)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(targets), 5; got != want {
		t.Fatalf("%d targets, want %d (onec, crm, payments, buh, trade)", got, want)
	}
	for _, name := range []string{"buh", "trade", "onec"} {
		op := adapters.Op{Key: "test:invoice.create:" + name + "-1:v1", Intent: "invoice.create", Attempt: 1, CreatedAt: time.Now()}
		if _, err := targets[name].Lookup(context.Background(), op); !errors.Is(err, adapters.ErrNotFound) {
			t.Fatalf("%s: look-up = %v, want not found", name, err)
		}
		want := map[string]string{"buh": "buh-user:buh-secret-pw", "trade": "trade-user:trade-secret-pw", "onec": ":"}[name]
		if got := seen.seen(sim.OneC); got != want {
			t.Errorf("%s: the simulator received %q, want %q", name, got, want)
		}
	}
	red := adapters.Redactor(targets)
	if got := red.Foreign("said buh-secret-pw and trade-secret-pw"); strings.Contains(got, "secret-pw") {
		t.Errorf("redacted %q", got)
	}

}

// An instance of kind onec_odata is built from its configuration: at its
// base_url with the user and password of the variables it names, or, left
// unconfigured, at the built-in OData simulator with its password; either
// probe passes, and the redaction masks the configured credentials. One
// at a real system without its secrets, or with a reference found by a
// name, is refused, naming the key.
func TestBuildTargetsOneCOData(t *testing.T) {
	t.Parallel()
	seen := newCredentialsSeen(t)
	p := configtest.Write(t, fmt.Sprintf(`targets:
  buh:
    kind: onec_odata
    base_url: "%s/onec-odata/odata/standard.odata"
    username_env: BUH_USER
    password_env: BUH_PASSWORD
    time_zone: Europe/Moscow
    timeout_ms: 3000
    settle_ms: 120000
    references:
      counterparty: { catalog: Catalog_Контрагенты, by: ИНН+КПП }
  trade: { kind: onec_odata }
`, seen.url))
	vars := map[string]string{"BUH_USER": "buh-odata-user", "BUH_PASSWORD": "sim"}
	env := func(k string) string { return vars[k] }
	cfg, err := config.Load(p, env, yookassa.Currencies())
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Simulated(env); strings.Join(got, ",") != "onec,crm,payments,trade" {
		t.Errorf("simulated %v, want trade among the built-in instances and buh not", got)
	}
	targets, err := buildTargets(cfg, builtInSimulators(seen.url), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, creds string }{{"buh", "buh-odata-user:sim"}, {"trade", "oncegate:sim"}} {
		p, ok := targets[c.name].(prober)
		if !ok || targets[c.name].Name() != "onec_odata" {
			t.Fatalf("%s is %T, not the OData adapter", c.name, targets[c.name])
		}
		what, err := p.Probe(context.Background())
		if err != nil {
			t.Fatalf("%s: probe: %v", c.name, err)
		}
		if !strings.Contains(what, "standard OData interface answers") {
			t.Errorf("%s: probe says %q", c.name, what)
		}
		if got := seen.seen("onec-odata"); got != c.creds {
			t.Errorf("%s: the simulator received %q, want %q", c.name, got, c.creds)
		}
	}
	red := adapters.Redactor(map[string]adapters.Target{"buh": targets["buh"]})
	basic := base64.StdEncoding.EncodeToString([]byte("buh-odata-user:sim"))
	if got := red.Foreign("1C answered: Basic " + basic + " for buh-odata-user"); strings.Contains(got, basic) || strings.Contains(got, "buh-odata-user") {
		t.Errorf("redacted %q", got)
	}

	for _, c := range []struct {
		name string
		set  func(*config.Target)
		want string
	}{
		{"PasswordUnset", func(t *config.Target) { t.PasswordEnv = "BUH_PW_UNSET" }, "targets.buh.password_env: $BUH_PW_UNSET is empty or unset"},
		{"UserUnnamed", func(t *config.Target) { t.UsernameEnv = "" }, "targets.buh.username_env: not set"},
		{"PasswordUnnamed", func(t *config.Target) { t.PasswordEnv = "" }, "targets.buh.password_env: not set"},
		{"ByName", func(t *config.Target) {
			t.References = map[string]config.Reference{"product": {Catalog: "Catalog_Номенклатура", By: "Description"}}
		}, "targets.buh.references.product.by: by \"Description\": a name (Description) does not identify an object"},
		{"NotACatalog", func(t *config.Target) {
			t.References = map[string]config.Reference{"product": {Catalog: "Document_Товары", By: "Code"}}
		}, "targets.buh.references.product.catalog"},
		{"NotTheInterface", func(t *config.Target) { t.BaseURL = seen.url + "/buh/hs/api" }, "targets.buh: onec_odata: base_url must end in /odata/standard.odata"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			buh := config.NewTarget("buh", config.KindOneCOData)
			buh.BaseURL, buh.UsernameEnv, buh.PasswordEnv = seen.url+sim.ODataPath, "BUH_USER", "BUH_PASSWORD"
			c.set(buh)
			cfg.Targets["buh"] = buh
			_, err := buildTargets(cfg, builtInSimulators(seen.url), env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "buh-odata-user") {
				t.Errorf("error names the user: %v", err)
			}
		})
	}
}

// The binary serves a configuration that mixes the old keys with named
// instances: the firm's own 1C bases, configured with nothing, are served
// by the built-in simulator and named where serve says so; the built-in
// intents still reach the instance onec; a target configured twice stops
// the gateway before it starts.
func TestServeNamedTargets(t *testing.T) {
	t.Parallel()
	r := newRig(t, withTimeout(2000), withSettings(""),
		withTarget("buh", "kind: onec, timeout_ms: 3000, settle_ms: 10000, retention: 2160h"), withTarget("trade", "kind: onec"))
	if out := r.gateway.output(); !strings.Contains(out, "SIMULATORS IN USE") || !strings.Contains(out, "targets=buh,trade") {
		t.Errorf("serve does not name the simulated instances:\n%s", out)
	}
	resp, err := http.Get(r.apiURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	home, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"onec", "crm", "payments", "buh", "trade"} {
		if !strings.Contains(string(home), "<strong>"+name+"</strong>") {
			t.Errorf("the home page does not list %s", name)
		}
	}
	const key = "test:invoice.create:order-named-1:v1"
	if code, body, err := r.post(key, fmt.Sprintf(e2eInvoice, "order-named-1", 1)); err != nil || code != 200 || body["state"] != "succeeded" {
		t.Fatalf("invoice: %d %v %v", code, body, err)
	}
	if got := r.simJSON("/_sim/effects")["onec"][key]; got != 1 {
		t.Errorf("effects at onec = %d, want 1", got)
	}

	twice := configtest.Write(t, "targets:\n  bitrix24: { webhook_url_env: A }\n  crm: { kind: bitrix24 }\n")
	out, err := serveOnce(t, nil, "--config", twice, "--data", t.TempDir())
	if err == nil || !strings.Contains(out, "targets.crm: the target crm is configured already, as targets.bitrix24") {
		t.Errorf("serve with crm configured twice: %v\n%s", err, out)
	}
}

// The events a rule may name for a kind of source are the events its
// adapter reads: the configuration's list and the adapters' are one.
func TestSourceEventsAreTheAdapters(t *testing.T) {
	cfg := config.Default()
	targets, err := buildTargets(cfg, builtInSimulators("http://127.0.0.1:1"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for name, tg := range targets {
		kind := cfg.Targets[name].Kind
		src, ok := tg.(adapters.EventSource)
		if ok != (config.SourceEvents[kind] != nil) {
			t.Errorf("%s (%s): an event source %v, in config.SourceEvents %v", name, kind, ok, config.SourceEvents[kind] != nil)
			continue
		}
		if ok && strings.Join(src.Events(), " ") != strings.Join(config.SourceEvents[kind], " ") {
			t.Errorf("%s (%s): the adapter reads %v, the configuration offers %v", name, kind, src.Events(), config.SourceEvents[kind])
		}
	}
}
