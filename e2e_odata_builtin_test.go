package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

// odataDoc reads a document from the simulator's publication.
func (r *rig) odataDoc(set, ref string) map[string]any {
	r.t.Helper()
	req, _ := http.NewRequest("GET", r.simURL+sim.ODataPath+"/"+url.PathEscape(set)+"(guid'"+ref+"')?$format=json", nil)
	req.SetBasicAuth("integration", sim.ODataPassword)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
		r.t.Fatalf("%s(%s): %s %v", set, ref, resp.Status, err)
	}
	return doc
}

// read submits a read-only envelope, which carries no key.
func (r *rig) read(envelope string) (int, map[string]any, error) {
	req, _ := http.NewRequest("POST", r.apiURL+"/v1/operations", strings.NewReader(envelope))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var body map[string]any
	err = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body, err
}

// untilFinal sends key again while the operation is unknown or in
// progress, as an agent does, and returns the last answer.
func (r *rig) untilFinal(key, body string) (int, map[string]any) {
	r.t.Helper()
	code, ans, err := r.post(key, body)
	for i := 0; i < 100 && (err != nil || ans["state"] == "unknown" || ans["state"] == "in_progress"); i++ {
		code, ans, err = r.post(key, body)
	}
	if err != nil {
		r.t.Fatalf("%s: %v", key, err)
	}
	return code, ans
}

const (
	e2eDraft       = `{"schema_version":"1.0","intent":"sales_order.create_draft","payload":{"organization_id":"org-main","customer_id":"customer-1042","warehouse_id":"warehouse-01","currency":"rub","items":[{"product_id":"product-778","quantity":%d,"unit":"pcs"}],"comment":"%s"}}`
	e2ePost        = `{"schema_version":"1.0","intent":"sales_order.post","payload":{"order_id":"%s"}}`
	e2eOrderStatus = `{"schema_version":"1.0","intent":"sales_order.get_status","payload":{"order_id":"%s"}}`
)

// The built-in 1C intents on a 1C base reached over OData with no 1C code:
// the seed's scenarios — one document per key whatever the retries, a
// replay, a changed request refused, a lost answer settled by one look-up,
// a late commit never doubled, parallel duplicates one document — and the
// draft's life: create, read, post (twice), a posting refused with 1C's
// message.
func TestBinaryBuiltinsOnOData(t *testing.T) {
	t.Parallel()
	// The instance onec of kind onec_odata at the simulator's OData
	// publication: the built-in 1C intents run through the mapping
	// shipped for Бухгалтерия предприятия 3.0, by configuration alone.
	r := newRig(t, withOData("onec", "time_zone: Europe/Moscow, timeout_ms: 1000, settle_ms: 1500"))
	docs := func(intent, key string) (docs, creates int) {
		t.Helper()
		ref := onecodata.RefKey("onec", intent, key)
		return r.simJSON("/_sim/effects")[sim.OneCOData][ref], r.simJSON("/_sim/calls")[sim.OneCOData][ref]
	}

	t.Run("InvoiceExecuteReplayMismatch", func(t *testing.T) {
		const key = "test:invoice.create:o-odata-1:v1"
		code, first, err := r.post(key, fmt.Sprintf(e2eInvoice, "o-odata-1", 3))
		if err != nil || code != 200 || first["state"] != "succeeded" || first["target_system"] != "onec" {
			t.Fatalf("first: %d %v %v", code, first, err)
		}
		ref := onecodata.RefKey("onec", "invoice.create", key)
		if first["target_object_id"] != ref {
			t.Fatalf("target_object_id %v, want the document's Ref_Key %s", first["target_object_id"], ref)
		}
		doc := r.odataDoc("Document_СчетНаОплатуПокупателю", ref)
		rows, _ := doc["Товары"].([]any)
		if len(rows) != 1 || doc["Комментарий"] != "o-odata-1" || doc["Posted"] != false ||
			doc["Контрагент_Key"] != "a2000000-0000-1000-8000-000000001042" || doc["Организация_Key"] != "a1000000-0000-1000-8000-000000000001" {
			t.Fatalf("the invoice in 1C: %v", doc)
		}
		row := rows[0].(map[string]any)
		if row["Номенклатура_Key"] != "a3000000-0000-1000-8000-000000000778" || row["Количество"] != 3.0 || row["Цена"] != 625.0 || row["Сумма"] != 1875.0 || row["LineNumber"] != "1" {
			t.Fatalf("the invoice's line: %v (want product-778 by its code, 3 × 625.00 = 1875.00)", row)
		}
		if res, _ := first["result"].(map[string]any); res["number"] != doc["Number"] {
			t.Fatalf("result %v, want the document's number %v", first["result"], doc["Number"])
		}
		code, again, err := r.post(key, fmt.Sprintf(e2eInvoice, "o-odata-1", 3))
		if err != nil || code != 200 || again["replayed"] != true || again["target_object_id"] != ref {
			t.Fatalf("replay: %d %v %v", code, again, err)
		}
		code, changed, _ := r.post(key, fmt.Sprintf(e2eInvoice, "o-odata-1", 4))
		if code != 422 || errorCode(changed) != "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH" {
			t.Fatalf("changed payload: %d %v", code, changed)
		}
		if d, c := docs("invoice.create", key); d != 1 || c != 1 {
			t.Fatalf("documents %d, creates %d; want 1 and 1", d, c)
		}
	})

	// A fault at 1C, the agent sending its key again until the answer is
	// final: one document, and where says so, one create.
	for i, tc := range []struct {
		name, fault string
		oneCreate   bool
	}{
		{"LostAnswerOneLookUp", `{"target":"onec_odata","fault":"drop_response_after_commit","times":1}`, true},
		{"LateCommitNeverDoubled", `{"target":"onec_odata","fault":"late_commit","times":1,"delay_ms":1200}`, false},
		{"TransientRetried", `{"target":"onec_odata","fault":"status","status":503,"times":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("o-odata-fault-%d", i)
			key := "test:invoice.create:" + id + ":v1"
			r.fault(tc.fault)
			code, ans := r.untilFinal(key, fmt.Sprintf(e2eInvoice, id, 1))
			if code != 200 || ans["state"] != "succeeded" {
				t.Fatalf("after the fault: %d %v", code, ans)
			}
			if d, c := docs("invoice.create", key); d != 1 || tc.oneCreate && c != 1 {
				t.Fatalf("documents %d, creates %d; want 1 document (and one create: %v)", d, c, tc.oneCreate)
			}
		})
	}

	t.Run("ParallelDuplicates", func(t *testing.T) {
		const key = "test:invoice.create:o-odata-4:v1"
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.untilFinal(key, fmt.Sprintf(e2eInvoice, "o-odata-4", 2))
			}()
		}
		wg.Wait()
		if d, c := docs("invoice.create", key); d != 1 || c != 1 {
			t.Fatalf("documents %d, creates %d; want 1 and 1", d, c)
		}
	})

	t.Run("FinalFailureReplays", func(t *testing.T) {
		const key = "test:invoice.create:o-odata-6:v1"
		body := strings.Replace(fmt.Sprintf(e2eInvoice, "o-odata-6", 1), "customer-1042", "customer-nobody", 1)
		code, first, _ := r.post(key, body)
		code2, again, _ := r.post(key, body)
		if code != 422 || errorCode(first) != "REFERENCE_NOT_FOUND" || code2 != code || errorCode(again) != "REFERENCE_NOT_FOUND" || again["replayed"] != true {
			t.Fatalf("an unknown customer: %d %v, then %d %v; want 422 REFERENCE_NOT_FOUND, then its replay", code, first, code2, again)
		}
		if d, _ := docs("invoice.create", key); d != 0 {
			t.Fatalf("documents %d; want none", d)
		}
	})

	t.Run("DraftReadPost", func(t *testing.T) {
		const key = "test:sales_order.create_draft:so-odata-1:v1"
		code, draft, err := r.post(key, fmt.Sprintf(e2eDraft, 5, "so-odata-1"))
		if err != nil || code != 200 || draft["state"] != "succeeded" {
			t.Fatalf("draft: %d %v %v", code, draft, err)
		}
		ref, _ := draft["target_object_id"].(string)
		if ref != onecodata.RefKey("onec", "sales_order.create_draft", key) {
			t.Fatalf("draft's target_object_id %q, want its Ref_Key", ref)
		}
		if doc := r.odataDoc("Document_РеализацияТоваровУслуг", ref); doc["Posted"] != false || doc["Склад_Key"] != "a4000000-0000-1000-8000-000000000001" || doc["Комментарий"] != "so-odata-1" {
			t.Fatalf("the draft in 1C: %v", doc)
		}
		code, st, _ := r.read(fmt.Sprintf(e2eOrderStatus, ref))
		if res, _ := st["result"].(map[string]any); code != 200 || res["state"] != "draft" || st["target_object_id"] != ref {
			t.Fatalf("status of the draft: %d %v", code, st)
		}
		for i := range 2 {
			code, posted, err := r.post("test:sales_order.post:so-odata-1:v1", fmt.Sprintf(e2ePost, ref))
			if res, _ := posted["result"].(map[string]any); err != nil || code != 200 || res["state"] != "posted" {
				t.Fatalf("post #%d: %d %v %v", i+1, code, posted, err)
			}
		}
		if doc := r.odataDoc("Document_РеализацияТоваровУслуг", ref); doc["Posted"] != true {
			t.Fatalf("the sale is not posted in 1C: %v", doc)
		}
		code, st, _ = r.read(fmt.Sprintf(e2eOrderStatus, ref))
		if res, _ := st["result"].(map[string]any); code != 200 || res["state"] != "posted" {
			t.Fatalf("status of the posted sale: %d %v", code, st)
		}
		code, st, _ = r.read(fmt.Sprintf(e2eOrderStatus, "a9999999-0000-1000-8000-000000000000"))
		if code != 422 || errorCode(st) != "REFERENCE_NOT_FOUND" {
			t.Fatalf("status of an unknown sale: %d %v", code, st)
		}
	})

	t.Run("PostingRefused", func(t *testing.T) {
		const key = "test:sales_order.create_draft:so-odata-2:v1"
		code, draft, err := r.post(key, fmt.Sprintf(e2eDraft, 1, "so-odata-2"))
		if err != nil || code != 200 {
			t.Fatalf("draft: %d %v %v", code, draft, err)
		}
		const msg = "Недостаточно товара «Кофе в зёрнах 1 кг» на складе «Основной склад»"
		resp, err := http.Post(r.simURL+"/_sim/onec_odata/settings", "application/json", strings.NewReader(`{"refuse_posting":"`+msg+`"}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("refuse postings at the simulator: %v %v", resp, err)
		}
		resp.Body.Close()
		defer func() {
			resp, err := http.Post(r.simURL+"/_sim/onec_odata/settings", "application/json", strings.NewReader(`{}`))
			if err == nil {
				resp.Body.Close()
			}
		}()
		code, refused, _ := r.post("test:sales_order.post:so-odata-2:v1", fmt.Sprintf(e2ePost, draft["target_object_id"]))
		if code != 422 || errorCode(refused) != "POSTING_REFUSED" || !strings.Contains(fmt.Sprint(refused["errors"]), msg) {
			t.Fatalf("a refused posting: %d %v, want 422 POSTING_REFUSED with 1C's message", code, refused)
		}
	})
}

// The shipped OData mapping is part of the built-ins' definitions: while
// an operation accepted at the 1C HTTP service is unfinished, serve does
// not start with the instance switched to OData (its look-up would ask
// the wrong system), and names the operation.
func TestServeRefusesSwitchingOneCUnderUnfinished(t *testing.T) {
	t.Parallel()
	r := newRig(t, withSettings("retry: { max_attempts: 2, initial_delay_ms: 10, multiplier: 2, max_delay_ms: 20, jitter: true }\n"))
	r.fault(`{"target":"onec","fault":"status","status":503,"times":100}`)
	const key = "test:invoice.create:o-switch-1:v1"
	code, body, err := r.post(key, fmt.Sprintf(e2eInvoice, "o-switch-1", 1))
	if err != nil || code != 503 || body["state"] != "failed_retryable" {
		t.Fatalf("execute: %d %v %v", code, body, err)
	}
	r.gateway.kill9()
	cfg, err := os.ReadFile(r.config)
	if err != nil {
		t.Fatal(err)
	}
	old := fmt.Sprintf("  onec: { base_url: \"%s/onec\", timeout_ms: 1000 }\n", r.simURL)
	odata := fmt.Sprintf("  onec: { kind: onec_odata, base_url: \"%s%s\", username_env: E2E_ONEC_USER, password_env: E2E_ONEC_PASSWORD }\n", r.simURL, sim.ODataPath)
	if err := os.WriteFile(r.config, []byte(strings.Replace(string(cfg), old, odata, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCommand(t, append(r.env, "E2E_ONEC_USER=u", "E2E_ONEC_PASSWORD="+sim.ODataPassword), "serve", "--config", r.config, "--data", r.dataDir, "--listen", freeAddr(t))
	if code == 0 || !strings.Contains(out, "1 unfinished operations") || !strings.Contains(out, key+" (invoice.create v1, failed_retryable") {
		t.Fatalf("serve switched 1C's kind under an unfinished operation (exit %d):\n%s", code, out)
	}
}

// References are resolved inside the boundary by what the instance's
// configuration names (counterparties by ИНН here): found, not found,
// several (a firm's branches share an ИНН), marked for deletion; and a
// base that ignores the keys the gateway chooses is caught at its first
// create (TARGET_IGNORES_KEYS), and further creates are refused with
// nothing sent (the operator is told in the log and by check).
func TestBinaryODataReferencesAndIgnoredKeys(t *testing.T) {
	t.Parallel()
	r := newRig(t, withOData("onec", "timeout_ms: 1000, references: { counterparty: { catalog: Catalog_Контрагенты, by: ИНН } }"))
	// Each invoice is of an order of its own: a second invoice of one
	// order under another key would wait for a person (the built-in's
	// duplicate rule).
	invoiceOf := func(order, customer string) string {
		return strings.Replace(fmt.Sprintf(e2eInvoice, order, 1), `"customer-1042"`, `"`+customer+`"`, 1)
	}
	invoice := func(customer string) string { return invoiceOf("o-ref", customer) }
	for _, tc := range []struct{ customer, code string }{
		{"0000000000", "REFERENCE_NOT_FOUND"},
		{"7707083893", "REFERENCE_AMBIGUOUS"},
		{"7703000003", "REFERENCE_INACTIVE"},
	} {
		code, body, err := r.post("test:invoice.create:o-ref-"+tc.customer+":v1", invoice(tc.customer))
		if err != nil || code != 422 || errorCode(body) != tc.code || !strings.Contains(fmt.Sprint(body["errors"]), "customer_id") {
			t.Errorf("customer %s: %d %v %v, want 422 %s on customer_id", tc.customer, code, body, err, tc.code)
		}
	}
	code, body, err := r.post("test:invoice.create:o-ref-ok:v1", invoice("7702104200"))
	if err != nil || code != 200 || body["state"] != "succeeded" {
		t.Fatalf("customer by its ИНН: %d %v %v", code, body, err)
	}
	if doc := r.odataDoc("Document_СчетНаОплатуПокупателю", body["target_object_id"].(string)); doc["Контрагент_Key"] != "a2000000-0000-1000-8000-000000001042" {
		t.Fatalf("the invoice's counterparty: %v", doc["Контрагент_Key"])
	}
	if n := len(r.simJSON("/_sim/effects")[sim.OneCOData]); n != 1 {
		t.Fatalf("%d documents at 1C, want the one whose references resolved", n)
	}

	resp, err := http.Post(r.simURL+"/_sim/onec_odata/settings", "application/json", strings.NewReader(`{"ignore_client_keys":true}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a base ignoring client keys at the simulator: %v %v", resp, err)
	}
	resp.Body.Close()
	code, body, _ = r.post("test:invoice.create:o-ign-1:v1", invoiceOf("o-ign-1", "7702104200"))
	if code != 422 || errorCode(body) != "TARGET_IGNORES_KEYS" {
		t.Fatalf("the first create at a base ignoring keys: %d %v, want 422 TARGET_IGNORES_KEYS", code, body)
	}
	before := len(r.simJSON("/_sim/effects")[sim.OneCOData])
	code, body, _ = r.post("test:invoice.create:o-ign-2:v1", invoiceOf("o-ign-2", "7702104200"))
	if code != 503 || errorCode(body) != "TARGET_UNAVAILABLE" {
		// Nothing sent and the key still free: once the base keeps client
		// keys (and the gateway restarts) the same request goes through.
		t.Fatalf("a create after the base was seen ignoring keys: %d %v, want 503 TARGET_UNAVAILABLE", code, body)
	}
	if after := len(r.simJSON("/_sim/effects")[sim.OneCOData]); after != before {
		t.Fatalf("documents %d → %d: a create was sent to a base known to ignore keys", before, after)
	}
}

// docs/intents.md, The built-in 1C intents over OData: the instance onec given kind onec_odata and nothing
// else is served by serve's built-in OData simulator, and the built-in 1C
// intents run on it through the shipped mapping: the answer's
// target_object_id is the document's Ref_Key, result.number its number.
func TestServeOwnODataSimulator(t *testing.T) {
	t.Parallel()
	r := newRig(t, withConfigFile("contour: test\ntargets:\n  onec: { kind: onec_odata }\n"))
	const key = "test:invoice.create:o-own-1:v1"
	code, body, err := r.post(key, fmt.Sprintf(e2eInvoice, "o-own-1", 2))
	if err != nil || code != 200 || body["state"] != "succeeded" {
		t.Fatalf("invoice.create on serve's own OData simulator: %d %v %v", code, body, err)
	}
	if got, want := body["target_object_id"], onecodata.RefKey("onec", "invoice.create", key); got != want {
		t.Fatalf("target_object_id %v, want the document's Ref_Key %s", got, want)
	}
	if res, _ := body["result"].(map[string]any); res == nil || res["number"] == "" || res["number"] == nil {
		t.Fatalf("result %v carries no document number", body["result"])
	}
}
