package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/config/configtest"
	"github.com/oncegate/oncegate/store"
)

// The checks of the agent ↔ 1C boundary article ("Как проверить
// результат"), one test each, against the real app and the 1C simulator.

func draft(items ...map[string]any) map[string]any {
	if len(items) == 0 {
		items = []map[string]any{{"product_id": "product-778", "quantity": 2, "unit": "pcs"}}
	}
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = it
	}
	return map[string]any{
		"schema_version": "1.0", "intent": "sales_order.create_draft",
		"payload": map[string]any{"organization_id": "org-main", "customer_id": "customer-1042", "warehouse_id": "warehouse-01", "currency": "RUB", "items": list},
	}
}

func withMode(env map[string]any, mode string) map[string]any { env["mode"] = mode; return env }

// 1. Validate writes nothing and returns the normalized plan.
func TestBoundaryValidateWritesNothing(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:sales_order.create_draft:req-1:v1"
	r := g.post(key, withMode(draft(), "validate"))
	if r.Code != 200 || r.str("state") != "valid" || len(r.str("plan_hash")) != 64 {
		t.Fatalf("validate: %d %s", r.Code, r.Raw)
	}
	plan, _ := r.Body["plan"].(map[string]any)
	if plan["operation"] != "sales_order.create_draft" || plan["payload"] == nil {
		t.Fatalf("plan = %v", plan)
	}
	if got := g.sim.Calls(sim.OneC, key) + g.sim.Effects(sim.OneC, key); got != 0 {
		t.Fatalf("validate reached execute at 1C: %d", got)
	}
	if _, err := g.store.Get(context.Background(), key); err == nil {
		t.Fatal("validate journaled the operation")
	}
	// The key is free: execute with the plan hash runs.
	env := draft()
	env["plan_hash"] = r.str("plan_hash")
	expect(t, g.post(key, env), http.StatusOK, "succeeded", "")

	// A validate answers what its execute would: the same request under the
	// used key is still valid; another request under it, or the key in
	// another agent's hands, is refused as the execute would be.
	expect(t, g.post(key, withMode(draft(), "validate")), http.StatusOK, "valid", "")
	changed := withMode(draft(map[string]any{"product_id": "product-779", "quantity": 1, "unit": "pcs"}), "validate")
	expect(t, g.post(key, changed), http.StatusUnprocessableEntity, "rejected", "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH")
	other := g.MustToken("agent-b", "draft")
	body, _ := json.Marshal(withMode(draft(), "validate"))
	expect(t, g.do("POST", "/v1/operations", other, map[string]string{"Idempotency-Key": key}, body), http.StatusConflict, "rejected", "IDEMPOTENCY_KEY_FOREIGN")
}

// Execute with a plan hash that no longer matches runs nothing.
func TestBoundaryPlanChanged(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:sales_order.create_draft:req-2:v1"
	v := g.post(key, withMode(draft(), "validate"))
	env := draft(map[string]any{"product_id": "product-779", "quantity": 2, "unit": "pcs"})
	env["plan_hash"] = v.str("plan_hash")
	expect(t, g.post(key, env), http.StatusConflict, "rejected", "PLAN_CHANGED")
	if got := g.sim.Calls(sim.OneC, key); got != 0 {
		t.Fatalf("a changed plan reached 1C %d times", got)
	}
	expect(t, g.post(key, draft()), http.StatusOK, "succeeded", "")
}

// 2. An unknown intent is refused with no dispatch.
func TestBoundaryUnknownIntent(t *testing.T) {
	t.Parallel()
	g := setup(t)
	for _, name := range []string{"sales_order.delete", "Documents.SalesOrder.Post", "exec", "sales_order.create_draft; DROP TABLE"} {
		env := draft()
		env["intent"] = name
		r := g.post("test:sales_order.create_draft:req-3:v1", env)
		expect(t, r, http.StatusBadRequest, "rejected", "INTENT_NOT_ALLOWED")
	}
}

// 3. An unknown payload field is refused, not ignored.
func TestBoundaryUnknownField(t *testing.T) {
	t.Parallel()
	g := setup(t)
	for _, field := range []string{"posted", "privileged_mode", "query", "script", "method"} {
		env := draft()
		env["payload"].(map[string]any)[field] = true
		r := g.post("test:sales_order.create_draft:req-4:v1", env)
		expect(t, r, http.StatusBadRequest, "rejected", "UNKNOWN_FIELD")
		if r.errField() != field {
			t.Errorf("field %q, want %q", r.errField(), field)
		}
	}
	env := draft(map[string]any{"product_id": "product-778", "quantity": 1, "unit": "pcs", "discount": 5})
	r := g.post("test:sales_order.create_draft:req-4:v1", env)
	expect(t, r, http.StatusBadRequest, "rejected", "UNKNOWN_FIELD")
	if r.errField() != "items[0].discount" {
		t.Errorf("field %q", r.errField())
	}
}

// 4. An unknown, blocked or deleted reference fails before any write,
// naming the field: the 1C service checks it in execute's transaction,
// before it writes the document (so the gateway asks once, not a check
// and then an execute), and the refusal is journaled and replayed like
// any refusal at the target (docs/api.md, Validate, plans and
// references: 422 failed_final). The corrected
// request goes under the next version of the key.
func TestBoundaryReferences(t *testing.T) {
	t.Parallel()
	g := setup(t)
	for i, c := range []struct {
		edit        func(p map[string]any)
		code, field string
	}{
		{func(p map[string]any) { p["customer_id"] = "customer-nobody" }, "REFERENCE_NOT_FOUND", "customer_id"},
		{func(p map[string]any) { p["warehouse_id"] = "warehouse-99" }, "REFERENCE_NOT_FOUND", "warehouse_id"},
		{func(p map[string]any) { p["customer_id"] = "customer-blocked-1" }, "REFERENCE_INACTIVE", "customer_id"},
		{func(p map[string]any) { p["items"].([]any)[0].(map[string]any)["product_id"] = "product-deleted-1" }, "REFERENCE_INACTIVE", "items[0].product_id"},
	} {
		key := fmt.Sprintf("test:sales_order.create_draft:ref-%d:v1", i)
		env := draft()
		c.edit(env["payload"].(map[string]any))
		r := g.post(key, env)
		expect(t, r, http.StatusUnprocessableEntity, "failed_final", c.code)
		if r.errField() != c.field {
			t.Errorf("%s: field %q, want %q", c.code, r.errField(), c.field)
		}
		if calls, made := g.sim.Calls(sim.OneC, key), g.sim.Effects(sim.OneC, key); calls != 1 || made != 0 {
			t.Fatalf("a bad reference: %d calls to 1C made %d documents, want 1 call and none", calls, made)
		}
		if op := g.row(key); op.Status != store.StatusFailedFinal || op.AttemptCount != 1 || op.ErrorCode != c.code {
			t.Fatalf("journal row %+v", op)
		}
		again := g.post(key, env)
		expect(t, again, http.StatusUnprocessableEntity, "failed_final", c.code)
		if again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatal("the refusal is not replayed")
		}
		expect(t, g.post(strings.Replace(key, ":v1", ":v2", 1), draft()), http.StatusOK, "succeeded", "")
	}
}

// 5–7. An allowed command executes with a structured result; the same
// request id and content returns it again with no second document; the
// same id with another quantity conflicts.
func TestBoundaryExecuteReplayConflict(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:sales_order.create_draft:req-2026-000184:v1"
	env := draft()
	env["request_id"] = key
	r := g.post("", env)
	expect(t, r, http.StatusOK, "succeeded", "")
	result, _ := r.Body["result"].(map[string]any)
	if !strings.HasPrefix(r.str("target_object_id"), "SO-") || result["state"] != "draft" || result["number"] == "" {
		t.Fatalf("result %s", r.Raw)
	}
	again := g.post("", env)
	expect(t, again, http.StatusOK, "succeeded", "")
	if again.str("target_object_id") != r.str("target_object_id") || again.Body["replayed"] != true {
		t.Fatalf("replay %s", again.Raw)
	}
	changed := draft(map[string]any{"product_id": "product-778", "quantity": 3, "unit": "pcs"})
	changed["request_id"] = key
	expect(t, g.post("", changed), http.StatusUnprocessableEntity, "rejected", "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH")
	if got := g.sim.Effects(sim.OneC, key); got != 1 {
		t.Fatalf("documents = %d, want 1", got)
	}
}

// 8. A failure inside the target's transaction leaves no half-written
// document and no journal row claiming success.
func TestBoundaryFailureInsideTransaction(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:sales_order.create_draft:req-8:v1"
	g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultTargetError, Times: 1})
	r := g.post(key, draft())
	expect(t, r, http.StatusUnprocessableEntity, "failed_final", "TARGET_INTERNAL_ERROR")
	if got := g.sim.Effects(sim.OneC, key); got != 0 {
		t.Fatalf("documents = %d, want 0", got)
	}
	if op := g.row(key); op.Status != store.StatusFailedFinal || op.TargetObjectID != "" {
		t.Fatalf("journal row %+v", op)
	}
	// Nothing of what 1C said reaches the agent: no stack, SQL, host or credential.
	for _, leak := range []string{"ОбщийМодуль", "SELECT", "srv-1c-prod", "S3cr3t", "aW50ZWdyYXRpb24", "Pwd"} {
		if strings.Contains(r.Raw, leak) {
			t.Errorf("the answer leaks %q: %s", leak, r.Raw)
		}
	}
	// The detail is in the audit trail, with the credentials masked.
	events, err := g.store.AuditEvents(context.Background(), store.AuditFilter{OperationKey: key, Event: "operation.failed_final"})
	if err != nil || len(events) != 1 {
		t.Fatalf("audit events %v %v", events, err)
	}
	detail := string(events[0].Detail)
	if !strings.Contains(detail, "srv-1c-prod") || strings.Contains(detail, "S3cr3t") || strings.Contains(detail, "aW50ZWdyYXRpb24") {
		t.Fatalf("audit detail %s: want the detail with credentials masked", detail)
	}
}

// 9. The journal and the audit trail link request id, intent, final
// status and object id, and hold no token or secret.
func TestBoundaryTraceHoldsNoSecrets(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:sales_order.create_draft:req-9:v1"
	env := draft()
	env["request_id"], env["actor_id"] = key, "user-42"
	r := g.post("", env)
	expect(t, r, http.StatusOK, "succeeded", "")
	op := g.row(key)
	if op.RequestID != key || op.Intent != "sales_order.create_draft" || op.Status != store.StatusSucceeded || op.TargetObjectID != r.str("target_object_id") {
		t.Fatalf("journal row %+v", op)
	}
	events, _ := g.store.AuditEvents(context.Background(), store.AuditFilter{OperationKey: key})
	var started, succeeded bool
	for _, e := range events {
		var d map[string]any
		json.Unmarshal(e.Detail, &d)
		switch e.Event {
		case "operation.started":
			started = d["request_id"] == key && d["intent"] == "sales_order.create_draft" && e.Actor.Name == "agent-a"
		case "operation.succeeded":
			succeeded = d["object_id"] == r.str("target_object_id")
		}
	}
	if !started || !succeeded {
		t.Fatalf("audit trail does not link the request to its object: %+v", events)
	}
	// No token, no token hash prefix in any table, in any column.
	db, err := sql.Open("sqlite", g.store.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`SELECT * FROM operations`, `SELECT * FROM audit_events`} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			rows.Scan(ptrs...)
			for i, v := range vals {
				s, _ := v.(string)
				if strings.Contains(s, g.token) || strings.Contains(s, g.token[3:15]) {
					t.Errorf("%s.%s holds the agent token", q, cols[i])
				}
			}
		}
		rows.Close()
	}
}

// Draft, post, read and pay are separate rights; the lifecycle of a sales
// order goes draft → posted, read without a key.
func TestSalesOrderLifecycle(t *testing.T) {
	t.Parallel()
	g := setup(t)
	drafter := g.MustToken("agent-drafter", "draft")
	poster := g.MustToken("agent-poster", "post", "read")
	body, _ := json.Marshal(draft())
	r := g.do("POST", "/v1/operations", drafter, map[string]string{"Idempotency-Key": "test:sales_order.create_draft:lc-1:v1"}, body)
	expect(t, r, http.StatusOK, "succeeded", "")
	order := r.str("target_object_id")

	post, _ := json.Marshal(map[string]any{"schema_version": "1.0", "intent": "sales_order.post", "payload": map[string]any{"order_id": order}})
	status, _ := json.Marshal(map[string]any{"schema_version": "1.0", "intent": "sales_order.get_status", "payload": map[string]any{"order_id": order}})
	charge := charge("order-lc", 100)

	expect(t, g.do("POST", "/v1/operations", drafter, map[string]string{"Idempotency-Key": "test:sales_order.post:lc-1:v1"}, post), http.StatusForbidden, "rejected", "PERMISSION_DENIED")
	expect(t, g.do("POST", "/v1/operations", poster, map[string]string{"Idempotency-Key": "test:payment.charge:lc-1:v1"}, charge), http.StatusForbidden, "rejected", "PERMISSION_DENIED")

	r = g.do("POST", "/v1/operations", poster, nil, status)
	expect(t, r, http.StatusOK, "succeeded", "")
	if res, _ := r.Body["result"].(map[string]any); res["state"] != "draft" {
		t.Fatalf("status before post: %s", r.Raw)
	}
	r = g.do("POST", "/v1/operations", poster, map[string]string{"Idempotency-Key": "test:sales_order.post:lc-1:v1"}, post)
	expect(t, r, http.StatusOK, "succeeded", "")
	r = g.do("POST", "/v1/operations", poster, nil, status)
	if res, _ := r.Body["result"].(map[string]any); res["state"] != "posted" {
		t.Fatalf("status after post: %s", r.Raw)
	}
	// A second post of the same order under a new key is refused by 1C's
	// own check before anything is sent to execute.
	r = g.do("POST", "/v1/operations", poster, map[string]string{"Idempotency-Key": "test:sales_order.post:lc-2:v1"}, post)
	expect(t, r, http.StatusUnprocessableEntity, "failed_final", "INVALID_STATE")
	// Reading an order that does not exist.
	missing, _ := json.Marshal(map[string]any{"schema_version": "1.0", "intent": "sales_order.get_status", "payload": map[string]any{"order_id": "SO-999999"}})
	r = g.do("POST", "/v1/operations", poster, nil, missing)
	expect(t, r, http.StatusUnprocessableEntity, "rejected", "REFERENCE_NOT_FOUND")

	// A read validates like any intent: the order must exist.
	validate := func(order string) reply {
		b, _ := json.Marshal(map[string]any{"schema_version": "1.0", "intent": "sales_order.get_status", "mode": "validate", "payload": map[string]any{"order_id": order}})
		return g.do("POST", "/v1/operations", poster, nil, b)
	}
	r = validate(order)
	expect(t, r, http.StatusOK, "valid", "")
	if r.str("plan_hash") == "" || r.Body["plan"] == nil {
		t.Fatalf("validate of a read has no plan: %s", r.Raw)
	}
	r = validate("SO-999999")
	expect(t, r, http.StatusUnprocessableEntity, "rejected", "REFERENCE_NOT_FOUND")
	if r.errField() != "order_id" {
		t.Fatalf("field %q", r.errField())
	}
}

// Business limits come from the configuration, each violation a stable
// code naming the field; nothing is journaled.
func TestBusinessLimits(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	lim := cfg.Limits["sales_order.create_draft"]
	lim.MaxItems, lim.MaxQuantity = 2, 10
	cfg.Limits["sales_order.create_draft"] = lim
	g := setupWith(t, cfg)
	item := func(q float64, unit string) map[string]any {
		return map[string]any{"product_id": "product-778", "quantity": q, "unit": unit}
	}
	usd := draft()
	usd["payload"].(map[string]any)["currency"] = "usd"
	for _, c := range []struct {
		env         map[string]any
		code, field string
	}{
		{draft(item(1, "pcs"), item(1, "pcs"), item(1, "pcs")), "LIMIT_EXCEEDED", "items"},
		{draft(item(11, "pcs")), "LIMIT_EXCEEDED", "items[0].quantity"},
		{draft(item(1, "pcs"), item(1, "box")), "UNIT_NOT_ALLOWED", "items[1].unit"},
		{usd, "CURRENCY_NOT_ALLOWED", "currency"},
	} {
		r := g.post("test:sales_order.create_draft:lim-1:v1", c.env)
		expect(t, r, http.StatusUnprocessableEntity, "rejected", c.code)
		if r.errField() != c.field {
			t.Errorf("%s: field %q, want %q", c.code, r.errField(), c.field)
		}
	}
	expect(t, g.post("test:sales_order.create_draft:lim-1:v1", draft(item(10, "kg"))), http.StatusOK, "succeeded", "")
	// A charge over the default ceiling.
	payer := g.MustToken("agent-pay", "pay")
	expect(t, g.charge(payer, "test:payment.charge:lim-2:v1", "order-lim", 2_000_000_000), http.StatusUnprocessableEntity, "rejected", "LIMIT_EXCEEDED")
}

// A key accepted before the limits were tightened keeps its answer: a
// retry is replayed, not refused by limits it was never held to; a new key
// with the same request is refused.
func TestLimitsTightenedAfterAccept(t *testing.T) {
	t.Parallel()
	item := map[string]any{"product_id": "product-778", "quantity": 1, "unit": "pcs"}
	three := draft(item, item, item)
	g := setupWith(t, testConfig())
	const key = "test:sales_order.create_draft:before-limits:v1"
	first := g.post(key, three)
	expect(t, first, http.StatusOK, "succeeded", "")
	if err := g.stop(); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig()
	lim := cfg.Limits["sales_order.create_draft"]
	lim.MaxItems = 2
	cfg.Limits["sales_order.create_draft"] = lim
	tight := serveOver(t, cfg, g.store)
	again := tight.post(key, three)
	expect(t, again, http.StatusOK, "succeeded", "")
	if again.str("target_object_id") != first.str("target_object_id") {
		t.Fatalf("replayed object %q, want %q", again.str("target_object_id"), first.str("target_object_id"))
	}
	expect(t, tight.post("test:sales_order.create_draft:after-limits:v1", three), http.StatusUnprocessableEntity, "rejected", "LIMIT_EXCEEDED")
}

// A charge's ceiling and currency list hold however the configuration
// spells the currency: requests' codes are upper case, and so are the
// configuration's once loaded.
func TestCurrencyLimitsAnySpelling(t *testing.T) {
	t.Parallel()
	// gatewayWith serves the limits of payment.charge written in YAML, as
	// loaded from a configuration file.
	gatewayWith := func(t *testing.T, limits string) (*gateway, string) {
		p := filepath.Join(t.TempDir(), "oncegate.yaml")
		if err := os.WriteFile(p, []byte("limits:\n  payment.charge: "+limits+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		loaded, err := config.Load(p, configtest.NoEnv, yookassa.Currencies())
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig()
		cfg.Limits = loaded.Limits
		g := setupWith(t, cfg)
		return g, g.MustToken("agent-pay", "pay")
	}
	for _, spelling := range []string{"rub", "RUB"} {
		t.Run("Ceiling/"+spelling, func(t *testing.T) {
			t.Parallel()
			g, payer := gatewayWith(t, "{ amount_ceiling: { "+spelling+": 100000 } }")
			// Within the ceiling: allowed, so it waits for a person.
			expect(t, g.charge(payer, "test:payment.charge:cur-ok:v1", "order-cur-ok", 100000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
			r := g.charge(payer, "test:payment.charge:cur-over:v1", "order-cur-over", 100001)
			expect(t, r, http.StatusUnprocessableEntity, "rejected", "LIMIT_EXCEEDED")
			if r.errField() != "amount_minor" {
				t.Errorf("field %q, want amount_minor", r.errField())
			}
		})
		t.Run("Currencies/"+spelling, func(t *testing.T) {
			t.Parallel()
			g, payer := gatewayWith(t, "{ currencies: ["+spelling+"] }")
			expect(t, g.charge(payer, "test:payment.charge:cur-ok:v1", "order-cur-ok", 100000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
			usd := strings.Replace(string(charge("order-cur-usd", 100000)), `"RUB"`, `"usd"`, 1)
			r := g.do("POST", "/v1/operations", payer, map[string]string{"Idempotency-Key": "test:payment.charge:cur-usd:v1"}, []byte(usd))
			expect(t, r, http.StatusUnprocessableEntity, "rejected", "CURRENCY_NOT_ALLOWED")
		})
	}
}

// Each token has its own rate; past it, 429 with Retry-After.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.RateLimit.PerSecond, cfg.RateLimit.Burst = 1, 3
	g := setupWith(t, cfg)
	other := g.MustToken("agent-other", "read")
	var limited reply
	for range 5 {
		if r := g.do("GET", "/v1/intents", g.token, nil, nil); r.Code == http.StatusTooManyRequests {
			limited = r
			break
		}
	}
	expect(t, limited, http.StatusTooManyRequests, "rejected", "RATE_LIMITED")
	if limited.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if r := g.do("GET", "/v1/intents", other, nil, nil); r.Code != http.StatusOK {
		t.Fatalf("another token was limited: %d", r.Code)
	}
}

// Repeated validates of one request reuse the target's answer for a short
// while; an execute always asks the target again — the 1C service in the
// execute itself, which checks what validate checks in the transaction
// that writes the document, so a new operation costs one call to 1C.
func TestValidateCacheNeverServesExecute(t *testing.T) {
	t.Parallel()
	g := setup(t)
	const key = "test:sales_order.create_draft:cache-1:v1"
	for range 3 {
		if r := g.post(key, withMode(draft(), "validate")); r.str("state") != "valid" {
			t.Fatalf("validate: %s", r.Raw)
		}
	}
	if got := g.validateCalls(); got != 1 {
		t.Fatalf("three validates asked 1C %d times, want 1", got)
	}
	expect(t, g.post(key, draft()), http.StatusOK, "succeeded", "")
	if got, calls := g.validateCalls(), g.sim.Calls(sim.OneC, key); got != 1 || calls != 1 {
		t.Fatalf("the execute: %d validate calls and %d executes at 1C, want 1 and 1", got, calls)
	}
}

// validateCalls reads from /metrics how often the 1C target was asked to
// validate.
func (g *gateway) validateCalls() int {
	g.t.Helper()
	resp, err := g.client.Get(g.url + "/metrics")
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	const prefix = `oncegate_target_call_seconds_count{call="validate",outcome="ok",target="onec"} `
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			n, _ := strconv.Atoi(rest)
			return n
		}
	}
	return 0
}

// What the published schema accepts, the target accepts: a text at the
// schema's length limit goes through, and the limit is the target's own.
func TestSchemaMatchesTargetLimits(t *testing.T) {
	t.Parallel()
	g := setup(t)
	env := draft()
	env["payload"].(map[string]any)["comment"] = strings.Repeat("я", 1024)
	r := g.post("test:sales_order.create_draft:long-comment:v1", env)
	expect(t, r, http.StatusOK, "succeeded", "")

	payer := g.MustToken("agent-pay", "pay")
	refund, _ := json.Marshal(map[string]any{"schema_version": "1.0", "intent": "payment.refund", "payload": map[string]any{
		"payment_id": "2f3b588d-000f-5000-8000-1d6e87c7fbde", "amount_minor": 100, "currency": "RUB", "reason": strings.Repeat("r", 251),
	}})
	r = g.do("POST", "/v1/operations", payer, map[string]string{"Idempotency-Key": "test:payment.refund:long-reason:v1"}, refund)
	expect(t, r, http.StatusBadRequest, "rejected", "VALIDATION_ERROR")
	if r.errField() != "reason" {
		t.Fatalf("field %q", r.errField())
	}
}
