package contract

import (
	"bytes"
	"embed"
	"encoding/json"
	"io/fs"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Targets: the business system an intent acts in.
const (
	TargetOneC     = "onec"     // 1C:Enterprise
	TargetCRM      = "crm"      // Bitrix24
	TargetPayments = "payments" // YooKassa
)

// Scopes: the token right an intent needs (API.md section 2).
const (
	ScopeRead  = "read"
	ScopeDraft = "draft"
	ScopeWrite = "write"
	ScopePost  = "post"
	ScopePay   = "pay"
)

// Intent is one business action of the closed whitelist (API.md section 6).
type Intent struct {
	Name      string          // "invoice.create"
	Target    string          // "onec" | "crm" | "payments"
	Scope     string          // "read" | "draft" | "write" | "post" | "pay"
	Money     bool            // needs a person's approval
	Journaled bool            // false only for sales_order.get_status (read only, no key)
	Effect    string          // one-line human description (API.md section 6 "effect")
	Schema    json.RawMessage // the JSON Schema of the payload, as served by GET /v1/intents

	compiled *jsonschema.Schema // Schema, compiled once at init
	shape    *shape             // Schema's object structure, for messages and normalization
}

// registry is the whitelist, in API.md's table order. It is explicit code on purpose:
// an intent exists only if it is written here, with its schema file beside it.
var registry = []*Intent{
	{Name: "invoice.create", Target: TargetOneC, Scope: ScopeWrite, Journaled: true,
		Effect: "invoice (счёт на оплату) in 1C"},
	{Name: "sales_order.create_draft", Target: TargetOneC, Scope: ScopeDraft, Journaled: true,
		Effect: "unposted sales order in 1C"},
	{Name: "sales_order.get_status", Target: TargetOneC, Scope: ScopeRead, Journaled: false,
		Effect: "read only: no key needed, not journaled"},
	{Name: "sales_order.post", Target: TargetOneC, Scope: ScopePost, Journaled: true,
		Effect: "posts an existing draft (separate right)"},
	{Name: "crm.callback.create", Target: TargetCRM, Scope: ScopeWrite, Journaled: true,
		Effect: "callback task for a customer in the CRM"},
	{Name: "payment.charge", Target: TargetPayments, Scope: ScopePay, Money: true, Journaled: true,
		Effect: "charge at the payment provider"},
	{Name: "payment.refund", Target: TargetPayments, Scope: ScopePay, Money: true, Journaled: true,
		Effect: "refund of an earlier charge"},
}

// byName indexes registry.
var byName = mustLoad(schemaFiles, registry)

//go:embed schemas/*.json
var schemaFiles embed.FS

// mustLoad reads and compiles each intent's schema from fsys (schemas/<name>.json) into
// the intent and indexes the intents by name. A failure is a programming error in this
// package (a schema missing or not compiling), so it panics at init.
func mustLoad(fsys fs.ReadFileFS, intents []*Intent) map[string]*Intent {
	idx := make(map[string]*Intent, len(intents))
	for _, in := range intents {
		raw, err := fsys.ReadFile("schemas/" + in.Name + ".json")
		if err != nil {
			panic("contract: " + err.Error())
		}
		compiled, sh, err := compileSchema(in.Name, raw)
		if err != nil {
			panic("contract: " + err.Error())
		}
		in.Schema, in.compiled, in.shape = raw, compiled, sh
		idx[in.Name] = in
	}
	return idx
}

// Lookup finds a whitelisted intent by its exact name. An unknown name gives false; the
// caller answers with ErrIntentNotAllowed. The *Intent is the caller's own copy.
func Lookup(name string) (*Intent, bool) {
	in, ok := byName[name]
	if !ok {
		return nil, false
	}
	return in.clone(), true
}

// All returns the seven v1 intents in API.md's table order, each the caller's own copy.
func All() []*Intent {
	all := make([]*Intent, len(registry))
	for i, in := range registry {
		all[i] = in.clone()
	}
	return all
}

// clone copies in, so callers cannot change the registry through it.
func (in *Intent) clone() *Intent {
	c := *in
	c.Schema = bytes.Clone(in.Schema)
	return &c
}
