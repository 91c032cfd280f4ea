package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/store"
)

// bearer adds an agent token to every request of an MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the official MCP client to the gateway over
// loopback with token.
func (g *gateway) mcpSession(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   g.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token}},
		MaxRetries: -1,
	}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// toolAnswer is a tool result as an agent reads it: the API's answer.
type toolAnswer struct {
	isError bool
	meta    mcp.Meta
	body    map[string]any
}

func (a toolAnswer) str(field string) string { s, _ := a.body[field].(string); return s }

func (a toolAnswer) errCode() string {
	errs, _ := a.body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	e, _ := errs[0].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) toolAnswer {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	a := toolAnswer{isError: res.IsError, meta: res.Meta}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("call %s: structured content is not the API's answer: %s", tool, raw)
	}
	// The text content carries the same answer for models that read text.
	if len(res.Content) != 1 {
		t.Fatalf("call %s: %d content items", tool, len(res.Content))
	}
	var text map[string]any
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || json.Unmarshal([]byte(tc.Text), &text) != nil || text["state"] != a.body["state"] || text["status"] != a.body["status"] {
		t.Fatalf("call %s: text content differs from the structured answer", tool)
	}
	// The answer is the API's: the state in state, and status the state
	// again (200, 202) or the HTTP status as a number (a problem).
	httpStatus, _ := a.meta["http_status"].(float64)
	if a.str("state") == "" {
		t.Fatalf("call %s: no state: %v", tool, a.body)
	}
	if want := any(a.body["state"]); httpStatus >= 400 {
		if a.body["status"] != httpStatus || a.str("type") == "" || a.str("title") == "" {
			t.Fatalf("call %s: HTTP %v answered without RFC 9457's status %v, type and title: %v", tool, httpStatus, httpStatus, a.body)
		}
	} else if a.body["status"] != want {
		t.Fatalf("call %s: status %v, want the state %v", tool, a.body["status"], want)
	}
	return a
}

// The tools an agent sees are the intents its token may use, each with
// the payload schema /v1/intents serves.
func TestMCPToolsFollowScopes(t *testing.T) {
	t.Parallel()
	g := setup(t)
	drafter := g.MustToken("agent-draft", "draft", "read")
	cs, err := g.mcpSession(t, drafter)
	if err != nil {
		t.Fatal(err)
	}
	if in := cs.InitializeResult().Instructions; !strings.Contains(in, "contour is test") || !strings.Contains(in, "test:invoice.create:order-48291:v1") {
		t.Fatalf("the instructions do not teach this gateway's keys:\n%s", in)
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := []string{"get_operation", "sales_order.create_draft", "sales_order.get_status"}
	if !slices.Equal(names, want) {
		t.Fatalf("a draft+read token sees tools %v, want %v", names, want)
	}

	cs, err = g.mcpSession(t, g.token)
	if err != nil {
		t.Fatal(err)
	}
	list, err = cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	intents := g.do("GET", "/v1/intents", g.token, nil, nil)
	schemas := map[string]any{}
	for _, in := range intents.Body["intents"].([]any) {
		m := in.(map[string]any)
		schemas[m["name"].(string)] = m["schema"]
	}
	var sawInvoice bool
	for _, tool := range list.Tools {
		if tool.Name == "payment.charge" || tool.Name == "payment.refund" {
			t.Fatalf("a token without pay is offered %s", tool.Name)
		}
		if tool.Name == "get_operation" {
			continue
		}
		raw, _ := json.Marshal(tool.InputSchema)
		var in struct {
			Properties map[string]any `json:"properties"`
		}
		json.Unmarshal(raw, &in)
		got, _ := json.Marshal(in.Properties["payload"])
		want, _ := json.Marshal(schemas[tool.Name])
		if string(got) != string(want) {
			t.Fatalf("%s: the tool's payload schema differs from /v1/intents:\n%s\n%s", tool.Name, got, want)
		}
		sawInvoice = sawInvoice || tool.Name == "invoice.create"
	}
	if !sawInvoice {
		t.Fatal("invoice.create is not offered to a write token")
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "payment.charge", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a token without pay called payment.charge")
	}
}

// A tool call is an API call: one effect per key, the stored answer on a
// retry, a mismatch refused, nothing journaled for a refused call.
func TestMCPExactlyOnce(t *testing.T) {
	t.Parallel()
	g := setup(t)
	cs, err := g.mcpSession(t, g.token)
	if err != nil {
		t.Fatal(err)
	}
	const key = "test:invoice.create:order-mcp-1:v1"

	// A dry run plans and journals nothing.
	v := call(t, cs, "invoice.create", map[string]any{"operation_key": key, "mode": "validate", "payload": adapterstest.InvoicePayload("order-mcp-1", 2)})
	if v.isError || v.str("state") != "valid" || v.str("plan_hash") == "" {
		t.Fatalf("validate: %+v", v)
	}
	if _, err := g.store.Get(context.Background(), key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("validate journaled the key: %v", err)
	}

	first := call(t, cs, "invoice.create", map[string]any{"operation_key": key, "plan_hash": v.str("plan_hash"), "actor_id": "user-42", "payload": adapterstest.InvoicePayload("order-mcp-1", 2)})
	if first.isError || first.str("state") != "succeeded" || first.str("target_object_id") == "" || first.meta["http_status"] != float64(200) {
		t.Fatalf("first: %+v", first)
	}
	again := call(t, cs, "invoice.create", map[string]any{"operation_key": key, "payload": adapterstest.InvoicePayload("order-mcp-1", 2)})
	if again.isError || again.str("target_object_id") != first.str("target_object_id") || again.body["replayed"] != true || again.meta["replayed"] != true {
		t.Fatalf("retry: %+v", again)
	}
	if n := g.sim.Effects(sim.OneC, key); n != 1 {
		t.Fatalf("1C has %d effects for the key, want 1", n)
	}
	if row := g.row(key); row.Status != store.StatusSucceeded || row.Agent != "agent-a" || row.TargetObjectID != first.str("target_object_id") {
		t.Fatalf("journal row: %+v", row)
	}

	changed := call(t, cs, "invoice.create", map[string]any{"operation_key": key, "payload": adapterstest.InvoicePayload("order-mcp-1", 3)})
	if !changed.isError || changed.errCode() != "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH" || changed.meta["http_status"] != float64(422) {
		t.Fatalf("changed quantity: %+v", changed)
	}
	got := call(t, cs, "get_operation", map[string]any{"operation_key": key})
	if got.isError || got.str("state") != "succeeded" || got.str("target_object_id") != first.str("target_object_id") {
		t.Fatalf("get_operation: %+v", got)
	}

	// Refusals before execution bind nothing: the key stays free.
	const free = "test:invoice.create:order-mcp-2:v1"
	for name, args := range map[string]map[string]any{
		"UNKNOWN_FIELD argument":  {"operation_key": free, "method": "Документ.Записать()", "payload": adapterstest.InvoicePayload("order-mcp-2", 1)},
		"UNKNOWN_FIELD payload":   {"operation_key": free, "payload": map[string]any{"order_id": "order-mcp-2", "posted": true}},
		"IDEMPOTENCY_KEY_INVALID": {"operation_key": "test:payment.charge:order-mcp-2:v1", "payload": adapterstest.InvoicePayload("order-mcp-2", 1)},
	} {
		a := call(t, cs, "invoice.create", args)
		if code, _, _ := strings.Cut(name, " "); !a.isError || a.errCode() != code {
			t.Fatalf("%s: %+v", name, a)
		}
	}
	// A call without operation_key is told so in MCP's words — the
	// argument, not the HTTP header — with an example in this gateway's
	// contour; validate needs none.
	nokey := call(t, cs, "invoice.create", map[string]any{"payload": adapterstest.InvoicePayload("order-mcp-2", 1)})
	if !nokey.isError || nokey.errCode() != "IDEMPOTENCY_KEY_MISSING" {
		t.Fatalf("no operation_key: %+v", nokey)
	}
	if msg := fmt.Sprint(nokey.body["errors"]); !strings.Contains(msg, "operation_key") || strings.Contains(msg, "Idempotency-Key") ||
		strings.Contains(msg, "request_id") || !strings.Contains(msg, "test:invoice.create:") || strings.Contains(msg, "prod:") {
		t.Fatalf("the missing key is not told in MCP's words and this contour: %s", msg)
	}
	if v := call(t, cs, "invoice.create", map[string]any{"mode": "validate", "payload": adapterstest.InvoicePayload("order-mcp-2", 1)}); v.isError {
		t.Fatalf("validate without operation_key: %+v", v)
	}
	missing := call(t, cs, "get_operation", map[string]any{"operation_key": free})
	if !missing.isError || missing.errCode() != "OPERATION_NOT_FOUND" {
		t.Fatalf("a refused call left %s behind: %+v", free, missing)
	}
	if n := g.sim.Effects(sim.OneC, free); n != 0 {
		t.Fatalf("a refused call reached 1C: %d effects", n)
	}
}

// Money through MCP waits for a person like money through the API.
func TestMCPChargeAwaitsApproval(t *testing.T) {
	t.Parallel()
	g := setup(t)
	cs, err := g.mcpSession(t, g.MustToken("agent-pay", "pay", "read"))
	if err != nil {
		t.Fatal(err)
	}
	const key = "test:payment.charge:order-mcp-9:v1"
	a := call(t, cs, "payment.charge", map[string]any{"operation_key": key, "payload": map[string]any{
		"account_id": "merchant-account-17", "order_id": "order-mcp-9", "amount_minor": 125000, "currency": "RUB",
	}})
	if a.isError || a.str("state") != "awaiting_approval" || a.errCode() != "APPROVAL_REQUIRED" || a.meta["http_status"] != float64(202) || a.meta["retry_after_seconds"] == nil {
		t.Fatalf("charge: %+v", a)
	}
	if g.approval(key).Status != store.ApprovalPending {
		t.Fatal("no pending approval for the charge")
	}
	if n := g.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(key)); n != 0 {
		t.Fatalf("the provider was charged before approval: %d", n)
	}

	// The agent waits through get_operation's wait_seconds, not by polling:
	// the call is answered once the accountant decided.
	waited := make(chan toolAnswer, 1)
	go func() {
		waited <- call(t, cs, "get_operation", map[string]any{"operation_key": key, "wait_seconds": 30})
	}()
	awaitWatching(t, g.store, 1)
	if err := g.store.DecideApproval(context.Background(), g.approval(key).ID, true, "anna", "checked"); err != nil {
		t.Fatal(err)
	}
	if got := <-waited; got.isError || got.str("state") != "succeeded" {
		t.Fatalf("get_operation with wait_seconds after the approval: %+v", got)
	}
	if bad := call(t, cs, "get_operation", map[string]any{"operation_key": key, "wait_seconds": 600}); !bad.isError || bad.errCode() != "VALIDATION_ERROR" {
		t.Fatalf("wait_seconds 600: %+v", bad)
	}
}

// No token, no MCP; the refusal is the API's own.
func TestMCPNeedsToken(t *testing.T) {
	t.Parallel()
	g := setup(t)
	if _, err := g.mcpSession(t, "og_not-a-token"); err == nil {
		t.Fatal("an unknown token connected")
	}
	r := g.do("POST", "/mcp", "", map[string]string{"Accept": "application/json, text/event-stream"}, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	expect(t, r, http.StatusUnauthorized, "rejected", "UNAUTHENTICATED")
	// With a token, the list is the token's own: no shared cache keeps it.
	r = g.do("POST", "/mcp", g.token, map[string]string{"Accept": "application/json, text/event-stream"}, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if res, _ := r.Body["result"].(map[string]any); r.Code != http.StatusOK || res["cacheScope"] != "private" {
		t.Fatalf("tools/list: HTTP %d %s", r.Code, r.Raw)
	}
}

// BenchmarkOperationReplayMCP: BenchmarkOperationReplay through an MCP
// tool call — the JSON-RPC envelope and the in-process API request on top.
func BenchmarkOperationReplayMCP(b *testing.B) {
	g := setupWith(b, benchConfig())
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: g.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{g.token}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := map[string]any{"operation_key": "test:invoice.create:bench-mcp:v1", "payload": adapterstest.InvoicePayload("order-bench", 2)}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "invoice.create", Arguments: args}); err != nil || res.IsError {
		b.Fatalf("%v %+v", err, res)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "invoice.create", Arguments: args})
			if err != nil || res.IsError || res.Meta["replayed"] != true {
				b.Fatalf("%v %+v", err, res)
			}
		}
	})
}

// Behind a reverse proxy on the same host, requests arrive on loopback
// with the public Host: the token decides, not the Host.
func TestMCPBehindProxy(t *testing.T) {
	t.Parallel()
	g := setup(t)
	for _, tc := range []struct {
		token string
		want  int
	}{{g.token, http.StatusOK}, {"", http.StatusUnauthorized}} {
		req, _ := http.NewRequest("POST", g.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Host = "oncegate.example.com"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var rpc struct {
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		json.NewDecoder(resp.Body).Decode(&rpc)
		resp.Body.Close()
		if resp.StatusCode != tc.want || (tc.want == http.StatusOK && len(rpc.Result.Tools) == 0) {
			t.Fatalf("token %t via a proxy's Host: HTTP %d, %d tools", tc.token != "", resp.StatusCode, len(rpc.Result.Tools))
		}
	}
}

// MCP requests count against the token's rate limit, each once: a tool
// call is not charged again for its in-process API request.
func TestMCPRateLimited(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.RateLimit.PerSecond, cfg.RateLimit.Burst = 0.001, 3
	g := setupWith(t, cfg)
	cs, err := g.mcpSession(t, g.token) // initialize: 1
	if err != nil {
		t.Fatal(err)
	}
	// A tool call (2) must not also be charged for its API request, or the
	// third would be refused.
	a := call(t, cs, "get_operation", map[string]any{"operation_key": "test:invoice.create:none-yet:v1"})
	if a.errCode() != "OPERATION_NOT_FOUND" {
		t.Fatalf("first call: %+v", a)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil { // 3
		t.Fatalf("within the burst: %v", err)
	}
	if _, err := cs.ListTools(context.Background(), nil); err == nil { // 4: over
		t.Fatal("an MCP request past the token's rate limit was served")
	}
}
