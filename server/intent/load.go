package intent

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/config"
)

// builtinFiles are the seven built-in definitions, in the format of any
// other, and under builtin/<kind>/ the mappings shipped for the built-ins
// whose target instance is configured as a kind that needs one (onec_odata:
// Бухгалтерия предприятия 3.0's objects).
//
//go:embed builtin/*.yaml builtin/*/*.yaml
var builtinFiles embed.FS

// builtinOrder is the order of the built-ins in docs/api.md (Built-in intents), the order
// GET /v1/intents lists them in.
var builtinOrder = []string{
	"invoice.create", "sales_order.create_draft", "sales_order.get_status", "sales_order.post",
	"crm.callback.create", "payment.charge", "payment.refund",
}

// BuiltinTargets are the target instances the built-ins run at; they
// always exist in a configuration.
var BuiltinTargets = []string{"onec", "crm", "payments"}

// Options say what Load loads.
type Options struct {
	// Dir is the directory of the firm's definitions (intents_dir): every
	// *.yaml file in it, one intent version each. "" for none.
	Dir string
	// Builtins says which built-ins are served (builtin_intents): nil or
	// ["all"] all of them, ["none"] or an empty list none, otherwise the
	// names listed.
	Builtins []string
	// Targets are the configured target instances a definition may name.
	Targets []string
	// Kinds are the configured instances' kinds, by name. A built-in
	// whose instance is of a kind with a shipped mapping (a built-in 1C
	// intent at an instance of kind onec_odata) is loaded with it: its
	// file and the mapping make one definition, with one digest.
	Kinds map[string]string
	// Limits are the configuration's limits by intent name: each value
	// set there replaces the definitions' own.
	Limits map[string]config.IntentLimits
	// Duplicates are the configuration's duplicate rules by intent name:
	// each value set there replaces the definitions' own; action off
	// switches an intent's rule off.
	Duplicates map[string]config.DuplicateOverride
}

// Load reads, checks and compiles every definition Options name, strictly:
// any error in any file refuses the whole catalog, each error naming the
// file, the path inside it and what is wrong (several joined).
func Load(opts Options) (*Catalog, error) {
	keep, err := builtinsKept(opts.Builtins)
	if err != nil {
		return nil, err
	}
	var defs []*Intent
	var errs []error
	for _, name := range builtinOrder {
		if !keep(name) {
			continue
		}
		file := name + ".v1.yaml"
		raw, err := builtinFiles.ReadFile("builtin/" + file)
		if err != nil {
			return nil, fmt.Errorf("built-in intent %s: %w", name, err)
		}
		raw, file = withShippedMap(raw, file, opts.Kinds)
		def, ferrs := parse(BuiltIn+" "+file, raw, opts.Targets)
		errs = append(errs, ferrs...)
		if def != nil {
			def.Source = BuiltIn
			defs = append(defs, def)
		}
	}
	if opts.Dir != "" {
		files, err := definitionFiles(opts.Dir)
		if err != nil {
			return nil, err
		}
		for _, path := range files {
			raw, err := os.ReadFile(path)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
				continue
			}
			def, ferrs := parse(path, raw, opts.Targets)
			errs = append(errs, ferrs...)
			if def != nil {
				defs = append(defs, def)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c, err := newCatalog(defs)
	if err != nil {
		return nil, err
	}
	if err := c.checkProcesses(); err != nil {
		return nil, err
	}
	if err := c.override(opts.Limits); err != nil {
		return nil, err
	}
	if err := c.overrideDuplicates(opts.Duplicates); err != nil {
		return nil, err
	}
	return c, nil
}

// withShippedMap appends to a built-in's file the mapping shipped for
// the kind of its target instance, if there is one: the built-ins carry
// no map: key, so the two texts read as one definition.
func withShippedMap(raw []byte, file string, kinds map[string]string) ([]byte, string) {
	var head struct {
		Target string `yaml:"target"`
	}
	if yaml.Unmarshal(raw, &head) != nil || kinds[head.Target] == "" {
		return raw, file
	}
	kind := kinds[head.Target]
	m, err := builtinFiles.ReadFile("builtin/" + kind + "/" + file)
	if err != nil {
		return raw, file
	}
	out := append(slices.Clip(raw), '\n')
	return append(out, m...), file + " with " + kind + "/" + file
}

// Builtin is the catalog of the seven built-ins at the built-in target
// instances, for tests and tools; serve and check use Load. It panics if
// a built-in does not load: they are compiled in.
func Builtin() *Catalog {
	c, err := Load(Options{Targets: BuiltinTargets})
	if err != nil {
		panic("intent: " + err.Error())
	}
	return c
}

// builtinsKept reads builtin_intents.
func builtinsKept(list []string) (func(string) bool, error) {
	switch {
	case list == nil || len(list) == 1 && list[0] == "all":
		return func(string) bool { return true }, nil
	case len(list) == 0 || len(list) == 1 && list[0] == "none":
		return func(string) bool { return false }, nil
	}
	for _, name := range list {
		if !slices.Contains(builtinOrder, name) {
			return nil, fmt.Errorf("builtin_intents: %q is not a built-in intent (all, none, or names among %s)", name, strings.Join(builtinOrder, ", "))
		}
	}
	return func(name string) bool { return slices.Contains(list, name) }, nil
}

// definitionFiles are the *.yaml files in dir, by name.
func definitionFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("intents_dir %s: %w", dir, unwrapPath(err))
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".yaml") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// unwrapPath drops the path a *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Patterns of a definition's names.
var (
	namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
	kindPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	codePattern = regexp.MustCompile(`^[A-Z]{3}$`)
)

// maxNameLen bounds an intent's name, so every key naming it fits.
const maxNameLen = 100

// topKeys are a definition's top-level keys (docs/intents.md, A definition).
var topKeys = []string{"name", "version", "target", "scope", "money", "journaled", "title", "labels", "description",
	"schema", "references", "normalize", "limits", "duplicates", "map", "steps"}

// problems collects the errors of one file, each naming the file and path.
type problems struct {
	file string
	errs []error
}

func (p *problems) add(path, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s: %s: %s", p.file, path, fmt.Sprintf(format, args...)))
}

// parse reads one definition file; file names it in errors. It returns
// nil and the errors when there are any.
func parse(file string, raw []byte, targets []string) (*Intent, []error) {
	p := &problems{file: file}
	root, top := decodeTop(p, raw)
	if root == nil {
		return nil, p.errs
	}
	def := newIntent(file, raw, root)
	if top["steps"] != nil {
		return parseProcess(p, top, def)
	}

	// The facts.
	requireKeys(p, top, "name", "version", "target", "scope", "title", "description", "schema")
	decodeIdentity(p, top, def, targets)
	decodeJournaling(p, top, def)
	decodeWording(p, top, def)

	// The schema, then everything that names its fields.
	if sch := decodeSchema(p, top["schema"], def); sch != nil {
		def.fields = sch
		def.Labels = decodeLabels(p, top["labels"], sch)
		def.References = decodeReferences(p, top["references"], sch)
		def.Upper = decodeNormalize(p, top["normalize"], sch)
		def.Limits = decodeLimits(p, top["limits"], sch)
		def.Duplicates = decodeDuplicates(p, top["duplicates"], sch, def.shape)
	}
	def.Map = decodeMap(p, top["map"])
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return def, nil
}

// parseProcess reads a process definition: its name, wording and schema
// as any definition's, and its steps.
func parseProcess(p *problems, top map[string]*yaml.Node, def *Intent) (*Intent, []error) {
	requireKeys(p, top, "name", "version", "title", "description", "schema")
	decodeIdentity(p, top, def, nil)
	decodeWording(p, top, def)
	if sch := decodeSchema(p, top["schema"], def); sch != nil {
		def.fields = sch
		def.Labels = decodeLabels(p, top["labels"], sch)
	}
	decodeSteps(p, top, def)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return def, nil
}

// decodeTop decodes a definition's YAML: its root mapping, and the value
// of each known top-level key; an unknown key is a problem. The root is
// nil when the file is not a mapping at all.
func decodeTop(p *problems, raw []byte) (*yaml.Node, map[string]*yaml.Node) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s: not valid YAML: %s", p.file, strings.TrimPrefix(err.Error(), "yaml: ")))
		return nil, nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		p.add("(top)", "a definition is a mapping of the keys %s", strings.Join(topKeys, ", "))
		return nil, nil
	}
	top := map[string]*yaml.Node{}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i].Value
		if !slices.Contains(topKeys, k) {
			p.add(k, "unknown key (line %d); a definition has %s", root.Content[i].Line, strings.Join(topKeys, ", "))
			continue
		}
		top[k] = root.Content[i+1]
	}
	return root, top
}

// newIntent starts the definition read from file (raw, whose root mapping
// is root): its source and its digests, before any key is decoded.
//
// The digest covers what the definition means, not how it is told to
// people (title, labels, description) nor its duplicate rule, which
// decides only new keys: rewording a definition never strands an
// accepted key. Rows written before took the digest of the whole
// file but its rule, which still matches (Intent.Accepts).
func newIntent(file string, raw []byte, root *yaml.Node) *Intent {
	sum := sha256.Sum256(withoutKeys(raw, root, "title", "labels", "description", "duplicates"))
	whole := sha256.Sum256(withoutKeys(raw, root, "duplicates"))
	return &Intent{Source: file, Digest: hex.EncodeToString(sum[:]), fileDigest: hex.EncodeToString(whole[:]), Journaled: true}
}

// requireKeys refuses a definition that lacks any of keys.
func requireKeys(p *problems, top map[string]*yaml.Node, keys ...string) {
	for _, k := range keys {
		if top[k] == nil {
			p.add(k, "is required")
		}
	}
}

// decodeIdentity decodes what names the intent and where it goes: its
// name, version, target instance (one of targets) and scope.
func decodeIdentity(p *problems, top map[string]*yaml.Node, def *Intent, targets []string) {
	if n := top["name"]; n != nil {
		if err := n.Decode(&def.Name); err != nil || !namePattern.MatchString(def.Name) || len(def.Name) > maxNameLen {
			p.add("name", "%q must be dotted lower-case words (^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+$), at most %d characters, e.g. deal.create", n.Value, maxNameLen)
		}
	}
	if n := top["version"]; n != nil {
		if err := n.Decode(&def.Version); err != nil || def.Version < 1 || n.Tag != "!!int" {
			p.add("version", "%q must be a whole number from 1", n.Value)
		}
	}
	if n := top["target"]; n != nil {
		if err := n.Decode(&def.Target); err != nil || !slices.Contains(targets, def.Target) {
			known := slices.Clone(targets)
			sort.Strings(known)
			p.add("target", "%q is not a configured target instance (configured: %s)", n.Value, strings.Join(known, ", "))
		}
	}
	if n := top["scope"]; n != nil {
		if err := n.Decode(&def.Scope); err != nil || !slices.Contains(Scopes(), def.Scope) {
			p.add("scope", "%q is not a scope (%s)", n.Value, strings.Join(Scopes(), ", "))
		}
	}
}

// decodeJournaling decodes money and journaled: only a read may be left
// out of the journal, and never one that moves money.
func decodeJournaling(p *problems, top map[string]*yaml.Node, def *Intent) {
	decodeBool(p, top["money"], "money", &def.Money)
	decodeBool(p, top["journaled"], "journaled", &def.Journaled)
	if !def.Journaled && def.Scope != "" && def.Scope != ScopeRead {
		p.add("journaled", "only an intent of scope read may be left out of the journal: a write without a key could run twice")
	}
	if !def.Journaled && def.Money {
		p.add("journaled", "an intent that moves money is always journaled")
	}
}

// decodeWording decodes how the intent is told to people: its title and
// description.
func decodeWording(p *problems, top map[string]*yaml.Node, def *Intent) {
	if n := top["title"]; n != nil {
		def.Title = decodeText(p, n, "title")
	}
	if n := top["description"]; n != nil {
		if err := n.Decode(&def.Description); err != nil || n.Kind != yaml.ScalarNode || strings.TrimSpace(def.Description) == "" {
			p.add("description", "must be a non-empty text")
		}
	}
}

// decodeSchema checks the payload's schema n and, when the definition has
// no problem so far, compiles it into def. It returns the schema's fields
// for the keys that name them, or nil when there is no schema to name.
func decodeSchema(p *problems, n *yaml.Node, def *Intent) *schemaFields {
	if n == nil {
		return nil
	}
	sch := checkSchema(p, n)
	if sch != nil && len(p.errs) == 0 {
		raw, err := toJSON(n)
		if err != nil {
			p.add("schema", "%v", err)
		} else if compiled, sh, err := compileSchema(def.Name+".v"+strconv.Itoa(def.Version), raw); err != nil {
			p.add("schema", "does not compile as JSON Schema 2020-12: %v", err)
		} else {
			def.Schema, def.compiled, def.shape = raw, compiled, sh
		}
	}
	return sch
}

// decodeMap decodes the mapping to the target, map, as JSON: the target
// parses it against the schema when it is given its intents.
func decodeMap(p *problems, n *yaml.Node) json.RawMessage {
	if n == nil {
		return nil
	}
	raw, err := toJSON(n)
	if err != nil {
		p.add("map", "%v", err)
	}
	return raw
}

// decodeBool decodes an optional boolean.
func decodeBool(p *problems, n *yaml.Node, path string, dst *bool) {
	if n == nil {
		return
	}
	if n.Tag != "!!bool" || n.Decode(dst) != nil {
		p.add(path, "%q must be true or false", n.Value)
	}
}

// decodeText decodes {ru: …, en: …}, both required.
func decodeText(p *problems, n *yaml.Node, path string) Text {
	var t Text
	if !onlyKeys(p, n, path, "ru", "en") {
		return t
	}
	if err := n.Decode(&t); err != nil {
		p.add(path, "must be {ru: text, en: text}")
		return t
	}
	if strings.TrimSpace(t.RU) == "" || strings.TrimSpace(t.EN) == "" {
		p.add(path, "needs both ru and en, each a non-empty text")
	}
	return t
}

// onlyKeys reports whether n is a mapping of no keys but allowed,
// noting what is not.
func onlyKeys(p *problems, n *yaml.Node, path string, allowed ...string) bool {
	if n.Kind != yaml.MappingNode {
		p.add(path, "must be a mapping of %s", strings.Join(allowed, ", "))
		return false
	}
	ok := true
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; !slices.Contains(allowed, k) {
			p.add(path+"."+k, "unknown key (want %s)", strings.Join(allowed, ", "))
			ok = false
		}
	}
	return ok
}

// mapping is the key/value pairs of a mapping node, in order.
func mapping(n *yaml.Node) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
	}
	return out
}

// decodeLabels reads labels: every top-level payload field needs one;
// nested fields (items.product_id) may have one.
func decodeLabels(p *problems, n *yaml.Node, sch *schemaFields) []Label {
	var out []Label
	if n != nil {
		if n.Kind != yaml.MappingNode {
			p.add("labels", "must be a mapping of payload field → {ru: text, en: text}")
			return nil
		}
		for _, kv := range mapping(n) {
			path := kv[0].Value
			if _, ok := sch.types[path]; !ok {
				p.add("labels."+path, "the schema has no field %s", path)
				continue
			}
			out = append(out, Label{Field: path, Text: decodeText(p, kv[1], "labels."+path)})
		}
	}
	for _, f := range sch.top {
		if !slices.ContainsFunc(out, func(l Label) bool { return l.Field == f }) {
			p.add("labels", "field %s has no label: every payload field needs {ru: …, en: …}", f)
		}
	}
	return out
}

// decodeReferences reads references: string fields and their kinds.
func decodeReferences(p *problems, n *yaml.Node, sch *schemaFields) map[string]string {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add("references", "must be a mapping of payload field → kind of external id")
		return nil
	}
	out := map[string]string{}
	for _, kv := range mapping(n) {
		path, kind := kv[0].Value, kv[1].Value
		switch t, ok := sch.types[path]; {
		case !ok:
			p.add("references."+path, "the schema has no field %s", path)
		case t != "string":
			p.add("references."+path, "an external id is a string field; %s is %s", path, t)
		case kv[1].Kind != yaml.ScalarNode || !kindPattern.MatchString(kind):
			p.add("references."+path, "%q must be the kind of external id in lower case, e.g. customer", kind)
		default:
			out[path] = kind
		}
	}
	return out
}

// decodeNormalize reads normalize: {upper: [fields]}, top-level strings.
func decodeNormalize(p *problems, n *yaml.Node, sch *schemaFields) []string {
	if n == nil || !onlyKeys(p, n, "normalize", "upper") {
		return nil
	}
	var v struct {
		Upper []string `yaml:"upper"`
	}
	if err := n.Decode(&v); err != nil {
		p.add("normalize.upper", "must be a list of top-level string fields")
		return nil
	}
	for _, f := range v.Upper {
		if !sch.topOf(f, "string") {
			p.add("normalize.upper", "%s is not a top-level string field of the schema", f)
		}
	}
	return v.Upper
}

// limitKeys are the keys of limits.
var limitKeys = []string{"currency_field", "currencies", "amount_field", "amount_ceiling", "items_field", "max_items",
	"quantity_field", "max_quantity", "unit_field", "units", "price_field"}

// decodeLimits reads limits, each value checked with the field it
// applies to.
func decodeLimits(p *problems, n *yaml.Node, sch *schemaFields) Limits {
	var l Limits
	if n == nil || !onlyKeys(p, n, "limits", limitKeys...) {
		return l
	}
	if err := n.Decode(&l); err != nil {
		p.add("limits", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return l
	}
	field := func(key, f string, ok bool, what string) {
		if f != "" && !ok {
			p.add("limits."+key, "%s is not %s of the schema", f, what)
		}
	}
	field("currency_field", l.CurrencyField, sch.topOf(l.CurrencyField, "string"), "a top-level string field")
	field("amount_field", l.AmountField, sch.topOf(l.AmountField, "integer"), "a top-level integer field")
	field("items_field", l.ItemsField, sch.topOf(l.ItemsField, "array") && sch.types[l.ItemsField+"[]"] == "object", "a top-level array of objects")
	def := func(f, t string) bool { return l.ItemsField != "" && sch.types[l.ItemsField+"."+f] == t }
	field("quantity_field", l.QuantityField, def(l.QuantityField, "number") || def(l.QuantityField, "integer"), "a number field of each of items_field's lines")
	field("unit_field", l.UnitField, def(l.UnitField, "string"), "a string field of each of items_field's lines")
	field("price_field", l.PriceField, def(l.PriceField, "integer"), "an integer field of each of items_field's lines")
	needs := func(key string, set bool, on string, onSet bool) {
		if set && !onSet {
			p.add("limits."+key, "needs %s: the field it applies to", on)
		}
	}
	needs("currencies", len(l.Currencies) > 0, "currency_field", l.CurrencyField != "")
	needs("amount_ceiling", len(l.AmountCeiling) > 0, "currency_field", l.CurrencyField != "")
	needs("amount_ceiling", len(l.AmountCeiling) > 0, "amount_field, or price_field and quantity_field", l.AmountField != "" || l.PriceField != "" && l.QuantityField != "")
	needs("max_items", l.MaxItems != 0, "items_field", l.ItemsField != "")
	needs("max_quantity", l.MaxQuantity != 0, "quantity_field", l.QuantityField != "")
	needs("units", len(l.Units) > 0, "unit_field", l.UnitField != "")
	needs("price_field", l.PriceField != "", "quantity_field", l.QuantityField != "")
	if l.MaxItems < 0 || l.MaxQuantity < 0 {
		p.add("limits", "max_items and max_quantity must not be negative")
	}
	for _, cur := range l.Currencies {
		if _, ok := adapters.MinorDigits(cur); !ok || !codePattern.MatchString(cur) {
			p.add("limits.currencies", "%q is not an upper-case ISO 4217 currency code", cur)
		}
	}
	for cur, v := range l.AmountCeiling {
		if _, ok := adapters.MinorDigits(cur); !ok || !codePattern.MatchString(cur) {
			p.add("limits.amount_ceiling."+cur, "is not an upper-case ISO 4217 currency code")
		}
		if v <= 0 {
			p.add("limits.amount_ceiling."+cur, "must be positive")
		}
	}
	return l
}
