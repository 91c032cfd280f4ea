package main

import (
	"fmt"
	"testing"

	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

// odataMarkDeletedDefinition is a firm's compensation of the invoice
// above: the document marked for deletion, never deleted.
const odataMarkDeletedDefinition = `name: buh_invoice.mark_deleted
version: 1
target: buh
scope: write
title: { ru: Пометка счёта на удаление, en: Invoice marked for deletion }
labels: { invoice_id: { ru: Счёт, en: Invoice } }
description: Mark an unposted invoice for deletion in 1C. Send the same operation key on every retry.
schema:
  type: object
  additionalProperties: false
  required: [invoice_id]
  properties: { invoice_id: { type: string, minLength: 36, maxLength: 36 } }
map: { entity: Document_СчетНаОплатуПокупателю, action: mark_for_deletion, document: invoice_id }
`

// testODataChange runs a change through the binary, on the rig of
// TestBinaryDeclaredODataIntent (whose intents_dir holds
// odataMarkDeletedDefinition): the invoice a create made is marked for
// deletion once, its answer names the document and its state, and a lost
// answer is settled by reading the document back, with no second change.
func testODataChange(t *testing.T, r *rig) {
	const mark = `{"schema_version":"1.0","intent":"buh_invoice.mark_deleted","payload":{"invoice_id":"%s"}}`
	changes := func(ref string) int {
		t.Helper()
		return r.simJSON("/_sim/effects")[sim.OneCODataChanges][ref]
	}
	invoice := func(order string) string {
		t.Helper()
		key := "test:buh_invoice.create:" + order + ":v1"
		if code, body, err := r.post(key, fmt.Sprintf(e2eODataInvoice, order, 1)); err != nil || code != 200 {
			t.Fatalf("invoice: %d %v %v", code, body, err)
		}
		return onecodata.RefKey("buh", "buh_invoice.create", key)
	}

	ref := invoice("inv-chg-1")
	key := "test:buh_invoice.mark_deleted:inv-chg-1:v1"
	for _, what := range []string{"first", "replay"} {
		code, body, err := r.post(key, fmt.Sprintf(mark, ref))
		res, _ := body["result"].(map[string]any)
		if err != nil || code != 200 || body["state"] != "succeeded" || body["target_object_id"] != ref || res["state"] != "marked_for_deletion" {
			t.Fatalf("%s: %d %v %v", what, code, body, err)
		}
	}
	if got := changes(ref); got != 1 {
		t.Fatalf("changes = %d, want 1", got)
	}

	ref = invoice("inv-chg-2")
	key = "test:buh_invoice.mark_deleted:inv-chg-2:v1"
	r.fault(`{"target":"onec_odata","fault":"drop_response_after_commit","times":1}`)
	code, body, err := r.post(key, fmt.Sprintf(mark, ref))
	if err != nil || code != 202 || body["state"] != "unknown" {
		t.Fatalf("the lost answer: %d %v %v, want 202 unknown", code, body, err)
	}
	for i := 0; err == nil && body["state"] != "succeeded" && i < 50; i++ {
		code, body, err = r.post(key, fmt.Sprintf(mark, ref))
	}
	if err != nil || code != 200 || body["target_object_id"] != ref {
		t.Fatalf("after the lost answer: %d %v %v", code, body, err)
	}
	if got := changes(ref); got != 1 {
		t.Fatalf("changes = %d, want 1: the lost answer is settled by reading the document back", got)
	}
}
