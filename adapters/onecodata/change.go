package onecodata

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/mapping"
)

// A change alters an object an earlier operation made, the way an
// accountant undoes one: marks it for deletion (never DELETE, which
// removes it physically), cancels its posting, or sets some of its
// properties. Each sets a state, so it is idempotent by nature: the
// object is read first and a change already in place is answered without
// a write, and an unknown outcome is settled by reading the object back
// and comparing what the change sets.

// The actions of a change (map.action).
const (
	actionMarkDeleted = "mark_for_deletion" // PATCH DeletionMark: true
	actionUnpost      = "unpost"            // POST …/Unpost
	actionUpdate      = "update"            // PATCH the mapped fields
)

// changeActions lists the actions, for refusals.
const changeActions = "mark_for_deletion, unpost or update"

// parseChange parses map: {entity, action, document[, fields]} into b.
func (c *Client) parseChange(bd adapters.Binding, spec mapSpec, b *binding) (*binding, error) {
	action, doc := "", ""
	if spec.Action != nil {
		action = *spec.Action
	}
	if spec.Document != nil {
		doc = *spec.Document
	}
	switch {
	case spec.Post != nil || spec.Read != nil:
		return nil, &mapping.Error{Path: "map.action", Msg: "a change takes no post or read beside it"}
	case spec.KeyField != nil:
		return nil, &mapping.Error{Path: "map.key_field", Msg: "belongs to a create; a change finds its object by the Ref_Key document names"}
	case action == "":
		return nil, &mapping.Error{Path: "map.action", Msg: "is required beside document: one of " + changeActions}
	case action != actionMarkDeleted && action != actionUnpost && action != actionUpdate:
		return nil, &mapping.Error{Path: "map.action", Msg: fmt.Sprintf("unknown action %q (want %s)", action, changeActions)}
	case action == actionUnpost && (!entitySetName.MatchString(spec.Entity) || !strings.HasPrefix(spec.Entity, "Document_")):
		return nil, &mapping.Error{Path: "map.entity", Msg: "must name a document's entity set (Document_…): only a document is posted"}
	case !entitySetName.MatchString(spec.Entity):
		return nil, &mapping.Error{Path: "map.entity", Msg: "must name a catalog's or a document's entity set (Catalog_… or Document_…)"}
	case doc == "":
		return nil, &mapping.Error{Path: "map.document", Msg: "is required: the payload field holding the Ref_Key of the object to change"}
	case !payloadField.MatchString(doc) || !schemaHas(bd.Schema, doc):
		return nil, &mapping.Error{Path: "map.document", Msg: fmt.Sprintf("the payload has no field %q to hold the object's Ref_Key", doc)}
	case action != actionUpdate && spec.Fields != nil:
		return nil, &mapping.Error{Path: "map.fields", Msg: action + " sets what its action says and takes no fields; an action: update sets fields"}
	case action == actionUpdate && spec.Fields == nil:
		return nil, &mapping.Error{Path: "map.fields", Msg: "is required by action: update"}
	}
	b.entity, b.docPath, b.change = spec.Entity, doc, action
	if action != actionUpdate {
		return b, nil
	}
	f, err := mapping.Parse(spec.Fields, "map.fields", bd.Schema, mapping.Options{
		References: bd.References, MinorDigits: adapters.MinorDigits, Zone: c.zone, Rows: true,
	})
	if err != nil {
		return nil, err
	}
	for _, name := range f.Names() {
		if slices.Contains(gatewayProps, name) {
			return nil, &mapping.Error{Path: "map.fields." + name, Msg: "is not set by an update (the Ref_Key stays, DeletionMark is action: mark_for_deletion, Posted is action: unpost)"}
		}
		if row := f.Field(name).Row; row != nil && slices.Contains(row.Names(), "LineNumber") {
			return nil, &mapping.Error{Path: "map.fields." + name + ".row.LineNumber", Msg: "is set by the gateway and cannot be mapped"}
		}
	}
	b.fields = f
	return b, nil
}

// changeBody is what a change sets: DeletionMark, Posted (the state
// Unpost leaves; not a body sent), or the mapped fields.
func (c *Client) changeBody(ctx context.Context, b *binding, et *entityType, op adapters.Op) (map[string]any, error) {
	switch b.change {
	case actionMarkDeleted:
		return map[string]any{"DeletionMark": true}, nil
	case actionUnpost:
		return map[string]any{"Posted": false}, nil
	}
	return c.mapped(ctx, b, et, op)
}

// changeTarget reads the object a change names: an object 1C does not
// hold is REFERENCE_NOT_FOUND on the payload's field, in 1C's words.
func (c *Client) changeTarget(ctx context.Context, b *binding, op adapters.Op) (string, map[string]any, error) {
	id, err := b.documentID(op)
	if err != nil {
		return "", nil, err
	}
	status, h, body, err := c.readCall(ctx, c.entityURL(b.entity, id, "", jsonQuery))
	if err != nil {
		return "", nil, adapters.ReadFailure(err)
	}
	if status != http.StatusOK {
		oe := parseError(status, body)
		e := c.classify(oe, h)
		if e.Code == codes.NotFound {
			return "", nil, changeNotFound(b, safeMessage(c, oe.Message))
		}
		return "", nil, adapters.ReadFailure(e)
	}
	doc, err := decodeEntity(body)
	if err != nil {
		return "", nil, c.badAnswer(err)
	}
	return id, doc, nil
}

// changeNotFound is the refusal of a Ref_Key 1C does not hold; msg is
// 1C's own text when it answered one.
func changeNotFound(b *binding, msg string) *adapters.Error {
	text := "1C holds no object with this Ref_Key in " + b.entity
	if msg != "" {
		text += ": " + msg
	}
	return &adapters.Error{Class: adapters.Final, Code: codes.ReferenceNotFound, Field: b.docPath, Message: text}
}

// validateChange reads the object and plans what the change sets.
func (c *Client) validateChange(ctx context.Context, b *binding, et *entityType, op adapters.Op) (adapters.Plan, error) {
	set, err := c.changeBody(ctx, b, et, op)
	if err != nil {
		return adapters.Plan{}, err
	}
	id, _, err := c.changeTarget(ctx, b, op)
	if err != nil {
		return adapters.Plan{}, err
	}
	return adapters.Plan{Data: map[string]any{"entity": b.entity, "ref_key": id, "action": b.change, "set": set}}, nil
}

// executeChange applies a change: the object is read, a change already
// in place is answered as done without a write, otherwise PATCH (a mark
// for deletion, an update) or POST …/Unpost is sent. 1C's refusal is
// passed on in its words: a posted document's deletion mark is
// INVALID_STATE (unpost it first), any other refusal of the
// configuration (a closed period) CHANGE_REFUSED; 1C failing internally,
// or an answer lost, is an unknown outcome, settled by lookupChange.
func (c *Client) executeChange(ctx context.Context, b *binding, et *entityType, op adapters.Op) (adapters.Result, error) {
	set, err := c.changeBody(ctx, b, et, op)
	if err != nil {
		return adapters.Result{}, err
	}
	id, doc, err := c.changeTarget(ctx, b, op)
	if err != nil {
		return adapters.Result{}, err
	}
	if keptAsSent(et, set, doc) == "" {
		return changeResult(id, doc), nil // a repeat: the object holds the change
	}
	status, h, answer, err := c.sendChange(ctx, b, id, set)
	if err != nil {
		return adapters.Result{}, err
	}
	if status >= 200 && status < 300 {
		after, err := decodeEntity(answer)
		if err != nil || b.change == actionUnpost {
			// Unpost answers no entity (and a PATCH need not): the
			// object read before, with what 1C accepted, is the result.
			after = maps.Clone(doc)
			maps.Copy(after, set)
		}
		return b.withChanges(changeResult(id, after), set, after), nil
	}
	oe := parseError(status, answer)
	switch {
	case oe.Status == http.StatusNotFound && oe.Code == odataNotFound:
		return adapters.Result{}, changeNotFound(b, safeMessage(c, oe.Message))
	case oe.Code == odataBusiness && !internalError(oe):
		msg := safeMessage(c, oe.Message)
		if msg == "" {
			msg = "1C refused to change the object"
		}
		code := codes.ChangeRefused
		if b.change == actionMarkDeleted && doc["Posted"] == true {
			code = codes.InvalidState // 1C marks no posted document: unpost it first
		}
		return adapters.Result{}, &adapters.Error{Class: adapters.Final, Code: code, ObjectID: id, Field: b.docPath,
			Message: msg, Err: fmt.Errorf("%d: code -1: %s", status, c.clean(oe.Message))}
	}
	return adapters.Result{}, c.classify(oe, h)
}

// sendChange sends the change's one write.
func (c *Client) sendChange(ctx context.Context, b *binding, id string, set map[string]any) (int, http.Header, []byte, error) {
	if b.change == actionUnpost {
		return c.call(ctx, http.MethodPost, c.entityURL(b.entity, id, "Unpost", nil), nil)
	}
	raw, err := json.Marshal(set)
	if err != nil {
		return 0, nil, nil, &adapters.Error{Class: adapters.Final, Code: codes.Validation, Message: "the mapped body could not be encoded", Err: err}
	}
	return c.call(ctx, http.MethodPatch, c.entityURL(b.entity, id, "", jsonQuery), raw)
}

// lookupChange settles a change whose outcome is unknown by one read of
// the object: it holds every value the change sets (done), or it does not
// (not applied: sent again, harmlessly, once the target's settle time has
// passed). An object 1C does not hold has no change either.
func (c *Client) lookupChange(ctx context.Context, b *binding, op adapters.Op) (adapters.Result, error) {
	et, err := c.published(ctx, b)
	if err != nil {
		return adapters.Result{}, adapters.LookupFailure(err)
	}
	set, err := c.changeBody(ctx, b, et, op)
	if err != nil {
		return adapters.Result{}, adapters.LookupFailure(err)
	}
	id, doc, found, err := c.document(ctx, b, op)
	switch {
	case err != nil:
		return adapters.Result{}, adapters.LookupFailure(err)
	case !found, keptAsSent(et, set, doc) != "":
		return adapters.Result{}, adapters.ErrNotFound
	}
	return changeResult(id, doc), nil
}

// checkChanged checks the object a person says holds the change: the one
// the payload names, holding every value the change sets.
func (c *Client) checkChanged(ctx context.Context, b *binding, op adapters.Op, id string) (adapters.Result, error) {
	var p map[string]any
	json.Unmarshal(op.Payload, &p)
	if named, _ := p[b.docPath].(string); !strings.EqualFold(named, id) {
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState, "this operation changes the object its "+b.docPath+" names, not this one")
	}
	et, err := c.published(ctx, b)
	if err != nil {
		return adapters.Result{}, adapters.LookupFailure(err)
	}
	set, err := c.changeBody(ctx, b, et, op)
	if err != nil {
		return adapters.Result{}, adapters.LookupFailure(err)
	}
	doc, found, err := c.get(ctx, b.entity, id)
	switch {
	case err != nil:
		return adapters.Result{}, adapters.LookupFailure(err)
	case !found:
		return adapters.Result{}, adapters.ErrNotFound
	}
	if diff := keptAsSent(et, set, doc); diff != "" {
		return adapters.Result{}, adapters.NotEffect(codes.InvalidState, "the object does not hold what this operation sets ("+diff+"): the change is not done")
	}
	return changeResult(id, doc), nil
}

// changeResult is a changed object as an operation's result: its id, number
// and state.
func changeResult(id string, doc map[string]any) adapters.Result {
	r := result(id, doc)
	r.Data["state"] = stateOf(doc)
	return r
}

// stateOf names a document's state: marked for deletion, posted, or a
// draft.
func stateOf(doc map[string]any) string {
	switch {
	case doc["DeletionMark"] == true:
		return "marked_for_deletion"
	case doc["Posted"] == true:
		return "posted"
	}
	return "draft"
}
