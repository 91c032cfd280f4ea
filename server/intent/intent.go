// Package intent is the whitelist of intents as declared definitions: one
// YAML file per intent version (docs/intents.md), the built-ins embedded in the
// binary in that very format and the firm's own in intents_dir, loaded
// strictly into a Catalog that is passed to whoever needs it. A definition
// says what an intent is: its name and version, the target instance it
// runs at, the right it needs, whether it moves money, the texts people
// read, the payload's JSON Schema and its normalization, which fields are
// external ids, its business limits and the target's mapping.
//
// server/contract keeps what every intent shares (the envelope, keys, the
// canonical form and fingerprint) and knows no particular intent.
package intent

import (
	"bytes"
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Scopes: the token right an intent needs (docs/api.md, Tokens and scopes).
const (
	ScopeRead  = "read"
	ScopeDraft = "draft"
	ScopeWrite = "write"
	ScopePost  = "post"
	ScopePay   = "pay"
)

// Scopes lists the scopes in the order of docs/api.md, Tokens and scopes.
func Scopes() []string { return []string{ScopeRead, ScopeDraft, ScopeWrite, ScopePost, ScopePay} }

// BuiltIn is the Source of the definitions embedded in the binary.
const BuiltIn = "built-in"

// Text is a text people read, in Russian and English.
type Text struct {
	RU string `yaml:"ru" json:"ru"`
	EN string `yaml:"en" json:"en"`
}

// In is the text in lang ("ru" or "en"), the other language's when that
// one is empty.
func (t Text) In(lang string) string {
	if lang == "ru" && t.RU != "" || t.EN == "" {
		return t.RU
	}
	return t.EN
}

// Label is the people's name of one payload field.
type Label struct {
	Field string // a field path: "customer_id", "items.product_id"
	Text
}

// Limits are an intent's business limits, each a value with the payload
// field it applies to declared beside it, so the engine knows no field by
// name. Zero values mean no limit.
type Limits struct {
	// CurrencyField is the top-level field holding the ISO 4217 code
	// that Currencies and AmountCeiling are read against.
	CurrencyField string   `yaml:"currency_field"`
	Currencies    []string `yaml:"currencies"`
	// AmountField is a top-level integer field in minor units held to
	// AmountCeiling of its currency.
	AmountField string `yaml:"amount_field"`
	// AmountCeiling caps the amount (AmountField), or the lines' total
	// (Σ QuantityField × PriceField), per currency, in minor units.
	AmountCeiling map[string]int64 `yaml:"amount_ceiling"`
	// ItemsField is a top-level array of objects, the lines; the other
	// fields below are members of each line.
	ItemsField    string   `yaml:"items_field"`
	MaxItems      int      `yaml:"max_items"`
	QuantityField string   `yaml:"quantity_field"`
	MaxQuantity   float64  `yaml:"max_quantity"`
	UnitField     string   `yaml:"unit_field"`
	Units         []string `yaml:"units"`
	PriceField    string   `yaml:"price_field"`
}

// Intent is one version of one intent of the whitelist, as its definition
// declares it. An *Intent from a Catalog is shared: treat it as read-only.
type Intent struct {
	Name      string // "invoice.create"
	Version   int    // 1, 2, …: a new meaning is a new version
	Target    string // the target instance it runs at: "onec", "crm", "payments", …
	Scope     string // "read" | "draft" | "write" | "post" | "pay"
	Money     bool   // needs a person's approval
	Journaled bool   // false for read-only intents: no key, nothing journaled
	Title     Text   // what people call it
	Labels    []Label
	// Description is the one-line description agents read (GET
	// /v1/intents, the OpenAPI document, the MCP tools).
	Description string
	// Schema is the JSON Schema of the payload, as served by GET
	// /v1/intents (compact JSON, in the definition's member order).
	Schema json.RawMessage
	// References maps payload field paths holding external ids to their
	// kind ("customer", "product"), resolved by the target.
	References map[string]string
	// Upper are the top-level string fields normalization upper-cases
	// (ASCII), such as an ISO 4217 currency code.
	Upper  []string
	Limits Limits
	// Duplicates is the intent's duplicate rule by business key; nil for
	// none.
	Duplicates *Duplicates
	// Map is the definition's target-specific part as JSON, nil without
	// one; only the kind's adapter reads it.
	Map json.RawMessage
	// Steps are a process's steps, in order; nil for an intent. A
	// process has no Target, Scope or Map of its own.
	Steps []Step
	// StepScopes are the scopes a process's steps and compensations
	// need, every one of them: a token runs the process only with all.
	StepScopes []string
	// Source is the definition's file, or BuiltIn.
	Source string
	// Digest is the lowercase hex SHA-256 of the definition file's bytes
	// but its title, labels, description and duplicates: of what it means.
	Digest string
	// fileDigest is the digest journals took before: of the whole file
	// but its duplicates.
	fileDigest string

	compiled *jsonschema.Schema // Schema, compiled once at load
	fields   *schemaFields      // Schema's field paths and their types
	shape    *shape             // Schema's object structure, for messages and normalization
}

// Label is the people's name of the payload field at path in lang, or
// path itself when the definition names none.
func (def *Intent) Label(path, lang string) string {
	for _, l := range def.Labels {
		if l.Field == path {
			return l.In(lang)
		}
	}
	return path
}

// SchemaCopy is the caller's own copy of Schema.
func (def *Intent) SchemaCopy() json.RawMessage { return bytes.Clone(def.Schema) }

// Accepts reports whether an operation accepted under the definition
// digest runs under this definition's meaning: the digest is this one's,
// or the digest of its whole file that journals recorded before.
func (def *Intent) Accepts(digest string) bool {
	return digest == def.Digest || digest == def.fileDigest
}
