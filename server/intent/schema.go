package intent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/contract"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaBase is where the schemas live for the compiler; nothing is ever fetched.
const schemaBase = "https://oncegate.invalid/schemas/"

// Patterns the schemas use, so messages can say what they mean.
const (
	idPattern       = "^[A-Za-z0-9][A-Za-z0-9._:-]*$"
	currencyPattern = "^[A-Za-z]{3}$"
)

// shape is the object structure of a schema: what messages and normalization need to
// know beyond what the validator says.
type shape struct {
	props     []string          // member names, in the schema's order
	required  []string          // required member names
	optional  []string          // members not required
	dateTimes []string          // members with format date-time
	children  map[string]*shape // object members, and the item objects of array members
}

// schemaNode is the part of a JSON Schema that shape reads.
type schemaNode struct {
	Type       string          `json:"type"`
	Format     string          `json:"format"`
	Properties json.RawMessage `json:"properties"`
	Required   []string        `json:"required"`
	Items      *schemaNode     `json:"items"`
}

// compileSchema compiles one intent's payload schema (draft 2020-12, formats asserted)
// and reads its shape.
func compileSchema(name string, raw []byte) (*jsonschema.Schema, *shape, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("schema %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	url := schemaBase + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, nil, fmt.Errorf("schema %s: %w", name, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, nil, fmt.Errorf("schema %s: %w", name, err)
	}
	var node schemaNode
	if err := json.Unmarshal(raw, &node); err != nil {
		return nil, nil, fmt.Errorf("schema %s: %w", name, err)
	}
	sh, err := readShape(&node)
	if err != nil {
		return nil, nil, fmt.Errorf("schema %s: %w", name, err)
	}
	return compiled, sh, nil
}

// readShape reads the shape of an object schema.
func readShape(n *schemaNode) (*shape, error) {
	sh := &shape{required: n.Required, children: map[string]*shape{}}
	if len(n.Properties) == 0 {
		return sh, nil
	}
	// Member order comes from the raw tokens; a map would lose it.
	dec := json.NewDecoder(bytes.NewReader(n.Properties))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var child schemaNode
		if err := dec.Decode(&child); err != nil {
			return nil, err
		}
		sh.props = append(sh.props, name)
		if !slices.Contains(n.Required, name) {
			sh.optional = append(sh.optional, name)
		}
		if child.Format == "date-time" {
			sh.dateTimes = append(sh.dateTimes, name)
		}
		obj := &child
		if child.Items != nil {
			obj = child.Items
		}
		if obj.Type == "object" {
			if sh.children[name], err = readShape(obj); err != nil {
				return nil, err
			}
		}
	}
	return sh, nil
}

// at is the shape of the object at loc inside root, or nil.
func (sh *shape) at(root any, loc []string) *shape {
	cur := root
	for _, step := range loc {
		if sh == nil {
			return nil
		}
		switch c := cur.(type) {
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i] // the array's items share its member's shape
		case map[string]any:
			cur, sh = c[step], sh.children[step]
		default:
			return nil
		}
	}
	return sh
}

// candidate is one refusal read off the validator's error tree.
type candidate struct {
	err  *codes.Refusal
	loc  []string // instance location of the field at fault
	rank int      // precedence among refusals of the same field: the most telling first
}

// schemaError turns the validator's error tree into one deterministic *codes.Refusal
// listing every problem, one per field: unknown fields anywhere first (UNKNOWN_FIELD),
// then the violations (VALIDATION_ERROR), each group shallower fields first and then by
// field location. The refusal is the first; the rest are its Also, at most codes.MaxProblems
// in all. Messages never carry schema URLs or client values.
func (def *Intent) schemaError(root any, verr *jsonschema.ValidationError) *codes.Refusal {
	var leaves []*jsonschema.ValidationError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)

	var cands []candidate
	for _, e := range leaves {
		cands = append(cands, def.candidates(root, e)...)
	}
	if len(cands) == 0 { // defensive: the validator always names a reason
		return codes.Refusef(codes.Validation, "", "the payload does not match the schema of %s (GET /v1/intents)", def.Name)
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.err.Code != b.err.Code {
			if a.err.Code == codes.UnknownField {
				return -1
			}
			return 1
		}
		if len(a.loc) != len(b.loc) { // shallower first: top-level problems before nested ones
			return len(a.loc) - len(b.loc)
		}
		if c := compareLoc(a.loc, b.loc); c != 0 {
			return c
		}
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.err.Message, b.err.Message)
	})
	// One problem per field, the most telling: a string both empty and
	// of the wrong form is said to be empty.
	seen := map[string]bool{}
	var out []*codes.Refusal
	for _, c := range cands {
		if seen[c.err.Field] {
			continue
		}
		seen[c.err.Field] = true
		if out = append(out, c.err); len(out) == codes.MaxProblems {
			break
		}
	}
	first := out[0]
	first.Also = out[1:]
	return first
}

// candidates describes one leaf error of the validator.
func (def *Intent) candidates(root any, e *jsonschema.ValidationError) []candidate {
	loc := e.InstanceLocation
	field := contract.FieldPath(root, loc)
	where := "the payload"
	if field != "" {
		where = field
	}
	subject := field
	if subject == "" {
		subject = "the payload"
	}
	child := func(name string) []string { return append(slices.Clip(loc), name) }
	one := func(rank int, format string, args ...any) []candidate {
		return []candidate{{err: codes.Refusef(codes.Validation, field, subject+" "+format, args...), loc: loc, rank: rank}}
	}

	switch k := e.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		var allowed []string
		if sh := def.shape.at(root, loc); sh != nil {
			allowed = sh.props
		}
		var out []candidate
		for _, p := range k.Properties {
			f := contract.FieldPathIn(root, loc, p)
			out = append(out, candidate{err: contract.UnknownField(p, f, where, allowed), loc: child(p)})
		}
		return out
	case *kind.Required:
		var out []candidate
		for _, m := range k.Missing {
			f := contract.FieldPathIn(root, loc, m)
			msg := fmt.Sprintf("missing required field %q in %s", m, where)
			out = append(out, candidate{err: codes.Refusef(codes.Validation, f, "%s", msg), loc: child(m), rank: 0})
		}
		return out
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = article(w)
		}
		return one(1, "must be %s (got %s)", strings.Join(want, " or "), article(k.Got))
	case *kind.Format:
		switch k.Want {
		case "date":
			return one(2, "must be a date in the form YYYY-MM-DD, e.g. 2026-12-31")
		case "date-time":
			return one(2, "must be an RFC 3339 date-time with a time zone, e.g. 2026-12-03T10:00:00+03:00")
		}
		return one(4, "must be in %s format", k.Want)
	case *kind.Pattern:
		switch k.Want {
		case idPattern:
			return one(4, "must be a stable external id: letters, digits and . _ : -, starting with a letter or digit, e.g. order-48291")
		case currencyPattern:
			return one(2, "must be a three-letter ISO 4217 currency code, e.g. RUB")
		}
		return one(4, "does not have the expected form")
	case *kind.MinLength:
		if k.Want == 1 {
			return one(3, "must not be empty")
		}
		return one(3, "is too short: at least %d characters (got %d)", k.Want, k.Got)
	case *kind.MaxLength:
		return one(5, "is too long: at most %d characters (got %d)", k.Want, k.Got)
	case *kind.Minimum:
		return one(2, "must be at least %s", ratString(k.Want))
	case *kind.ExclusiveMinimum:
		return one(2, "must be greater than %s", ratString(k.Want))
	case *kind.Maximum:
		return one(2, "must be at most %s", ratString(k.Want))
	case *kind.ExclusiveMaximum:
		return one(2, "must be less than %s", ratString(k.Want))
	case *kind.MinItems:
		return one(2, "must have at least %d item(s) (got %d)", k.Want, k.Got)
	case *kind.MaxItems:
		return one(2, "has too many items: at most %d (got %d)", k.Want, k.Got)
	}
	return one(9, "is not valid for %s (see its schema: GET /v1/intents)", def.Name)
}

// article names a JSON type with its article: "a string", "an integer", "null".
func article(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
}

// ratString renders a schema bound.
func ratString(r *big.Rat) string {
	if r == nil {
		return "the bound"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	return r.FloatString(6)
}

// compareLoc orders instance locations: shorter prefixes first, array indexes
// numerically, member names by bytes.
func compareLoc(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, xerr := strconv.Atoi(a[i])
		y, yerr := strconv.Atoi(b[i])
		if xerr == nil && yerr == nil {
			if x != y {
				return x - y
			}
			continue
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}
