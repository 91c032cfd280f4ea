package bitrix24

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/mapping"
)

var _ adapters.ObjectChecker = (*Client)(nil)

// ownerNouns name the CRM object types an activity may be bound to.
var ownerNouns = map[string]string{"1": "lead", "2": "deal", "3": "contact", "4": "company"}

// CheckObject implements adapters.ObjectChecker: it reads the record a
// person typed the id of with its entity's get method (crm.activity.get
// for crm.callback.create, crm.deal.get for a declared deal, …), through
// the same paced client as every other call, and answers what Lookup
// would for it.
//
// A record carrying the gateway's origin (ORIGINATOR_ID) with another
// operation's key in ORIGIN_ID is refused: it is that operation's effect.
// A record without it was made by hand, and the person vouches for it.
// An activity must be bound to the contact or company op's payload
// refers to, and the callback's a call. Records have no state that would
// make them no effect: a completed call or a closed deal was still made.
func (c *Client) CheckObject(ctx context.Context, op adapters.Op, id string) (adapters.Result, error) {
	d, declared, err := c.declaredOf(op)
	if err != nil {
		return adapters.Result{}, err
	}
	if declared && d.idFrom != "" {
		return c.checkUpdated(ctx, d, op, id)
	}
	e := entities["crm.activity.add"]
	if declared {
		e = d.entity
	}
	n, ok := recordID(id)
	if !ok {
		return adapters.Result{}, invalid("", "this is not a CRM "+e.noun+" id: it must be the record's ID, a positive whole number", nil)
	}
	id = strconv.FormatInt(n, 10)
	rec, err := c.record(ctx, e, id)
	if err != nil {
		return adapters.Result{}, err
	}
	if string(rec["ORIGINATOR_ID"]) == Originator && rec["ORIGIN_ID"] != "" && string(rec["ORIGIN_ID"]) != op.Key {
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState, fmt.Sprintf("the %s was made by another operation (key %q), not by this one", e.noun, clip(string(rec["ORIGIN_ID"]), maxOriginIDLen)))
	}
	if !declared {
		p, err := decodePayload(op)
		if err != nil {
			return adapters.Result{}, err
		}
		if rec["TYPE_ID"] != text(strconv.Itoa(activityTypeCall)) {
			return adapters.Result{}, adapters.NotEffect(codes.InvalidState, "the activity is not a call; this operation makes a call to the customer")
		}
		if err := c.checkOwner(ctx, rec, "contact", "customer_id", p.CustomerID); err != nil {
			return adapters.Result{}, err
		}
		return result(id, string(rec["OWNER_ID"])), nil
	}
	if e.name == "activity" {
		var payload any
		json.Unmarshal(op.Payload, &payload)
		external, _ := mapping.At(payload, d.ownerBy)
		s, _ := external.(string)
		if err := c.checkOwner(ctx, rec, d.refEntity(d.ownerBy), d.ownerBy, s); err != nil {
			return adapters.Result{}, err
		}
	}
	return d.result(id), nil
}

// recordID reads a typed CRM record id: decimal digits only, positive.
func recordID(id string) (int64, bool) {
	if id == "" || len(id) > 19 {
		return 0, false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil && n > 0
}

// record reads the record id of entity e with its get method. "Not found"
// is adapters.ErrNotFound; any other failure is never Final, which would
// say the record cannot be the effect when the CRM only did not answer
// (a record out of the webhook user's sight is refused "Access denied.").
func (c *Client) record(ctx context.Context, e *entity, id string) (map[string]text, error) {
	method := "crm." + e.name + ".get"
	r, err := c.call(ctx, method, map[string]any{"id": id}, false)
	if errors.Is(err, errNoRecord) {
		return nil, adapters.ErrNotFound
	}
	if err != nil {
		return nil, adapters.LookupFailure(err)
	}
	// The record holds multiple fields (PHONE, COMMUNICATIONS: arrays)
	// beside the scalars; only the scalars read here are decoded.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.Result, &raw); err != nil || raw == nil {
		return nil, shapeError(method, fmt.Errorf("result is not a record: %v", err))
	}
	rec := map[string]text{}
	for _, f := range []string{"ID", "ORIGINATOR_ID", "ORIGIN_ID", "OWNER_ID", "OWNER_TYPE_ID", "TYPE_ID"} {
		if v, ok := raw[f]; ok {
			var t text
			if err := json.Unmarshal(v, &t); err != nil {
				return nil, shapeError(method, fmt.Errorf("field %s: %w", f, err))
			}
			rec[f] = t
		}
	}
	if string(rec["ID"]) != id {
		return nil, shapeError(method, fmt.Errorf("asked for record %s, got %q", id, rec["ID"]))
	}
	return rec, nil
}

// checkOwner refuses an activity that is not bound to the record the
// payload field refers to (a contact or company found by its external
// id): the agent would be told of a call to someone else. A reference the
// CRM no longer resolves cannot be compared, and the person vouches.
func (c *Client) checkOwner(ctx context.Context, rec map[string]text, entity, field, externalID string) error {
	if want := strconv.Itoa(refEntities[entity]); string(rec["OWNER_TYPE_ID"]) != want {
		noun := ownerNouns[string(rec["OWNER_TYPE_ID"])]
		if noun == "" {
			noun = "record of another kind"
		}
		return adapters.NotEffect(codes.InvalidState, "the activity is bound to a "+noun+", not to the "+entity+" "+field+" refers to")
	}
	if externalID == "" {
		return nil
	}
	found, _, err := c.findOrigin(ctx, entity, externalID)
	if err != nil {
		return adapters.LookupFailure(err)
	}
	for _, ct := range found {
		if ct.id == string(rec["OWNER_ID"]) {
			return nil
		}
	}
	if len(found) == 0 {
		return nil
	}
	return adapters.NotEffect(codes.InvalidState, fmt.Sprintf("the activity is bound to %s %s, not to the %s %s refers to (%s)", entity, rec["OWNER_ID"], entity, field, found[0].id))
}
