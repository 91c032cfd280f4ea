package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/redact"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/intent"
)

// The probe of the configured targets, which check and intents check
// run: each target built alone as serve would build it and reached with a
// call that writes nothing, and what it answered printed redacted.

// errCheckFailed: check found something to fix.
var errCheckFailed = errors.New("check failed")

// targetCheck is how one target instance is named, reached and set up.
type targetCheck struct {
	name string // the instance: onec, crm, payments, or one the firm named
	t    *config.Target
}

// targetChecks are the checks of cfg's target instances, in their order.
func targetChecks(cfg config.Config) []targetCheck {
	var out []targetCheck
	for _, name := range cfg.Targets.Names() {
		out = append(out, targetCheck{name: name, t: cfg.Targets[name]})
	}
	return out
}

// label is what the target's lines start with: the key it is configured
// under (the old bitrix24 and yookassa for crm and payments so set).
func (tc targetCheck) label() string { return tc.t.Key }

// address is the setting that says where the target is.
func (tc targetCheck) address() string {
	if tc.t.Kind == config.KindBitrix24 {
		return tc.t.Setting("webhook_url_env")
	}
	return tc.t.Setting("base_url")
}

// creds names the settings of the target's credentials.
func (tc targetCheck) creds() string {
	t := tc.t
	switch t.Kind {
	case config.KindBitrix24:
		return fmt.Sprintf("%s (%s): the inbound webhook's URL, with its user id, its secret and the crm scope", t.Setting("webhook_url_env"), t.WebhookURLEnv)
	case config.KindYooKassa:
		return fmt.Sprintf("%s (%q) and %s (%s): the shop id and its secret key", t.Setting("shop_id"), t.ShopID, t.Setting("secret_key_env"), t.SecretKeyEnv)
	}
	if t.UsernameEnv == "" && t.Kind == config.KindOneC {
		return fmt.Sprintf("%s and %s (none set: the gateway sends no user; set them if 1C asks for one)", t.Setting("username_env"), t.Setting("password_env"))
	}
	return fmt.Sprintf("%s (%s) and %s (%s): the 1C user and its password", t.Setting("username_env"), t.UsernameEnv, t.Setting("password_env"), t.PasswordEnv)
}

// alone is cfg with this target as its only one, so it is built and
// probed by itself.
func (tc targetCheck) alone(cfg config.Config) config.Config {
	one := cfg
	one.Targets = config.TargetsConfig{tc.name: tc.t}
	return one
}

// prober is a target that can be reached without writing anything.
type prober interface {
	Probe(ctx context.Context) (string, error)
}

// probeTargets prints a line per target instance of cfg that want keeps:
// SIMULATED for one left at its simulator, else what probing it found
// (OK, or FAIL and what to fix). It returns how many it probed and how
// many of those failed.
func probeTargets(stdout io.Writer, cfg config.Config, catalog *intent.Catalog, env func(string) string, want func(string) bool) (failed, checked int) {
	simulated := map[string]bool{}
	for _, s := range cfg.Simulated(env) {
		simulated[s] = true
	}
	// What a target answers may quote the credentials it was sent: it is
	// printed through the same redaction as serve's log and journal.
	red := checkRedactor(cfg, env)
	var checks []targetCheck
	for _, tc := range targetChecks(cfg) {
		if want(tc.name) {
			checks = append(checks, tc)
		}
	}
	width := 9
	for _, tc := range checks {
		width = max(width, len(tc.label()))
	}
	for _, tc := range checks {
		if simulated[tc.name] {
			fmt.Fprintf(stdout, "%-*s SIMULATED  nothing configured: serve would use the built-in simulator (set %s to reach the real system)\n", width, tc.label(), tc.address())
			continue
		}
		checked++
		ok, what, fix := checkTarget(cfg, catalog, tc, env)
		what, fix = red.Foreign(what), red.Own(fix)
		if ok {
			fmt.Fprintf(stdout, "%-*s OK         %s\n", width, tc.label(), what)
			continue
		}
		failed++
		fmt.Fprintf(stdout, "%-*s FAIL       %s\n%-*s   fix:     %s\n", width, tc.label(), what, width, "", fix)
	}
	return failed, checked
}

// checkTarget builds one target as serve would (buildTargets, with the
// other targets left out), gives it the definitions naming it as serve
// does, and probes it: a target given declared intents checks them too.
func checkTarget(cfg config.Config, catalog *intent.Catalog, tc targetCheck, env func(string) string) (ok bool, what, fix string) {
	one := tc.alone(cfg)
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
	if err := catalog.Bind(targets); err != nil {
		return false, err.Error(), "correct the intent definitions named"
	}
	p, isProber := targets[tc.name].(prober)
	if !isProber {
		return false, "this target cannot be checked", "-"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	what, err = p.Probe(ctx)
	if err == nil {
		return true, what + settleAdvice(tc.t), ""
	}
	return false, probeFailure(err), probeFix(tc, err)
}

// oneCLockTimeout and oneCPostingAllowance bound how long 1C may still
// commit after the gateway stopped waiting: the module's key lock waits
// up to the platform's lock timeout (20 s by default), then the document
// is written and posted.
const (
	oneCLockTimeout      = 20 * time.Second
	oneCPostingAllowance = 10 * time.Second
)

// settleAdvice says, for a 1C target whose settle time is shorter than
// 1C's lock timeout and a posting, what to set: a look-up's "not found"
// is trusted once settle_ms has passed, and a commit may still come.
func settleAdvice(t *config.Target) string {
	if t.Kind != config.KindOneC && t.Kind != config.KindOneCOData {
		return ""
	}
	settle := time.Duration(max(t.SettleMS, t.TimeoutMS)) * time.Millisecond
	if want := oneCLockTimeout + oneCPostingAllowance; settle < want {
		return fmt.Sprintf("; note: %s is %v, less than 1C's lock timeout (%v) and a posting: set it to at least %d, so a look-up never trusts a \"not found\" while 1C may still commit",
			t.Setting("settle_ms"), settle, oneCLockTimeout, want.Milliseconds())
	}
	return ""
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
func probeFix(tc targetCheck, err error) string {
	var e *adapters.Error
	code := ""
	if errors.As(err, &e) {
		code = e.Code
	}
	switch {
	case strings.HasSuffix(code, "PERMISSION_DENIED"):
		return "check " + tc.creds()
	case code == codes.TargetUnavailable || code == codes.OutcomeUnknown:
		return fmt.Sprintf("check %s, that the system is up and that this machine reaches it (each call waits %s)", tc.address(), tc.t.Setting("timeout_ms"))
	default:
		return "check " + tc.address() + " (the address of the system's API)"
	}
}

// checkRedactor is the redaction of the secrets of every target check
// reaches, each built alone as check builds it; a target that cannot be
// built has none to mask.
func checkRedactor(cfg config.Config, env func(string) string) *redact.Redactor {
	all := map[string]adapters.Target{}
	for _, tc := range targetChecks(cfg) {
		if targets, err := buildTargets(tc.alone(cfg), builtInSimulators("http://127.0.0.1:9"), env); err == nil {
			all[tc.name] = targets[tc.name]
		}
	}
	return adapters.Redactor(all)
}

// wireProber is a target whose writes can be probed at a copy of the
// system (onec_odata: check --probe).
type wireProber interface {
	WireProbe(ctx context.Context) ([]onecodata.WireReport, error)
}

// checkWrites runs the write probe of each onec_odata target configured
// at a real base, after a loud warning and, unless yes, a typed "yes":
// it creates throwaway documents there. It prints per target what the
// base does and what the gateway will therefore do, and fails when a
// target cannot make creates exactly once.
func checkWrites(c configFlags, inv invocation, env func(string) string, yes bool) error {
	cfg, err := c.load(env)
	if err != nil {
		return err
	}
	catalog, err := loadCatalog(cfg)
	if err != nil {
		return err
	}
	simulated := map[string]bool{}
	for _, s := range cfg.Simulated(env) {
		simulated[s] = true
	}
	var checks []targetCheck
	for _, tc := range targetChecks(cfg) {
		if tc.t.Kind == config.KindOneCOData && !simulated[tc.name] {
			checks = append(checks, tc)
		}
	}
	out := inv.stdout
	if len(checks) == 0 {
		fmt.Fprintln(out, "probe: no onec_odata target is configured at a real base; nothing to probe")
		return nil
	}
	red := checkRedactor(cfg, env)
	// One reader for every prompt: a second one would lose what the
	// first buffered.
	var answers *bufio.Reader
	if inv.stdin != nil {
		answers = bufio.NewReader(inv.stdin)
	}
	failed := 0
	for _, tc := range checks {
		fmt.Fprintf(out, "\n!!! --probe WRITES TO 1C: target %s (%s) !!!\n", tc.label(), tc.address())
		fmt.Fprintln(out, "!!! It creates up to 3 throwaway documents in each entity set its intents create in, then marks them for deletion.")
		fmt.Fprintln(out, "!!! Run it ONLY on a COPY of the base, never on the one the firm works in.")
		if !yes && !confirmed(answers, out) {
			fmt.Fprintf(out, "probe of %s not run: not confirmed\n", tc.label())
			return fmt.Errorf("%w: the probe was not confirmed (type yes, or pass --yes)", errCheckFailed)
		}
		ok, err := wireProbe(out, cfg, catalog, tc, env, red)
		if err != nil {
			fmt.Fprintf(out, "%s PROBE FAILED  %s\n", tc.label(), red.Foreign(probeFailure(err)))
			failed++
			continue
		}
		if !ok {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%w: %d of %d probed targets cannot make creates exactly once as configured; see the lines above", errCheckFailed, failed, len(checks))
	}
	return nil
}

// confirmed asks for a typed "yes" on stdin.
func confirmed(stdin *bufio.Reader, out io.Writer) bool {
	fmt.Fprint(out, "Type yes to write to this base: ")
	if stdin == nil {
		return false
	}
	line, _ := stdin.ReadString('\n')
	fmt.Fprintln(out)
	return strings.TrimSpace(line) == "yes"
}

// wireProbe builds the target as serve would and probes its writes,
// printing its report; ok is whether every entity set is usable.
func wireProbe(out io.Writer, cfg config.Config, catalog *intent.Catalog, tc targetCheck, env func(string) string, red *redact.Redactor) (bool, error) {
	targets, err := buildTargets(tc.alone(cfg), builtInSimulators("http://127.0.0.1:9"), env)
	if err != nil {
		return false, err
	}
	if err := catalog.Bind(targets); err != nil {
		return false, err
	}
	p, isProber := targets[tc.name].(wireProber)
	if !isProber {
		return false, errors.New("this target's writes cannot be probed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reports, err := p.WireProbe(ctx)
	ok := true
	for _, r := range reports {
		verdict := "USABLE"
		if !r.Usable() {
			verdict, ok = "NOT USABLE", false
		}
		fmt.Fprintf(out, "%s PROBE %s  %s\n", tc.label(), verdict, r.Entity)
		for _, l := range r.Lines() {
			fmt.Fprintf(out, "    - %s\n", red.Foreign(l))
		}
		if !r.Usable() {
			fmt.Fprintf(out, "    fix: set %s to a string attribute of the documents, limited to at least 36 characters (an additional requisite the firm adds), then run check again\n", tc.t.Setting("key_field"))
		}
	}
	return ok, err
}
