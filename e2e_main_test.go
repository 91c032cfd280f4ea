package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncegate/oncegate/store"
)

// End-to-end tests: the real binary, started and killed as a user would.

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

	r.serve()
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
	out, err := serveOnce(t, r.env, "--config", r.config, "--data", r.dataDir)
	if err == nil || !strings.Contains(out, "already running") {
		t.Fatalf("second serve: %v\n%s", err, out)
	}
	// Short commands still work beside it.
	if out := runBinary(t, r.env, "token", "list", "--config", r.config, "--data", r.dataDir); !strings.Contains(out, "e2e-agent") {
		t.Fatalf("token list: %s", out)
	}
}

// With no config, serve runs on built-in simulators and prints a first
// token once. The simulators listen where --sim-listen says, on every
// run, and the simulated 1C's numbers go on across a restart.
func TestServeDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, simAddr := freeAddr(t), freeAddr(t)
	p := start(t, nil, "serve", "--data", filepath.Join(dir, "data"), "--listen", addr, "--sim-listen", simAddr)
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
	if !strings.Contains(p.output(), "SIMULATORS IN USE") || !strings.Contains(p.output(), "simulators=http://"+simAddr+" ") {
		t.Fatalf("simulators at %s not announced:\n%s", simAddr, p.output())
	}
	if !strings.Contains(p.output(), `msg="intent definitions loaded" files=0 intents_dir="" built_in=7`) {
		t.Fatalf("the loaded intents not logged:\n%s", p.output())
	}
	rg := &rig{t: t, apiURL: "http://" + addr, token: token}
	code, body, err := rg.post("test:invoice.create:order-default:v1", fmt.Sprintf(e2eInvoice, "order-default", 1))
	if err != nil || code != 200 || fmt.Sprint(body["result"]) != "map[number:ОГ00-000001 state:created]" {
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
	p.wait()
	p2 := start(t, nil, "serve", "--data", filepath.Join(dir, "data"), "--listen", addr, "--sim-listen", simAddr)
	waitHTTP(t, "http://"+addr+"/readyz")
	if strings.Contains(p2.output(), "og_") {
		t.Fatal("a token was printed again")
	}
	// A fault script's address still reaches the simulators, and the next
	// invoice is the second, not a second ОГ00-000001.
	waitHTTP(t, "http://"+simAddr+"/_sim/effects")
	code, body, err = rg.post("test:invoice.create:order-default-2:v1", fmt.Sprintf(e2eInvoice, "order-default-2", 1))
	if err != nil || code != 200 || fmt.Sprint(body["result"]) != "map[number:ОГ00-000002 state:created]" {
		t.Fatalf("the first invoice after a restart: %d %v %v", code, body, err)
	}
}

// Bad configuration fails at start with the key and what is wrong.
func TestBadConfig(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(cfg, []byte("retry: { max_attempts: 0 }\ntargets: { onec: { base_url: \"ftp://x\" } }\nsurprise: 1\n"), 0o600)
	out, err := serveOnce(t, nil, "--config", cfg, "--data", t.TempDir())
	if err == nil || !strings.Contains(out, "surprise") {
		t.Fatalf("unknown key not named: %v\n%s", err, out)
	}
	os.WriteFile(cfg, []byte("retry: { max_attempts: 0 }\ntargets: { onec: { base_url: \"ftp://x\" } }\n"), 0o600)
	out, _ = serveOnce(t, nil, "--config", cfg, "--data", t.TempDir())
	for _, want := range []string{"retry.max_attempts", "targets.onec.base_url"} {
		if !strings.Contains(out, want) {
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
