package intent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/contract"
)

// Duplicate actions (the definition's duplicates.action).
const (
	DuplicateBlock = "block" // refuse the second request; nothing is journaled
	DuplicateHold  = "hold"  // journal it awaiting a person's decision
	DuplicateWarn  = "warn"  // let it go on with a warning
)

// Duplicates is an intent's duplicate rule: a second request about the
// same business event — the same values of Fields, after normalization —
// as a live operation of the intent made within Window is blocked, held
// for a person or let through with a warning, whatever its key and agent.
type Duplicates struct {
	Fields []DuplicateField
	Window time.Duration
	Action string // DuplicateBlock | DuplicateHold | DuplicateWarn
}

// DuplicateField is one field of a business key: a top-level payload
// field, a date-time optionally truncated to its day (in UTC).
type DuplicateField struct {
	Field string
	Day   bool
}

// String writes the field as a definition does.
func (f DuplicateField) String() string {
	if f.Day {
		return f.Field + " (day)"
	}
	return f.Field
}

// decodeDuplicates reads duplicates: {fields: [f, {field: f, truncate:
// day}, …], window: 720h, action: block | hold | warn}, each field a
// top-level scalar of the schema.
func decodeDuplicates(p *problems, n *yaml.Node, sch *schemaFields, sh *shape) *Duplicates {
	if n == nil || !onlyKeys(p, n, "duplicates", "fields", "window", "action") {
		return nil
	}
	d := &Duplicates{}
	var fieldsNode, windowNode, actionNode *yaml.Node
	for _, kv := range mapping(n) {
		switch kv[0].Value {
		case "fields":
			fieldsNode = kv[1]
		case "window":
			windowNode = kv[1]
		case "action":
			actionNode = kv[1]
		}
	}
	ok := true
	bad := func(path, format string, args ...any) {
		p.add(path, format, args...)
		ok = false
	}
	switch {
	case fieldsNode == nil:
		bad("duplicates.fields", "is required: the payload fields that make the business key")
	case fieldsNode.Kind != yaml.SequenceNode || len(fieldsNode.Content) == 0:
		bad("duplicates.fields", "must be a non-empty list of top-level payload fields (a date-time may be {field: due_at, truncate: day})")
	default:
		for i, fn := range fieldsNode.Content {
			path := "duplicates.fields[" + strconv.Itoa(i) + "]"
			var f DuplicateField
			switch fn.Kind {
			case yaml.ScalarNode:
				f.Field = fn.Value
			case yaml.MappingNode:
				if !onlyKeys(p, fn, path, "field", "truncate") {
					ok = false
					continue
				}
				for _, kv := range mapping(fn) {
					switch kv[0].Value {
					case "field":
						f.Field = kv[1].Value
					case "truncate":
						if kv[1].Value != "day" {
							bad(path+".truncate", "%q: a date-time is truncated to its day (truncate: day) or not at all", kv[1].Value)
						}
						f.Day = true
					}
				}
			default:
				bad(path, "must be a payload field's name, or {field: name, truncate: day}")
				continue
			}
			t, top := sch.types[f.Field], slices.Contains(sch.top, f.Field)
			switch {
			case f.Field == "":
				bad(path, "names no field")
			case !top:
				bad(path, "%s is not a top-level field of the schema", f.Field)
			case t != "string" && t != "integer" && t != "number" && t != "boolean":
				bad(path, "%s is %s; a business key is made of scalar fields (string, integer, number, boolean)", f.Field, t)
			case f.Day && sh != nil && !slices.Contains(sh.dateTimes, f.Field):
				bad(path, "%s is not a date-time (format: date-time): only a date-time is truncated to its day", f.Field)
			case slices.ContainsFunc(d.Fields, func(o DuplicateField) bool { return o.Field == f.Field }):
				bad(path, "%s is named twice", f.Field)
			default:
				d.Fields = append(d.Fields, f)
			}
		}
	}
	if windowNode == nil {
		bad("duplicates.window", "is required: how far back an earlier operation counts, a duration such as 720h (30 days)")
	} else if w, err := time.ParseDuration(windowNode.Value); err != nil || windowNode.Kind != yaml.ScalarNode || w <= 0 {
		bad("duplicates.window", "%q must be a positive duration in hours, minutes or seconds, e.g. 24h or 720h (30 days)", windowNode.Value)
	} else {
		d.Window = w
	}
	actions := []string{DuplicateBlock, DuplicateHold, DuplicateWarn}
	if actionNode == nil {
		bad("duplicates.action", "is required: %s", strings.Join(actions, " | "))
	} else if !slices.Contains(actions, actionNode.Value) || actionNode.Kind != yaml.ScalarNode {
		bad("duplicates.action", "%q is not an action (%s)", actionNode.Value, strings.Join(actions, " | "))
	} else {
		d.Action = actionNode.Value
	}
	if !ok {
		return nil
	}
	return d
}

// withoutKeys is a definition file's bytes without the lines of the
// top-level keys named: what a digest of its meaning leaves out (the
// people's words, the duplicate rule). A key is cut from its line to the
// next top-level key's; the file is returned whole when its lines cannot
// be told (a flow mapping on one line).
func withoutKeys(raw []byte, root *yaml.Node, keys ...string) []byte {
	lines := bytes.SplitAfter(raw, []byte("\n"))
	drop := make([]bool, len(lines))
	for i := 0; i+1 < len(root.Content); i += 2 {
		if !slices.Contains(keys, root.Content[i].Value) {
			continue
		}
		first, next := root.Content[i].Line, len(lines)+1 // 1-based lines: the key's, the next top-level key's
		if i+2 < len(root.Content) {
			next = root.Content[i+2].Line
		}
		if first < 1 || first > len(lines) || next <= first {
			return raw
		}
		for l := first; l < next && l <= len(lines); l++ {
			drop[l-1] = true
		}
	}
	var out []byte
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l...)
		}
	}
	return out
}

// BusinessKey is the digest of norm's business key under the intent's
// duplicate rule: the lowercase hex SHA-256 of the intent's name and the
// rule's fields, normalized further than the fingerprint — strings
// case-folded and their inner runs of white space made one space, a
// date-time truncated to its day where the rule says. The payload is
// already normalized (money in minor units, currencies upper case, times
// in UTC, strings trimmed). "" when the intent has no rule.
func (def *Intent) BusinessKey(norm contract.Normalized) (string, error) {
	if def.Duplicates == nil {
		return "", nil
	}
	obj := norm.Object()
	key := map[string]any{}
	for _, f := range def.Duplicates.Fields {
		v := obj[f.Field]
		if s, ok := v.(string); ok {
			if f.Day && len(s) >= 10 {
				s = s[:10] // RFC 3339 in UTC: YYYY-MM-DD…
			}
			v = strings.Join(strings.Fields(strings.ToLower(s)), " ")
		}
		key[f.Field] = v
	}
	b, err := json.Marshal(map[string]any{"intent": def.Name, "fields": key}) // keys sorted
	if err != nil {
		return "", fmt.Errorf("business key of %s: %w", def.Name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// overrideDuplicates applies the configuration's duplicates: each value
// set there replaces the definitions' own, for every version of the
// intent; action off drops the rule. A rule only ever decides about new
// keys, so changing it changes no accepted key's meaning (the rule is
// outside the definition's digest).
func (c *Catalog) overrideDuplicates(over map[string]config.DuplicateOverride) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(over)) {
		o := over[name]
		at := "config: duplicates." + name
		switch o.Action {
		case "", DuplicateBlock, DuplicateHold, DuplicateWarn, "off":
		default:
			errs = append(errs, fmt.Errorf("%s.action: %q is none of block, hold, warn, off", at, o.Action))
			continue
		}
		if o.Window < 0 {
			errs = append(errs, fmt.Errorf("%s.window: must be positive", at))
			continue
		}
		found := false
		for _, def := range c.defs {
			if def.Name != name {
				continue
			}
			found = true
			switch {
			case o.Action == "off":
				def.Duplicates = nil
			case def.Duplicates == nil:
				errs = append(errs, fmt.Errorf("%s: the definition (%s) has no duplicate rule to change; declare its fields in the definition", at, def.Source))
			default:
				d := *def.Duplicates
				d.Fields = slices.Clone(d.Fields)
				if o.Window > 0 {
					d.Window = time.Duration(o.Window)
				}
				if o.Action != "" {
					d.Action = o.Action
				}
				def.Duplicates = &d
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("%s: no such intent", at))
		}
	}
	return errors.Join(errs...)
}
