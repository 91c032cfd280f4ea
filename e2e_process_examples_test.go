package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

// The firm's examples shipped in docs/examples, run as a firm would:
// copied into intents_dir, through the real binary and the simulators.

// examples is the absolute path of an example's folder.
func examples(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("docs", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// untilState reads the process key until it is in state, and returns
// its answer.
func untilState(t *testing.T, r *rig, key, state string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, got := r.getProcess(key)
		if got != nil && got["state"] == state {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %s is %v, want %s", key, got, state)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Order fulfilment on Бухгалтерия 3.0 over OData: the invoice is made at
// the OData publication, the charge waits for an accountant; nobody
// approves it in time, and the invoice is marked for deletion, once, and
// nothing is charged.
func TestExampleOrderFulfilOnOData(t *testing.T) {
	t.Parallel()
	r := newRig(t, withOData("onec", "timeout_ms: 1000"), withIntents(examples(t, "buh-odata")),
		withSettings(rigRetry+"approval: { ttl: 2s }\nreconciler: { interval_ms: 200 }\n"))
	const key = "test:order.fulfil:order-ex-1:v1"
	body := `{"schema_version":"1.0","intent":"order.fulfil","payload":{"order_id":"order-ex-1","customer_id":"customer-1042",` +
		`"account_id":"merchant-account-17","amount_minor":125000,"items":[{"product_id":"product-778","quantity":2,"unit":"pcs","price_minor":62500}]}}`
	code, answer, err := r.post(key, body)
	if err != nil || code != 202 || answer["state"] != "awaiting_approval" {
		t.Fatalf("the process: %d %v %v", code, answer, err)
	}
	invoice := answer["steps"].([]any)[0].(map[string]any)
	ref := onecodata.RefKey("onec", "invoice.create", invoice["operation_key"].(string))
	if invoice["state"] != "succeeded" || invoice["target_object_id"] != ref {
		t.Fatalf("the invoice step: %v", invoice)
	}
	if doc := r.odataDoc("Document_СчетНаОплатуПокупателю", ref); doc["DeletionMark"] != false {
		t.Fatalf("the new invoice: %v", doc)
	}
	answer = untilState(t, r, key, "compensated")
	if doc := r.odataDoc("Document_СчетНаОплатуПокупателю", ref); doc["DeletionMark"] != true {
		t.Fatalf("the invoice after the charge expired: DeletionMark %v", doc["DeletionMark"])
	}
	effects := r.simJSON("/_sim/effects")
	charge := answer["steps"].([]any)[1].(map[string]any)
	if n := effects[sim.OneCODataChanges][ref]; n != 1 {
		t.Errorf("%d changes of the invoice, want 1", n)
	}
	if n := len(effects["yookassa"]); n != 0 {
		t.Errorf("payments made: %v (the charge %v)", effects["yookassa"], charge)
	}
}

// The CRM's way: a deal, an invoice in 1C, the deal won; and, with an
// invoice 1C refuses (a product that is deleted), the deal moved to lost
// instead — each change once at the CRM.
func TestExampleOrderThroughTheCRM(t *testing.T) {
	t.Parallel()
	r := newRig(t, withSettings(""), withIntents(examples(t, "crm")))
	body := func(order, product string) string {
		return fmt.Sprintf(`{"schema_version":"1.0","intent":"order.deal","payload":{"order_id":%q,"customer_id":"customer-1042",`+
			`"items":[{"product_id":%q,"quantity":1,"unit":"pcs","price_minor":62500}]}}`, order, product)
	}
	deal := func(answer map[string]any) string {
		id, _ := answer["steps"].([]any)[0].(map[string]any)["target_object_id"].(string)
		return id
	}
	code, won, err := r.post("test:order.deal:order-ex-2:v1", body("order-ex-2", "product-778"))
	if err != nil || code != 200 || won["state"] != "succeeded" {
		t.Fatalf("the process: %d %v %v", code, won, err)
	}
	code, lost, err := r.post("test:order.deal:order-ex-3:v1", body("order-ex-3", "product-deleted-1"))
	if err != nil || code != 422 || lost["state"] != "compensated" {
		t.Fatalf("the process with a refused invoice: %d %v %v", code, lost, err)
	}
	changes := r.simJSON("/_sim/effects")[sim.Bitrix24Changes]
	if changes[deal(won)] != 1 || changes[deal(lost)] != 1 || deal(won) == deal(lost) {
		t.Fatalf("the deals' changes: %v (won %s, lost %s)", changes, deal(won), deal(lost))
	}
}
