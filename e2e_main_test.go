package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
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
	"github.com/oncegate/oncegate/store"
)

// End-to-end tests: the real binary, started and killed as a user would.

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

// start runs the binary with args and env; it is killed at cleanup.
func start(t testing.TB, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin(t), args...)}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout = lockedWriter{&p.mu, &p.stdout}
	p.cmd.Stderr = lockedWriter{&p.mu, &p.stderr}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		if t.Failed() {
			t.Logf("oncegate %v output%s", args, p.dump(t))
		}
	})
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
	p.cmd.Wait()
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

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// rig is a gateway binary against a simulator binary, with a config file.
type rig struct {
	t       testing.TB
	simURL  string
	apiURL  string
	dataDir string
	journal string // where the journal is, as store.Open takes it
	config  string
	env     []string
	token   string
	gateway *proc
}

// rigRetry is the retry policy of the rigs: quick, so tests are.
const rigRetry = "retry: { max_attempts: 3, initial_delay_ms: 20, multiplier: 2, max_delay_ms: 100, jitter: true }\n"

func newRig(t testing.TB) *rig {
	t.Helper()
	r := newRigWith(t, 1000, rigRetry, "")
	r.startGateway()
	return r
}

// newRigWith starts the simulator binary, writes a config pointing every
// target at it (with timeoutMS, extra YAML, and bitrix24 keys such as
// settle_ms), and makes an agent token with every scope. It does not
// start the gateway.
func newRigWith(t testing.TB, timeoutMS int, extra, bitrix24 string) *rig {
	t.Helper()
	return newRigOn(t, "", timeoutMS, extra, bitrix24)
}

// newRigOn is newRigWith on the PostgreSQL journal at journalURL ("": the
// embedded one in the rig's data directory).
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

// rigSimEnv is the environment of the rigs' simulators.
var rigSimEnv = []string{
	sim.Bitrix24RateEnv + "=" + strconv.Itoa(rigBitrix24Rate),
	sim.Bitrix24BucketEnv + "=" + strconv.Itoa(rigBitrix24Bucket),
}

func newRigOn(t testing.TB, journalURL string, timeoutMS int, extra, bitrix24 string) *rig {
	t.Helper()
	r := &rig{t: t, dataDir: filepath.Join(t.TempDir(), "data")}
	r.journal = filepath.Join(r.dataDir, "journal.db")
	simAddr := freeAddr(t)
	start(t, rigSimEnv, "sim", "--listen", simAddr)
	r.simURL = "http://" + simAddr
	waitHTTP(t, r.simURL+"/_sim/effects")

	r.config = filepath.Join(t.TempDir(), "oncegate.yaml")
	cfg := fmt.Sprintf(`contour: test
targets:
  onec: { base_url: "%[1]s/onec", timeout_ms: %[2]d }
  bitrix24: { webhook_url_env: E2E_BITRIX24_WEBHOOK, timeout_ms: %[2]d, rate: { per_second: %[4]d, burst: %[5]d } %[3]s }
  yookassa: { base_url: "%[1]s/yookassa/v3", shop_id: "e2e-shop", secret_key_env: E2E_YOOKASSA_SECRET, timeout_ms: %[2]d, read_timeout_ms: %[2]d, settle_ms: %[2]d }
`, r.simURL, timeoutMS, map[bool]string{true: ", " + bitrix24, false: ""}[bitrix24 != ""], rigBitrix24Rate, rigBitrix24Bucket) + extra
	if err := os.WriteFile(r.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r.env = []string{
		"E2E_BITRIX24_WEBHOOK=" + r.simURL + "/bitrix24" + sim.Bitrix24WebhookPath(),
		"E2E_YOOKASSA_SECRET=sim-secret-key",
	}
	if journalURL != "" {
		r.journal = journalURL
		r.env = append(r.env, "ONCEGATE_JOURNAL_URL="+journalURL)
	}
	runBinary(t, r.env, "migrate", "up", "--config", r.config, "--data", r.dataDir)
	out := runBinary(t, r.env, "token", "create", "--config", r.config, "--data", r.dataDir, "--name", "e2e-agent", "--scopes", "read,draft,write,post,pay")
	r.token = lastLine(out)
	if !strings.HasPrefix(r.token, "og_") {
		t.Fatalf("token create's last line is not a token: %q", out)
	}
	return r
}

func (r *rig) startGateway() {
	r.t.Helper()
	addr := freeAddr(r.t)
	r.gateway = start(r.t, r.env, "serve", "--config", r.config, "--data", r.dataDir, "--listen", addr)
	r.apiURL = "http://" + addr
	waitHTTP(r.t, r.apiURL+"/readyz")
}

// post submits an envelope with key; err is a transport failure.
func (r *rig) post(key, envelope string) (int, map[string]any, error) {
	req, _ := http.NewRequest("POST", r.apiURL+"/v1/operations", strings.NewReader(envelope))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, body, nil
}

// simJSON GETs a control endpoint of the simulators.
func (r *rig) simJSON(path string) map[string]map[string]int {
	r.t.Helper()
	resp, err := http.Get(r.simURL + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		r.t.Fatal(err)
	}
	return out
}

func (r *rig) fault(f string) {
	r.t.Helper()
	resp, err := http.Post(r.simURL+"/_sim/faults", "application/json", strings.NewReader(f))
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		r.t.Fatalf("fault %s refused: %d", f, resp.StatusCode)
	}
}

const e2eInvoice = `{"schema_version":"1.0","intent":"invoice.create","payload":{"order_id":"%s","organization_id":"org-main","customer_id":"customer-1042","currency":"RUB","items":[{"product_id":"product-778","quantity":%d,"unit":"pcs","price_minor":62500}]}}`

// The binary end to end: an operation, its replay, a changed payload.
func TestBinaryOperationAndReplay(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const key = "test:invoice.create:order-e2e-1:v1"
	code, first, err := r.post(key, fmt.Sprintf(e2eInvoice, "order-e2e-1", 2))
	if err != nil || code != 200 || first["state"] != "succeeded" {
		t.Fatalf("first: %d %v %v", code, first, err)
	}
	code, again, err := r.post(key, fmt.Sprintf(e2eInvoice, "order-e2e-1", 2))
	if err != nil || code != 200 || again["replayed"] != true || again["target_object_id"] != first["target_object_id"] {
		t.Fatalf("replay: %d %v %v", code, again, err)
	}
	code, changed, _ := r.post(key, fmt.Sprintf(e2eInvoice, "order-e2e-1", 3))
	if code != 422 || changed["errors"].([]any)[0].(map[string]any)["code"] != "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH" {
		t.Fatalf("changed payload: %d %v", code, changed)
	}
	if got := r.simJSON("/_sim/effects")["onec"][key]; got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
	// A reference 1C does not hold: 422 failed_final naming the field,
	// nothing made at 1C, and the refusal replayed (docs/api.md, Answers
	// and Built-in intents) — whether the gateway asked 1C to check first or 1C's execute
	// checked in its own transaction.
	const bad = "test:invoice.create:order-e2e-ref:v1"
	badBody := strings.Replace(fmt.Sprintf(e2eInvoice, "order-e2e-ref", 1), "customer-1042", "customer-nobody", 1)
	for i := range 2 {
		code, body, err := r.post(bad, badBody)
		field := ""
		if errs, _ := body["errors"].([]any); len(errs) > 0 {
			field, _ = errs[0].(map[string]any)["field"].(string)
		}
		if err != nil || code != 422 || body["state"] != "failed_final" || errorCode(body) != "REFERENCE_NOT_FOUND" ||
			field != "customer_id" || (i == 1) != (body["replayed"] == true) {
			t.Fatalf("unknown customer, request %d: %d %v %v", i+1, code, body, err)
		}
	}
	if got := r.simJSON("/_sim/effects")["onec"][bad]; got != 0 {
		t.Fatalf("an unknown customer made %d documents at 1C", got)
	}
}

// (9) kill -9 of the gateway while the target is committing; restart;
// the agent retries with its key until the answer is final: one effect.
func TestKillDuringCommit(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	const key = "test:invoice.create:order-kill-1:v1"
	body := fmt.Sprintf(e2eInvoice, "order-kill-1", 2)
	// The target takes 700 ms to commit; the gateway dies at 250 ms.
	r.fault(`{"target":"onec","fault":"delay","delay_ms":700,"times":1}`)
	done := make(chan error, 1)
	go func() { _, _, err := r.post(key, body); done <- err }()
	deadline := time.Now().Add(5 * time.Second)
	for r.simJSON("/_sim/calls")["onec"][key] == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the call never reached the target")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	r.gateway.kill9()
	if err := <-done; err == nil {
		t.Fatal("the agent got an answer from a killed gateway")
	}

	r.startGateway()
	var final map[string]any
	deadline = time.Now().Add(20 * time.Second)
	for {
		code, body, err := r.post(key, body)
		if err != nil {
			t.Fatal(err)
		}
		if code == 200 {
			final = body
			break
		}
		// Unknown until reconciled; 409 while the reconciler holds the
		// lease for its own look-up.
		if !(code == 202 && body["state"] == "unknown") && !(code == 409 && body["state"] == "started") {
			t.Fatalf("retry after restart: %d %v", code, body)
		}
		if time.Now().After(deadline) {
			t.Fatal("never resolved")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if final["state"] != "succeeded" {
		t.Fatalf("final = %v", final)
	}
	if got := r.simJSON("/_sim/effects")["onec"][key]; got != 1 {
		t.Fatalf("effects = %d, want 1", got)
	}
	// The restart reconciled by key first; if 1C had not committed yet it
	// was sent again with the same key, which its register dedupes.
	if got := r.simJSON("/_sim/calls")["onec"][key]; got < 1 || got > 2 {
		t.Fatalf("execute calls = %d, want 1 or 2", got)
	}
}

// A second serve on the same data directory refuses to start.
func TestSecondServeRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	cmd := exec.Command(bin(t), "serve", "--config", r.config, "--data", r.dataDir, "--listen", freeAddr(t))
	cmd.Env = append(os.Environ(), r.env...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "already running") {
		t.Fatalf("second serve: %v\n%s", err, out)
	}
	// Short commands still work beside it.
	if out := runBinary(t, r.env, "token", "list", "--config", r.config, "--data", r.dataDir); !strings.Contains(out, "e2e-agent") {
		t.Fatalf("token list: %s", out)
	}
}

// With no config, serve runs on built-in simulators and prints a first
// token once.
func TestServeDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := freeAddr(t)
	p := start(t, nil, "serve", "--data", filepath.Join(dir, "data"), "--listen", addr)
	waitHTTP(t, "http://"+addr+"/readyz")
	var token string
	deadline := time.Now().Add(5 * time.Second)
	for token == "" && time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(p.output()))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "og_") {
				token = sc.Text()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if token == "" {
		t.Fatalf("no first-run token printed:\n%s", p.output())
	}
	if !strings.Contains(p.output(), "SIMULATORS IN USE") {
		t.Fatal("simulators not announced")
	}
	rg := &rig{t: t, apiURL: "http://" + addr, token: token}
	code, body, err := rg.post("test:invoice.create:order-default:v1", fmt.Sprintf(e2eInvoice, "order-default", 1))
	if err != nil || code != 200 {
		t.Fatalf("operation on defaults: %d %v %v", code, body, err)
	}
	// The same operation read back over MCP, as plain JSON-RPC.
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_operation","arguments":{"operation_key":"test:invoice.create:order-default:v1"}}}`
	req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(call))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rpc struct {
		ID     int `json:"id"`
		Result struct {
			IsError    bool           `json:"isError"`
			Structured map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	err = json.NewDecoder(resp.Body).Decode(&rpc)
	resp.Body.Close()
	if err != nil || rpc.ID != 7 || rpc.Result.IsError || rpc.Result.Structured["state"] != "succeeded" || rpc.Result.Structured["target_object_id"] != body["target_object_id"] {
		t.Fatalf("get_operation over MCP: %v %+v", err, rpc)
	}
	// The token is printed once: a restart prints none.
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	p2 := start(t, nil, "serve", "--data", filepath.Join(dir, "data"), "--listen", addr)
	waitHTTP(t, "http://"+addr+"/readyz")
	if strings.Contains(p2.output(), "og_") {
		t.Fatal("a token was printed again")
	}
}

// Bad configuration fails at start with the key and what is wrong.
func TestBadConfig(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(cfg, []byte("retry: { max_attempts: 0 }\ntargets: { onec: { base_url: \"ftp://x\" } }\nsurprise: 1\n"), 0o600)
	out, err := exec.Command(bin(t), "serve", "--config", cfg, "--data", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "surprise") {
		t.Fatalf("unknown key not named: %v\n%s", err, out)
	}
	os.WriteFile(cfg, []byte("retry: { max_attempts: 0 }\ntargets: { onec: { base_url: \"ftp://x\" } }\n"), 0o600)
	out, _ = exec.Command(bin(t), "serve", "--config", cfg, "--data", t.TempDir()).CombinedOutput()
	for _, want := range []string{"retry.max_attempts", "targets.onec.base_url"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error does not name %s:\n%s", want, out)
		}
	}
}

// oncegate audit verify passes on a real journal and, after one event is
// edited with the sqlite3 client, fails naming that event.
func TestAuditVerify(t *testing.T) {
	t.Parallel()
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		// CI installs it (.ci/run); a developer's machine may not have it.
		if os.Getenv("CI") != "" {
			t.Fatal("the sqlite3 client is needed (apt-get install sqlite3)")
		}
		t.Skip("the sqlite3 client is not installed (apt-get install sqlite3)")
	}
	r := newRig(t)
	for i := range 3 {
		order := fmt.Sprintf("order-audit-%d", i)
		if code, body, err := r.post("test:invoice.create:"+order+":v1", fmt.Sprintf(e2eInvoice, order, 1)); err != nil || code != 200 {
			t.Fatalf("%d %v %v", code, body, err)
		}
	}
	out := runBinary(t, r.env, "audit", "verify", "--config", r.config, "--data", r.dataDir)
	if !strings.Contains(out, "intact") {
		t.Fatalf("verify on an untouched journal: %s", out)
	}
	journal := filepath.Join(r.dataDir, "journal.db")
	edit := exec.Command(sqlite3, journal, `UPDATE audit_events SET actor = 'someone-else' WHERE id = 2;`)
	if out, err := edit.CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v %s", err, out)
	}
	cmd := exec.Command(bin(t), "audit", "verify", "--config", r.config, "--data", r.dataDir)
	cmd.Env = append(os.Environ(), r.env...)
	got, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(got), "BROKEN at event 2") {
		t.Fatalf("verify after an edit: %v\n%s", err, got)
	}
}

// oncegate backup copies the journal while serve runs.
func TestBackup(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	if code, _, err := r.post("test:invoice.create:order-bk:v1", fmt.Sprintf(e2eInvoice, "order-bk", 1)); err != nil || code != 200 {
		t.Fatalf("%d %v", code, err)
	}
	restored := t.TempDir()
	copyPath := filepath.Join(restored, "journal.db")
	runBinary(t, r.env, "backup", "--config", r.config, "--data", r.dataDir, copyPath)
	// The copy is a journal in its own right.
	if out := runBinary(t, nil, "audit", "verify", "--data", restored); !strings.Contains(out, "intact") {
		t.Fatalf("verify of the copy: %s", out)
	}
	cmd := exec.Command(bin(t), "backup", "--config", r.config, "--data", r.dataDir, copyPath)
	cmd.Env = append(os.Environ(), r.env...)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "already exists") {
		t.Fatalf("backup over an existing file: %v %s", err, out)
	}
}

// A command that cannot get the journal's write lock in time says so in
// words, changes nothing, and succeeds once the lock is free.
func TestCommandOnBusyJournal(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	runBinary(t, nil, "migrate", "up", "--data", data)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin(t), "token", "create", "--data", data, "--name", "busy-agent", "--scopes", "read")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the journal was busy") || strings.Contains(string(out), "og_") {
		t.Fatalf("token create on a locked journal: %v\n%s", err, out)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if list := runBinary(t, nil, "token", "list", "--data", data); strings.Contains(list, "busy-agent") {
		t.Fatalf("a refused command left a token behind:\n%s", list)
	}
	if tok := lastLine(runBinary(t, nil, "token", "create", "--data", data, "--name", "busy-agent", "--scopes", "read")); !strings.HasPrefix(tok, "og_") {
		t.Fatalf("token create after the lock was freed: %q", tok)
	}
}

// The schema never changes under a running gateway: migrate up and down
// refuse while serve holds the data directory, and change nothing.
func TestMigrateRefusedWhileServing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, dir := range []string{"down", "up"} {
		cmd := exec.Command(bin(t), "migrate", dir, "--config", r.config, "--data", r.dataDir)
		cmd.Env = append(os.Environ(), r.env...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "serve is running") {
			t.Fatalf("migrate %s beside serve: %v\n%s", dir, err, out)
		}
	}
	if out := runBinary(t, r.env, "migrate", "version", "--config", r.config, "--data", r.dataDir); !strings.Contains(out, fmt.Sprintf("version %d ", store.LatestVersion())) {
		t.Fatalf("the schema moved: %s", out)
	}
	if code, body, err := r.post("test:invoice.create:order-mig:v1", fmt.Sprintf(e2eInvoice, "order-mig", 1)); err != nil || code != 200 {
		t.Fatalf("the gateway after a refused migrate: %d %v %v", code, body, err)
	}
}

// A first run on a busy address stops before it makes its one-time
// secrets: nothing is printed that would be lost, and the next start on a
// free address prints them.
func TestFirstRunSecretsAfterListen(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	data := filepath.Join(t.TempDir(), "data")
	out, code := runCommand(t, nil, "serve", "--data", data, "--listen", busy.Addr().String())
	if code == 0 || !strings.Contains(out, "listen") || strings.Contains(out, "First run") || strings.Contains(out, "og_") {
		t.Fatalf("serve on a busy address (exit %d) printed:\n%s", code, out)
	}
	addr := freeAddr(t)
	p := start(t, nil, "serve", "--data", data, "--listen", addr)
	waitHTTP(t, "http://"+addr+"/readyz")
	if o := p.output(); !strings.Contains(o, "First run: made agent token") || !strings.Contains(o, `First run: admin user "admin"`) {
		t.Fatalf("the next start did not print the first run's secrets:\n%s", o)
	}
}
