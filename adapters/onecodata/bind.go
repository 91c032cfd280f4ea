package onecodata

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/adapters/mapping"
)

// bindingKey finds an operation's binding.
type bindingKey struct {
	intent  string
	version int
}

// binding is one declared intent on this target: a create of an object
// in entity from the payload by fields, or the posting of the document
// whose Ref_Key is the payload's docField.
type binding struct {
	intent  string
	version int
	entity  string
	fields  *mapping.Fields // create
	post    bool            // post: {entity, document}
	read    bool            // read: {entity, document}
	docPath string          // the payload field holding the document's Ref_Key (post, read, change)
	// change is a change's action (actionMarkDeleted, actionUnpost,
	// actionUpdate; change.go), "" for a create, a posting or a read.
	change string
	// keyField is the document's string attribute that carries the
	// operation's key (its Ref_Key, derived from the key) and finds the
	// document by $filter where 1C does not keep client keys; "" when
	// the Ref_Key alone guards.
	keyField string
}

// mapSpec is a definition's map: for this kind (docs/intents.md, Mappings per kind).
type mapSpec struct {
	Entity string          `json:"entity"`
	Fields json.RawMessage `json:"fields"`
	// KeyField overrides the target's key_field for this create.
	KeyField *string  `json:"key_field"`
	Post     *docSpec `json:"post"`
	Read     *docSpec `json:"read"`
	// Action and Document make a change of an existing object (change.go).
	Action   *string `json:"action"`
	Document *string `json:"document"`
}

// docSpec names an existing document: its entity set and the payload
// field holding its Ref_Key.
type docSpec struct {
	Entity   string `json:"entity"`
	Document string `json:"document"`
}

var (
	attrName      = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`)
	entitySetName = regexp.MustCompile(`^(Catalog|Document)_[\p{L}\p{N}_]+$`)
	payloadField  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// gatewayProps are properties the gateway sets itself or 1C keeps: no
// mapping may name them.
var gatewayProps = []string{"Ref_Key", "DataVersion", "Posted", "DeletionMark"}

// Bind implements adapters.Binder: it parses each binding's map against
// its payload schema, refusing, with the path inside the definition, an
// entity set that is no catalog or document, a property the gateway owns
// (Ref_Key carries the operation key and no mapping can turn that off),
// and whatever adapters/mapping refuses. It reads nothing from 1C; check
// and the first operation read $metadata.
func (c *Client) Bind(bindings []adapters.Binding) error {
	out := map[bindingKey]*binding{}
	for _, bd := range bindings {
		b, err := c.parseBinding(bd)
		if err != nil {
			return fmt.Errorf("intent %s v%d: %w", bd.Intent, max(bd.Version, 1), err)
		}
		out[bindingKey{b.intent, b.version}] = b
	}
	c.bindings = out
	return nil
}

func (c *Client) parseBinding(bd adapters.Binding) (*binding, error) {
	b := &binding{intent: bd.Intent, version: max(bd.Version, 1)}
	if len(bd.Map) == 0 {
		return nil, &mapping.Error{Path: "map", Msg: "a target of kind onec_odata needs map: {entity, fields}, {post: {entity, document}} or {read: {entity, document}}"}
	}
	var spec mapSpec
	dec := json.NewDecoder(bytes.NewReader(bd.Map))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return nil, &mapping.Error{Path: "map", Msg: "unknown key or wrong type (want entity and fields, entity, action and document, post: {entity, document} or read: {entity, document}): " + err.Error()}
	}
	if spec.Action != nil || spec.Document != nil {
		return c.parseChange(bd, spec, b)
	}
	for _, d := range []struct {
		key  string
		spec *docSpec
	}{{"post", spec.Post}, {"read", spec.Read}} {
		if d.spec == nil {
			continue
		}
		if spec.Entity != "" || spec.Fields != nil || spec.KeyField != nil || spec.Post != nil && spec.Read != nil {
			return nil, &mapping.Error{Path: "map." + d.key, Msg: "takes nothing beside it (entity and fields make a create, post a posting, read a read)"}
		}
		if !entitySetName.MatchString(d.spec.Entity) || !strings.HasPrefix(d.spec.Entity, "Document_") {
			return nil, &mapping.Error{Path: "map." + d.key + ".entity", Msg: "must name a document's entity set (Document_…)"}
		}
		if !payloadField.MatchString(d.spec.Document) || !schemaHas(bd.Schema, d.spec.Document) {
			return nil, &mapping.Error{Path: "map." + d.key + ".document", Msg: fmt.Sprintf("the payload has no field %q to hold the document's Ref_Key", d.spec.Document)}
		}
		b.entity, b.docPath = d.spec.Entity, d.spec.Document
		b.post, b.read = d.key == "post", d.key == "read"
		return b, nil
	}
	if !entitySetName.MatchString(spec.Entity) {
		return nil, &mapping.Error{Path: "map.entity", Msg: "must name a catalog's or a document's entity set (Catalog_… or Document_…)"}
	}
	if spec.Fields == nil {
		return nil, &mapping.Error{Path: "map.fields", Msg: "is required"}
	}
	f, err := mapping.Parse(spec.Fields, "map.fields", bd.Schema, mapping.Options{
		References: bd.References, MinorDigits: adapters.MinorDigits, Zone: c.zone, Rows: true,
	})
	if err != nil {
		return nil, err
	}
	for _, name := range f.Names() {
		if slices.Contains(gatewayProps, name) {
			return nil, &mapping.Error{Path: "map.fields." + name, Msg: "is set by the gateway (Ref_Key carries the operation key) and cannot be mapped"}
		}
		if row := f.Field(name).Row; row != nil {
			for _, rn := range row.Names() {
				if rn == "LineNumber" || rn == "Ref_Key" {
					return nil, &mapping.Error{Path: "map.fields." + name + ".row." + rn, Msg: "is set by the gateway and cannot be mapped"}
				}
			}
		}
	}
	b.keyField = c.keyField
	if spec.KeyField != nil {
		b.keyField = strings.TrimSpace(*spec.KeyField)
	}
	if b.keyField != "" {
		switch {
		case !attrName.MatchString(b.keyField) || slices.Contains(gatewayProps, b.keyField) || strings.HasSuffix(b.keyField, "_Key"):
			return nil, &mapping.Error{Path: "map.key_field", Msg: fmt.Sprintf("%q must name a string attribute of the document (e.g. an additional requisite the firm added for it)", b.keyField)}
		case f.Field(b.keyField) != nil:
			return nil, &mapping.Error{Path: "map.fields." + b.keyField, Msg: "is the key_field: the gateway writes the operation's key there, so it cannot be mapped"}
		}
	}
	b.entity, b.fields = spec.Entity, f
	return b, nil
}

// schemaHas reports whether the payload schema declares a top-level field.
func schemaHas(schema json.RawMessage, field string) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	return json.Unmarshal(schema, &s) == nil && s.Properties[field] != nil
}

// props are the header properties a create binding maps.
func (b *binding) props() []string {
	if b.fields == nil {
		return nil
	}
	var out []string
	for _, n := range b.fields.Names() {
		if b.fields.Field(n).Row == nil {
			out = append(out, n)
		}
	}
	return out
}

// rowProps are the tabular sections a create binding maps, with their
// row properties (LineNumber always).
func (b *binding) rowProps() map[string][]string {
	out := map[string][]string{}
	if b.fields == nil {
		return out
	}
	for _, n := range b.fields.Names() {
		if row := b.fields.Field(n).Row; row != nil {
			out[n] = append([]string{"LineNumber"}, row.Names()...)
		}
	}
	return out
}

func (c *Client) sortedBindings() []*binding {
	keys := slices.SortedFunc(maps.Keys(c.bindings), func(a, b bindingKey) int {
		if a.intent != b.intent {
			return strings.Compare(a.intent, b.intent)
		}
		return a.version - b.version
	})
	out := make([]*binding, 0, len(keys))
	for _, k := range keys {
		out = append(out, c.bindings[k])
	}
	return out
}

// bindingOf finds op's binding.
func (c *Client) bindingOf(op adapters.Op) (*binding, error) {
	if b, ok := c.bindings[bindingKey{op.Intent, max(op.Version, 1)}]; ok {
		return b, nil
	}
	return nil, &adapters.Error{Class: adapters.Final, Code: codes.IntentNotAllowed,
		Message: fmt.Sprintf("the target serves no intent %s version %d", op.Intent, max(op.Version, 1))}
}

// body computes the exact JSON object a create sends: the mapped
// properties with references resolved, converted to the EDM types
// $metadata declares (Double as a JSON number, Int64 as a string), each
// tabular row numbered, and the Ref_Key derived from the operation key.
func (c *Client) body(ctx context.Context, b *binding, et *entityType, op adapters.Op) (map[string]any, error) {
	out, err := c.mapped(ctx, b, et, op)
	if err != nil {
		return nil, err
	}
	out["Ref_Key"] = RefKey(c.instance, op.Intent, op.Key)
	if b.keyField != "" {
		out[b.keyField] = out["Ref_Key"]
	}
	return out, nil
}

// mapped computes the binding's mapped properties from op's payload, as
// body sends them, without the gateway's own (Ref_Key, key_field).
func (c *Client) mapped(ctx context.Context, b *binding, et *entityType, op adapters.Op) (map[string]any, error) {
	// Every reference is resolved, so one answer names each that 1C
	// lacks; a target that cannot be asked stops at once.
	var refused adapters.Refusals
	vals, err := b.fields.Apply(ctx, op.Payload, func(ctx context.Context, ref mapping.Ref) (any, error) {
		key, err := c.resolve(ctx, ref)
		if err != nil && refused.Add(err) {
			return nil, nil
		}
		return key, err
	})
	var ve *mapping.ValueError
	switch {
	case errors.As(err, &ve):
		refused.Add(&adapters.Error{Class: adapters.Final, Code: codes.Validation, Field: ve.Field, Message: ve.Msg})
	case err != nil:
		return nil, err
	}
	if err := refused.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(vals)+1)
	for name, v := range vals {
		if rows, ok := v.([]map[string]any); ok {
			list := make([]map[string]any, 0, len(rows))
			for i, r := range rows {
				row := map[string]any{"LineNumber": fmt.Sprint(i + 1)}
				for rn, rv := range r {
					row[rn] = edmValue(et.sections[name][rn], rv)
				}
				list = append(list, row)
			}
			out[name] = list
			continue
		}
		out[name] = edmValue(et.props[name], v)
	}
	return out, nil
}

// edmValue converts a mapped value to the JSON form of its EDM type.
func edmValue(typ string, v any) any {
	s, isString := v.(string)
	n, isNumber := v.(json.Number)
	switch typ {
	case "Edm.Double", "Edm.Decimal", "Edm.Single", "Edm.Int16", "Edm.Int32", "Edm.Byte":
		if isString && json.Valid([]byte(s)) {
			return json.Number(s)
		}
	case "Edm.Int64":
		if isNumber {
			return n.String()
		}
	case "Edm.String":
		if isNumber {
			return n.String()
		}
	}
	return v
}

// planData is the validate plan: the entity set and the exact body, so
// plan_hash binds what execute will send.
func planData(entity string, body map[string]any) map[string]any {
	return map[string]any{"entity": entity, "ref_key": body["Ref_Key"], "body": body}
}

// sentProps lists the scalar header properties of a body, sorted: what a
// document found under the key is compared on.
func sentProps(body map[string]any) []string {
	var out []string
	for k, v := range body {
		if _, isRows := v.([]map[string]any); !isRows && k != "Ref_Key" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
