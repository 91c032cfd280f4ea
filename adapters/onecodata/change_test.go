package onecodata_test

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
	"github.com/oncegate/oncegate/adapters/onecodata"
	"github.com/oncegate/oncegate/adapters/sim"
)

const changeSchema = `{"type":"object","additionalProperties":false,"required":["invoice_id"],
 "properties":{"invoice_id":{"type":"string"},"comment":{"type":"string"}}}`

// changeBindings are the fixture's bindings and the three changes of an
// invoice: its deletion mark, its unposting, its comment set.
func changeBindings() []adapters.Binding {
	doc := func(intent, m string) adapters.Binding {
		return adapters.Binding{Intent: intent, Version: 1, Schema: json.RawMessage(changeSchema), Map: json.RawMessage(m)}
	}
	return append(bindings(),
		doc("invoice.mark_deleted", `{"entity":"`+invoiceSet+`","action":"mark_for_deletion","document":"invoice_id"}`),
		doc("invoice.unpost", `{"entity":"`+invoiceSet+`","action":"unpost","document":"invoice_id"}`),
		doc("invoice.comment", `{"entity":"`+invoiceSet+`","action":"update","document":"invoice_id","fields":{"Комментарий":{"from":"comment"}}}`),
	)
}

// setupChanges is the fixture bound to the changes too.
func setupChanges(t *testing.T) *fixture {
	t.Helper()
	f := setup(t, 2*time.Second, nil)
	if err := f.c.Bind(changeBindings()); err != nil {
		t.Fatal(err)
	}
	return f
}

// invoice creates an invoice and, when posted, posts it; it returns its Ref_Key.
func (f *fixture) invoice(t *testing.T, key string, posted bool) string {
	t.Helper()
	ctx := context.Background()
	res, err := f.c.Execute(ctx, invoiceOp(key))
	if err != nil {
		t.Fatal(err)
	}
	if posted {
		if _, err := f.c.Execute(ctx, postOp(key+":post", res.ObjectID)); err != nil {
			t.Fatal(err)
		}
	}
	return res.ObjectID
}

func changeOp(intent, key, ref string) adapters.Op {
	return adapters.Op{Key: key, Intent: intent, Version: 1, Attempt: 1,
		Payload: json.RawMessage(`{"invoice_id":"` + ref + `","comment":"возврат по заказу 77"}`)}
}

// Each change applies once: its result names the object and the state it
// left, 1C counts one change, and the same change again is answered from
// the object read back, with nothing written.
func TestChange_AppliedOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		intent, state string
		posted        bool
	}{
		{"invoice.mark_deleted", "marked_for_deletion", false},
		{"invoice.unpost", "draft", true},
		{"invoice.comment", "posted", true},
	} {
		t.Run(tc.intent, func(t *testing.T) {
			t.Parallel()
			f := setupChanges(t)
			ctx := context.Background()
			ref := f.invoice(t, "inv-"+tc.intent, tc.posted)
			op := changeOp(tc.intent, "chg-"+tc.intent, ref)
			if _, err := f.c.Lookup(ctx, op); !errors.Is(err, adapters.ErrNotFound) {
				t.Fatalf("look-up before the change: %v, want not found", err)
			}
			plan, err := f.c.Validate(ctx, op)
			if err != nil || plan.Data["ref_key"] != ref || plan.Data["action"] == nil {
				t.Fatalf("plan %v %v", plan.Data, err)
			}
			for i := range 2 {
				writes := f.posts.Load()
				res, err := f.c.Execute(ctx, op)
				if err != nil {
					t.Fatalf("execute %d: %v", i+1, err)
				}
				if res.ObjectID != ref || res.Data["state"] != tc.state || res.Data["number"] == "" {
					t.Fatalf("execute %d: %+v, want %s in state %s", i+1, res, ref, tc.state)
				}
				if i == 1 && f.posts.Load() != writes {
					t.Fatal("the change in place was written again")
				}
			}
			if got := f.sim.Effects(sim.OneCODataChanges, ref); got != 1 {
				t.Fatalf("changes = %d, want 1", got)
			}
			if got, err := f.c.Lookup(ctx, op); err != nil || got.ObjectID != ref || got.Data["state"] != tc.state {
				t.Fatalf("look-up: %+v %v", got, err)
			}
			if got, err := f.c.CheckObject(ctx, op, strings.ToUpper(ref)); err != nil || got.ObjectID != ref {
				t.Fatalf("check of the object: %+v %v", got, err)
			}
		})
	}
}

// An answer lost after 1C applied the change leaves it unknown; the
// look-up reads the object back and finds the change, and a retry writes
// nothing more.
func TestChange_LostAnswerReconciledByReadBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		intent string
		posted bool
	}{{"invoice.mark_deleted", false}, {"invoice.unpost", true}, {"invoice.comment", false}} {
		t.Run(tc.intent, func(t *testing.T) {
			t.Parallel()
			f := setupChanges(t)
			ctx := context.Background()
			ref := f.invoice(t, "inv-lost-"+tc.intent, tc.posted)
			op := changeOp(tc.intent, "chg-lost-"+tc.intent, ref)
			f.sim.Inject(sim.Fault{Target: sim.OneCOData, Fault: sim.FaultDropResponse})
			_, err := f.c.Execute(ctx, op)
			adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "")
			res, err := f.c.Lookup(ctx, op)
			if err != nil || res.ObjectID != ref {
				t.Fatalf("look-up after the lost answer: %+v %v", res, err)
			}
			writes := f.posts.Load()
			if _, err := f.c.Execute(ctx, op); err != nil {
				t.Fatal(err)
			}
			if f.posts.Load() != writes {
				t.Fatal("the retry wrote again")
			}
			if got := f.sim.Effects(sim.OneCODataChanges, ref); got != 1 {
				t.Fatalf("changes = %d, want 1", got)
			}
		})
	}
}

// 1C's refusals come back in its words, each with its code: a posted
// document is not marked for deletion (INVALID_STATE: unpost it first), a
// Ref_Key 1C does not hold is REFERENCE_NOT_FOUND on the payload's field,
// and a document of a closed period is not changed (CHANGE_REFUSED).
func TestChange_Refusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setupChanges(t)

	posted := f.invoice(t, "inv-posted", true)
	_, err := f.c.Execute(ctx, changeOp("invoice.mark_deleted", "chg-posted", posted))
	e := adapterstest.WantError(t, err, adapters.Final, codes.InvalidState, "invoice_id")
	if !strings.Contains(e.Message, "Проведенный документ не может быть помечен на удаление") {
		t.Fatalf("message %q is not 1C's", e.Message)
	}

	missing := onecodata.RefKey("buh", "invoice.create", "never-made")
	for _, intent := range []string{"invoice.mark_deleted", "invoice.unpost", "invoice.comment"} {
		op := changeOp(intent, "chg-missing-"+intent, missing)
		_, err := f.c.Execute(ctx, op)
		e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "invoice_id")
		if !strings.Contains(e.Message, "не найден по переданному ключу") {
			t.Fatalf("%s: message %q", intent, e.Message)
		}
		if _, err := f.c.Validate(ctx, op); adapters.ClassOf(err) != adapters.Final {
			t.Fatalf("%s: validate of a missing object: %v", intent, err)
		}
	}

	draft := f.invoice(t, "inv-closed", false)
	f.sim.SetODataSettings(sim.ODataSettings{ClosedUntil: "2999-12-31"})
	for _, tc := range []struct{ intent, ref string }{{"invoice.comment", draft}, {"invoice.mark_deleted", draft}, {"invoice.unpost", posted}} {
		_, err := f.c.Execute(ctx, changeOp(tc.intent, "chg-closed-"+tc.intent, tc.ref))
		e := adapterstest.WantError(t, err, adapters.Final, codes.ChangeRefused, "invoice_id")
		if !strings.Contains(e.Message, "дата запрета изменения: 31.12.2999") {
			t.Fatalf("%s: message %q is not 1C's", tc.intent, e.Message)
		}
	}
	for _, ref := range []string{posted, draft, missing} {
		if got := f.sim.Effects(sim.OneCODataChanges, ref); got != 0 {
			t.Fatalf("%s: %d changes after refusals", ref, got)
		}
	}
}

// A change's map is checked when the target is given its intents: the
// action, the payload field holding the Ref_Key, and fields only where
// the action sets them.
func TestChange_BindRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ m, path string }{
		{`{"entity":"` + invoiceSet + `","action":"delete","document":"invoice_id"}`, "map.action"},
		{`{"entity":"` + invoiceSet + `","document":"invoice_id"}`, "map.action"},
		{`{"entity":"` + invoiceSet + `","action":"mark_for_deletion"}`, "map.document"},
		{`{"entity":"` + invoiceSet + `","action":"mark_for_deletion","document":"order_id"}`, "map.document"},
		{`{"entity":"` + invoiceSet + `","action":"mark_for_deletion","document":"invoice_id","fields":{"Комментарий":{"from":"comment"}}}`, "map.fields"},
		{`{"entity":"` + invoiceSet + `","action":"unpost","document":"invoice_id","fields":{}}`, "map.fields"},
		{`{"entity":"` + invoiceSet + `","action":"update","document":"invoice_id"}`, "map.fields"},
		{`{"entity":"` + invoiceSet + `","action":"update","document":"invoice_id","fields":{"DeletionMark":{"value":true}}}`, "map.fields.DeletionMark"},
		{`{"entity":"Catalog_Контрагенты","action":"unpost","document":"invoice_id"}`, "map.entity"},
		{`{"entity":"` + invoiceSet + `","action":"update","document":"invoice_id","fields":{"Комментарий":{"from":"note"}}}`, "map.fields.Комментарий.from"},
	} {
		c, err := onecodata.New(onecodata.Config{Instance: "buh", BaseURL: "http://127.0.0.1:1/onec-odata/odata/standard.odata", Username: "buh"})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Bind([]adapters.Binding{{Intent: "invoice.change", Version: 1, Schema: json.RawMessage(changeSchema), Map: json.RawMessage(tc.m)}})
		if err == nil || !strings.Contains(err.Error(), "intent invoice.change v1: "+tc.path+":") {
			t.Errorf("%s: %v, want a refusal at %s", tc.m, err, tc.path)
		}
	}
}

// check reads $metadata for a change as for a create: the entity set and
// every property an update maps must be published.
func TestChange_Probe(t *testing.T) {
	t.Parallel()
	f := setupChanges(t)
	ctx := context.Background()
	what, err := f.c.Probe(ctx)
	if err != nil || !strings.Contains(what, "invoice.mark_deleted v1: "+invoiceSet+" and every mapped property are published") ||
		!strings.Contains(what, "invoice.comment v1: "+invoiceSet+" and every mapped property are published") {
		t.Fatalf("probe: %q %v", what, err)
	}
	if err := f.c.Bind(append(changeBindings(), adapters.Binding{Intent: "invoice.note", Version: 1, Schema: json.RawMessage(changeSchema),
		Map: json.RawMessage(`{"entity":"` + invoiceSet + `","action":"update","document":"invoice_id","fields":{"Примечание":{"from":"comment"}}}`)})); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Probe(ctx); err == nil || !strings.Contains(err.Error(), "invoice.note v1: not published: "+invoiceSet+".Примечание") {
		t.Fatalf("probe of an unpublished property: %v", err)
	}
	_, err = f.c.Execute(ctx, changeOp("invoice.note", "chg-note", f.invoice(t, "inv-note", false)))
	adapterstest.WantError(t, err, adapters.Retry, codes.TargetNotPublished, "")
}
