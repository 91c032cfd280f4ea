package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/server/config/configtest"
)

// End-to-end tests: the real binary, started and killed as a user would.
// This file is their one way to set it up: the binary and its processes,
// and the rig — a gateway binary against a simulator binary, with a
// configuration, a journal and an agent token — built with options.

// The oncegate binary, built with -race on first use (bin), so a run of
// tests that start none does not wait for it.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// bin is the path of the oncegate binary, built on the first call. In
// -short mode (the quick loop) a test that needs it is skipped.
func bin(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds and runs the oncegate binary: skipped in -short mode")
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "oncegate-e2e"); built.err != nil {
			return
		}
		path := filepath.Join(built.dir, "oncegate")
		if out, err := exec.Command("go", "build", "-race", "-o", path, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("build: %v\n%s", err, out)
			return
		}
		built.path = path
	})
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is a running oncegate process.
type proc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{} // closed once the process has exited and been waited for
	err    error         // what Wait said, once done is closed
}

// begin starts the process and waits for it in the background, so a test
// can see at once that it exited (a gateway refusing its configuration).
func (p *proc) begin() error {
	if err := p.cmd.Start(); err != nil {
		return err
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return nil
}

// wait waits for the process to exit and returns what Wait said.
func (p *proc) wait() error {
	<-p.done
	return p.err
}

// exited reports whether the process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String() + p.stderr.String()
}

// saysSoon reports whether the process's output holds s within 10 s: its
// output reaches the test through a pipe, so a line written just before
// an answer may arrive after it.
func (p *proc) saysSoon(s string) bool {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(p.output(), s) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// prepare makes the binary's process with args and env, not yet started;
// once started it is killed at cleanup, and its output is logged if the
// test failed.
func prepare(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin(t), args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout = lockedWriter{&p.mu, &p.stdout}
	p.cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	t.Cleanup(func() {
		if p.cmd.Process == nil {
			return
		}
		p.cmd.Process.Kill()
		p.wait()
		if t.Failed() {
			t.Logf("oncegate %v output%s", args, p.dump(t))
		}
	})
	return p
}

// start runs the binary with args and env; it is killed at cleanup.
func start(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	p := prepare(t, env, args...)
	if err := p.begin(); err != nil {
		t.Fatal(err)
	}
	return p
}

// dump saves the whole output to a file that outlives the test and
// returns its path with the last lines, so a failure's own messages are
// not buried under a busy gateway's log.
func (p *proc) dump(t testing.TB) string {
	out := p.output()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) <= 40 {
		return ":\n" + out
	}
	tail := strings.Join(lines[len(lines)-40:], "\n")
	f, err := os.CreateTemp("", "oncegate-output-*.log")
	if err != nil {
		return " (last 40 lines):\n" + tail
	}
	defer f.Close()
	f.WriteString(out)
	return fmt.Sprintf(" (whole in %s; last 40 lines):\n%s", f.Name(), tail)
}

// kill9 kills the process with SIGKILL and waits for it.
func (p *proc) kill9() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait()
}

// waitHTTP waits until url answers 200.
func waitHTTP(t testing.TB, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never became ready", url)
}

// runBinary runs a short command of the binary and returns its stdout.
func runBinary(t testing.TB, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("oncegate %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

// runCommand runs the binary with args in a bare environment plus env,
// and returns what it printed and its exit code.
func runCommand(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// runCheck runs oncegate check with args and env (the process's own
// environment left out, so only what the test gives reaches it) and
// returns its output and exit code.
func runCheck(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	return runCommand(t, env, append([]string{"check"}, args...)...)
}

// serveOnce runs serve with args and env and returns its output once it
// exits; a serve that does not exit within a minute has started and
// fails the test.
func serveOnce(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t), append([]string{"serve", "--listen", freeAddr(t)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("serve %v did not refuse to start:\n%s", args, out)
	}
	return string(out), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// The rigs' Bitrix24 simulator limits requests as a portal does, at a
// rate fast enough for the tests, and their gateways declare that rate.
// The bucket is a portal's shape, deep beside the rate (a cloud portal's
// is 25 seconds of it): the pacer's share of it, 40 calls here, is what
// absorbs calls bunched on their way by a loaded machine, so a burst of
// 20 (4 calls, 40 ms of slack) made CI see refusals of paced calls.
const (
	rigBitrix24Rate   = 100
	rigBitrix24Bucket = 200
)

// startSim starts the simulator binary alone, as the rigs do, and returns
// its URL.
func startSim(t testing.TB) string {
	t.Helper()
	addr := freeAddr(t)
	start(t, []string{
		sim.Bitrix24RateEnv + "=" + strconv.Itoa(rigBitrix24Rate),
		sim.Bitrix24BucketEnv + "=" + strconv.Itoa(rigBitrix24Bucket),
	}, "sim", "--listen", addr)
	url := "http://" + addr
	waitHTTP(t, url+"/_sim/effects")
	return url
}

// rig is a gateway binary against a simulator binary, with a config file,
// a journal and an agent token with every scope. Its gateway listens on
// one address across restarts, so agents keep their URL across crashes;
// further gateways on its (shared) journal are its others.
type rig struct {
	t       testing.TB
	simURL  string
	addr    string
	apiURL  string
	dataDir string
	journal string // where the journal is, as store.Open takes it
	config  string
	env     []string
	token   string

	mu      sync.Mutex
	gateway *proc
	others  []*instance // gateways beside the first, on the same (shared) journal
}

// instance is a further gateway of a rig: its own data directory and
// address, the rig's configuration and journal.
type instance struct {
	addr, dataDir string
	gateway       *proc
}

// rigRetry is the rigs' retry policy unless withSettings says otherwise:
// quick, so tests are.
const rigRetry = "retry: { max_attempts: 3, initial_delay_ms: 20, multiplier: 2, max_delay_ms: 100, jitter: true }\n"

// loadConfig is the configuration of the rigs that load the gateway:
// quick retries and reconciliation, no rate limit.
const loadConfig = `retry: { max_attempts: 3, initial_delay_ms: 10, multiplier: 2, max_delay_ms: 40, jitter: true }
reconciler: { interval_ms: 100, review_after: 1000, max_backoff_ms: 400 }
rate_limit: { per_second: 100000, burst: 100000 }
`

// rigSpec is what a rig is made of; the options change it.
type rigSpec struct {
	timeoutMS  int
	settings   string
	bitrix24   string
	targets    []rigTarget
	intentsDir string
	env        []string
	journalURL string
	dataDir    string
	whole      string // the whole configuration, on serve's own simulators
	notStarted bool
}

// rigTarget is a line under the configuration's targets.
type rigTarget struct {
	name     string
	settings func(simURL string) string
}

type rigOption func(*rigSpec)

// withTimeout sets every target's timeout_ms (1000 unless set).
func withTimeout(ms int) rigOption { return func(s *rigSpec) { s.timeoutMS = ms } }

// withSettings sets the configuration beside the targets, in place of the
// rigs' quick retries (rigRetry); "" leaves the configuration's defaults.
func withSettings(yaml string) rigOption { return func(s *rigSpec) { s.settings = yaml } }

// withBitrix24 adds keys to the bitrix24 target's settings, such as
// settle_ms or time_zone.
func withBitrix24(keys string) rigOption { return func(s *rigSpec) { s.bitrix24 = keys } }

// withIntents sets the configuration's intents_dir.
func withIntents(dir string) rigOption { return func(s *rigSpec) { s.intentsDir = dir } }

// withTarget sets a target's settings (inside its braces): of one of the
// three built-in instances, in place of the rig's, or of a further named
// instance.
func withTarget(name, settings string) rigOption {
	return withTargetAt(name, func(string) string { return settings })
}

func withTargetAt(name string, settings func(simURL string) string) rigOption {
	return func(s *rigSpec) { s.targets = append(s.targets, rigTarget{name, settings}) }
}

// withOData makes the instance name of kind onec_odata at the simulator's
// OData publication, its credentials in E2E_<NAME>_USER and
// E2E_<NAME>_PASSWORD, with further settings.
func withOData(name, settings string) rigOption {
	vars := "E2E_" + strings.ToUpper(name)
	target := withTargetAt(name, func(simURL string) string {
		return fmt.Sprintf("kind: onec_odata, base_url: \"%s%s\", username_env: %s_USER, password_env: %s_PASSWORD, %s", simURL, sim.ODataPath, vars, vars, settings)
	})
	return func(s *rigSpec) {
		target(s)
		s.env = append(s.env, vars+"_USER=integration", vars+"_PASSWORD="+sim.ODataPassword)
	}
}

// withEnv adds variables to the environment of every command of the rig.
func withEnv(vars ...string) rigOption { return func(s *rigSpec) { s.env = append(s.env, vars...) } }

// onJournal puts the rig's journal on the PostgreSQL database at url
// (storetest.Database), in place of the embedded one in its data
// directory.
func onJournal(url string) rigOption { return func(s *rigSpec) { s.journalURL = url } }

// withDataDir sets the gateway's data directory (a new one in a temp
// directory unless set).
func withDataDir(dir string) rigOption { return func(s *rigSpec) { s.dataDir = dir } }

// withConfigFile makes config the whole configuration: no simulator
// binary is started, and the targets are what config says, serve's own
// simulators standing in for those it leaves out.
func withConfigFile(config string) rigOption { return func(s *rigSpec) { s.whole = config } }

// notStarted leaves serve to the test (r.serve).
func notStarted() rigOption { return func(s *rigSpec) { s.notStarted = true } }

// intentsDir is a new intents_dir holding one definition, as file name.
func intentsDir(t testing.TB, name, definition string) string {
	t.Helper()
	return configtest.Dir(t, map[string]string{name: definition})
}

// forLoad is the rig of the load tests: loadConfig, every target's
// timeout timeoutMS and Bitrix24's settle time settleMS.
func forLoad(timeoutMS, settleMS int) rigOption {
	return func(s *rigSpec) {
		withSettings(loadConfig)(s)
		withTimeout(timeoutMS)(s)
		withBitrix24(fmt.Sprintf("settle_ms: %d", settleMS))(s)
	}
}

// forChaos is the rig of the chaos tests: loaded (forLoad) with short
// timeouts, and beside the three targets the instance buh of kind
// onec_odata with the firm's own invoice (odataInvoiceDefinition)
// declared on it.
func forChaos(t testing.TB) rigOption {
	dir := intentsDir(t, "buh_invoice.create.v1.yaml", odataInvoiceDefinition)
	return func(s *rigSpec) {
		forLoad(300, 3000)(s)
		withOData("buh", "timeout_ms: 300, settle_ms: 3000")(s)
		withIntents(dir)(s)
	}
}

// config is the rig's configuration: every target at the simulators.
func (s *rigSpec) config(simURL string) string {
	bitrix24 := ""
	if s.bitrix24 != "" {
		bitrix24 = ", " + s.bitrix24
	}
	lines := map[string]string{
		"onec":     fmt.Sprintf("base_url: \"%s/onec\", timeout_ms: %d", simURL, s.timeoutMS),
		"bitrix24": fmt.Sprintf("webhook_url_env: E2E_BITRIX24_WEBHOOK, timeout_ms: %d, rate: { per_second: %d, burst: %d } %s", s.timeoutMS, rigBitrix24Rate, rigBitrix24Bucket, bitrix24),
		"yookassa": fmt.Sprintf("base_url: \"%s/yookassa/v3\", shop_id: \"e2e-shop\", secret_key_env: E2E_YOOKASSA_SECRET, timeout_ms: %[2]d, read_timeout_ms: %[2]d, settle_ms: %[2]d", simURL, s.timeoutMS),
	}
	names := []string{"onec", "bitrix24", "yookassa"}
	for _, target := range s.targets {
		if _, ok := lines[target.name]; !ok {
			names = append(names, target.name)
		}
		lines[target.name] = target.settings(simURL)
	}
	var b strings.Builder
	b.WriteString("contour: test\ntargets:\n")
	for _, name := range names {
		fmt.Fprintf(&b, "  %s: { %s }\n", name, lines[name])
	}
	b.WriteString(s.settings)
	if s.intentsDir != "" {
		b.WriteString("intents_dir: " + s.intentsDir + "\n")
	}
	return b.String()
}

// newRig starts the simulator binary, writes a configuration pointing
// every target at it, makes the journal and an agent token with every
// scope, and starts serve; the options change each step.
func newRig(t testing.TB, options ...rigOption) *rig {
	t.Helper()
	s := rigSpec{timeoutMS: 1000, settings: rigRetry, dataDir: filepath.Join(t.TempDir(), "data")}
	for _, o := range options {
		o(&s)
	}
	r := &rig{t: t, addr: freeAddr(t), dataDir: s.dataDir}
	r.journal = filepath.Join(r.dataDir, "journal.db")
	if s.whole != "" {
		r.config = configtest.Write(t, s.whole)
	} else {
		r.simURL = startSim(t)
		r.config = configtest.Write(t, s.config(r.simURL))
		r.env = []string{
			"E2E_BITRIX24_WEBHOOK=" + r.simURL + "/bitrix24" + sim.Bitrix24WebhookPath(),
			"E2E_YOOKASSA_SECRET=sim-secret-key",
		}
	}
	r.env = append(r.env, s.env...)
	if s.journalURL != "" {
		r.journal = s.journalURL
		r.env = append(r.env, "ONCEGATE_JOURNAL_URL="+s.journalURL)
	}
	runBinary(t, r.env, "migrate", "up", "--config", r.config, "--data", r.dataDir)
	out := runBinary(t, r.env, "token", "create", "--config", r.config, "--data", r.dataDir, "--name", "e2e-agent", "--scopes", "read,draft,write,post,pay")
	r.token = lastLine(out)
	if !strings.HasPrefix(r.token, "og_") {
		t.Fatalf("token create's last line is not a token: %q", out)
	}
	if !s.notStarted {
		r.serve()
	}
	return r
}

// launch starts serve on the rig's address, with env beside the rig's,
// and does not wait for it.
func (r *rig) launch(env ...string) *proc {
	r.gateway = start(r.t, append(r.env[:len(r.env):len(r.env)], env...), "serve", "--config", r.config, "--data", r.dataDir, "--listen", r.addr)
	r.apiURL = "http://" + r.addr
	return r.gateway
}

// serve starts serve (again) on the rig's address, with env beside the
// rig's, and fails the test if it does not become ready.
func (r *rig) serve(env ...string) {
	r.t.Helper()
	if err := r.tryServe(env...); err != nil {
		r.t.Fatal(err)
	}
}

// tryServe is serve for goroutines beside the test's: it says what went
// wrong instead of failing the test.
func (r *rig) tryServe(env ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for attempt := 0; ; attempt++ {
		r.launch(env...)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if resp, err := http.Get(r.apiURL + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return nil
				}
			}
			if r.gateway.exited() {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if attempt == 5 {
			return fmt.Errorf("gateway did not restart; its output%s", r.gateway.dump(r.t))
		}
	}
}

// addInstance starts one more gateway on the rig's journal.
func (r *rig) addInstance(t *testing.T) *instance {
	t.Helper()
	in := &instance{addr: freeAddr(t), dataDir: filepath.Join(t.TempDir(), "data")}
	in.gateway = start(t, r.env, "serve", "--config", r.config, "--data", in.dataDir, "--listen", in.addr)
	waitHTTP(t, "http://"+in.addr+"/readyz")
	r.others = append(r.others, in)
	return in
}
