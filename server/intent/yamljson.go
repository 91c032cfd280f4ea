package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// toJSON writes a YAML value as JSON, mappings in their order, numbers as
// written. Only JSON's values are accepted: no aliases, no tags beyond
// YAML's core ones, string keys.
func toJSON(n *yaml.Node) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, n, 0); err != nil {
		return nil, err
	}
	if !json.Valid(b.Bytes()) {
		return nil, errors.New("cannot be written as JSON")
	}
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 64 {
		return errors.New("nested too deeply")
	}
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i, kv := range mapping(n) {
			if kv[0].Kind != yaml.ScalarNode || kv[0].Tag != "!!str" {
				return fmt.Errorf("line %d: a key must be a string", kv[0].Line)
			}
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(kv[0].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := writeJSON(b, kv[1], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			v, _ := json.Marshal(n.Value)
			b.Write(v)
		case "!!int", "!!float":
			if !json.Valid([]byte(n.Value)) {
				return fmt.Errorf("line %d: %q is not a plain decimal number", n.Line, n.Value)
			}
			b.WriteString(n.Value)
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				return err
			}
			b.WriteString(strconv.FormatBool(v))
		case "!!null":
			b.WriteString("null")
		default:
			return fmt.Errorf("line %d: the tag %s is not a JSON value", n.Line, n.Tag)
		}
	case yaml.AliasNode:
		return fmt.Errorf("line %d: aliases are not accepted; write the value out", n.Line)
	default:
		return fmt.Errorf("line %d: not a JSON value", n.Line)
	}
	return nil
}
