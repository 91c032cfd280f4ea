package bitrix24_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/adapterstest"
	"github.com/oncegate/oncegate/adapters/bitrix24"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/sim"
)

const lostSchema = `{"type":"object","additionalProperties":false,"required":["deal_id"],
 "properties":{"deal_id":{"type":"string","maxLength":20},"activity_id":{"type":"integer"},"reason":{"type":"string","maxLength":200}}}`

// dealLost is a compensation: the deal an earlier operation made set to
// lost, with the reason in its comments.
const dealLost = `{"method":"crm.deal.update","id":{"from":"deal_id"},
 "fields":{"STAGE_ID":{"value":"LOSE"},"COMMENTS":{"from":"reason"},"OPPORTUNITY":{"value":"0"}}}`

func updateBinding(intent, m string) adapters.Binding {
	return adapters.Binding{Intent: intent, Version: 1, Schema: json.RawMessage(lostSchema), Map: json.RawMessage(m)}
}

func lostOp(dealID string) adapters.Op {
	return adapters.Op{Key: fmt.Sprintf("test:deal:lost:%d:v1", keySeq.Add(1)), Intent: "deal.lost", Version: 1, Attempt: 1,
		Payload: json.RawMessage(`{"deal_id":"` + dealID + `","reason":"заказ отменён"}`)}
}

// setupUpdate is the simulated portal with one deal made, and a client
// bound to its add and to deal.lost.
func setupUpdate(t *testing.T) (*sim.Server, *bitrix24.Client, string, string) {
	t.Helper()
	s, c, base := setup(t)
	mustBind(t, c, builtinBinding, dealBinding(dealMap), updateBinding("deal.lost", dealLost))
	made, err := c.Execute(context.Background(), dealOp(t, defaultDeal()))
	if err != nil {
		t.Fatal(err)
	}
	return s, c, base, made.ObjectID
}

// An update applies once: the portal holds the fields, counts one
// change, and the same update again changes nothing more; the look-up
// reads the deal back and finds it done.
func TestUpdate_AppliedOnce(t *testing.T) {
	t.Parallel()
	s, c, base, id := setupUpdate(t)
	ctx := context.Background()
	op := lostOp(id)
	if _, err := c.Lookup(ctx, op); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("look-up before the update: %v, want not found", err)
	}
	if plan, err := c.Validate(ctx, op); err != nil || plan.Data["id"] != id || plan.Data["method"] != "crm.deal.update" {
		t.Fatalf("plan %v %v", plan.Data, err)
	}
	for i := range 2 {
		res, err := c.Execute(ctx, op)
		if err != nil || res.ObjectID != id || res.Data["deal_id"] != id {
			t.Fatalf("execute %d: %+v %v", i+1, res, err)
		}
	}
	deal := simCall(t, base, "crm.deal.get", map[string]any{"id": id})["result"].(map[string]any)
	if deal["STAGE_ID"] != "LOSE" || deal["COMMENTS"] != "заказ отменён" || deal["OPPORTUNITY"] != "0.00" {
		t.Fatalf("deal %v", deal)
	}
	if got := s.Effects(sim.Bitrix24Changes, id); got != 1 {
		t.Fatalf("changes = %d, want 1", got)
	}
	if res, err := c.Lookup(ctx, op); err != nil || res.ObjectID != id {
		t.Fatalf("look-up: %+v %v", res, err)
	}
	if res, err := c.CheckObject(ctx, op, id); err != nil || res.ObjectID != id {
		t.Fatalf("check: %+v %v", res, err)
	}
}

// An answer lost after the portal applied the update is settled by
// crm.deal.get: the deal holds every field set, so it is done, and nothing
// more is changed.
func TestUpdate_LostAnswerReconciledByGet(t *testing.T) {
	t.Parallel()
	s, c, _, id := setupUpdate(t)
	ctx := context.Background()
	op := lostOp(id)
	inject(t, s, sim.Fault{Fault: sim.FaultDropResponse})
	_, err := c.Execute(ctx, op)
	adapterstest.WantError(t, err, adapters.Reconcile, codes.OutcomeUnknown, "", secret)
	res, err := c.Lookup(ctx, op)
	if err != nil || res.ObjectID != id {
		t.Fatalf("look-up after the lost answer: %+v %v", res, err)
	}
	if got := s.Effects(sim.Bitrix24Changes, id); got != 1 {
		t.Fatalf("changes = %d, want 1", got)
	}
}

// An ID the portal has no record with is refused in the portal's words
// ("Not found") as REFERENCE_NOT_FOUND on the payload's field, at
// validate and at execute, and changes nothing.
func TestUpdate_UnknownID(t *testing.T) {
	t.Parallel()
	s, c, _, _ := setupUpdate(t)
	ctx := context.Background()
	op := lostOp("999999")
	_, err := c.Execute(ctx, op)
	e := adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "deal_id", secret)
	if !strings.Contains(e.Message, `"Not found"`) {
		t.Fatalf("message %q", e.Message)
	}
	_, err = c.Validate(ctx, op)
	adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "deal_id", secret)
	if _, err := c.Lookup(ctx, op); !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("look-up of an update of no record: %v", err)
	}
	if got := s.Effects(sim.Bitrix24Changes, "999999"); got != 0 {
		t.Fatalf("changes = %d", got)
	}
}

// An activity is updated by crm.activity.update: a callback marked done.
func TestUpdate_Activity(t *testing.T) {
	t.Parallel()
	s, c, _ := setup(t)
	mustBind(t, c, builtinBinding, updateBinding("call.done",
		`{"method":"crm.activity.update","id":{"from":"activity_id"},"fields":{"COMPLETED":{"value":true}}}`))
	ctx := context.Background()
	made, err := c.Execute(ctx, newOp(t, "customer-1042"))
	if err != nil {
		t.Fatal(err)
	}
	op := adapters.Op{Key: "test:call:done:1:v1", Intent: "call.done", Version: 1, Attempt: 1,
		Payload: json.RawMessage(`{"deal_id":"0","activity_id":` + made.ObjectID + `}`)}
	if res, err := c.Execute(ctx, op); err != nil || res.ObjectID != made.ObjectID || res.Data["activity_id"] != made.ObjectID {
		t.Fatalf("execute: %+v %v", res, err)
	}
	if res, err := c.Lookup(ctx, op); err != nil || res.ObjectID != made.ObjectID {
		t.Fatalf("look-up: %+v %v", res, err)
	}
	if got := s.Effects(sim.Bitrix24Changes, made.ObjectID); got != 1 {
		t.Fatalf("changes = %d, want 1", got)
	}
	missing := adapters.Op{Key: "test:call:done:2:v1", Intent: "call.done", Version: 1, Payload: json.RawMessage(`{"deal_id":"0","activity_id":4242}`)}
	_, err = c.Execute(ctx, missing)
	adapterstest.WantError(t, err, adapters.Final, codes.ReferenceNotFound, "activity_id", secret)
}

// An update's map is checked when the target is given its intents.
func TestUpdate_BindRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ m, path string }{
		{`{"method":"crm.deal.update","fields":{"STAGE_ID":{"value":"LOSE"}}}`, "map.id"},
		{`{"method":"crm.deal.update","id":{"from":"nope"},"fields":{"STAGE_ID":{"value":"LOSE"}}}`, "map.id.from"},
		{`{"method":"crm.deal.update","id":{"from":"reason","value":1},"fields":{"STAGE_ID":{"value":"LOSE"}}}`, "map.id"},
		{`{"method":"crm.deal.update","id":{"from":"deal_id"}}`, "map.fields"},
		{`{"method":"crm.deal.add","id":{"from":"deal_id"},"fields":{"TITLE":{"value":"x"}}}`, "map.id"},
		{`{"method":"crm.deal.delete","id":{"from":"deal_id"},"fields":{}}`, "map.method"},
		{`{"method":"crm.lead.update","id":{"from":"deal_id"},"fields":{"PHONE":{"value":"+7900"}}}`, "map.fields.PHONE"},
		{`{"method":"crm.deal.update","id":{"from":"deal_id"},"fields":{"ORIGIN_ID":{"value":"x"}}}`, "map.fields.ORIGIN_ID"},
		{`{"method":"crm.activity.update","id":{"from":"activity_id"},"fields":{"OWNER_ID":{"value":1}}}`, "map.fields.OWNER_ID"},
		{`{"method":"crm.deal.update","id":{"from":"deal_id"},"fields":{"NO_SUCH":{"value":1}}}`, "map.fields.NO_SUCH"},
	} {
		_, c, _ := setup(t)
		err := c.Bind([]adapters.Binding{updateBinding("deal.lost", tc.m)})
		if err == nil || !strings.Contains(err.Error(), "deal.lost v1: "+tc.path+":") {
			t.Errorf("%s: %v, want a refusal at %s", tc.m, err, tc.path)
		}
	}
}
