package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/contract"
)

var checkCommand = command{
	name:    "check",
	args:    "[--env-file FILE]",
	summary: "check the configuration and reach each configured target with a call that writes nothing",
	setup: func(fs *flag.FlagSet) func(cli, []string) error {
		var c common
		c.flags(fs)
		envFile := fs.String("env-file", "", envFileUsage)
		return func(cl cli, args []string) error {
			if len(args) != 0 {
				return badUsage("check", "takes no arguments")
			}
			env, err := withEnvFile(cl.env, *envFile)
			if err != nil {
				return err
			}
			return check(c, cl.stdout, env)
		}
	},
}

// errCheckFailed: check found something to fix.
var errCheckFailed = errors.New("check failed")

// targetCheck is how one target is named, reached and set up.
type targetCheck struct {
	name    string // as in the configuration: onec, bitrix24, yookassa
	system  string // its key in buildTargets' map
	address string // the setting that says where it is
	creds   func(config.Config) string
}

// alone is cfg's targets with this one as configured and the others as
// by default (simulated), so it is built and probed by itself.
func (tc targetCheck) alone(cfg config.Config) config.TargetsConfig {
	t := config.Default().Targets
	switch tc.name {
	case "onec":
		t.OneC = cfg.Targets.OneC
	case "bitrix24":
		t.Bitrix24 = cfg.Targets.Bitrix24
	case "yookassa":
		t.YooKassa = cfg.Targets.YooKassa
	}
	return t
}

var targetChecks = []targetCheck{
	{name: "onec", system: contract.TargetOneC, address: "targets.onec.base_url",
		creds: func(c config.Config) string {
			t := c.Targets.OneC
			if t.UsernameEnv == "" {
				return "targets.onec.username_env and targets.onec.password_env (none set: the gateway sends no user; set them if 1C asks for one)"
			}
			return fmt.Sprintf("targets.onec.username_env (%s) and targets.onec.password_env (%s): the 1C user and its password", t.UsernameEnv, t.PasswordEnv)
		}},
	{name: "bitrix24", system: contract.TargetCRM, address: "targets.bitrix24.webhook_url_env",
		creds: func(c config.Config) string {
			return fmt.Sprintf("targets.bitrix24.webhook_url_env (%s): the inbound webhook's URL, with its user id, its secret and the crm scope", c.Targets.Bitrix24.WebhookURLEnv)
		}},
	{name: "yookassa", system: contract.TargetPayments, address: "targets.yookassa.base_url",
		creds: func(c config.Config) string {
			return fmt.Sprintf("targets.yookassa.shop_id (%q) and targets.yookassa.secret_key_env (%s): the shop id and its secret key", c.Targets.YooKassa.ShopID, c.Targets.YooKassa.SecretKeyEnv)
		}},
}

// prober is a target that can be reached without writing anything.
type prober interface {
	Probe(ctx context.Context) (string, error)
}

// check validates the configuration and probes each target it points at
// a real system, printing per target what works and what to fix. It never
// starts the simulators and never prints a secret: a setting is named by
// its key and its variable, not its value, and what a target answered is
// redacted of the targets' secrets and the 1C user's name.
func check(c common, stdout io.Writer, env func(string) string) error {
	path := c.config
	if path == "" {
		path = env("ONCEGATE_CONFIG")
	}
	cfg, err := c.load(env)
	if err != nil {
		fmt.Fprintf(stdout, "configuration: %v\n", err)
		return fmt.Errorf("%w: the configuration is not valid; fix the settings named above", errCheckFailed)
	}
	if path == "" {
		fmt.Fprintln(stdout, "no configuration file (--config or $ONCEGATE_CONFIG): serve would run on the embedded defaults, and its targets are the built-in simulators; nothing to reach")
		return nil
	}
	fmt.Fprintf(stdout, "configuration %s: valid (contour %s, data %s, listen %s)\n", path, cfg.Contour, cfg.DataDir, cfg.Listen)

	simulated := map[string]bool{}
	for _, s := range cfg.Simulated(env) {
		simulated[s] = true
	}
	// What a target answers may quote the credentials it was sent: it is
	// printed through the same redaction as serve's log and journal.
	red := checkRedactor(cfg, env)
	failed, checked := 0, 0
	for _, tc := range targetChecks {
		if simulated[tc.name] {
			fmt.Fprintf(stdout, "%-9s SIMULATED  nothing configured: serve would use the built-in simulator (set %s to reach the real system)\n", tc.name, tc.address)
			continue
		}
		checked++
		ok, what, fix := checkTarget(cfg, tc, env)
		what, fix = red.Foreign(what), red.Own(fix)
		if ok {
			fmt.Fprintf(stdout, "%-9s OK         %s\n", tc.name, what)
			continue
		}
		failed++
		fmt.Fprintf(stdout, "%-9s FAIL       %s\n%-9s   fix:     %s\n", tc.name, what, "", fix)
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d configured targets cannot be used; fix the settings named above", errCheckFailed, failed, checked)
	}
	return nil
}

// checkTarget builds one target as serve would (buildTargets, with the
// other targets left out) and probes it.
func checkTarget(cfg config.Config, tc targetCheck, env func(string) string) (ok bool, what, fix string) {
	one := cfg
	one.Targets = tc.alone(cfg)
	for _, s := range one.MissingSecrets(env) {
		if s.Env == "" {
			return false, s.Key + " is not set, and the target is configured at a real system", "set " + s.Key + " to the name of the environment variable that holds the secret"
		}
		return false, fmt.Sprintf("$%s (named by %s) is empty or unset", s.Env, s.Key), fmt.Sprintf("put the secret in $%s in the service's environment (its env file), or pass --env-file", s.Env)
	}
	// The simulators' address is never called: the other targets are not probed.
	targets, err := buildTargets(one, builtInSimulators("http://127.0.0.1:9"), env)
	if err != nil {
		return false, err.Error(), "correct the setting named"
	}
	p, isProber := targets[tc.system].(prober)
	if !isProber {
		return false, "this target cannot be checked", "-"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	what, err = p.Probe(ctx)
	if err == nil {
		return true, what, ""
	}
	return false, probeFailure(err), probeFix(cfg, tc, err)
}

// probeFailure is what went wrong, in the adapter's safe words and its
// cause, which may quote what the target answered (check redacts it).
func probeFailure(err error) string {
	var e *adapters.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	s := e.Message
	if e.Err != nil {
		s += " (" + e.Err.Error() + ")"
	}
	return s
}

// probeFix names the settings to look at for a failed probe.
func probeFix(cfg config.Config, tc targetCheck, err error) string {
	var e *adapters.Error
	code := ""
	if errors.As(err, &e) {
		code = e.Code
	}
	switch {
	case strings.HasSuffix(code, "PERMISSION_DENIED"):
		return "check " + tc.creds(cfg)
	case code == codes.TargetUnavailable || code == codes.OutcomeUnknown:
		return fmt.Sprintf("check %s, that the system is up and that this machine reaches it (each call waits targets.%s.timeout_ms)", tc.address, tc.name)
	default:
		return "check " + tc.address + " (the address of the system's API)"
	}
}
