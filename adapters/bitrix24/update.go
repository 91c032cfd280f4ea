package bitrix24

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/mapping"
)

// An update changes a record an earlier operation made (a deal's stage
// set to lost, an activity completed), as compensation needs:
// crm.<entity>.update with the record's ID from the payload and the
// mapped fields. It sets values, so it is idempotent by nature; an unknown
// outcome is settled by crm.<entity>.get and comparing every field it
// sets. The record carries the key of the operation that made it, not of
// the update: the update's own key only names the operation.

// method is the REST method the declared intent calls.
func (d *declared) method() string {
	if d.idFrom != "" {
		return d.entity.update
	}
	return d.entity.add
}

// parseUpdateID reads an update's id: {from: payload field}, the field a
// string or an integer of the payload.
func parseUpdateID(raw json.RawMessage, schema json.RawMessage) (string, error) {
	if raw == nil {
		return "", &mapping.Error{Path: "map.id", Msg: "is required by an update: {from: the payload field holding the record's ID}"}
	}
	var spec struct {
		From string `json:"from"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil || spec.From == "" {
		return "", &mapping.Error{Path: "map.id", Msg: "must be {from: the payload field holding the record's ID}"}
	}
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	p, ok := s.Properties[spec.From]
	if typ := fmt.Sprint(p.Type); !ok || typ != "string" && typ != "integer" {
		return "", &mapping.Error{Path: "map.id.from", Msg: fmt.Sprintf("the payload has no string or integer field %q to hold the record's ID", spec.From)}
	}
	return spec.From, nil
}

// updateID is the ID of the record op's update changes, from its payload.
func (d *declared) updateID(op adapters.Op) (string, error) {
	var p map[string]json.RawMessage
	json.Unmarshal(op.Payload, &p)
	var t text
	if raw, ok := p[d.idFrom]; !ok || json.Unmarshal(raw, &t) != nil {
		return "", invalid(d.idFrom, d.idFrom+" is required: the ID of the CRM "+d.entity.noun+" to change", nil)
	}
	n, ok := recordID(strings.TrimSpace(string(t)))
	if !ok {
		return "", invalid(d.idFrom, d.idFrom+" must be the ID of a CRM "+d.entity.noun+", a positive whole number", nil)
	}
	return strconv.FormatInt(n, 10), nil
}

// noSuchRecord is the refusal of an ID the portal has no record with.
func (d *declared) noSuchRecord(cause error) *adapters.Error {
	return &adapters.Error{Class: adapters.Final, Code: codes.ReferenceNotFound, Field: d.idFrom,
		Message: "the CRM has no " + d.entity.noun + " with this ID (the portal answered \"Not found\")", Err: cause}
}

// validateUpdate maps the fields and reads the record, writing nothing.
func (c *Client) validateUpdate(ctx context.Context, d *declared, op adapters.Op) (adapters.Plan, error) {
	id, err := d.updateID(op)
	if err != nil {
		return adapters.Plan{}, err
	}
	fields, _, err := c.prepare(ctx, d, op)
	if err != nil {
		return adapters.Plan{}, err
	}
	if _, err := c.fieldsOf(ctx, d, id); errors.Is(err, adapters.ErrNotFound) {
		return adapters.Plan{}, d.noSuchRecord(nil)
	} else if err != nil {
		return adapters.Plan{}, err
	}
	return adapters.Plan{Data: map[string]any{"method": d.method(), "id": id, "fields": fields}}, nil
}

// executeUpdate calls the update. An ID the portal has no record with
// is REFERENCE_NOT_FOUND on the payload's field; a lost answer is
// Reconcile, settled by lookupUpdate.
func (c *Client) executeUpdate(ctx context.Context, d *declared, op adapters.Op) (adapters.Result, error) {
	id, err := d.updateID(op)
	if err != nil {
		return adapters.Result{}, err
	}
	fields, _, err := c.prepare(ctx, d, op)
	if err != nil {
		return adapters.Result{}, err
	}
	r, err := c.call(ctx, d.method(), map[string]any{"id": id, "fields": fields}, true)
	switch {
	case errors.Is(err, errNoRecord):
		return adapters.Result{}, d.noSuchRecord(err)
	case err != nil:
		return adapters.Result{}, err
	}
	var done bool
	if json.Unmarshal(r.Result, &done) != nil || !done {
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "the CRM answered the update without saying it was made", Err: errors.New(d.method() + ": result is not true")}
	}
	return d.result(id), nil
}

// lookupUpdate reads the record back: it holds every value the update
// sets (done), or not (not applied; sent again, harmlessly). A record the
// portal does not have has no update either.
func (c *Client) lookupUpdate(ctx context.Context, d *declared, op adapters.Op) (adapters.Result, error) {
	id, err := d.updateID(op)
	if err != nil {
		return adapters.Result{}, err
	}
	fields, _, err := c.prepare(ctx, d, op)
	if err != nil {
		return adapters.Result{}, adapters.LookupFailure(err)
	}
	rec, err := c.fieldsOf(ctx, d, id)
	if err != nil {
		return adapters.Result{}, err
	}
	if f := unlike(fields, rec); f != "" {
		return adapters.Result{}, adapters.ErrNotFound
	}
	return d.result(id), nil
}

// checkUpdated checks the record a person says holds the update: the one
// the payload names, holding every value the update sets.
func (c *Client) checkUpdated(ctx context.Context, d *declared, op adapters.Op, id string) (adapters.Result, error) {
	want, err := d.updateID(op)
	if err != nil {
		return adapters.Result{}, err
	}
	if n, ok := recordID(id); !ok || strconv.FormatInt(n, 10) != want {
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState, "this operation changes the "+d.entity.noun+" its "+d.idFrom+" names ("+want+"), not this one")
	}
	fields, _, err := c.prepare(ctx, d, op)
	if err != nil {
		return adapters.Result{}, adapters.LookupFailure(err)
	}
	rec, err := c.fieldsOf(ctx, d, want)
	if err != nil {
		return adapters.Result{}, err
	}
	if f := unlike(fields, rec); f != "" {
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState, "the "+d.entity.noun+" does not hold what this operation sets ("+f+"): the update is not done")
	}
	return d.result(want), nil
}

// fieldsOf reads record id's scalar fields with the entity's get method;
// "Not found" is adapters.ErrNotFound, any other failure a look-up's.
func (c *Client) fieldsOf(ctx context.Context, d *declared, id string) (map[string]text, error) {
	r, err := c.call(ctx, d.entity.get, map[string]any{"id": id}, false)
	if errors.Is(err, errNoRecord) {
		return nil, adapters.ErrNotFound
	}
	if err != nil {
		return nil, adapters.LookupFailure(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(r.Result, &raw); err != nil || raw == nil {
		return nil, shapeError(d.entity.get, fmt.Errorf("result is not a record: %v", err))
	}
	rec := map[string]text{}
	for k, v := range raw {
		var t text
		if json.Unmarshal(v, &t) == nil { // multiple fields (arrays) are not compared
			rec[k] = t
		}
	}
	return rec, nil
}

// unlike names the first field (sorted) whose value the record does not
// hold as the update sets it, "" when it holds all: the same text, or the
// same number (OPPORTUNITY "1500" is "1500.00").
func unlike(fields map[string]any, rec map[string]text) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		got, ok := rec[k]
		sent := fmt.Sprint(fields[k])
		if fields[k] == nil {
			sent = ""
		}
		if !ok || !sameText(sent, string(got)) {
			return k
		}
	}
	return ""
}

// sameText compares a value sent with the portal's: equal text, or equal
// numbers.
func sameText(a, b string) bool {
	if a == b {
		return true
	}
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && fa == fb
}
