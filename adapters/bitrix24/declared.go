package bitrix24

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/mapping"
)

// declared is one declared intent version this target serves: the add of
// an entity, its fields mapped from the payload.
type declared struct {
	intent  string
	version int
	entity  *entity
	fields  *mapping.Fields
	refs    []declaredRef // the payload's references, resolved before any write
	ownerBy string        // activities: the payload field OWNER_ID refers by
	// idFrom, for an update (update.go), is the payload field holding the
	// ID of the record to change; "" for an add.
	idFrom string
}

// declaredRef is a payload field holding an external id, and where it is
// resolved.
type declaredRef struct {
	field  string // payload path
	kind   string // "customer"
	entity string // "contact" or "company"
}

type bindKey struct {
	intent  string
	version int
}

// Bind implements adapters.Binder. Each binding with a map names the add
// of an entity (method: crm.deal.add, crm.lead.add, crm.contact.add,
// crm.company.add or crm.activity.add; nothing else, never a computed
// name) and its fields; its references must be of the kinds the target
// resolves. A binding without a map is the built-in crm.callback.create.
// The operation key's fields, ORIGINATOR_ID and ORIGIN_ID, are the
// gateway's: a mapping that sets one is refused. Every refusal names the
// intent, the path inside its definition and what is wrong.
func (c *Client) Bind(bindings []adapters.Binding) error {
	out := map[bindKey]*declared{}
	var errs []error
	for _, b := range bindings {
		version := max(b.Version, 1)
		name := fmt.Sprintf("%s v%d", b.Intent, version)
		k := bindKey{b.Intent, version}
		if _, dup := out[k]; dup {
			errs = append(errs, fmt.Errorf("%s: bound twice", name))
			continue
		}
		if len(bytes.TrimSpace(b.Map)) == 0 || string(bytes.TrimSpace(b.Map)) == "null" {
			if b.Intent != Intent {
				errs = append(errs, fmt.Errorf("%s: map: the CRM target needs a map (method and fields) for an intent it does not know by name", name))
				continue
			}
			out[k] = nil // the built-in
			continue
		}
		d, err := c.parseBinding(b)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		d.version = version
		out[k] = d
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.mu.Lock()
	c.bound = out
	c.mu.Unlock()
	return nil
}

// parseBinding parses one definition's map.
func (c *Client) parseBinding(b adapters.Binding) (*declared, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b.Map, &m); err != nil || m == nil {
		return nil, &mapping.Error{Path: "map", Msg: "must be a mapping with method and fields"}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "method" && k != "fields" && k != "id" {
			return nil, &mapping.Error{Path: "map." + k, Msg: "unknown key (want method and fields, and id for an update)"}
		}
	}
	var method string
	if raw, ok := m["method"]; !ok {
		return nil, &mapping.Error{Path: "map.method", Msg: "is required: one of " + addMethods + " or " + updateMethods}
	} else if err := json.Unmarshal(raw, &method); err != nil {
		return nil, &mapping.Error{Path: "map.method", Msg: "must be one of " + addMethods + " or " + updateMethods}
	}
	e, ok := entities[method]
	update := updates[method]
	switch {
	case update != nil:
		e = update
	case !ok:
		return nil, &mapping.Error{Path: "map.method", Msg: fmt.Sprintf("%q is not a method this target calls (want one of %s, or an update: %s)", method, addMethods, updateMethods)}
	}
	if _, ok := m["fields"]; !ok {
		return nil, &mapping.Error{Path: "map.fields", Msg: "is required"}
	}
	d := &declared{intent: b.Intent, entity: e}
	if update != nil {
		from, err := parseUpdateID(m["id"], b.Schema)
		if err != nil {
			return nil, err
		}
		d.idFrom = from
	} else if _, ok := m["id"]; ok {
		return nil, &mapping.Error{Path: "map.id", Msg: "belongs to an update (" + updateMethods + "); an add makes a new record"}
	}

	// References: every declared kind must be one the target resolves.
	fields := make([]string, 0, len(b.References))
	for f := range b.References {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		kind := b.References[f]
		ent, ok := c.refs[kind]
		if !ok {
			return nil, &mapping.Error{Path: "references." + f, Msg: fmt.Sprintf("kind %q is not one this CRM target resolves (%s)", kind, c.refKinds())}
		}
		if strings.Contains(f, "[") {
			return nil, &mapping.Error{Path: "references." + f, Msg: "this target takes no tabular sections"}
		}
		d.refs = append(d.refs, declaredRef{field: f, kind: kind, entity: ent})
	}

	fm, err := mapping.Parse(m["fields"], "map.fields", b.Schema, mapping.Options{
		References:  b.References,
		MinorDigits: adapters.MinorDigits,
		Zone:        c.zone,
	})
	if err != nil {
		return nil, err
	}
	for _, name := range fm.Names() {
		p := "map.fields." + name
		switch {
		case keyFields[name]:
			return nil, &mapping.Error{Path: p, Msg: "carries the operation key, which the gateway writes; no mapping may set it"}
		case d.idFrom != "" && multiFields[name]:
			return nil, &mapping.Error{Path: p, Msg: "is a multiple field: an update adds a value to it rather than setting it, so it cannot be mapped in an update"}
		case d.idFrom != "" && e.name == "activity" && (name == "OWNER_ID" || name == "OWNER_TYPE_ID" || name == "COMMUNICATIONS"):
			return nil, &mapping.Error{Path: p, Msg: "binds the activity to its owner; an update does not move an activity"}
		case e.name == "activity" && (name == "OWNER_TYPE_ID" || name == "COMMUNICATIONS"):
			return nil, &mapping.Error{Path: p, Msg: "follows from the reference OWNER_ID names; no mapping may set it"}
		case !e.takes(name):
			return nil, &mapping.Error{Path: p, Msg: fmt.Sprintf("%s has no field %q a mapping may set", method, name)}
		}
	}
	// A field holding a contact's or a company's id takes a reference
	// resolved in that entity.
	for name, want := range map[string]string{"CONTACT_ID": "contact", "COMPANY_ID": "company"} {
		if f := fm.Field(name); f != nil && f.Ref != "" {
			if got := c.refs[f.RefKind]; got != want {
				return nil, &mapping.Error{Path: "map.fields." + name + ".ref", Msg: fmt.Sprintf("payload field %q is a %s, resolved as a CRM %s; %s takes a CRM %s", f.Ref, f.RefKind, got, name, want)}
			}
		}
	}
	d.fields = fm
	if e.name == "activity" && d.idFrom == "" {
		owner := fm.Field("OWNER_ID")
		if owner == nil || owner.Ref == "" {
			return nil, &mapping.Error{Path: "map.fields.OWNER_ID", Msg: "is required as {ref: …}: an activity is bound to a contact or company"}
		}
		d.ownerBy = owner.Ref
		for _, req := range []string{"TYPE_ID", "SUBJECT"} {
			if fm.Field(req) == nil {
				return nil, &mapping.Error{Path: "map.fields." + req, Msg: "is required by crm.activity.add"}
			}
		}
	}
	return d, nil
}

// refKinds lists the kinds the target resolves, for refusals.
func (c *Client) refKinds() string {
	kinds := make([]string, 0, len(c.refs))
	for k, e := range c.refs {
		kinds = append(kinds, k+" → "+e)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}

// declaredOf finds op's declared binding. It reports false for the
// built-in crm.callback.create (no map), and refuses an intent the target
// was not given.
func (c *Client) declaredOf(op adapters.Op) (*declared, bool, error) {
	c.mu.Lock()
	d, ok := c.bound[bindKey{op.Intent, max(op.Version, 1)}]
	c.mu.Unlock()
	switch {
	case ok && d != nil:
		return d, true, nil
	case op.Intent == Intent:
		return nil, false, nil
	}
	return nil, false, &adapters.Error{Class: adapters.Final, Code: codes.IntentNotAllowed,
		Message: "the CRM target does not serve this intent"}
}

// resolved is what a declared operation's references resolved to, by
// payload field.
type resolved map[string]contact

// prepare resolves op's references and maps its payload to the entity's
// fields, the key's fields and what follows from the references included.
func (c *Client) prepare(ctx context.Context, d *declared, op adapters.Op) (map[string]any, resolved, error) {
	var payload any
	dec := json.NewDecoder(bytes.NewReader(op.Payload))
	dec.UseNumber()
	if err := dec.Decode(&payload); err != nil {
		return nil, nil, invalid("", "the payload is not JSON", err)
	}
	// Every reference is resolved, so one answer names each the CRM
	// lacks; a CRM that cannot be asked stops at once.
	refs := resolved{}
	var refused adapters.Refusals
	for _, r := range d.refs {
		v, ok := mapping.At(payload, r.field)
		if !ok {
			continue // an optional reference left out
		}
		id, isString := v.(string)
		if !isString || id == "" {
			refused.Add(invalid(r.field, r.field+" must be a non-empty string", nil))
			continue
		}
		ct, err := c.resolveOrigin(ctx, r.entity, r.kind, r.field, id)
		if err != nil {
			if !refused.Add(err) {
				return nil, nil, err
			}
			continue
		}
		refs[r.field] = ct
	}
	if err := refused.Err(); err != nil {
		return nil, nil, err
	}
	fields, err := d.fields.Apply(ctx, op.Payload, func(_ context.Context, ref mapping.Ref) (any, error) {
		ct, ok := refs[ref.Path]
		if !ok {
			return nil, invalid(ref.Field, ref.Field+" was not resolved", nil)
		}
		return ct.id, nil
	})
	if err != nil {
		var ve *mapping.ValueError
		if errors.As(err, &ve) {
			return nil, nil, invalid(ve.Field, ve.Field+" "+ve.Msg, nil)
		}
		return nil, nil, err
	}
	for name, v := range fields {
		switch v := v.(type) {
		case bool: // Bitrix24's flags are "Y" and "N"
			fields[name] = map[bool]string{true: "Y", false: "N"}[v]
		}
		if multiFields[name] {
			fields[name] = []map[string]any{{"VALUE": fields[name], "VALUE_TYPE": "WORK"}}
		}
	}
	if d.entity.name == "activity" && d.idFrom == "" {
		owner, ok := refs[d.ownerBy]
		if !ok {
			return nil, nil, invalid(d.ownerBy, d.ownerBy+" is required: the activity is bound to it", nil)
		}
		ownerType := refEntities[d.refEntity(d.ownerBy)]
		fields["OWNER_TYPE_ID"] = ownerType
		fields["COMMUNICATIONS"] = []map[string]any{{"ENTITY_ID": owner.id, "ENTITY_TYPE_ID": ownerType, "VALUE": owner.phone}}
		if _, ok := fields["RESPONSIBLE_ID"]; !ok {
			fields["RESPONSIBLE_ID"] = c.responsible(owner)
		}
	}
	return fields, refs, nil
}

// refEntity is the entity the reference in the payload field is resolved in.
func (d *declared) refEntity(field string) string {
	for _, r := range d.refs {
		if r.field == field {
			return r.entity
		}
	}
	return ""
}

// validateDeclared resolves op's references and reports the fields the
// add (or the update) would send. It writes nothing.
func (c *Client) validateDeclared(ctx context.Context, d *declared, op adapters.Op) (adapters.Plan, error) {
	if d.idFrom != "" {
		return c.validateUpdate(ctx, d, op)
	}
	fields, _, err := c.prepare(ctx, d, op)
	if err != nil {
		return adapters.Plan{}, err
	}
	return adapters.Plan{Data: map[string]any{"method": d.entity.add, "fields": fields}}, nil
}

// executeDeclared adds the entity carrying op.Key in ORIGIN_ID, or
// updates the record the payload names (update.go).
func (c *Client) executeDeclared(ctx context.Context, d *declared, op adapters.Op) (adapters.Result, error) {
	if d.idFrom != "" {
		return c.executeUpdate(ctx, d, op)
	}
	fields, _, err := c.prepare(ctx, d, op)
	if err != nil {
		return adapters.Result{}, err
	}
	fields["ORIGINATOR_ID"] = Originator
	fields["ORIGIN_ID"] = op.Key
	r, err := c.call(ctx, d.entity.add, map[string]any{"fields": fields}, true)
	if err != nil {
		return adapters.Result{}, err
	}
	id, ok := positiveID(r.Result)
	if !ok {
		// A 200 without an id: whether the record exists is unknown.
		return adapters.Result{}, &adapters.Error{Class: adapters.Reconcile, Code: codes.OutcomeUnknown,
			Message: "the CRM answered without a " + d.entity.noun + " id", Err: errors.New(d.entity.add + ": result is not an id")}
	}
	return d.result(id), nil
}

// result is a declared operation's normalized outcome; Execute and Lookup
// give the same one: the record's id, e.g. {"deal_id": "17"}.
func (d *declared) result(id string) adapters.Result {
	return adapters.Result{ObjectID: id, Data: map[string]any{d.entity.name + "_id": id}}
}

var _ adapters.Binder = (*Client)(nil)
