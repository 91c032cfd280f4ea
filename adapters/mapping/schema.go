package mapping

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// node is the part of a JSON Schema (2020-12) a mapping relies on: the
// types of a value, the members of an object and the items of an array.
// Local references (#/$defs/…, #/definitions/…) are followed.
type node struct {
	Type       typeList                   `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Items      json.RawMessage            `json:"items"`
	Ref        string                     `json:"$ref"`
}

// typeList is a schema's "type": one name or a list of them.
type typeList []string

// UnmarshalJSON implements json.Unmarshaler.
func (t *typeList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = typeList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type is neither a name nor a list of names")
	}
	*t = many
	return nil
}

// has reports whether the schema allows the type; integer is a number.
func (t typeList) has(name string) bool {
	return slices.Contains(t, name) || name == "number" && slices.Contains(t, "integer")
}

// schema is a payload's schema, parsed for look-ups by dotted path.
type schema struct {
	root json.RawMessage
}

// at returns the schema of the value at path below the object schema n,
// or false when the schema has no such member.
func (s schema) at(n json.RawMessage, path []string) (node, bool) {
	cur, ok := s.resolve(n)
	if !ok {
		return node{}, false
	}
	for _, name := range path {
		raw, ok := cur.Properties[name]
		if !ok {
			return node{}, false
		}
		if cur, ok = s.resolve(raw); !ok {
			return node{}, false
		}
	}
	return cur, true
}

// resolve decodes a schema and follows its local $ref, at most a few deep.
func (s schema) resolve(raw json.RawMessage) (node, bool) {
	for range 8 {
		var n node
		if len(raw) == 0 || json.Unmarshal(raw, &n) != nil {
			return node{}, false
		}
		if n.Ref == "" {
			return n, true
		}
		target, ok := s.pointer(n.Ref)
		if !ok {
			return node{}, false
		}
		raw = target
	}
	return node{}, false
}

// pointer finds a local JSON pointer ("#/$defs/item") in the root schema.
func (s schema) pointer(ref string) (json.RawMessage, bool) {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	cur := s.root
	for _, tok := range strings.Split(strings.TrimPrefix(rest, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		if cur, ok = obj[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}
