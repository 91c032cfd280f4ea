// Package mapping turns a payload into a target's fields by a mapping
// written as data in an intent's definition: each target field takes a
// payload field ({from: path}), a resolved reference ({ref: path}) or a
// constant ({value: …}), optionally through one of a fixed set of
// transforms (money: minor, optionally times a quantity; date: local); a
// tabular section takes an array of the payload row by row ({from: items,
// row: {…}}). Nothing else: anything richer is a new target kind, in Go.
//
// A mapping is parsed once, when the target is given its intents, against
// the payload's schema: an unknown key, an unknown transform or a path the
// schema does not have is refused there, naming the path inside the
// mapping (map.fields.OPPORTUNITY.money: unknown transform "major"), so a
// gateway with a bad mapping never starts. Apply then cannot fail on the
// mapping itself, only on a value (an unknown currency, a reference not
// found).
//
// The package is a leaf: the adapters of each kind use it, and it knows
// none of them.
package mapping

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Transforms of a mapped value.
const (
	// MoneyMinor: an integer amount in minor units becomes the decimal
	// string the target expects (150000 RUB → "1500.00"), by the ISO 4217
	// exponent of the currency named by the field's currency path.
	MoneyMinor = "minor"
	// DateLocal: an RFC 3339 date-time becomes the naive local time of
	// the target's zone ("2026-05-01T13:00:00" in Europe/Moscow); a
	// full-date (2026-05-01) is that day's start, in any zone.
	DateLocal = "local"
	// LocalLayout is the form of a naive local time.
	LocalLayout = "2006-01-02T15:04:05"
	// DefaultCurrency is the payload field naming an amount's currency
	// when its mapping does not say.
	DefaultCurrency = "currency"
)

// Options is what a target tells Parse about itself and the definition.
type Options struct {
	// References maps payload fields holding external ids to their kind,
	// as the definition declares them; a {ref: …} must name one. A field
	// inside a row is named by its full path (items.product_id; also
	// accepted: items[].product_id).
	References map[string]string
	// MinorDigits gives a currency's ISO 4217 exponent; nil refuses
	// money transforms.
	MinorDigits func(code string) (int, bool)
	// Zone is the target's time zone for date: local; nil refuses it.
	Zone *time.Location
	// Rows allows tabular sections ({from: …, row: {…}}).
	Rows bool
}

// Fields is a parsed mapping of target fields: what Apply computes.
type Fields struct {
	list []*Field // by Name
}

// Field is one target field's parsed mapping. Exactly one of From, Ref and
// Value (HasValue) is set.
type Field struct {
	// Name is the target field, e.g. "OPPORTUNITY".
	Name string
	// From is the dotted payload path of the value, relative to the row
	// inside a tabular section.
	From string
	// Ref is the dotted payload path of an external id, resolved by the
	// target; RefKind is its declared kind ("customer").
	Ref, RefKind string
	// Value is a constant (string, json.Number or bool), when HasValue.
	Value    any
	HasValue bool
	// Money is the money transform (MoneyMinor) and Currency the payload
	// path of the currency's code (always from the payload's root).
	Money, Currency string
	// Times, with Money, is the payload path (relative like From) of a
	// number the amount is multiplied by before it is rendered: a line's
	// sum from its price and quantity ({from: price_minor, times:
	// quantity, money: minor}), rounded half away from zero to the
	// currency's minor unit, as 1C rounds.
	Times string
	// Date is the date transform (DateLocal).
	Date string
	// Row is the mapping of each element of the array at From.
	Row *Fields

	path        string                        // where this field's mapping is, for errors
	ref         string                        // Ref's key in Options.References (full path)
	zone        *time.Location                // for Date
	minorDigits func(code string) (int, bool) // for Money
}

// Error is a mapping refused by Parse: Path is where inside the
// definition (map.fields.OPPORTUNITY.money).
type Error struct {
	Path string
	Msg  string
}

// Error implements error.
func (e *Error) Error() string { return e.Path + ": " + e.Msg }

var (
	fieldName   = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_]*$`)
	segmentName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// keys a field's mapping may hold.
var fieldKeys = []string{"from", "ref", "value", "money", "currency", "times", "date", "row"}

// Parse parses the mapping of target fields raw (a JSON object: target
// field → its mapping), found at path inside the definition, against the
// payload's schema.
func Parse(raw json.RawMessage, path string, payloadSchema json.RawMessage, opts Options) (*Fields, error) {
	s := schema{root: payloadSchema}
	if _, ok := s.resolve(payloadSchema); !ok {
		return nil, &Error{Path: "schema", Msg: "not a JSON Schema object"}
	}
	return parseFields(raw, path, s, payloadSchema, nil, opts)
}

// parseFields parses an object of field mappings; within is the schema of
// the object paths are relative to, and rowPath the payload path of the
// enclosing rows (nil at the root).
func parseFields(raw json.RawMessage, path string, s schema, within json.RawMessage, rowPath []string, opts Options) (*Fields, error) {
	var obj map[string]json.RawMessage
	if err := strictObject(raw, &obj); err != nil {
		return nil, &Error{Path: path, Msg: "must be a mapping of target fields"}
	}
	if len(obj) == 0 {
		return nil, &Error{Path: path, Msg: "maps no field"}
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	f := &Fields{}
	for _, name := range names {
		p := path + "." + name
		if !fieldName.MatchString(name) {
			return nil, &Error{Path: p, Msg: "is not a field name"}
		}
		fld, err := parseField(obj[name], p, name, s, within, rowPath, opts)
		if err != nil {
			return nil, err
		}
		f.list = append(f.list, fld)
	}
	return f, nil
}

func parseField(raw json.RawMessage, path, name string, s schema, within json.RawMessage, rowPath []string, opts Options) (*Field, error) {
	var spec map[string]json.RawMessage
	if err := strictObject(raw, &spec); err != nil {
		return nil, &Error{Path: path, Msg: "must be one of {from: …}, {ref: …}, {value: …}"}
	}
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(fieldKeys, k) {
			return nil, &Error{Path: path + "." + k, Msg: "unknown key (want from, ref or value, and money, currency, times, date or row)"}
		}
	}
	fld := &Field{Name: name, path: path}
	sources := 0
	for _, k := range []string{"from", "ref", "value"} {
		if _, ok := spec[k]; ok {
			sources++
		}
	}
	if sources != 1 {
		return nil, &Error{Path: path, Msg: "needs exactly one of from, ref and value"}
	}
	str := func(k string) (string, error) {
		var v string
		if err := json.Unmarshal(spec[k], &v); err != nil || v == "" {
			return "", &Error{Path: path + "." + k, Msg: "must be a non-empty string"}
		}
		return v, nil
	}
	// Transforms and sections belong to {from: …} alone.
	if _, ok := spec["from"]; !ok {
		for _, k := range []string{"money", "currency", "times", "date", "row"} {
			if _, ok := spec[k]; ok {
				return nil, &Error{Path: path + "." + k, Msg: "applies only to a {from: …} field"}
			}
		}
	}

	switch {
	case spec["value"] != nil:
		v, err := constant(spec["value"])
		if err != nil {
			return nil, &Error{Path: path + ".value", Msg: err.Error()}
		}
		fld.Value, fld.HasValue = v, true
		return fld, nil

	case spec["ref"] != nil:
		ref, err := str("ref")
		if err != nil {
			return nil, err
		}
		n, err := lookup(s, within, ref, path+".ref")
		if err != nil {
			return nil, err
		}
		if !n.Type.has("string") {
			return nil, &Error{Path: path + ".ref", Msg: fmt.Sprintf("payload field %q is not a string; an external id is", ref)}
		}
		full := strings.Join(append(slices.Clone(rowPath), ref), ".")
		kind, key := "", ""
		for _, k := range refKeys(rowPath, ref) {
			if kd, ok := opts.References[k]; ok {
				kind, key = kd, k
				break
			}
		}
		if kind == "" {
			return nil, &Error{Path: path + ".ref", Msg: fmt.Sprintf("payload field %q is not declared in references", full)}
		}
		fld.Ref, fld.RefKind, fld.ref = ref, kind, key
		return fld, nil
	}

	from, err := str("from")
	if err != nil {
		return nil, err
	}
	n, err := lookup(s, within, from, path+".from")
	if err != nil {
		return nil, err
	}
	fld.From = from
	transforms := 0
	if raw, ok := spec["money"]; ok {
		transforms++
		if err := json.Unmarshal(raw, &fld.Money); err != nil || fld.Money != MoneyMinor {
			return nil, &Error{Path: path + ".money", Msg: fmt.Sprintf("unknown transform %s (want %q)", bytes.TrimSpace(raw), MoneyMinor)}
		}
		if opts.MinorDigits == nil {
			return nil, &Error{Path: path + ".money", Msg: "this target takes no amounts"}
		}
		if !n.Type.has("integer") || n.Type.has("string") {
			return nil, &Error{Path: path + ".money", Msg: fmt.Sprintf("payload field %q is not an integer; amounts are integers in minor units", from)}
		}
		fld.Currency, fld.minorDigits = DefaultCurrency, opts.MinorDigits
		if _, ok := spec["currency"]; ok {
			if fld.Currency, err = str("currency"); err != nil {
				return nil, err
			}
		}
		cur, err := lookup(s, s.root, fld.Currency, path+".currency")
		if err != nil {
			if _, ok := spec["currency"]; !ok {
				return nil, &Error{Path: path + ".money", Msg: fmt.Sprintf("the payload has no field %q naming the currency; name it with currency: <field>", DefaultCurrency)}
			}
			return nil, err
		}
		if !cur.Type.has("string") {
			return nil, &Error{Path: path + ".currency", Msg: fmt.Sprintf("payload field %q is not a string; a currency code is", fld.Currency)}
		}
		if _, ok := spec["times"]; ok {
			if fld.Times, err = str("times"); err != nil {
				return nil, err
			}
			t, err := lookup(s, within, fld.Times, path+".times")
			if err != nil {
				return nil, err
			}
			if !t.Type.has("number") && !t.Type.has("integer") || t.Type.has("string") {
				return nil, &Error{Path: path + ".times", Msg: fmt.Sprintf("payload field %q is not a number", fld.Times)}
			}
		}
	} else {
		for _, k := range []string{"currency", "times"} {
			if _, ok := spec[k]; ok {
				return nil, &Error{Path: path + "." + k, Msg: "applies only with money: minor"}
			}
		}
	}
	if raw, ok := spec["date"]; ok {
		transforms++
		if err := json.Unmarshal(raw, &fld.Date); err != nil || fld.Date != DateLocal {
			return nil, &Error{Path: path + ".date", Msg: fmt.Sprintf("unknown transform %s (want %q)", bytes.TrimSpace(raw), DateLocal)}
		}
		if opts.Zone == nil {
			return nil, &Error{Path: path + ".date", Msg: "this target has no time zone for local dates"}
		}
		fld.zone = opts.Zone
		if !n.Type.has("string") {
			return nil, &Error{Path: path + ".date", Msg: fmt.Sprintf("payload field %q is not a string; a date-time is", from)}
		}
	}
	if raw, ok := spec["row"]; ok {
		transforms++
		if !opts.Rows {
			return nil, &Error{Path: path + ".row", Msg: "this target takes no tabular sections"}
		}
		if !n.Type.has("array") || len(n.Items) == 0 {
			return nil, &Error{Path: path + ".from", Msg: fmt.Sprintf("payload field %q is not an array of objects; a tabular section needs one", from)}
		}
		items, ok := s.resolve(n.Items)
		if !ok || !items.Type.has("object") {
			return nil, &Error{Path: path + ".from", Msg: fmt.Sprintf("payload field %q is not an array of objects; a tabular section needs one", from)}
		}
		row, err := parseFields(raw, path+".row", s, n.Items, append(slices.Clone(rowPath), from), opts)
		if err != nil {
			return nil, err
		}
		fld.Row = row
	}
	if transforms > 1 {
		return nil, &Error{Path: path, Msg: "takes at most one of money, date and row"}
	}
	if fld.Row == nil && (n.Type.has("object") || n.Type.has("array")) {
		return nil, &Error{Path: path + ".from", Msg: fmt.Sprintf("payload field %q is not a single value; map its members", from)}
	}
	return fld, nil
}

// refKeys are the names a reference inside rows may be declared under.
func refKeys(rowPath []string, ref string) []string {
	if len(rowPath) == 0 {
		return []string{ref}
	}
	return []string{
		strings.Join(append(slices.Clone(rowPath), ref), "."),
		strings.Join(rowPath, "[].") + "[]." + ref,
	}
}

// lookup finds the dotted payload path in the schema within, refusing a
// path it does not have.
func lookup(s schema, within json.RawMessage, dotted, at string) (node, error) {
	segs := strings.Split(dotted, ".")
	for _, seg := range segs {
		if !segmentName.MatchString(seg) {
			return node{}, &Error{Path: at, Msg: fmt.Sprintf("%q is not a payload path (names joined by dots)", dotted)}
		}
	}
	n, ok := s.at(within, segs)
	if !ok {
		return node{}, &Error{Path: at, Msg: fmt.Sprintf("the schema has no payload field %q", dotted)}
	}
	return n, nil
}

// constant decodes a {value: …}: a string, a number or a boolean.
func constant(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch v.(type) {
	case string, json.Number, bool:
		return v, nil
	}
	return nil, fmt.Errorf("must be a string, a number or a boolean")
}

// strictObject decodes a JSON object, refusing anything else.
func strictObject(raw json.RawMessage, v *map[string]json.RawMessage) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	if *v == nil {
		return fmt.Errorf("null")
	}
	return nil
}

// Names lists the mapped target fields, sorted.
func (f *Fields) Names() []string {
	out := make([]string, len(f.list))
	for i, fld := range f.list {
		out[i] = fld.Name
	}
	return out
}

// Field returns the mapping of the target field name, or nil.
func (f *Fields) Field(name string) *Field {
	for _, fld := range f.list {
		if fld.Name == name {
			return fld
		}
	}
	return nil
}

// Path is where the field's mapping is inside the definition
// (map.fields.OPPORTUNITY), for a target's own refusals.
func (fld *Field) Path() string { return fld.path }
