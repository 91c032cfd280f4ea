package main

import (
	"encoding/json"
	"fmt"
	"github.com/oncegate/oncegate/server/config/configtest"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/sim"
)

// dealCreate is a declared intent of a firm: a deal in the CRM.
const dealCreate = `name: deal.create
version: 1
target: crm
scope: write
money: false
title: { ru: Сделка в CRM, en: CRM deal }
labels:
  customer_id:  { ru: Клиент, en: Customer }
  title:        { ru: Название, en: Title }
description: Open a deal in the CRM for a customer.
schema:
  type: object
  additionalProperties: false
  required: [customer_id, title]
  properties:
    customer_id: { type: string, minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9][A-Za-z0-9._:-]*$" }
    title:       { type: string, minLength: 1, maxLength: 255 }
references:
  customer_id: customer
map:
  method: crm.deal.add
  fields:
    CONTACT_ID: { ref: customer_id }
    TITLE:      { from: title }
`

// A bad definition stops serve and check before anything starts, naming
// the file, the path inside it and what is wrong.
func TestServeRefusesBadIntents(t *testing.T) {
	t.Parallel()
	bad := strings.Replace(dealCreate, "    title:       { type: string, minLength: 1, maxLength: 255 }", "    title:       { type: string, minLength: 1 }\n    script:      { type: string, maxLength: 10 }", 1)
	dir := intentsDir(t, "deal.create.v1.yaml", bad)
	cfg := configtest.Write(t, "intents_dir: "+dir+"\n")
	file := filepath.Join(dir, "deal.create.v1.yaml")
	data := t.TempDir()
	out, err := serveOnce(t, nil, "--config", cfg, "--data", data)
	if err == nil {
		t.Fatalf("serve started with a bad definition:\n%s", out)
	}
	for _, want := range []string{
		file + ": schema.properties.title: every string needs a bound: maxLength",
		file + ": schema.properties.script: the field script exists in no contract",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("serve's refusal lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "journal.db")); err == nil {
		t.Error("serve made a journal before refusing")
	}
	check, err := exec.Command(bin(t), "check", "--config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(check), file+": schema.properties.title") {
		t.Fatalf("check passed a bad definition: %v\n%s", err, check)
	}
	// A directory that is not there is refused too.
	missing := filepath.Join(t.TempDir(), "oncegate.yaml")
	os.WriteFile(missing, []byte("intents_dir: "+filepath.Join(dir, "nowhere")+"\n"), 0o600)
	out, err = serveOnce(t, nil, "--config", missing, "--data", t.TempDir())
	if err == nil || !strings.Contains(out, "intents_dir "+filepath.Join(dir, "nowhere")) {
		t.Fatalf("serve started without its intents_dir: %v\n%s", err, out)
	}
}

// intents list and show print the loaded catalog: the built-ins and the
// firm's files, each with where it came from.
func TestIntentsList(t *testing.T) {
	t.Parallel()
	dir := intentsDir(t, "deal.create.v1.yaml", dealCreate)
	cfg := configtest.Write(t, "intents_dir: "+dir+"\n")
	out := runBinary(t, nil, "intents", "list", "--config", cfg)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got, want := len(lines), 1+7+1; got != want {
		t.Fatalf("%d lines, want %d:\n%s", got, want, out)
	}
	for _, want := range []string{
		"NAME", "invoice.create  ", "payment.charge  ", "built-in",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if f := strings.Fields(lines[len(lines)-1]); strings.Join(f, " ") != "deal.create 1 crm write no "+filepath.Join(dir, "deal.create.v1.yaml") {
		t.Errorf("the declared intent's line: %q", lines[len(lines)-1])
	}
	charge := strings.Fields(lines[6])
	if strings.Join(charge, " ") != "payment.charge 1 payments pay yes built-in" {
		t.Errorf("payment.charge's line: %q", lines[6])
	}
	show := runBinary(t, nil, "intents", "show", "--config", cfg, "deal.create")
	for _, want := range []string{"deal.create v1 — Сделка в CRM / CRM deal", "target:      crm", `"method":"crm.deal.add"`, "customer_id          customer"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	// builtin_intents: none leaves the firm's own.
	os.WriteFile(cfg, []byte("intents_dir: "+dir+"\nbuiltin_intents: none\n"), 0o600)
	if out := runBinary(t, nil, "intents", "list", "--config", cfg); strings.Count(out, "\n") != 2 || !strings.Contains(out, "deal.create") {
		t.Errorf("builtin_intents none:\n%s", out)
	}
}

// A firm's intent declared in a file runs through the real binary at its
// target, bound at start: executed once, replayed, a changed request
// under its key refused.
func TestBinaryDeclaredIntent(t *testing.T) {
	t.Parallel()
	deal := strings.Replace(dealCreate, "references:\n  customer_id: customer\n", "", 1)
	deal = strings.Replace(deal, "    CONTACT_ID: { ref: customer_id }\n", "    COMMENTS:   { from: customer_id }\n", 1)
	dir := intentsDir(t, "deal.create.v1.yaml", deal)
	r := newRig(t, withSettings(""), withIntents(dir))
	// serve says which files it loaded.
	if !r.gateway.saysSoon(`msg="intent file loaded" file=`+filepath.Join(dir, "deal.create.v1.yaml")+" intent=deal.create version=1") ||
		!r.gateway.saysSoon(`msg="intent definitions loaded" files=1 intents_dir=`+dir+" built_in=7") {
		t.Fatalf("the loaded intent file not logged:\n%s", r.gateway.output())
	}
	const key = "test:deal:create:lead-77:v1"
	env := func(title string) string {
		return `{"schema_version":"1.0","intent":"deal.create","payload":{"customer_id":"customer-1042","title":"` + title + `"}}`
	}
	code, body, err := r.post(key, env("Поставка"))
	if err != nil || code != 200 || body["state"] != "succeeded" || body["target_system"] != "crm" {
		t.Fatalf("execute: %d %v %v", code, body, err)
	}
	code, again, err := r.post(key, env("Поставка"))
	if err != nil || code != 200 || again["target_object_id"] != body["target_object_id"] {
		t.Fatalf("replay: %d %v %v", code, again, err)
	}
	code, body, err = r.post(key, env("Другая"))
	if err != nil || code != 422 || !strings.Contains(fmt.Sprint(body["errors"]), "IDEMPOTENCY_KEY_PAYLOAD_MISMATCH") {
		t.Fatalf("mismatch: %d %v %v", code, body, err)
	}
	if got := r.simJSON("/_sim/effects")["bitrix24"][key]; got != 1 {
		t.Fatalf("effects at the CRM: %d, want 1", got)
	}
}

// serve does not start while unfinished operations were accepted under a
// definition since edited in place, and lists them; with the old file
// back it serves again.
func TestServeRefusesDefinitionEditedInPlace(t *testing.T) {
	t.Parallel()
	deal := strings.Replace(dealCreate, "references:\n  customer_id: customer\n", "", 1)
	deal = strings.Replace(deal, "    CONTACT_ID: { ref: customer_id }\n", "    COMMENTS:   { from: customer_id }\n", 1)
	dir := intentsDir(t, "deal.create.v1.yaml", deal)
	r := newRig(t, withSettings("retry: { max_attempts: 2, initial_delay_ms: 10, multiplier: 2, max_delay_ms: 20, jitter: true }\n"), withIntents(dir))
	r.fault(`{"target":"bitrix24","fault":"status","status":503,"times":100}`)
	const key = "test:deal.create:lead-88:v1"
	code, body, err := r.post(key, `{"schema_version":"1.0","intent":"deal.create","payload":{"customer_id":"customer-1042","title":"Поставка"}}`)
	if err != nil || code != 503 || body["state"] != "failed_retryable" {
		t.Fatalf("execute: %d %v %v", code, body, err)
	}
	r.gateway.kill9()

	file := filepath.Join(dir, "deal.create.v1.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(deal, "maxLength: 255", "maxLength: 254", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := serveOnce(t, r.env, "--config", r.config, "--data", r.dataDir)
	if err == nil || !strings.Contains(out, "edited in place while 1 unfinished operations") || !strings.Contains(out, key+" (deal.create v1, failed_retryable") {
		t.Fatalf("serve started on a definition edited under an unfinished operation: %v\n%s", err, out)
	}
	if err := os.WriteFile(file, []byte(deal), 0o600); err != nil {
		t.Fatal(err)
	}
	r.serve()
}

// A CRM instance's own settings reach its adapter: a reference kind the
// configuration names (partner, found among contacts) and the portal's
// time zone for a date mapped local.
func TestBinaryDeclaredIntentCRMSettings(t *testing.T) {
	t.Parallel()
	deal := strings.Replace(dealCreate, "references:\n  customer_id: customer\n", "references:\n  customer_id: partner\n", 1)
	deal = strings.Replace(deal, "  required: [customer_id, title]\n", "  required: [customer_id, title, close_at]\n", 1)
	deal = strings.Replace(deal, "    title:       { type: string, minLength: 1, maxLength: 255 }\n",
		"    title:       { type: string, minLength: 1, maxLength: 255 }\n    close_at:    { type: string, format: date-time, maxLength: 40 }\n", 1)
	deal = strings.Replace(deal, "  title:        { ru: Название, en: Title }\n", "  title:        { ru: Название, en: Title }\n  close_at:     { ru: Срок, en: Close by }\n", 1)
	deal += "    CLOSEDATE:  { from: close_at, date: local }\n"
	r := newRig(t, withSettings(""), withIntents(intentsDir(t, "deal.create.v1.yaml", deal)),
		withBitrix24("time_zone: Europe/Moscow, references: { partner: { entity: contact } }"))
	const key = "test:deal:create:lead-78:v1"
	code, body, err := r.post(key, `{"schema_version":"1.0","intent":"deal.create","payload":{"customer_id":"customer-1042","title":"Поставка","close_at":"2026-05-01T10:00:00Z"}}`)
	if err != nil || code != 200 || body["state"] != "succeeded" {
		t.Fatalf("execute: %d %v %v", code, body, err)
	}
	resp, err := http.Post(r.simURL+"/bitrix24"+sim.Bitrix24WebhookPath()+"crm.deal.get.json", "application/json",
		strings.NewReader(fmt.Sprintf(`{"id":%q}`, body["target_object_id"])))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Result map[string]any `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if c := fmt.Sprint(got.Result["CONTACT_ID"]); c == "" || c == "0" || c == "<nil>" || !strings.HasPrefix(fmt.Sprint(got.Result["CLOSEDATE"]), "2026-05-01T13:00:00") {
		t.Fatalf("the deal at the CRM: %v; want the partner's contact and 13:00 Moscow time", got.Result)
	}
}
