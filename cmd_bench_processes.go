package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
)

// The bench's process paths (--processes): a process of two steps — an
// invoice in 1C, then a draft sales order there — beside the same two
// operations sent one after the other by one client, in one run: what a
// process costs beyond its steps.

// benchProcess is the process the bench declares.
const benchProcess = `name: bench.invoice_order
version: 1
title: { ru: Счёт и заказ, en: Invoice and order }
labels: { order_id: { ru: Заказ, en: Order } }
description: Invoice the order in 1C, then draft its sales order there.
schema:
  type: object
  additionalProperties: false
  required: [order_id]
  properties: { order_id: { type: string, minLength: 1, maxLength: 64 } }
steps:
  - name: invoice
    intent: invoice.create
    payload:
      order_id:        { from: order_id }
      organization_id: { value: org-main }
      customer_id:     { value: customer-1042 }
      currency:        { value: RUB }
      items:           { value: [{ product_id: product-778, quantity: 2, unit: pcs, price_minor: 62500 }] }
    compensate: manual
  - name: order
    intent: sales_order.create_draft
    payload:
      organization_id: { value: org-main }
      customer_id:     { value: customer-1042 }
      warehouse_id:    { value: warehouse-01 }
      currency:        { value: RUB }
      items:           { value: [{ product_id: product-778, quantity: 2, unit: pcs }] }
      comment:         { template: "Счёт {steps.invoice.result.number} по заказу {order_id}" }
`

// benchProcessDir writes the bench's process into a new intents_dir
// under dir.
func benchProcessDir(dir string) (string, error) {
	intents := filepath.Join(dir, "intents")
	if err := os.MkdirAll(intents, 0o700); err != nil {
		return "", err
	}
	return intents, os.WriteFile(filepath.Join(intents, "bench.invoice_order.v1.yaml"), []byte(benchProcess), 0o600)
}

// processPaths are the two paths: the pair of operations, then the
// process, each request of either an order of its own.
func processPaths(urls []string, run string, seq *atomic.Int64) []benchPath {
	order := func() string { return fmt.Sprintf("bench-%s-%d", run, seq.Add(1)) }
	return []benchPath{
		{name: "two steps sent one by one (invoice, sales order)", urls: urls, key: order, kind: benchGatewayPath, send: sendPair},
		{name: "the same two steps as one process", urls: urls, key: order, kind: benchGatewayPath, send: sendProcess},
	}
}

// sendPair sends the invoice of order, then its draft sales order, as an
// agent that runs the two steps itself.
func sendPair(client *http.Client, url, token, order string) error {
	if err := post(client, url, token, "test:invoice.create:"+order+":v1", benchBodyFor("test:invoice.create:"+order+":v1")); err != nil {
		return err
	}
	body := `{"schema_version":"1.0","intent":"sales_order.create_draft","payload":{"organization_id":"org-main","customer_id":"customer-1042",` +
		`"warehouse_id":"warehouse-01","currency":"RUB","items":[{"product_id":"product-778","quantity":2,"unit":"pcs"}],"comment":"Счёт по заказу ` + order + `"}}`
	return post(client, url, token, "test:sales_order.create_draft:"+order+":v1", []byte(body))
}

// sendProcess sends the process of order.
func sendProcess(client *http.Client, url, token, order string) error {
	body := `{"schema_version":"1.0","intent":"bench.invoice_order","payload":{"order_id":"` + order + `"}}`
	return post(client, url, token, "test:bench.invoice_order:"+order+":v1", []byte(body))
}

// post sends body with key and wants a 200.
func post(client *http.Client, url, token, key string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/operations", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, answer)
	}
	return nil
}
