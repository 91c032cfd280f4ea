package intent

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Bounds every declared schema keeps (docs/intents.md, The schema: strings at most
// 1 KiB, arrays at most 500 items).
const (
	maxStringBound = 1024
	maxItemsBound  = 500
)

// forbiddenFields exist in no contract (docs/api.md, A request): no schema may
// declare them, at any depth.
var forbiddenFields = []string{"method", "query", "script", "posted", "privileged_mode"}

// schemaKeywords are the JSON Schema keywords a definition's schema may
// use: enough to describe a closed, bounded payload, nothing that opens it
// (patternProperties, combinators) or moves its base ($ref, $id).
var schemaKeywords = []string{"title", "description", "type", "properties", "required", "additionalProperties",
	"items", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern", "format",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "enum", "const", "default", "examples"}

// schemaTypes are the types a schema node may have.
var schemaTypes = []string{"object", "array", "string", "integer", "number", "boolean"}

// memberPattern is a payload member's name: no dots or brackets, which
// field paths use.
var memberPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// schemaFields is what the rest of a definition may name in its schema:
// the type of each field path ("customer_id", "items" an array,
// "items[]" its items' type, "items.product_id" a member of each item).
type schemaFields struct {
	top   []string // top-level members, in order
	types map[string]string
}

// topOf reports whether f is a top-level member of type t.
func (s *schemaFields) topOf(f, t string) bool {
	return slices.Contains(s.top, f) && s.types[f] == t
}

// checkSchema checks the payload's schema strictly and reads its fields:
// an object at the top; every object closed (additionalProperties:
// false); every string and array bounded; no forbidden field anywhere; no
// keyword outside schemaKeywords.
func checkSchema(p *problems, n *yaml.Node) *schemaFields {
	sf := &schemaFields{types: map[string]string{}}
	if n.Kind != yaml.MappingNode {
		p.add("schema", "must be a JSON Schema (a mapping) of the payload")
		return nil
	}
	if t := keyword(n, "type"); t == nil || t.Value != "object" {
		p.add("schema.type", "the payload's schema must be of type object")
	}
	for _, kv := range mapping(n) {
		if kv[0].Value == "$schema" && kv[1].Value != "https://json-schema.org/draft/2020-12/schema" {
			p.add("schema.$schema", "the dialect is JSON Schema 2020-12 (https://json-schema.org/draft/2020-12/schema)")
		}
	}
	walkSchema(p, n, "schema", "", sf, true)
	return sf
}

// keyword is the value of key in the mapping n, or nil.
func keyword(n *yaml.Node, key string) *yaml.Node {
	for _, kv := range mapping(n) {
		if kv[0].Value == key {
			return kv[1]
		}
	}
	return nil
}

// walkSchema checks the schema node n at path (inside the file) for the
// payload field fpath, recording its members' types in sf.
func walkSchema(p *problems, n *yaml.Node, path, fpath string, sf *schemaFields, top bool) {
	if n.Kind != yaml.MappingNode {
		p.add(path, "must be a schema (a mapping)")
		return
	}
	for _, kv := range mapping(n) {
		if k := kv[0].Value; !slices.Contains(schemaKeywords, k) && !(top && k == "$schema") {
			p.add(path+"."+k, "the keyword %s is not accepted in a definition's schema (it takes %s)", k, strings.Join(schemaKeywords, ", "))
		}
	}
	tn := keyword(n, "type")
	if tn == nil || tn.Kind != yaml.ScalarNode || !slices.Contains(schemaTypes, tn.Value) {
		p.add(path+".type", "every schema names one type: %s", strings.Join(schemaTypes, ", "))
		return
	}
	typ := tn.Value
	if fpath != "" {
		sf.types[fpath] = typ
	}
	switch typ {
	case "object":
		if ap := keyword(n, "additionalProperties"); ap == nil || ap.Tag != "!!bool" || ap.Value != "false" {
			p.add(path+".additionalProperties", "every object must be closed: additionalProperties: false")
		}
		props := keyword(n, "properties")
		var names []string
		if props != nil {
			if props.Kind != yaml.MappingNode {
				p.add(path+".properties", "must be a mapping of field → schema")
				return
			}
			for _, kv := range mapping(props) {
				name := kv[0].Value
				ppath := path + ".properties." + name
				switch {
				case slices.Contains(forbiddenFields, name):
					p.add(ppath, "the field %s exists in no contract: agents send intents, never %s", name, strings.Join(forbiddenFields, ", "))
					continue
				case !memberPattern.MatchString(name):
					p.add(ppath, "a field's name is letters, digits and _, starting with a letter")
					continue
				}
				names = append(names, name)
				child := name
				if fpath != "" {
					child = fpath + "." + name
				}
				if top {
					sf.top = append(sf.top, name)
				}
				walkSchema(p, kv[1], ppath, child, sf, false)
			}
		}
		if req := keyword(n, "required"); req != nil {
			if req.Kind != yaml.SequenceNode {
				p.add(path+".required", "must be a list of the object's fields")
			} else {
				for i, r := range req.Content {
					if !slices.Contains(names, r.Value) {
						p.add(path+".required["+strconv.Itoa(i)+"]", "%q is not a field of this object", r.Value)
					}
				}
			}
		}
	case "array":
		bounded(p, n, path, "maxItems", maxItemsBound, "array")
		items := keyword(n, "items")
		if items == nil {
			p.add(path+".items", "an array says what its items are")
			return
		}
		// The items of an array share the array's field path: its
		// members are "items.product_id".
		walkSchema(p, items, path+".items", fpath+"[]", sf, false)
		if it := sf.types[fpath+"[]"]; it == "object" {
			for k, t := range sf.types {
				if rest, ok := strings.CutPrefix(k, fpath+"[]."); ok {
					sf.types[fpath+"."+rest] = t
					delete(sf.types, k)
				}
			}
		}
	case "string":
		bounded(p, n, path, "maxLength", maxStringBound, "string")
	}
}

// bounded checks that n carries the bound key, a whole number from 1 to
// most.
func bounded(p *problems, n *yaml.Node, path, key string, most int, what string) {
	b := keyword(n, key)
	if b == nil {
		p.add(path, "every %s needs a bound: %s (at most %d)", what, key, most)
		return
	}
	v, err := strconv.Atoi(b.Value)
	if err != nil || b.Tag != "!!int" || v < 1 || v > most {
		p.add(path+"."+key, "%q must be a whole number from 1 to %d", b.Value, most)
	}
}
