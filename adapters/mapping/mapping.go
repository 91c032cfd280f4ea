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
	"maps"
	"regexp"
	"slices"
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
	sc := scope{s: s, within: within, rowPath: rowPath, opts: opts}
	f := &Fields{}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		p := path + "." + name
		if !fieldName.MatchString(name) {
			return nil, &Error{Path: p, Msg: "is not a field name"}
		}
		fld, err := parseField(obj[name], p, name, sc)
		if err != nil {
			return nil, err
		}
		f.list = append(f.list, fld)
	}
	return f, nil
}

// scope is what a field's mapping is parsed against: the payload's
// schema, the schema of the object its paths are relative to (within),
// the payload path of the enclosing rows (nil at the root), and the
// target's options.
type scope struct {
	s       schema
	within  json.RawMessage
	rowPath []string
	opts    Options
}

// parseField parses one target field's mapping by its source: a constant
// ({value: …}), a resolved reference ({ref: …}) or a payload field
// ({from: …}, with its transform or section).
func parseField(raw json.RawMessage, path, name string, sc scope) (*Field, error) {
	sp, err := parseSpec(raw, path)
	if err != nil {
		return nil, err
	}
	fld := &Field{Name: name, path: path}
	switch {
	case sp.keys["value"] != nil:
		err = parseValue(sp, fld)
	case sp.keys["ref"] != nil:
		err = sc.parseRef(sp, fld)
	default:
		err = sc.parseFrom(sp, fld)
	}
	if err != nil {
		return nil, err
	}
	return fld, nil
}

// spec is one field's mapping as written, found at path.
type spec struct {
	path string
	keys map[string]json.RawMessage
}

// parseSpec decodes a field's mapping and checks its keys: known ones,
// exactly one source, and transforms and sections only with {from: …}.
func parseSpec(raw json.RawMessage, path string) (spec, error) {
	sp := spec{path: path}
	if err := strictObject(raw, &sp.keys); err != nil {
		return spec{}, &Error{Path: path, Msg: "must be one of {from: …}, {ref: …}, {value: …}"}
	}
	for _, k := range slices.Sorted(maps.Keys(sp.keys)) {
		if !slices.Contains(fieldKeys, k) {
			return spec{}, sp.errorAt(k, "unknown key (want from, ref or value, and money, currency, times, date or row)")
		}
	}
	if sp.count("from", "ref", "value") != 1 {
		return spec{}, &Error{Path: path, Msg: "needs exactly one of from, ref and value"}
	}
	// Transforms and sections belong to {from: …} alone.
	if k, ok := sp.first("money", "currency", "times", "date", "row"); ok && !sp.has("from") {
		return spec{}, sp.errorAt(k, "applies only to a {from: …} field")
	}
	return sp, nil
}

// parseValue parses a constant, {value: …}: a string, a number or a
// boolean.
func parseValue(sp spec, fld *Field) error {
	v, err := constant(sp.keys["value"])
	if err != nil {
		return sp.errorAt("value", err.Error())
	}
	fld.Value, fld.HasValue = v, true
	return nil
}

// parseRef parses a resolved reference, {ref: path}: a string field of
// the payload that the definition declares among its references.
func (sc scope) parseRef(sp spec, fld *Field) error {
	ref, n, err := sc.payloadField(sp, "ref")
	if err != nil {
		return err
	}
	if !n.Type.has("string") {
		return sp.errorAt("ref", fmt.Sprintf("payload field %q is not a string; an external id is", ref))
	}
	full := strings.Join(append(slices.Clone(sc.rowPath), ref), ".")
	kind, key := "", ""
	for _, k := range refKeys(sc.rowPath, ref) {
		if kd, ok := sc.opts.References[k]; ok {
			kind, key = kd, k
			break
		}
	}
	if kind == "" {
		return sp.errorAt("ref", fmt.Sprintf("payload field %q is not declared in references", full))
	}
	fld.Ref, fld.RefKind, fld.ref = ref, kind, key
	return nil
}

// parseFrom parses a payload field, {from: path}: a single value, through
// at most one transform (money, date), or an array of objects mapped row
// by row (row).
func (sc scope) parseFrom(sp spec, fld *Field) error {
	from, n, err := sc.payloadField(sp, "from")
	if err != nil {
		return err
	}
	fld.From = from
	if err := sc.parseMoney(sp, fld, n); err != nil {
		return err
	}
	if err := sc.parseDate(sp, fld, n); err != nil {
		return err
	}
	if err := sc.parseRow(sp, fld, n); err != nil {
		return err
	}
	if sp.count("money", "date", "row") > 1 {
		return &Error{Path: sp.path, Msg: "takes at most one of money, date and row"}
	}
	if fld.Row == nil && (n.Type.has("object") || n.Type.has("array")) {
		return sp.errorAt("from", fmt.Sprintf("payload field %q is not a single value; map its members", from))
	}
	return nil
}

// parseMoney parses money: minor, when the mapping has it, of n, the
// payload field at from: an integer amount in minor units, its currency
// named by another (currency) and, optionally, multiplied by a number
// (times). currency and times go with money alone.
func (sc scope) parseMoney(sp spec, fld *Field, n node) (err error) {
	if !sp.has("money") {
		if k, ok := sp.first("currency", "times"); ok {
			return sp.errorAt(k, "applies only with money: minor")
		}
		return nil
	}
	if fld.Money, err = sp.transform("money", MoneyMinor); err != nil {
		return err
	}
	if sc.opts.MinorDigits == nil {
		return sp.errorAt("money", "this target takes no amounts")
	}
	if !n.Type.has("integer") || n.Type.has("string") {
		return sp.errorAt("money", fmt.Sprintf("payload field %q is not an integer; amounts are integers in minor units", fld.From))
	}
	fld.Currency, fld.minorDigits = DefaultCurrency, sc.opts.MinorDigits
	if err := sc.parseCurrency(sp, fld); err != nil {
		return err
	}
	return sc.parseTimes(sp, fld)
}

// parseCurrency parses the payload path of an amount's currency code,
// from the payload's root: currency, or else DefaultCurrency.
func (sc scope) parseCurrency(sp spec, fld *Field) (err error) {
	named := sp.has("currency")
	if named {
		if fld.Currency, err = sp.str("currency"); err != nil {
			return err
		}
	}
	cur, err := lookup(sc.s, sc.s.root, fld.Currency, sp.path+".currency")
	if err != nil {
		if !named {
			return sp.errorAt("money", fmt.Sprintf("the payload has no field %q naming the currency; name it with currency: <field>", DefaultCurrency))
		}
		return err
	}
	if !cur.Type.has("string") {
		return sp.errorAt("currency", fmt.Sprintf("payload field %q is not a string; a currency code is", fld.Currency))
	}
	return nil
}

// parseTimes parses times, when the mapping has it: the payload path,
// relative like from, of the number an amount is multiplied by.
func (sc scope) parseTimes(sp spec, fld *Field) (err error) {
	if !sp.has("times") {
		return nil
	}
	var t node
	if fld.Times, t, err = sc.payloadField(sp, "times"); err != nil {
		return err
	}
	if !t.Type.has("number") && !t.Type.has("integer") || t.Type.has("string") {
		return sp.errorAt("times", fmt.Sprintf("payload field %q is not a number", fld.Times))
	}
	return nil
}

// parseDate parses date: local, when the mapping has it, of n, the
// payload field at from: a date-time string, rendered in the target's
// zone.
func (sc scope) parseDate(sp spec, fld *Field, n node) (err error) {
	if !sp.has("date") {
		return nil
	}
	if fld.Date, err = sp.transform("date", DateLocal); err != nil {
		return err
	}
	if sc.opts.Zone == nil {
		return sp.errorAt("date", "this target has no time zone for local dates")
	}
	fld.zone = sc.opts.Zone
	if !n.Type.has("string") {
		return sp.errorAt("date", fmt.Sprintf("payload field %q is not a string; a date-time is", fld.From))
	}
	return nil
}

// parseRow parses a tabular section, when the mapping has one ({from:
// items, row: {…}}): n, the payload field at from, is an array of
// objects, and row maps each of them, its paths relative to the row.
func (sc scope) parseRow(sp spec, fld *Field, n node) error {
	raw, ok := sp.keys["row"]
	if !ok {
		return nil
	}
	if !sc.opts.Rows {
		return sp.errorAt("row", "this target takes no tabular sections")
	}
	rows := n.Type.has("array") && len(n.Items) > 0
	if rows {
		items, ok := sc.s.resolve(n.Items)
		rows = ok && items.Type.has("object")
	}
	if !rows {
		return sp.errorAt("from", fmt.Sprintf("payload field %q is not an array of objects; a tabular section needs one", fld.From))
	}
	row, err := parseFields(raw, sp.path+".row", sc.s, n.Items, append(slices.Clone(sc.rowPath), fld.From), sc.opts)
	if err != nil {
		return err
	}
	fld.Row = row
	return nil
}

// payloadField decodes the payload path at key k, relative to within,
// and finds it in the schema.
func (sc scope) payloadField(sp spec, k string) (string, node, error) {
	path, err := sp.str(k)
	if err != nil {
		return "", node{}, err
	}
	n, err := lookup(sc.s, sc.within, path, sp.path+"."+k)
	return path, n, err
}

// has reports whether the mapping has key k.
func (sp spec) has(k string) bool {
	_, ok := sp.keys[k]
	return ok
}

// count is how many of keys the mapping has.
func (sp spec) count(keys ...string) int {
	n := 0
	for _, k := range keys {
		if sp.has(k) {
			n++
		}
	}
	return n
}

// first is the first of keys the mapping has.
func (sp spec) first(keys ...string) (string, bool) {
	for _, k := range keys {
		if sp.has(k) {
			return k, true
		}
	}
	return "", false
}

// str decodes the non-empty string at key k.
func (sp spec) str(k string) (string, error) {
	var v string
	if err := json.Unmarshal(sp.keys[k], &v); err != nil || v == "" {
		return "", sp.errorAt(k, "must be a non-empty string")
	}
	return v, nil
}

// transform decodes the transform at key k, refusing any but want.
func (sp spec) transform(k, want string) (string, error) {
	raw := sp.keys[k]
	var v string
	if err := json.Unmarshal(raw, &v); err != nil || v != want {
		return "", sp.errorAt(k, fmt.Sprintf("unknown transform %s (want %q)", bytes.TrimSpace(raw), want))
	}
	return v, nil
}

// errorAt is a refusal of the mapping's key k.
func (sp spec) errorAt(k, msg string) error {
	return &Error{Path: sp.path + "." + k, Msg: msg}
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
