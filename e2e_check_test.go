package main

import (
	"encoding/json"
	"fmt"
	"github.com/oncegate/oncegate/server/config/configtest"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// lineOf is the output's line that starts with the target's name.
func lineOf(out, target string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, target+" ") {
			return l
		}
	}
	return ""
}

// The check of a configuration reaches each target with a call that
// writes nothing, and says per target what works or what to fix, naming
// the setting and never the secret.
func TestCheck(t *testing.T) {
	r := newRig(t, withSettings(""), notStarted())
	effects := func() map[string]map[string]int { return r.simJSON("/_sim/effects") }
	before := effects()
	secrets := func(yookassa string) string {
		f := filepath.Join(t.TempDir(), "secrets.env")
		body := fmt.Sprintf("# the service's secrets\nE2E_BITRIX24_WEBHOOK=%s/bitrix24/rest/1/sim-webhook/\nE2E_YOOKASSA_SECRET=%q\n", r.simURL, yookassa)
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("AllReached", func(t *testing.T) {
		out, code := runCheck(t, nil, "--config", r.config, "--env-file", secrets("sim-secret-key"))
		if code != 0 {
			t.Fatalf("check exited %d:\n%s", code, out)
		}
		for _, target := range []string{"onec", "bitrix24", "yookassa"} {
			if l := lineOf(out, target); !strings.Contains(l, " OK ") {
				t.Errorf("%s: %q, want OK\n%s", target, l, out)
			}
		}
		// The rig's 1C target settles in its 1 s timeout, well inside 1C's
		// lock timeout: check says what to set.
		if l := lineOf(out, "onec"); !strings.Contains(l, "targets.onec.settle_ms is 1s, less than 1C's lock timeout (20s)") || !strings.Contains(l, "at least 30000") {
			t.Errorf("onec: %q, want the settle time's advice", l)
		}
		if !strings.Contains(out, "configuration "+r.config+": valid") {
			t.Errorf("the configuration is not said valid:\n%s", out)
		}
		if strings.Contains(out, "sim-secret-key") || strings.Contains(out, sim.DefaultBitrix24Secret) {
			t.Errorf("the output shows a secret:\n%s", out)
		}
	})

	t.Run("WrongSecret", func(t *testing.T) {
		out, code := runCheck(t, nil, "--config", r.config, "--env-file", secrets("not-the-shop-secret"))
		if code != 1 {
			t.Fatalf("check exited %d, want 1:\n%s", code, out)
		}
		l := lineOf(out, "yookassa")
		if !strings.Contains(l, " FAIL ") {
			t.Fatalf("yookassa: %q, want FAIL\n%s", l, out)
		}
		if !strings.Contains(out, "fix:     check targets.yookassa.shop_id (\"e2e-shop\") and targets.yookassa.secret_key_env (E2E_YOOKASSA_SECRET)") {
			t.Errorf("the fix does not name the settings:\n%s", out)
		}
		for _, target := range []string{"onec", "bitrix24"} {
			if l := lineOf(out, target); !strings.Contains(l, " OK ") {
				t.Errorf("%s: %q, want OK (only yookassa is wrong)", target, l)
			}
		}
		if !strings.Contains(out, "1 of 3 configured targets cannot be used") {
			t.Errorf("no summary:\n%s", out)
		}
		if strings.Contains(out, "not-the-shop-secret") {
			t.Errorf("the output shows the secret:\n%s", out)
		}
	})

	t.Run("SecretUnset", func(t *testing.T) {
		out, code := runCheck(t, []string{"E2E_BITRIX24_WEBHOOK=" + r.simURL + "/bitrix24" + sim.Bitrix24WebhookPath()}, "--config", r.config)
		if code != 1 {
			t.Fatalf("check exited %d, want 1:\n%s", code, out)
		}
		if l := lineOf(out, "yookassa"); !strings.Contains(l, "$E2E_YOOKASSA_SECRET (named by targets.yookassa.secret_key_env) is empty or unset") {
			t.Errorf("yookassa: %q\n%s", l, out)
		}
	})

	t.Run("WrongAddress", func(t *testing.T) {
		body := fmt.Sprintf("contour: test\ntargets:\n  onec: { base_url: %q, timeout_ms: 1000 }\n", r.simURL+"/no-such-base")
		cfg := configtest.Write(t, body)
		out, code := runCheck(t, nil, "--config", cfg)
		if code != 1 {
			t.Fatalf("check exited %d, want 1:\n%s", code, out)
		}
		if l := lineOf(out, "onec"); !strings.Contains(l, " FAIL ") || !strings.Contains(out, "check targets.onec.base_url") {
			t.Errorf("onec: %q, want FAIL naming targets.onec.base_url\n%s", l, out)
		}
		// Left out, they are the built-in instances crm and payments.
		for _, target := range []string{"crm", "payments"} {
			if l := lineOf(out, target); !strings.Contains(l, " SIMULATED ") {
				t.Errorf("%s: %q, want SIMULATED", target, l)
			}
		}
	})

	// Each named instance gets its line, its failure naming its own keys.
	t.Run("NamedInstances", func(t *testing.T) {
		body := fmt.Sprintf("contour: test\ntargets:\n  buh: { kind: onec, base_url: %q, timeout_ms: 1000 }\n  trade: { kind: onec, base_url: %q, timeout_ms: 1000 }\n",
			r.simURL+"/onec", r.simURL+"/no-such-base")
		cfg := configtest.Write(t, body)
		out, code := runCheck(t, nil, "--config", cfg)
		if code != 1 {
			t.Fatalf("check exited %d, want 1:\n%s", code, out)
		}
		if l := lineOf(out, "buh"); !strings.Contains(l, " OK ") {
			t.Errorf("buh: %q, want OK\n%s", l, out)
		}
		if l := lineOf(out, "trade"); !strings.Contains(l, " FAIL ") || !strings.Contains(out, "check targets.trade.base_url") {
			t.Errorf("trade: %q, want FAIL naming targets.trade.base_url\n%s", l, out)
		}
		for _, target := range []string{"onec", "crm", "payments"} {
			if l := lineOf(out, target); !strings.Contains(l, " SIMULATED ") {
				t.Errorf("%s: %q, want SIMULATED", target, l)
			}
		}
		if !strings.Contains(out, "1 of 2 configured targets cannot be used") {
			t.Errorf("no summary:\n%s", out)
		}
	})

	t.Run("Unreachable", func(t *testing.T) {
		body := fmt.Sprintf("contour: test\ntargets:\n  onec: { base_url: \"http://%s/base\", timeout_ms: 500 }\n", freeAddr(t))
		cfg := configtest.Write(t, body)
		out, code := runCheck(t, nil, "--config", cfg)
		if code != 1 || !strings.Contains(out, "that the system is up and that this machine reaches it") {
			t.Fatalf("check exited %d:\n%s", code, out)
		}
	})

	t.Run("InvalidConfiguration", func(t *testing.T) {
		cfg := configtest.Write(t, "contour: test\ntargets:\n  onec: { base_url: \"ftp://x\", timeout_ms: 1000 }\n")
		out, code := runCheck(t, nil, "--config", cfg)
		if code != 1 || !strings.Contains(out, "configuration: ") || !strings.Contains(out, "the configuration is not valid") {
			t.Fatalf("check exited %d:\n%s", code, out)
		}
	})

	t.Run("EmbeddedDefaults", func(t *testing.T) {
		out, code := runCheck(t, nil)
		if code != 0 || !strings.Contains(out, "embedded defaults") {
			t.Fatalf("check exited %d:\n%s", code, out)
		}
	})

	t.Run("BadEnvFile", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "secrets.env")
		os.WriteFile(f, []byte("E2E_YOOKASSA_SECRET=x\nthis line is wrong sim-secret-key\n"), 0o600)
		out, code := runCheck(t, nil, "--config", r.config, "--env-file", f)
		if code != 1 || !strings.Contains(out, "line 2: not KEY=VALUE") || strings.Contains(out, "sim-secret-key") {
			t.Fatalf("check exited %d:\n%s", code, out)
		}
	})

	if after := effects(); !reflect.DeepEqual(before, after) {
		t.Errorf("check changed the targets: effects %v, then %v", before, after)
	}
}

// check --probe writes to a copy of a 1C base over OData and says what
// the base does, in each mode the simulator can be put in; it asks first,
// and a refused prompt writes nothing.
func TestCheckProbe(t *testing.T) {
	s := sim.New()
	srv := httptest.NewServer(s)
	defer srv.Close()
	config := func(extra string) string {
		return configtest.Write(t, fmt.Sprintf("contour: test\ntargets:\n  onec: { kind: onec_odata, base_url: %q, username_env: E2E_ONEC_USER, password_env: E2E_ONEC_PASSWORD%s }\n",
			srv.URL+sim.ODataPath, extra))
	}
	env := []string{"E2E_ONEC_USER=buh", "E2E_ONEC_PASSWORD=" + sim.ODataPassword}
	documents := func() int {
		resp, err := http.Get(srv.URL + "/_sim/effects")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var effects map[string]map[string]int
		json.NewDecoder(resp.Body).Decode(&effects)
		n := 0
		for _, c := range effects[sim.OneCOData] {
			n += c
		}
		return n
	}

	t.Run("NotConfirmed", func(t *testing.T) {
		cmd := exec.Command(bin(t), "check", "--probe", "--config", config(""))
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
		cmd.Stdin = strings.NewReader("no\n")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Run it ONLY on a COPY of the base") || !strings.Contains(string(out), "probe of onec not run: not confirmed") {
			t.Fatalf("%v:\n%s", err, out)
		}
		if n := documents(); n != 0 {
			t.Fatalf("an unconfirmed probe made %d documents", n)
		}
	})

	for _, tc := range []struct {
		name, settings, extra string
		code                  int
		want                  []string
	}{
		{"KeepsKeys", `{}`, "", 0, []string{"onec PROBE USABLE  Document_", "1C keeps the Ref_Key the gateway sends",
			"the same POST sent again was refused: HTTP 400, code 15", "so oncegate relies on 1C's own key", "are marked for deletion"}},
		{"IgnoresKeys", `{"ignore_client_keys":true}`, "", 1, []string{"onec PROBE NOT USABLE", "1C does NOT keep the Ref_Key",
			"made a second document", "fix: set targets.onec.key_field"}},
		{"IgnoresKeysGuarded", `{"ignore_client_keys":true}`, ", key_field: КлючОперации", 0, []string{"onec PROBE USABLE",
			"so oncegate guards creates by key_field КлючОперации"}},
		{"Truncates", `{"truncate":true}`, "", 0, []string{"1C truncates: КлючОперации was sent with 70 characters and kept 50", "TARGET_CHANGED_VALUE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/_sim/onec_odata/settings", "application/json", strings.NewReader(tc.settings))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			out, code := runCheck(t, env, "--probe", "--yes", "--config", config(tc.extra))
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, sim.ODataPassword+"@") || strings.Contains(out, "could NOT mark") {
				t.Errorf("output:\n%s", out)
			}
		})
	}
}
