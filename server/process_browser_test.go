package server_test

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oncegate/oncegate/adapters/sim"
	"github.com/oncegate/oncegate/store"
)

// The accountant's card of a charge that is a process's step says what
// the invoice before it made and what denying it undoes. An operator then
// finds the process whose undoing the CRM refused on the
// processes page, sees its steps, and, the CRM fixed, has the step
// undone again from the browser: the process ends compensated, and the
// audit trail names them.
func TestProcessFinishedInBrowser(t *testing.T) {
	t.Parallel()
	root := startBrowser(t)
	g, tok := processGateway(t, callBack)
	g.mustUsers(t, map[string]string{"olga": store.RoleOperator, "anna": store.RoleAccountant})
	const key = "test:order.fulfil:order-b1:v1"
	r := g.do("POST", "/v1/operations", tok, map[string]string{"Idempotency-Key": key}, fulfilment("order-b1", 125000))

	// The accountant's card of the charge says it is a step of the
	// process, what the invoice before it made, and what a denial undoes.
	acc := g.newTab(t, root, os.TempDir())
	acc.signIn("anna")
	acc.open("/admin/approvals")
	acc.do(chromedp.WaitVisible(tid("approval-process")))
	made, onDeny := acc.text(tid("approval-process-made")), acc.text(tid("approval-process-ondeny"))
	if !strings.Contains(made, "Счёт на оплату: ОГ00-") || !strings.Contains(made, "1С") || !strings.Contains(onDeny, "Звонок клиенту") {
		t.Fatalf("the card's process: made %q, on deny %q", made, onDeny)
	}
	g.inject(sim.Fault{Target: sim.Bitrix24, Fault: sim.FaultTargetError, Times: 1})
	if err := g.store.DecideApproval(context.Background(), g.approval(step(r, "charge")["operation_key"].(string)).ID, false, "anna", "no"); err != nil {
		t.Fatal(err)
	}
	until(t, "the refused undo to need a person", func() bool {
		return g.do("GET", "/v1/operations/"+key, tok, nil, nil).str("state") == "needs_review"
	})

	b := g.newTab(t, root, os.TempDir())
	b.signIn("olga")
	b.open("/admin/processes?state=needs_review")
	b.do(chromedp.WaitVisible(row("process-row", key)))
	if n := b.count(`[data-testid="process-row"]`); n != 1 {
		t.Fatalf("%d processes needing a person listed, want 1", n)
	}
	// By intent, it is listed; not moved for an hour, it is not.
	b.open("/admin/processes?intent=order.fulfil")
	b.do(chromedp.WaitVisible(row("process-row", key)))
	b.open("/admin/processes?idle=1h")
	b.do(chromedp.WaitVisible(tid("processes-empty")))
	b.open("/admin/processes/" + url.PathEscape(key))
	b.do(chromedp.WaitVisible(tid("process-review")))
	if got := b.count(`[data-testid="process-step"]`); got != 2 {
		t.Fatalf("%d steps shown, want 2", got)
	}
	if undo := b.text(tid("step-undo-state", `[data-step="invoice"]`)); undo == "" {
		t.Fatal("the invoice's refused undoing is not shown")
	}
	// Without a note the form is refused, and nothing changes.
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="process-note"]').removeAttribute('required')`),
		chromedp.Click(tid("process-retry")), chromedp.WaitVisible(tid("form-error")))
	b.do(chromedp.SendKeys(tid("process-note"), "the CRM is fixed"), chromedp.Click(tid("process-retry")),
		chromedp.WaitNotPresent(tid("process-review")))
	until(t, "the process to end compensated", func() bool {
		return g.do("GET", "/v1/operations/"+key, tok, nil, nil).str("state") == "compensated"
	})
	events, err := g.store.AuditEvents(context.Background(), store.AuditFilter{OperationKey: key, Event: "process.retry"})
	if err != nil || len(events) != 1 || events[0].Actor.Name != "olga" || !strings.Contains(string(events[0].Detail), "the CRM is fixed") {
		t.Fatalf("the retry's audit: %+v %v", events, err)
	}
}
