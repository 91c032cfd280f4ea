package onec_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/onec"
	"github.com/oncegate/oncegate/adapters/sim"
)

const purchaseDraft = "purchase_order.create_draft"

// purchaseSchema is the payload schema of the declared intent in these tests.
const purchaseSchema = `{"type":"object","additionalProperties":false,"required":["supplier_id","items"],
"properties":{"supplier_id":{"type":"string","maxLength":100},"items":{"type":"array","maxItems":10,"items":{"type":"object",
"additionalProperties":false,"properties":{"product_id":{"type":"string","maxLength":100},"quantity":{"type":"number"}}}}}}`

func purchaseBinding(mapping string) adapters.Binding {
	b := adapters.Binding{Intent: purchaseDraft, Version: 1, Schema: json.RawMessage(purchaseSchema),
		References: map[string]string{"supplier_id": "counterparty"}}
	if mapping != "" {
		b.Map = json.RawMessage(mapping)
	}
	return b
}

func purchaseOp(tb testing.TB, key string) adapters.Op {
	op := newOp(tb, key, purchaseDraft, map[string]any{
		"supplier_id": "supplier-7", "items": []any{map[string]any{"product_id": "product-778", "quantity": 3}},
	})
	op.Version = 1
	return op
}

// setupDeclared is setup with purchase_order.create_draft bound to the
// client and, when publish, published by the simulated 1C.
func setupDeclared(tb testing.TB, mapping string, publish ...string) (*sim.Server, *onec.Client) {
	tb.Helper()
	s, c, _ := setup(tb, time.Second)
	if err := c.Bind([]adapters.Binding{purchaseBinding(mapping)}); err != nil {
		tb.Fatalf("bind: %v", err)
	}
	if err := s.PublishOneC(publish...); err != nil {
		tb.Fatal(err)
	}
	return s, c
}

func documents(tb testing.TB, s *sim.Server, intent string, want int) []sim.OneCDocument {
	tb.Helper()
	docs := s.OneCDocuments(intent)
	if len(docs) != want {
		tb.Fatalf("documents of %s = %+v, want %d", intent, docs, want)
	}
	return docs
}

func TestDeclaredIntent(t *testing.T) {
	t.Parallel()
	const key = "test:purchase_order.create_draft:po-1:v1"

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s, c := setupDeclared(t, "", purchaseDraft)
		op := purchaseOp(t, key)
		res := MustExecute(t, c, op)
		if got, want := res.ObjectID, "DOC-"; !objectID(got, want) {
			t.Fatalf("object id = %q, want %q", got, want)
		}
		if got, want := res.Data["number"], "ОГ00-000001"; got != want {
			t.Fatalf("number = %v, want %v", got, want)
		}
		docs := documents(t, s, purchaseDraft, 1)
		if got, want := string(docs[0].Payload), string(op.Payload); got != want {
			t.Fatalf("payload at 1C = %s, want the canonical payload %s", got, want)
		}
		effects(t, s, key, 1)

		// Replay: the same document, nothing new.
		again := MustExecute(t, c, op)
		if again.ObjectID != res.ObjectID || again.Data["number"] != res.Data["number"] {
			t.Fatalf("replay = %+v, want %+v", again, res)
		}
		found, err := c.Lookup(context.Background(), op)
		if err != nil || found.ObjectID != res.ObjectID {
			t.Fatalf("lookup = %+v, %v, want %s", found, err, res.ObjectID)
		}
		documents(t, s, purchaseDraft, 1)
		effects(t, s, key, 1)
	})

	t.Run("Route", func(t *testing.T) {
		t.Parallel()
		// The service routes by the mapping's name; the register holds it.
		s, c := setupDeclared(t, `{"intent":"purchasing.order_draft"}`, "purchasing.order_draft")
		op := purchaseOp(t, key)
		res := MustExecute(t, c, op)
		documents(t, s, "purchasing.order_draft", 1)
		documents(t, s, purchaseDraft, 0)
		if found, err := c.Lookup(context.Background(), op); err != nil || found.ObjectID != res.ObjectID {
			t.Fatalf("lookup = %+v, %v, want %s", found, err, res.ObjectID)
		}
		if _, err := c.Validate(context.Background(), op); err != nil {
			t.Fatalf("validate: %v", err)
		}
	})

	t.Run("LostAnswer", func(t *testing.T) {
		t.Parallel()
		s, c := setupDeclared(t, "", purchaseDraft)
		op := purchaseOp(t, key)
		inject(t, s, sim.Fault{Fault: sim.FaultDropResponse})
		_, err := c.Execute(context.Background(), op)
		if got := adapters.ClassOf(err); got == adapters.Final {
			t.Fatalf("lost answer: %v, want a class that looks the key up or sends it again", err)
		}
		effects(t, s, key, 1)
		res, err := c.Lookup(context.Background(), op)
		if err != nil || !objectID(res.ObjectID, "DOC-") {
			t.Fatalf("lookup after the lost answer = %+v, %v, want a DOC- id", res, err)
		}
		// Sending the key again answers the document the lost call made.
		if again := MustExecute(t, c, op); again.ObjectID != res.ObjectID {
			t.Fatalf("execute after the lost answer = %+v, want %s", again, res.ObjectID)
		}
		documents(t, s, purchaseDraft, 1)
		effects(t, s, key, 1)
	})

	t.Run("ErrKeyMismatch", func(t *testing.T) {
		t.Parallel()
		s, c := setupDeclared(t, "", purchaseDraft)
		MustExecute(t, c, purchaseOp(t, key))
		other := newOp(t, key, purchaseDraft, map[string]any{"supplier_id": "supplier-8", "items": []any{}})
		other.Version = 1
		_, err := c.Execute(context.Background(), other)
		adapterstest.WantError(t, err, adapters.Final, codes.KeyMismatch, "")
		documents(t, s, purchaseDraft, 1)
	})

	t.Run("ErrNotPublished", func(t *testing.T) {
		t.Parallel()
		// Bound at the gateway, but the firm's module has no handler: the
		// service answers as for any intent it does not route. Nothing
		// was done, and publishing it lets the same key through.
		s, c := setupDeclared(t, "")
		op := purchaseOp(t, key)
		_, err := c.Execute(context.Background(), op)
		e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, "")
		if !strings.Contains(e.Message, purchaseDraft) {
			t.Fatalf("message = %q, want the intent named", e.Message)
		}
		_, err = c.Validate(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, "")
		_, err = c.Lookup(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, "")
		effects(t, s, key, 0)

		if err := s.PublishOneC(purchaseDraft); err != nil {
			t.Fatal(err)
		}
		MustExecute(t, c, op)
		effects(t, s, key, 1)
	})

	t.Run("BuiltInsUnchanged", func(t *testing.T) {
		t.Parallel()
		// Bound by their own names (as the catalog binds the built-ins),
		// they run and refuse exactly as unbound.
		s, c := setupDeclared(t, "", purchaseDraft)
		if err := c.Bind([]adapters.Binding{purchaseBinding(""), {Intent: "invoice.create", Version: 1}, {Intent: "sales_order.post", Version: 1}}); err != nil {
			t.Fatal(err)
		}
		res := MustExecute(t, c, invoiceOp(t, "test:invoice.create:order-1:v1"))
		if !objectID(res.ObjectID, "INV-") {
			t.Fatalf("invoice = %+v", res)
		}
		// An intent bound to no definition is sent by its name, as before.
		op := newOp(t, "test:payment.charge:p-1:v1", "payment.charge", map[string]any{"amount_minor": 1})
		_, err := c.Execute(context.Background(), op)
		adapterstest.WantError(t, err, adapters.Final, codes.IntentNotAllowed, "intent")
		effects(t, s, op.Key, 0)
	})
}

func TestBind(t *testing.T) {
	t.Parallel()
	_, c, _ := setup(t, time.Second)
	for _, tc := range []struct {
		name, mapping, want string
	}{
		{"UnknownKey", `{"entity":"Document_ЗаказПоставщику"}`, "purchase_order.create_draft v1: map.entity: unknown key for kind onec"},
		{"UnknownKeyBesideIntent", `{"intent":"purchase_order.create_draft","method":"x"}`, "purchase_order.create_draft v1: map.method: unknown key for kind onec"},
		{"NotAMapping", `["purchase_order.create_draft"]`, "purchase_order.create_draft v1: map: must be a mapping"},
		{"NotAString", `{"intent":7}`, "purchase_order.create_draft v1: map.intent: must be a string"},
		{"BadName", `{"intent":"Заказ.Поставщику"}`, `purchase_order.create_draft v1: map.intent: "Заказ.Поставщику" is not an intent name`},
		{"OneSegment", `{"intent":"purchase"}`, `map.intent: "purchase" is not an intent name`},
		{"TooLong", `{"intent":"purchase_order.` + strings.Repeat("x", 40) + `"}`, "map.intent: is longer than 50 characters"},
	} {
		t.Run("Err"+tc.name, func(t *testing.T) {
			err := c.Bind([]adapters.Binding{purchaseBinding(tc.mapping)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("bind %s: err = %v, want %q", tc.mapping, err, tc.want)
			}
			var be *onec.BindError
			if !errors.As(err, &be) || be.Intent != purchaseDraft || be.Version != 1 {
				t.Fatalf("err = %#v, want a *onec.BindError naming the intent", err)
			}
		})
	}
	t.Run("ErrTwice", func(t *testing.T) {
		err := c.Bind([]adapters.Binding{purchaseBinding(""), purchaseBinding("")})
		if err == nil || !strings.Contains(err.Error(), "purchase_order.create_draft v1: version: bound twice") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ErrEveryOne", func(t *testing.T) {
		b := purchaseBinding(`{"entity":"x"}`)
		b.Version = 2
		err := c.Bind([]adapters.Binding{purchaseBinding(`{"intent":"x"}`), b})
		if err == nil || !strings.Contains(err.Error(), "v1: map.intent") || !strings.Contains(err.Error(), "v2: map.entity") {
			t.Fatalf("err = %v, want both bindings named", err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		for _, m := range []string{"", "null", "{}", `{"intent":"purchase_order.create_draft"}`, `{"intent":"purchasing.order_draft"}`} {
			if err := c.Bind([]adapters.Binding{purchaseBinding(m)}); err != nil {
				t.Fatalf("bind %q: %v", m, err)
			}
		}
	})
}

func TestProbeDeclared(t *testing.T) {
	t.Parallel()
	builtIns := []adapters.Binding{{Intent: "invoice.create", Version: 1}, {Intent: "sales_order.create_draft", Version: 1},
		{Intent: "sales_order.get_status", Version: 1}, {Intent: "sales_order.post", Version: 1}}

	t.Run("OK", func(t *testing.T) {
		t.Parallel()
		s, c, _ := setup(t, time.Second)
		if err := c.Bind(append(builtIns, purchaseBinding(""))); err != nil {
			t.Fatal(err)
		}
		if err := s.PublishOneC(purchaseDraft); err != nil {
			t.Fatal(err)
		}
		what, err := c.Probe(context.Background())
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		for _, name := range []string{purchaseDraft, "invoice.create", "sales_order.get_status"} {
			if !strings.Contains(what, name) {
				t.Fatalf("probe = %q, want %s named as published", what, name)
			}
		}
		if got := s.OneCDocuments(""); len(got) != 0 {
			t.Fatalf("the probe made documents: %+v", got)
		}
	})

	t.Run("ErrNotPublished", func(t *testing.T) {
		t.Parallel()
		_, c, _ := setup(t, time.Second)
		other := purchaseBinding(`{"intent":"purchasing.invoice_register"}`)
		other.Intent = "purchase_invoice.register"
		if err := c.Bind(append(builtIns, purchaseBinding(""), other)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Probe(context.Background())
		e := adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, "")
		if !strings.Contains(e.Message, "does not publish purchase_order.create_draft, purchasing.invoice_register;") ||
			!strings.Contains(e.Message, "it publishes invoice.create, sales_order.create_draft, sales_order.get_status, sales_order.post") {
			t.Fatalf("message = %q, want the unpublished and the published named", e.Message)
		}
	})
}
