package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// The conformance suite of issue 22: clients and validators nobody here
// wrote, run against the real binary. The Node ones live in
// .ci/conformance (pinned by its package-lock.json, installed by .ci/run
// with npm ci); the metrics are linted by promlint, the linter of
// promtool check metrics.

// conformanceDir is the Node project of the third-party clients.
const conformanceDir = ".ci/conformance"

// conformanceMinNode is the oldest Node.js the pinned packages run on
// (Redocly CLI's floor on the 20 line).
var conformanceMinNode = [3]int{20, 19, 0}

// The metrics a scrape serves are what promtool check metrics accepts,
// their help texts name every label value they take, and a target is
// named as the API names it (target_system), never by its adapter.
func TestConformanceMetrics(t *testing.T) {
	t.Parallel()
	r := newRig(t)

	// Calls of each kind to each target: an execute and a validate at the
	// CRM and 1C, a validate at the payment provider, a replay and a
	// mismatch.
	targetSystems := map[string]bool{}
	for _, c := range []struct{ key, envelope string }{
		{"test:crm.callback:create:metrics-a:v1", `{"schema_version":"1.0","intent":"crm.callback.create","payload":{"customer_id":"customer-1042","due_at":"2030-01-15T10:00:00Z"}}`},
		{"test:crm.callback:create:metrics-a:v1", `{"schema_version":"1.0","intent":"crm.callback.create","payload":{"customer_id":"customer-1042","due_at":"2030-01-15T10:00:00Z"}}`},
		{"test:crm.callback:create:metrics-a:v1", `{"schema_version":"1.0","intent":"crm.callback.create","payload":{"customer_id":"customer-1042","due_at":"2030-01-16T10:00:00Z"}}`},
		{"test:invoice.create:order-metrics:v1", fmt.Sprintf(e2eInvoice, "order-metrics", 1)},
		{"test:payment.charge:order-metrics:v1", `{"schema_version":"1.0","intent":"payment.charge","mode":"validate","payload":{"account_id":"merchant-account-17","order_id":"order-metrics","amount_minor":1000,"currency":"RUB"}}`},
	} {
		code, body, err := r.post(c.key, c.envelope)
		if err != nil || code >= 500 {
			t.Fatalf("%s: %d %v %v", c.key, code, body, err)
		}
		if ts, ok := body["target_system"].(string); ok && ts != "" {
			targetSystems[ts] = true
		}
	}
	for _, want := range []string{"onec", "crm", "payments"} {
		if !targetSystems[want] {
			t.Fatalf("no answer named target_system %q: %v", want, targetSystems)
		}
	}

	resp, err := http.Get(r.apiURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}

	t.Run("promlint", func(t *testing.T) {
		problems, err := promlint.New(bytes.NewReader(scrape)).Lint()
		if err != nil {
			t.Fatalf("promlint cannot parse the scrape: %v", err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	})

	help, values := parseScrape(t, scrape)
	t.Run("help names every label value", func(t *testing.T) {
		for _, c := range []struct {
			metric, label string
			want          []string
		}{
			{"oncegate_target_call_seconds", "call", []string{"execute", "lookup", "validate", "read"}},
			{"oncegate_operation_decisions_total", "decision", []string{"execute", "resume", "replay", "in_progress", "awaiting_approval", "mismatch", "foreign", "refused"}},
		} {
			text, ok := help[c.metric]
			if !ok {
				t.Errorf("%s is not served", c.metric)
				continue
			}
			// The values this scrape shows count too, whatever the list.
			for v := range values[c.metric][c.label] {
				if !slices.Contains(c.want, v) {
					c.want = append(c.want, v)
				}
			}
			for _, v := range c.want {
				if !regexp.MustCompile(`\b` + regexp.QuoteMeta(v) + `\b`).MatchString(text) {
					t.Errorf("the help of %s does not name %s %q: %q", c.metric, c.label, v, text)
				}
			}
		}
	})
	t.Run("target label is the API's target_system", func(t *testing.T) {
		seen := map[string]bool{}
		for metric, labels := range values {
			for v := range labels["target"] {
				seen[v] = true
				if !targetSystems[v] {
					t.Errorf("%s{target=%q}: the API names its targets %v", metric, v, targetSystems)
				}
			}
		}
		for _, want := range []string{"crm", "payments"} {
			if !seen[want] {
				t.Errorf("no series with target=%q after calls to it; seen %v", want, seen)
			}
		}
		for _, adapter := range []string{"bitrix24", "yookassa", "1c"} {
			if seen[adapter] {
				t.Errorf("target=%q is an adapter's name, not the API's", adapter)
			}
		}
	})
}

// seriesRe matches a sample line of the text exposition format: the
// metric name and its label set.
var (
	seriesRe = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s`)
	labelRe  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// parseScrape reads a scrape in the text format: the help text of each
// family, and the values each label takes, by family (a histogram's
// _bucket, _sum and _count series count as the family's).
func parseScrape(t *testing.T, scrape []byte) (help map[string]string, values map[string]map[string]map[string]bool) {
	t.Helper()
	help = map[string]string{}
	values = map[string]map[string]map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(scrape))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, text, _ := strings.Cut(rest, " ")
			help[name] = text
			continue
		}
		m := seriesRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		family := m[1]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(family, suffix); ok && help[f] != "" {
				family = f
			}
		}
		for _, l := range labelRe.FindAllStringSubmatch(m[2], -1) {
			if values[family] == nil {
				values[family] = map[string]map[string]bool{}
			}
			if values[family][l[1]] == nil {
				values[family][l[1]] = map[string]bool{}
			}
			values[family][l[1]][l[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return help, values
}

// The official MCP TypeScript SDK client, the MCP Inspector CLI, a
// generic HTTP client and a client generated from the served OpenAPI
// document (openapi-typescript, checked by tsc) against the binary, and
// Redocly's lint of that document. Each script in .ci/conformance says what it
// checks; a failure shows its whole output.
func TestConformanceClients(t *testing.T) {
	t.Parallel()
	node := conformanceNode(t)
	r := newRig(t)
	env := append(os.Environ(),
		"ONCEGATE_URL="+r.apiURL,
		"ONCEGATE_TOKEN="+r.token,
		"ONCEGATE_CONTOUR=test",
		"NO_COLOR=1",
	)
	for _, script := range []string{"http.mjs", "mcp-sdk.mjs", "inspector.mjs", "openapi-client.mjs"} {
		t.Run(strings.TrimSuffix(script, ".mjs"), func(t *testing.T) {
			runConformance(t, env, node, filepath.Join(conformanceDir, script))
		})
	}
	// The MCP clients' requests above each made the SDK connect and
	// disconnect a stateless session: that is DEBUG, not an INFO pair per
	// request in the gateway's log.
	t.Run("mcp log", func(t *testing.T) {
		for _, line := range strings.Split(r.gateway.output(), "\n") {
			if strings.Contains(line, "level=INFO") && (strings.Contains(line, `msg="server connecting"`) || strings.Contains(line, "session connected") || strings.Contains(line, "session disconnected")) {
				t.Errorf("an MCP request logged at INFO: %s", line)
			}
		}
	})
	t.Run("redocly", func(t *testing.T) {
		resp, err := http.Get(r.apiURL + "/v1/openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /v1/openapi.json: %d %v", resp.StatusCode, err)
		}
		file := filepath.Join(t.TempDir(), "openapi.json")
		if err := os.WriteFile(file, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		// Redocly reports usage to its vendor unless told not to; there is
		// no network here to wait for anyway.
		renv := append(env, "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
		runConformance(t, renv, node, filepath.Join(conformanceDir, "node_modules/@redocly/cli/bin/cli.js"),
			"lint", "--config", filepath.Join(conformanceDir, "redocly.yaml"), "--format", "stylish", file)
	})
}

// runConformance runs node with args and fails the test with its output
// if it does not exit 0.
func runConformance(t *testing.T, env []string, node string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if testing.Verbose() {
		t.Logf("node %s:\n%s", strings.Join(args, " "), out)
	}
}

// conformanceNode returns the node to run the clients with, once it and
// the pinned packages are there. Without them the test fails in CI
// (.ci/run installs them) and is skipped elsewhere, saying what to run.
func conformanceNode(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (.ci/run installs it)")
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: the conformance clients need Node.js %d.%d or newer", conformanceMinNode[0], conformanceMinNode[1])
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		missing("node --version: %v", err)
	}
	if v := strings.TrimSpace(string(out)); !versionAtLeast(v, conformanceMinNode) {
		missing("node %s is older than the conformance clients need (%d.%d)", v, conformanceMinNode[0], conformanceMinNode[1])
	}
	// Every pinned package, at its pinned version: a stale install after a
	// bump fails here rather than somewhere inside a client.
	var pkg struct{ Dependencies map[string]string }
	if err := readJSON(filepath.Join(conformanceDir, "package.json"), &pkg); err != nil {
		t.Fatal(err)
	}
	for name, want := range pkg.Dependencies {
		var got struct{ Version string }
		if err := readJSON(filepath.Join(conformanceDir, "node_modules", name, "package.json"), &got); err != nil || got.Version != want {
			missing("%s %s is not installed in %s (have %q): run npm ci --prefix %s", name, want, conformanceDir, got.Version, conformanceDir)
		}
	}
	return node
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// versionAtLeast reports whether v ("v20.19.2") is min or newer.
func versionAtLeast(v string, min [3]int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	for i := range 3 {
		n := 0
		if i < len(parts) {
			n, _ = strconv.Atoi(strings.TrimFunc(parts[i], func(r rune) bool { return r < '0' || r > '9' }))
		}
		if n != min[i] {
			return n > min[i]
		}
	}
	return true
}

// The reference Standard Webhooks library (standardwebhooks, in
// .ci/conformance/webhooks.mjs) verifies what the real binary sent during
// a secret rotation: every delivery accepted with each secret, every
// changed one rejected. The deliveries are an invoice made (its number in
// Cyrillic), one refused and a callback, recorded at a loopback receiver.
func TestConformanceWebhooks(t *testing.T) {
	t.Parallel()
	node := conformanceNode(t)
	hooks := newHookReceiver(t, func(int) int { return http.StatusNoContent })
	r := newRig(t, hookConfig(hooks.url, "operation.succeeded", "operation.failed"), hookEnv())
	for _, c := range []struct {
		key, envelope string
		code          int
	}{
		{"test:invoice.create:order-hook-conf:v1", fmt.Sprintf(e2eInvoice, "order-hook-conf", 2), 200},
		{"test:invoice.create:order-hook-conf-bad:v1", strings.Replace(fmt.Sprintf(e2eInvoice, "order-hook-conf-bad", 1), "customer-1042", "customer-nobody", 1), 422},
		{"test:crm.callback:create:hook-conf:v1", `{"schema_version":"1.0","intent":"crm.callback.create","payload":{"customer_id":"customer-1042","due_at":"2030-01-15T10:00:00Z","comment":"перезвонить по счёту"}}`, 200},
	} {
		if code, body, err := r.post(c.key, c.envelope); err != nil || code != c.code {
			t.Fatalf("%s: %d %v %v, want %d", c.key, code, body, err, c.code)
		}
	}
	got := hooks.await(t, 3)
	for _, d := range got {
		if sigs := strings.Fields(d.Headers["webhook-signature"]); len(sigs) != 2 {
			t.Fatalf("a delivery during a rotation carries %d signatures, want one per secret: %q", len(sigs), sigs)
		}
	}
	file := filepath.Join(t.TempDir(), "deliveries.json")
	b, err := json.Marshal(map[string]any{"secrets": []string{hookSecret, hookPreviousSecret}, "deliveries": got})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	runConformance(t, append(os.Environ(), "WEBHOOKS_FILE="+file, "NO_COLOR=1"), node, filepath.Join(conformanceDir, "webhooks.mjs"))
}
