package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/oncegate/oncegate/server/config/configtest"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
)

// withRule is the firm's purchase order intent with a duplicate rule:
// one supplier is one business event.
func withRule(action string) string {
	return strings.Replace(purchaseOrder, "description:", "duplicates: { fields: [supplier_id], window: 24h, action: "+action+" }\ndescription:", 1)
}

// ruleGateway serves the purchase order intent under a rule of action.
func ruleGateway(t *testing.T, action string) *gateway {
	t.Helper()
	cfg := testConfig()
	cfg.IntentsDir = configtest.Dir(t, map[string]string{"po.yaml": withRule(action)})
	g := setupWith(t, cfg)
	if err := g.sim.PublishOneC("purchase_order.create_draft"); err != nil {
		t.Fatal(err)
	}
	return g
}

// warning is the first warning's code and message of an answer.
func warning(r reply) (code, msg string) {
	ws, _ := r.Body["warnings"].([]any)
	if len(ws) == 0 {
		return "", ""
	}
	w, _ := ws[0].(map[string]any)
	code, _ = w["code"].(string)
	msg, _ = w["message"].(string)
	return code, msg
}

// metrics is the text of GET /metrics.
func (g *gateway) metrics() string {
	g.t.Helper()
	resp, err := g.client.Get(g.url + "/metrics")
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestDuplicateBlock(t *testing.T) {
	t.Parallel()
	g := ruleGateway(t, "block")
	const first, second = "test:purchase_order.create_draft:po-1:v1", "test:purchase_order.create_draft:po-2:v1"
	expect(t, g.post(first, purchase("customer-1042", 1)), http.StatusOK, "succeeded", "")

	// Another key, the same supplier written otherwise: refused, nothing
	// journaled, the key free; the agent that made the first learns its key.
	r := g.post(second, purchase("  CUSTOMER-1042 ", 2))
	if r.Code != http.StatusConflict || r.str("state") != "rejected" && r.str("status") != "rejected" || r.errCode() != "DUPLICATE_SUSPECTED" {
		t.Fatalf("second key: %d %s", r.Code, r.Raw)
	}
	if msg := r.Raw; !strings.Contains(msg, first) || !strings.Contains(msg, "was made at 20") {
		t.Fatalf("the refusal names neither the earlier key nor its time: %s", msg)
	}
	if _, err := g.store.Get(context.Background(), second); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the blocked key was journaled: %v", err)
	}
	// Another agent is refused too, without the first agent's key.
	other := g.MustToken("agent-b", "draft")
	body, _ := json.Marshal(purchase("customer-1042", 1))
	r = g.do("POST", "/v1/operations", other, map[string]string{"Idempotency-Key": "test:purchase_order.create_draft:po-3:v1"}, body)
	if r.Code != http.StatusConflict || r.errCode() != "DUPLICATE_SUSPECTED" || strings.Contains(r.Raw, first) {
		t.Fatalf("another agent: %d %s", r.Code, r.Raw)
	}
	// Validate mode tells, deciding nothing.
	v := purchase("customer-1042", 1)
	v["mode"] = "validate"
	r = g.post(second, v)
	if code, msg := warning(r); r.Code != http.StatusOK || code != "DUPLICATE_SUSPECTED" || !strings.Contains(msg, "refused") {
		t.Fatalf("validate: %d %s", r.Code, r.Raw)
	}
	// Another supplier is another event; the freed key goes on with it.
	expect(t, g.post(second, purchase("customer-2001", 2)), http.StatusOK, "succeeded", "")
	if n := g.effects(first, second, "test:purchase_order.create_draft:po-3:v1"); n != 2 {
		t.Fatalf("effects at 1C: %d, want 2", n)
	}
	if m := g.metrics(); !strings.Contains(m, `oncegate_duplicate_decisions_total{action="block",intent="purchase_order.create_draft"} 2`) {
		t.Fatalf("metrics lack the blocks:\n%s", m)
	}
}

func TestDuplicateWarn(t *testing.T) {
	t.Parallel()
	g := ruleGateway(t, "warn")
	const first, second = "test:purchase_order.create_draft:po-1:v1", "test:purchase_order.create_draft:po-2:v1"
	r := g.post(first, purchase("customer-1042", 1))
	if code, _ := warning(r); code != "" {
		t.Fatalf("the first carries a warning: %s", r.Raw)
	}
	r = g.post(second, purchase("customer-1042", 2))
	expect(t, r, http.StatusOK, "succeeded", "")
	if code, msg := warning(r); code != "DUPLICATE_SUSPECTED" || !strings.Contains(msg, "was made at 20") || !strings.Contains(msg, first) {
		t.Fatalf("no warning: %s", r.Raw)
	}
	// The warning stays with the operation: its GET and replays carry it.
	got := g.do("GET", "/v1/operations/"+second, g.token, nil, nil)
	if code, _ := warning(got); code != "DUPLICATE_SUSPECTED" {
		t.Fatalf("GET: %s", got.Raw)
	}
	if code, _ := warning(g.post(second, purchase("customer-1042", 2))); code != "DUPLICATE_SUSPECTED" {
		t.Fatal("the replay lacks the warning")
	}
	if n := g.effects(first, second); n != 2 {
		t.Fatalf("effects at 1C: %d, want 2", n)
	}
	if m := g.metrics(); !strings.Contains(m, `oncegate_duplicate_decisions_total{action="warn",intent="purchase_order.create_draft"} 1`) {
		t.Fatal("metrics lack the warning")
	}
}

// The built-in invoice.create holds a second invoice of one order for a
// person: denied, it is a confirmed duplicate; approved, it goes on.
func TestDuplicateHold(t *testing.T) {
	t.Parallel()
	g := setup(t)
	ctx := context.Background()
	const first, denied, allowed = "test:invoice.create:ord-h-1:v1", "test:invoice.create:ord-h-2:v1", "test:invoice.create:ord-h-3:v1"
	expect(t, g.post(first, invoice("order-hold", 1)), http.StatusOK, "succeeded", "")
	for _, key := range []string{denied, allowed} {
		r := g.post(key, invoice("order-hold", 2))
		expect(t, r, http.StatusAccepted, "awaiting_approval", "DUPLICATE_REVIEW_REQUIRED")
		if code, _ := warning(r); code != "DUPLICATE_SUSPECTED" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("held: %s", r.Raw)
		}
		// A retry while it waits still waits.
		expect(t, g.post(key, invoice("order-hold", 2)), http.StatusAccepted, "awaiting_approval", "DUPLICATE_REVIEW_REQUIRED")
		if a := g.approval(key); a.Kind != store.ApprovalDuplicate || a.Fingerprint != g.row(key).Fingerprint {
			t.Fatalf("approval %+v", a)
		}
	}
	if n := g.effects(first, denied, allowed); n != 1 {
		t.Fatalf("effects before a person decided: %d", n)
	}
	if err := g.store.DecideApproval(ctx, g.approval(denied).ID, false, "olga", "same order"); err != nil {
		t.Fatal(err)
	}
	expect(t, g.post(denied, invoice("order-hold", 2)), http.StatusUnprocessableEntity, "failed_final", "DUPLICATE_CONFIRMED")
	if err := g.store.DecideApproval(ctx, g.approval(allowed).ID, true, "olga", "a second delivery"); err != nil {
		t.Fatal(err)
	}
	g.srv.Wake()
	await(t, "the executor", g.executed, func() bool { return g.row(allowed).Status == store.StatusSucceeded })
	expect(t, g.post(allowed, invoice("order-hold", 2)), http.StatusOK, "succeeded", "")
	if n := g.effects(first, denied, allowed); n != 2 || g.effects(denied) != 0 {
		t.Fatalf("effects: %d, want 2", n)
	}
	if m := g.metrics(); !strings.Contains(m, `oncegate_duplicate_decisions_total{action="hold",intent="invoice.create"} 2`) {
		t.Fatal("metrics lack the holds")
	}
}

// effects counts the effects at 1C of keys.
func (g *gateway) effects(keys ...string) int {
	n := 0
	for _, k := range keys {
		n += g.sim.Effects(sim.OneC, k)
	}
	return n
}

// An operator decides held invoices in a real browser: both operations
// side by side, the differing field marked; "duplicate — refuse" ends one
// DUPLICATE_CONFIRMED, "not a duplicate — go on" sends the other to 1C
// once; the agents' retries are answered accordingly.
func TestDuplicateHoldInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	g := setupWith(t, fastConfig())
	g.mustUsers(t, map[string]string{"oleg": store.RoleOperator})
	const first, refused, allowed = "test:invoice.create:br-1:v1", "test:invoice.create:br-2:v1", "test:invoice.create:br-3:v1"
	expect(t, g.post(first, invoice("order-br", 1)), http.StatusOK, "succeeded", "")
	expect(t, g.post(refused, invoice("order-br", 2)), http.StatusAccepted, "awaiting_approval", "DUPLICATE_REVIEW_REQUIRED")
	expect(t, g.post(allowed, invoice("order-br", 3)), http.StatusAccepted, "awaiting_approval", "DUPLICATE_REVIEW_REQUIRED")

	b := g.newTab(t, root, t.TempDir())
	b.signIn("oleg")
	b.open("/admin/approvals")
	scope := row("approval-row", refused)
	b.do(chromedp.WaitVisible(tid("duplicate-review", scope)))
	if got := b.text(tid("duplicate-earlier", scope)); got != first {
		t.Fatalf("earlier operation shown %q, want %s", got, first)
	}
	// The lines differ (another quantity); the order is the same.
	if n := b.count(scope + ` [data-testid="duplicate-field"][data-field="items"][data-differs="true"]`); n != 1 {
		t.Fatal("the differing lines are not marked")
	}
	if n := b.count(scope + ` [data-testid="duplicate-field"][data-field="order_id"][data-differs="false"]`); n != 1 {
		t.Fatal("the same order is shown as differing, or not at all")
	}
	if n := b.count(scope + ` [data-testid="approve"]`); n != 0 {
		t.Fatal("an operator is offered a money approval")
	}
	b.do(
		chromedp.Click(tid("confirm-duplicate", scope)),
		chromedp.WaitNotPresent(chromedp.CSS(scope)),
		chromedp.WaitVisible(tid("flash")),
	)
	expect(t, g.post(refused, invoice("order-br", 2)), http.StatusUnprocessableEntity, "failed_final", "DUPLICATE_CONFIRMED")

	b.do(
		chromedp.Click(tid("not-duplicate", row("approval-row", allowed))),
		chromedp.WaitNotPresent(chromedp.CSS(row("approval-row", allowed))),
	)
	await(t, "the executor", g.executed, func() bool { return g.row(allowed).Status == store.StatusSucceeded })
	expect(t, g.post(allowed, invoice("order-br", 3)), http.StatusOK, "succeeded", "")
	if n := g.effects(first, refused, allowed); n != 2 || g.effects(refused) != 0 {
		t.Fatalf("invoices in 1C: %d, want 2 (none for the duplicate)", n)
	}
	if a := g.approval(allowed); a.DecidedBy != "oleg" || a.Kind != store.ApprovalDuplicate {
		t.Fatalf("review %+v", a)
	}
	// Both operations' pages name the business event's other operations.
	b.open("/admin/operations/" + allowed)
	b.do(chromedp.WaitVisible(tid("duplicate-of")))
	if got := b.text(tid("duplicate-of")); got != first {
		t.Fatalf("duplicate of %q", got)
	}
	b.open("/admin/operations/" + first)
	b.do(chromedp.WaitVisible(tid("same-event")))
	if n := b.count(`[data-testid="same-event"]`); n != 2 {
		t.Fatalf("the earlier operation's page lists %d of the event's other operations, want 2", n)
	}
}
