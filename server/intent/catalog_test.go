package intent_test

import (
	"encoding/json"
	"fmt"
	"github.com/oncegate/oncegate/adapters/codes/codestest"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/intent"
)

// TestAll pins the built-in whitelist to docs/api.md's Built-in intents, in its table order.
func TestAll(t *testing.T) {
	t.Parallel()
	want := []intent.Intent{
		{Name: "invoice.create", Target: "onec", Scope: "write", Money: false, Journaled: true, Description: "invoice (счёт на оплату) in 1C"},
		{Name: "sales_order.create_draft", Target: "onec", Scope: "draft", Money: false, Journaled: true, Description: "unposted sales order in 1C"},
		{Name: "sales_order.get_status", Target: "onec", Scope: "read", Money: false, Journaled: false, Description: "read only: no key needed, not journaled"},
		{Name: "sales_order.post", Target: "onec", Scope: "post", Money: false, Journaled: true, Description: "posts an existing draft (separate right)"},
		{Name: "crm.callback.create", Target: "crm", Scope: "write", Money: false, Journaled: true, Description: "callback task for a customer in the CRM"},
		{Name: "payment.charge", Target: "payments", Scope: "pay", Money: true, Journaled: true, Description: "charge at the payment provider"},
		{Name: "payment.refund", Target: "payments", Scope: "pay", Money: true, Journaled: true, Description: "refund of an earlier charge"},
	}
	all := builtins.All()
	if got, want := len(all), len(want); got != want {
		t.Fatalf("len(All()) = %d, want %d", got, want)
	}
	for i, w := range want {
		g := all[i]
		if g.Name != w.Name || g.Target != w.Target || g.Scope != w.Scope || g.Money != w.Money ||
			g.Journaled != w.Journaled || g.Description != w.Description || g.Version != 1 || g.Source != intent.BuiltIn {
			t.Errorf("All()[%d] = %+v, want %+v", i, *g, w)
		}
		if !json.Valid(g.Schema) {
			t.Errorf("%s: schema is not valid JSON", g.Name)
		}
		if g.Title.RU == "" || g.Title.EN == "" || len(g.Digest) != 64 {
			t.Errorf("%s: title %+v, digest %q", g.Name, g.Title, g.Digest)
		}
		l := mustLookup(t, w.Name)
		if l != g {
			t.Errorf("Lookup(%q) = %+v", w.Name, l)
		}
	}
	if got, want := strings.Join(builtins.Names(), ","), "invoice.create,sales_order.create_draft,sales_order.get_status,sales_order.post,crm.callback.create,payment.charge,payment.refund"; got != want {
		t.Errorf("Names() = %s", got)
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "invoice", "Invoice.create", "invoice.create ", "invoice.create.v2", "sql.exec", "__proto__"} {
		if in, ok := builtins.Lookup(name); ok || in != nil {
			t.Errorf("Lookup(%q) = %v, %v; want nil, false", name, in, ok)
		}
	}
	t.Run("CallersCannotChangeTheList", func(t *testing.T) {
		t.Parallel()
		all := builtins.All()
		all[0] = nil
		if builtins.All()[0] == nil {
			t.Fatal("the catalog changed through an All copy")
		}
		s := mustLookup(t, "payment.charge").SchemaCopy()
		s[0] = 'X'
		if mustLookup(t, "payment.charge").Schema[0] != '{' {
			t.Fatal("the catalog changed through a schema copy")
		}
	})
	t.Run("ForeignIntentCannotNormalize", func(t *testing.T) {
		t.Parallel()
		in := &intent.Intent{Name: "sql.exec"}
		if _, err := in.Normalize([]byte(`{}`)); err == nil {
			t.Fatal("an intent built outside a catalog normalized a payload")
		}
		var nilIntent *intent.Intent
		if _, err := nilIntent.Normalize([]byte(`{}`)); err == nil {
			t.Fatal("a nil intent normalized a payload")
		}
	})
	t.Run("NotAllowed", func(t *testing.T) {
		t.Parallel()
		ce := codestest.WantRefusal(t, builtins.NotAllowed("sql.exec"), codes.IntentNotAllowed, "intent")
		if !strings.Contains(ce.Message, "invoice.create, sales_order.create_draft") {
			t.Fatalf("message %q does not list the whitelist", ce.Message)
		}
	})
}

// TestSchemas checks the rules every payload schema keeps: draft 2020-12, objects
// closed with required lists, a description on every property, every string bounded
// by at most 1024 characters, arrays of at most 500 items.
func TestSchemas(t *testing.T) {
	t.Parallel()
	for _, in := range builtins.All() {
		t.Run(in.Name, func(t *testing.T) {
			t.Parallel()
			var doc map[string]any
			if err := json.Unmarshal(in.Schema, &doc); err != nil {
				t.Fatal(err)
			}
			if got, want := doc["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
				t.Errorf("$schema = %v, want %v", got, want)
			}
			if got, want := doc["title"], in.Name; got != want {
				t.Errorf("title = %v, want %v", got, want)
			}
			checkSchemaNode(t, in.Name, doc)
		})
	}
}

func checkSchemaNode(t *testing.T, at string, n map[string]any) {
	t.Helper()
	if d, _ := n["description"].(string); len(d) < 10 {
		t.Errorf("%s: no useful description", at)
	}
	switch n["type"] {
	case "object":
		if n["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties is not false", at)
		}
		props, _ := n["properties"].(map[string]any)
		if len(props) == 0 {
			t.Errorf("%s: no properties", at)
		}
		req, ok := n["required"].([]any)
		if !ok || len(req) == 0 {
			t.Errorf("%s: no required list", at)
		}
		for _, r := range req {
			if _, ok := props[r.(string)]; !ok {
				t.Errorf("%s: required %v is not a property", at, r)
			}
		}
		for _, forbidden := range []string{"method", "query", "script", "posted", "privileged_mode", "operation"} {
			if _, ok := props[forbidden]; ok {
				t.Errorf("%s: defines %q", at, forbidden)
			}
		}
		for name, p := range props {
			checkSchemaNode(t, at+"."+name, p.(map[string]any))
		}
	case "array":
		if max, _ := n["maxItems"].(float64); max < 1 || max > 500 {
			t.Errorf("%s: maxItems %v, want 1..500", at, n["maxItems"])
		}
		checkSchemaNode(t, at+"[]", n["items"].(map[string]any))
	case "string":
		if max, _ := n["maxLength"].(float64); max < 1 || max > 1024 {
			t.Errorf("%s: maxLength %v, want 1..1024", at, n["maxLength"])
		}
	case "integer", "number":
		if _, ok := n["maximum"]; !ok {
			t.Errorf("%s: no maximum", at)
		}
	default:
		t.Errorf("%s: type %v", at, n["type"])
	}
}

// TestSchemas_Bounds pins the bounds the contract (docs/api.md, A request)
// and the providers set.
func TestSchemas_Bounds(t *testing.T) {
	t.Parallel()
	prop := func(intent string, path ...string) map[string]any {
		var n map[string]any
		if err := json.Unmarshal(mustLookup(t, intent).Schema, &n); err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			if p == "[]" {
				n = n["items"].(map[string]any)
				continue
			}
			n = n["properties"].(map[string]any)[p].(map[string]any)
		}
		return n
	}
	tests := []struct {
		intent string
		path   []string
		key    string
		want   any
	}{
		{"crm.callback.create", []string{"comment"}, "maxLength", 500.0},
		{"sales_order.create_draft", []string{"comment"}, "maxLength", 1024.0},
		{"payment.charge", []string{"description"}, "maxLength", 128.0},
		{"payment.refund", []string{"reason"}, "maxLength", 250.0},
		{"payment.charge", []string{"amount_minor"}, "minimum", 1.0},
		{"payment.charge", []string{"amount_minor"}, "maximum", 1e15},
		{"payment.refund", []string{"amount_minor"}, "minimum", 1.0},
		{"invoice.create", []string{"items", "[]", "price_minor"}, "minimum", 0.0},
		{"invoice.create", []string{"items", "[]", "price_minor"}, "type", "integer"},
		{"invoice.create", []string{"items", "[]", "quantity"}, "exclusiveMinimum", 0.0},
		{"invoice.create", []string{"items", "[]", "quantity"}, "maximum", 1e9},
		{"invoice.create", []string{"items", "[]", "quantity"}, "type", "number"},
		{"invoice.create", []string{"items", "[]", "unit"}, "maxLength", 16.0},
		{"invoice.create", []string{"items"}, "minItems", 1.0},
		{"invoice.create", []string{"items"}, "maxItems", 500.0},
		{"invoice.create", []string{"due_date"}, "format", "date"},
		{"crm.callback.create", []string{"due_at"}, "format", "date-time"},
		{"invoice.create", []string{"currency"}, "pattern", "^[A-Za-z]{3}$"},
		{"invoice.create", []string{"order_id"}, "pattern", "^[A-Za-z0-9][A-Za-z0-9._:-]*$"},
		{"invoice.create", []string{"order_id"}, "maxLength", 128.0},
	}
	for _, tt := range tests {
		if got := prop(tt.intent, tt.path...)[tt.key]; fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s %v %s = %v, want %v", tt.intent, tt.path, tt.key, got, tt.want)
		}
	}
}
