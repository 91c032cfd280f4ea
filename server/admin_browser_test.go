package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/adapters/yookassa"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/store"
)

// The admin UI driven in a real headless Chromium against the real app:
// agents submit over the API, people decide in the browser, the executor
// and the simulators do the rest.

const uiPassword = "browser-test-password"

// chromiumPath finds the browser. Without one the UI tests fail in CI
// (CI set) and are skipped on a developer's machine; in -short mode (the
// quick loop) they are skipped.
func chromiumPath(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("drives a real browser: skipped in -short mode")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("chromium is not installed: the admin UI tests need it (.ci/run installs it)")
	}
	tb.Skip("chromium is not installed; install Debian's chromium to run the admin UI tests")
	return ""
}

// startBrowser starts one headless Chromium for the test and returns its
// root context; each flow opens its own browser context from it.
func startBrowser(tb testing.TB) context.Context {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(tb)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	root, cancelRoot := chromedp.NewContext(alloc)
	tb.Cleanup(func() { cancelRoot(); cancelAlloc() })
	if err := chromedp.Do(root); err != nil {
		tb.Fatalf("start chromium: %v", err)
	}
	return root
}

// tab is one browser context (its own cookies) with one tab, for a
// person, against gateway g.
type tab struct {
	tb    testing.TB
	ctx   context.Context
	g     *gateway
	shots string
}

func (g *gateway) newTab(tb testing.TB, root context.Context, shots string) *tab {
	tb.Helper()
	bctx, cancel := chromedp.NewContext(root, chromedp.WithNewBrowserContext())
	tb.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil {
		tb.Fatal(err)
	}
	return &tab{tb: tb, ctx: bctx, g: g, shots: shots}
}

// stepTimeout bounds one step in a tab (an action, a wait for an element
// to show): a page that never shows what is awaited fails the test, while
// a long test on a loaded machine has all the steps it needs.
const stepTimeout = 45 * time.Second

// run runs one action in tab b under stepTimeout.
func run[T any](b *tab, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// another opens a second tab with the same cookies (the same person).
func (b *tab) another() *tab {
	b.tb.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.tb.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.tb.Fatal(err)
	}
	return &tab{tb: b.tb, ctx: ctx, g: b.g, shots: b.shots}
}

// tid selects elements by data-testid, within an optional scope.
func tid(id string, scope ...string) chromedp.CSS {
	return chromedp.CSS(strings.Join(append(scope, `[data-testid="`+id+`"]`), " "))
}

// row selects the element with data-testid id and data-key key.
func row(id, key string) string { return `[data-testid="` + id + `"][data-key="` + key + `"]` }

func (b *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.tb.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := run(b, chromedp.Location())
		b.tb.Fatalf("browser at %s: %v", loc, err)
	}
}

func (b *tab) open(path string) { b.tb.Helper(); b.do(chromedp.Navigate(b.g.url + path)) }

// count is how many elements match css.
func (b *tab) count(css string) int {
	b.tb.Helper()
	n, err := run(b, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, css)))
	if err != nil {
		b.tb.Fatal(err)
	}
	return n
}

func (b *tab) text(sel chromedp.CSS) string {
	b.tb.Helper()
	s, err := run(b, chromedp.Text(sel))
	if err != nil {
		b.tb.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// signIn signs in through the form, as a person does.
func (b *tab) signIn(name string) {
	b.tb.Helper()
	b.open("/admin/")
	b.do(
		chromedp.WaitVisible(tid("login-form")),
		chromedp.SendKeys(tid("login-name"), name),
		chromedp.SendKeys(tid("login-password"), uiPassword),
		chromedp.Click(tid("login-submit")),
		chromedp.WaitVisible(tid("current-user")),
	)
	if got := b.text(tid("current-user")); got != name {
		b.tb.Fatalf("signed in as %q, want %q", got, name)
	}
}

// shot saves a full-page screenshot of the current page as name.png.
func (b *tab) shot(name string) {
	b.tb.Helper()
	png, err := run(b, chromedp.FullScreenshot(100))
	if err != nil {
		b.tb.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.tb.Fatal(err)
	}
}

// mustUsers makes admin UI users, in parallel (each hash takes a while),
// as an admin does, with a password the admin chose; then each user
// chooses their own (uiPassword), as everyone does at first sign-in
// before the UI lets them act.
func (g *gateway) mustUsers(tb testing.TB, roles map[string]string) {
	tb.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(roles))
	for name, role := range roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if _, err := g.store.CreateUser(ctx, name, role, "an-admin-chose-this"); err != nil {
				errs <- err
				return
			}
			me := store.WithActor(ctx, store.Actor{Kind: store.ActorUser, Name: name})
			if err := g.store.ChangeOwnPassword(me, name, uiPassword, "127.0.0.1"); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
}

// unknownByHand journals an operation whose outcome is unknown and which
// the reconciler gave up on: flagged, next lookup an hour away.
func (g *gateway) unknownByHand(tb testing.TB, key, order string) {
	tb.Helper()
	ctx := context.Background()
	req := store.ClaimRequest{
		Key: key, Intent: "invoice.create", Fingerprint: strings.Repeat("cd", 32), TargetSystem: "onec",
		Agent: "agent-a", ActorID: "user-42", RequestID: key,
		Payload: []byte(`{"order_id":"` + order + `","organization_id":"org-main","customer_id":"customer-1042","currency":"RUB","items":[{"product_id":"product-778","quantity":2,"unit":"pcs","price_minor":62500}]}`),
		Owner:   "a-dead-run", Lease: time.Minute,
	}
	if _, _, err := g.store.Claim(ctx, req); err != nil {
		tb.Fatal(err)
	}
	if _, err := g.store.LookupFailed(ctx, key, "a-dead-run", "", "", 1, time.Now().Add(time.Hour)); err != nil {
		tb.Fatal(err)
	}
	// Its last attempt was long ago: nothing of it can still be on its way.
	db, err := sql.Open("sqlite", "file:"+g.store.Path()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	long := time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000000Z")
	if _, err := db.Exec(`UPDATE operations SET last_attempt_at = ? WHERE operation_key = ?`, long, key); err != nil {
		tb.Fatal(err)
	}
}

func TestAdminInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	shots, err := os.MkdirTemp("", "oncegate-admin-screens-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)

	g := setupWith(t, fastConfig())
	payer := g.MustToken("agent-pay", "pay")
	g.mustUsers(t, map[string]string{"anna": store.RoleAccountant, "oleg": store.RoleOperator, "inna": store.RoleAuditor})

	// Left pending for the auditor's pages.
	const pendingKey = "test:payment.charge:order-9100:v1"
	expect(t, g.charge(payer, pendingKey, "order-9100", 990000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	pendingID := g.approval(pendingKey).ID
	const unknownKey = "test:invoice.create:order-9200:v1"
	g.unknownByHand(t, unknownKey, "order-9200")

	t.Run("Accountant", func(t *testing.T) {
		t.Parallel()
		b := g.newTab(t, root, shots)
		b.signIn("anna")
		b.shot("dashboard")

		// Approve: the executor charges once; the agent's retry gets the payment.
		const key = "test:payment.charge:order-9001:v1"
		expect(t, g.charge(payer, key, "order-9001", 125000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
		b.open("/admin/approvals")
		b.do(chromedp.WaitVisible(chromedp.CSS(row("approval-row", key))))
		if got := b.text(tid("approval-amount", row("approval-row", key))); got != "1\u00a0250,00\u00a0₽" {
			t.Fatalf("amount shown %q, want 1 250,00 ₽", got)
		}
		b.shot("approvals")
		b.do(
			chromedp.SendKeys(tid("approval-comment", row("approval-row", key)), "сверено с заказом"),
			chromedp.Click(tid("approve", row("approval-row", key))),
			chromedp.WaitVisible(tid("confirm-approve")),
		)
		// Nothing moves before the confirmation, which shows what the
		// agent sent once more.
		if got := g.approval(key).Status; got != store.ApprovalPending {
			t.Fatalf("approval %s before the confirmation", got)
		}
		if got := b.text(tid("confirm-amount")); got != "1\u00a0250,00\u00a0₽" {
			t.Fatalf("confirmation shows amount %q", got)
		}
		if got := b.text(tid("approval-order")); got != "order-9001" {
			t.Fatalf("confirmation shows order %q", got)
		}
		if got := b.text(tid("approval-direction")); !strings.Contains(got, "Списание с карты покупателя") {
			t.Fatalf("confirmation says %q, not who pays whom", got)
		}
		b.shot("approve-confirm")
		b.do(
			chromedp.Click(tid("confirm-approve")),
			chromedp.WaitVisible(tid("flash")),
		)
		if got := b.text(tid("flash")); !strings.Contains(got, "1\u00a0250,00\u00a0₽") {
			t.Fatalf("flash %q does not name the amount", got)
		}
		if n := b.count(row("approval-row", key)); n != 0 {
			t.Fatal("the approved charge is still in the queue")
		}
		await(t, "the executor to charge", g.executed, func() bool { return g.row(key).Status == store.StatusSucceeded })
		if got := g.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 1 {
			t.Fatalf("payments made = %d, want 1", got)
		}
		r := g.charge(payer, key, "order-9001", 125000)
		expect(t, r, http.StatusOK, "succeeded", "")
		if r.str("target_object_id") == "" {
			t.Fatalf("no payment id: %s", r.Raw)
		}
		if a := g.approval(key); a.DecidedBy != "anna" || a.Comment != "сверено с заказом" {
			t.Fatalf("approval %+v", a)
		}
		b.open("/admin/operations/" + url.PathEscape(key))
		b.do(chromedp.WaitVisible(tid("transitions")))
		if got := b.text(tid("target-object")); got != r.str("target_object_id") {
			t.Fatalf("operation page shows object %q, want %q", got, r.str("target_object_id"))
		}
		b.shot("operation")

		// Deny: the agent's retry gets APPROVAL_DENIED; nothing is charged.
		const denied = "test:payment.charge:order-9002:v1"
		expect(t, g.charge(payer, denied, "order-9002", 5000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
		b.open("/admin/approvals")
		// Without a reason the denial is refused.
		b.do(
			chromedp.Click(tid("deny", row("approval-row", denied))),
			chromedp.WaitVisible(tid("form-error", row("approval-row", denied))),
		)
		if got := g.approval(denied).Status; got != store.ApprovalPending {
			t.Fatalf("a denial without reason: approval %s", got)
		}
		b.shot("deny-no-reason")
		b.do(
			chromedp.SendKeys(tid("approval-comment", row("approval-row", denied)), "заказ отменён"),
			chromedp.Click(tid("deny", row("approval-row", denied))),
			chromedp.WaitNotPresent(chromedp.CSS(row("approval-row", denied))),
		)
		expect(t, g.charge(payer, denied, "order-9002", 5000), http.StatusUnprocessableEntity, "failed_final", "APPROVAL_DENIED")
		if got := g.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(denied)); got != 0 {
			t.Fatalf("a denied charge reached the provider %d times", got)
		}

		// Two tabs: approve in one, then in the other — refused, one charge.
		const twice = "test:payment.charge:order-9003:v1"
		expect(t, g.charge(payer, twice, "order-9003", 7700), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
		b2 := b.another()
		b.open("/admin/approvals")
		b2.open("/admin/approvals")
		b2.do(chromedp.WaitVisible(chromedp.CSS(row("approval-row", twice))))
		b.do(
			chromedp.Click(tid("approve", row("approval-row", twice))),
			chromedp.Click(tid("confirm-approve")),
			chromedp.WaitVisible(tid("flash")),
		)
		b2.do(
			chromedp.Click(tid("approve", row("approval-row", twice))),
			chromedp.WaitVisible(tid("form-error")),
		)
		// It says who decided first.
		if msg := b2.text(tid("form-error")); !strings.Contains(msg, "уже принято") || !strings.Contains(msg, "anna") {
			t.Fatalf("second approval message %q", msg)
		}
		b2.shot("approval-stale")
		await(t, "the executor to charge", g.executed, func() bool { return g.row(twice).Status == store.StatusSucceeded })
		if got := g.sim.Effects(sim.YooKassa, yookassa.IdempotenceKey(twice)); got != 1 {
			t.Fatalf("payments made = %d, want 1", got)
		}

		// On a phone the queue still reads.
		b.do(chromedp.EmulateViewport(390, 844))
		b.open("/admin/approvals")
		b.do(chromedp.WaitVisible(chromedp.CSS(row("approval-row", pendingKey))))
		b.shot("approvals-phone")
	})

	t.Run("Operator", func(t *testing.T) {
		t.Parallel()
		// A second one, for the look-up button.
		const lookupKey = "test:invoice.create:order-9201:v1"
		g.unknownByHand(t, lookupKey, "order-9201")
		const key = "test:invoice.create:order-9202:v1"
		g.unknownByHand(t, key, "order-9202")

		// An invoice someone made in 1C by hand, named as 1C's HTTP
		// service names one: its kind and its UUID.
		handInvoice, err := g.sim.MakeOneCDocument("invoice")
		if err != nil {
			t.Fatal(err)
		}
		b := g.newTab(t, root, shots)
		b.signIn("oleg")
		b.open("/admin/review")
		b.do(chromedp.WaitVisible(chromedp.CSS(row("review-row", key))))
		b.shot("review")

		// 1C answers look-ups 503 (every one, the reconciler's own after
		// it too): the page says the look-up failed, not "done".
		g.inject(sim.Fault{Target: sim.OneC, Fault: sim.FaultStatus, Status: 503, Times: 1000, On: "lookup"})
		b.do(
			chromedp.Click(tid("reconcile", row("review-row", lookupKey))),
			chromedp.WaitVisible(tid("flash")),
		)
		// The reconciler may hold the row for a look-up of its own (started,
		// its lease) when it is read: it ends unknown, failures counted.
		op := g.row(lookupKey)
		for deadline := time.Now().Add(30 * time.Second); (op.Status != store.StatusUnknown || op.LookupFailures < 2) && time.Now().Before(deadline); op = g.row(lookupKey) {
			time.Sleep(50 * time.Millisecond)
		}
		if op.Status != store.StatusUnknown || op.LookupFailures < 2 {
			t.Fatalf("the failed look-up: %+v", op)
		}
		if got := b.text(tid("flash")); !strings.Contains(got, "Сверка не удалась") || b.count(".flash-error") != 1 {
			t.Fatalf("a failed look-up shown as %q", got)
		}
		// What 1C answered stays on the operation's card, not only in the log.
		if got := b.text(tid("review-last-answer", row("review-row", lookupKey))); !strings.Contains(got, "503") {
			t.Fatalf("the last look-up's answer reads %q", got)
		}
		b.shot("review-lookup-failed")

		// 1C answers again. A mistyped invoice is checked there and
		// refused, the form kept.
		g.sim.ClearFaults()
		scope := row("review-row", key)
		const mistyped = "INV-9a0c4e71-5d8b-4c1a-9e2f-3f1c9a2e7b4d"
		b.do(
			chromedp.Click(tid("resolve-found", scope)),
			chromedp.SendKeys(tid("resolve-object", scope), mistyped),
			chromedp.SendKeys(tid("resolve-reason", scope), "счёт найден в 1С вручную"),
			chromedp.Click(tid("resolve", scope)),
			chromedp.WaitVisible(tid("form-error", scope)),
		)
		if msg := b.text(tid("form-error", scope)); !strings.Contains(msg, "нет объекта") || !strings.Contains(msg, mistyped) {
			t.Fatalf("a mistyped invoice refused as %q", msg)
		}
		if op := g.row(key); op.Status != store.StatusUnknown {
			t.Fatalf("a mistyped invoice settled the operation: %+v", op)
		}
		b.shot("review-object-absent")

		// The invoice that is there settles it, checked at 1C.
		b.do(
			chromedp.Clear(tid("resolve-object", scope)),
			chromedp.SendKeys(tid("resolve-object", scope), handInvoice),
			chromedp.Click(tid("resolve", scope)),
			chromedp.WaitNotPresent(chromedp.CSS(scope)),
			chromedp.WaitVisible(tid("flash")),
		)
		op = g.row(key)
		if op.Status != store.StatusSucceeded || op.TargetObjectID != handInvoice || op.NeedsReview {
			t.Fatalf("after resolving: %+v", op)
		}
		b.open("/admin/operations/" + url.PathEscape(key))
		b.do(chromedp.WaitVisible(tid("summary-status")))
		if got := b.text(tid("summary-status")); got != "выполнена" {
			t.Fatalf("status shown %q", got)
		}
		evs, err := g.store.AuditEvents(context.Background(), store.AuditFilter{OperationKey: key, Event: "operation.resolved_by_hand"})
		if err != nil || len(evs) != 1 || evs[0].Actor.Name != "oleg" || !strings.Contains(string(evs[0].Detail), `"checked":true`) {
			t.Fatalf("resolution audit %+v, %v", evs, err)
		}
		// The agent now gets the operation as succeeded, with what 1C
		// holds for the invoice as its result (docs/api.md, section Answers).
		r := g.do("GET", "/v1/operations/"+url.PathEscape(key), g.token, nil, nil)
		result, _ := r.Body["result"].(map[string]any)
		if number, _ := result["number"].(string); r.str("state") != "succeeded" || r.str("target_object_id") != handInvoice || number == "" || result["state"] != "created" {
			t.Fatalf("agent sees %s", r.Raw)
		}
	})

	t.Run("Auditor", func(t *testing.T) {
		t.Parallel()
		b := g.newTab(t, root, shots)
		b.open("/admin/login")
		b.do(chromedp.WaitVisible(tid("login-form")))
		b.shot("login")
		b.signIn("inna")
		actions := []string{"approve", "deny", "approval-form", "reconcile", "resolve-form", "token-form", "token-revoke", "user-form", "user-disable"}
		for _, page := range []string{"/admin/", "/admin/approvals", "/admin/review", "/admin/operations",
			"/admin/operations/" + url.PathEscape(pendingKey), "/admin/audit", "/admin/tokens", "/admin/users"} {
			b.open(page)
			b.do(chromedp.WaitVisible(tid("current-user")))
			if b.count(`[data-testid="error-page"]`) != 0 {
				t.Fatalf("%s: the auditor got an error page", page)
			}
			for _, a := range actions {
				if n := b.count(`[data-testid="` + a + `"]`); n != 0 {
					t.Fatalf("%s: the auditor sees %d %q", page, n, a)
				}
			}
			switch page {
			case "/admin/operations":
				b.shot("operations")
			case "/admin/audit":
				b.shot("audit")
			case "/admin/users":
				b.shot("users")
			case "/admin/tokens":
				b.shot("tokens")
			}
		}
		b.open("/admin/approvals")
		b.do(chromedp.WaitVisible(chromedp.CSS(row("approval-row", pendingKey))))
		// A crafted form with the session's own token: refused by role.
		b.do(
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
				const f = document.createElement("form");
				f.method = "post"; f.action = "/admin/approvals/%d/approve";
				const i = document.createElement("input");
				i.type = "hidden"; i.name = "csrf"; i.value = document.querySelector("input[name=csrf]").value;
				f.appendChild(i); document.body.appendChild(f); f.submit();
			})()`, pendingID)),
			chromedp.WaitVisible(tid("error-page")),
		)
		status, err := run(b, chromedp.AttributeValue(tid("error-page"), "data-status"))
		if err != nil || status.Value != "403" {
			t.Fatalf("crafted approval: page status %+v, %v", status, err)
		}
		if a := g.approval(pendingKey); a.Status != store.ApprovalPending {
			t.Fatalf("approval after the auditor's post: %s", a.Status)
		}
	})
}

// An approval nobody decides expires: the row leaves the queue and the
// agent gets APPROVAL_EXPIRED.
func TestApprovalExpiresInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	cfg := fastConfig()
	cfg.Approval.TTL = config.Duration(5 * time.Second)
	g := setupWith(t, cfg)
	payer := g.MustToken("agent-pay", "pay")
	g.mustUsers(t, map[string]string{"vera": store.RoleAccountant})

	b := g.newTab(t, root, t.TempDir())
	b.signIn("vera")
	const key = "test:payment.charge:order-9301:v1"
	expect(t, g.charge(payer, key, "order-9301", 4200), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")
	b.open("/admin/approvals")
	b.do(chromedp.WaitVisible(chromedp.CSS(row("approval-row", key))))
	if left := b.text(tid("approval-left", row("approval-row", key))); !strings.Contains(left, "осталось") {
		t.Fatalf("time left shown as %q", left)
	}
	await(t, "the approval to expire", g.expired, func() bool { return g.row(key).Status == store.StatusFailedFinal })
	b.open("/admin/approvals")
	b.do(chromedp.WaitVisible(tid("approval-count")))
	if n := b.count(row("approval-row", key)); n != 0 {
		t.Fatal("an expired approval is still in the queue")
	}
	expect(t, g.charge(payer, key, "order-9301", 4200), http.StatusUnprocessableEntity, "failed_final", "APPROVAL_EXPIRED")
	if got := g.sim.Calls(sim.YooKassa, yookassa.IdempotenceKey(key)); got != 0 {
		t.Fatalf("an expired charge reached the provider %d times", got)
	}
}

// The intents page and an accountant's decision read in both languages,
// on a laptop and on a phone.
func TestIntentsAndApprovalInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	shots, err := os.MkdirTemp("", "oncegate-admin-screens-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	cfg := fastConfig()
	cfg.Targets["payments"].ShopName = "Интернет-магазин «Ромашка»"
	cfg.TimeZone = "Europe/Moscow"
	g := setupWith(t, cfg)
	payer := g.MustToken("agent-pay", "pay")
	g.mustUsers(t, map[string]string{"rita": store.RoleAccountant, "olga": store.RoleOperator})
	const key = "test:payment.charge:order-9401:v1"
	expect(t, g.charge(payer, key, "order-9401", 250000), http.StatusAccepted, "awaiting_approval", "APPROVAL_REQUIRED")

	b := g.newTab(t, root, shots)
	b.signIn("rita")
	o := g.newTab(t, root, shots)
	o.signIn("olga")
	cardsInBrowser(t, g, b, o, payer, key)
	for _, lang := range []string{"ru", "en"} {
		if lang == "en" {
			b.open("/admin/lang/en?next=%2Fadmin%2F")
		}
		for _, vp := range []struct {
			name string
			w, h int64
		}{{"laptop", 1366, 768}, {"phone", 390, 844}} {
			b.do(chromedp.EmulateViewport(vp.w, vp.h))
			b.open("/admin/intents")
			b.do(chromedp.WaitVisible(chromedp.CSS(`[data-testid="intent"][data-name="payment.charge"]`)))
			if got := b.text(tid("intent-scope", `[data-testid="intent"][data-name="payment.charge"]`)); !strings.HasPrefix(got, "pay") {
				t.Fatalf("payment.charge needs %q", got)
			}
			b.shot("intents-" + lang + "-" + vp.name)
			b.open("/admin/operations/" + url.PathEscape(key))
			b.do(chromedp.WaitVisible(tid("pending-approval")))
			want := map[string]string{"ru": "Сохранённый способ оплаты", "en": "Saved payment method"}[lang]
			if n := b.count(`[data-testid="request-summary"] dt`); n == 0 || !strings.Contains(b.text(tid("request-summary")), want) {
				t.Fatalf("%s: the request is not titled %q", lang, want)
			}
			b.shot("operation-decide-" + lang + "-" + vp.name)
		}
	}
}
