package intent

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/config"
	"github.com/oncegate/oncegate/server/contract"
)

// Catalog is the loaded whitelist: every definition, and for each name
// the version agents are served. It does not change once loaded, so it is
// safe for concurrent use.
type Catalog struct {
	defs    []*Intent // every definition: the built-ins in builtinOrder, then the files by name
	served  []*Intent // the newest version of each name, in the order names first appear
	byName  map[string]*Intent
	version map[nameVersion]*Intent
}

type nameVersion struct {
	name    string
	version int
}

// newCatalog indexes defs, refusing two definitions of one name and version.
func newCatalog(defs []*Intent) (*Catalog, error) {
	c := &Catalog{defs: defs, byName: map[string]*Intent{}, version: map[nameVersion]*Intent{}}
	var errs []error
	for _, def := range defs {
		k := nameVersion{def.Name, def.Version}
		if other, dup := c.version[k]; dup {
			errs = append(errs, fmt.Errorf("%s: name: %s version %d is also defined by %s: one file per intent version", def.Source, def.Name, def.Version, other.Source))
			continue
		}
		if cur, ok := c.byName[def.Name]; ok && cur.IsProcess() != def.IsProcess() {
			errs = append(errs, fmt.Errorf("%s: name: %s is both a process here and an intent in %s: give the process a name of its own", def.Source, def.Name, cur.Source))
			continue
		}
		c.version[k] = def
		if cur, ok := c.byName[def.Name]; !ok {
			c.served = append(c.served, def)
			c.byName[def.Name] = def
		} else if def.Version > cur.Version {
			c.served[slices.Index(c.served, cur)] = def
			c.byName[def.Name] = def
		}
	}
	return c, errors.Join(errs...)
}

// override applies the configuration's limits: every value set there
// replaces the definitions' own, for every version of the intent.
func (c *Catalog) override(limits map[string]config.IntentLimits) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		o := limits[name]
		found := false
		for _, def := range c.defs {
			if def.Name != name {
				continue
			}
			found = true
			l := &def.Limits
			if o.MaxItems != 0 {
				l.MaxItems = o.MaxItems
			}
			if o.MaxQuantity != 0 {
				l.MaxQuantity = o.MaxQuantity
			}
			if o.Currencies != nil {
				l.Currencies = slices.Clone(o.Currencies)
			}
			if o.Units != nil {
				l.Units = slices.Clone(o.Units)
			}
			if o.AmountCeiling != nil {
				l.AmountCeiling = maps.Clone(o.AmountCeiling)
			}
			for key, set := range map[string]bool{
				"currency_field": l.CurrencyField == "" && (len(o.Currencies) > 0 || len(o.AmountCeiling) > 0),
				"items_field":    l.ItemsField == "" && o.MaxItems != 0,
				"quantity_field": l.QuantityField == "" && o.MaxQuantity != 0,
				"unit_field":     l.UnitField == "" && len(o.Units) > 0,
				"amount_field":   l.AmountField == "" && l.PriceField == "" && len(o.AmountCeiling) > 0,
			} {
				if set {
					errs = append(errs, fmt.Errorf("config: limits.%s: the definition (%s) declares no %s for this limit to apply to", name, def.Source, key))
				}
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("config: limits.%s: no such intent", name))
		}
	}
	return errors.Join(errs...)
}

// All returns the served intents: the newest version of each name, the
// built-ins first in the order of docs/api.md's Built-in intents. The
// slice is the caller's own. Processes are not among them (Processes).
func (c *Catalog) All() []*Intent { return intentsOf(c.served, false) }

// Definitions returns every loaded intent definition, every version of
// each name; processes are not among them (Processes).
func (c *Catalog) Definitions() []*Intent { return intentsOf(c.defs, false) }

// Offered returns what agents are offered: the served intents (All),
// then the served version of each process.
func (c *Catalog) Offered() []*Intent {
	return append(c.All(), intentsOf(c.served, true)...)
}

// Processes returns every loaded process definition, every version of
// each name.
func (c *Catalog) Processes() []*Intent { return intentsOf(c.defs, true) }

// intentsOf are the definitions of defs that are processes, or are not.
func intentsOf(defs []*Intent, processes bool) []*Intent {
	var out []*Intent
	for _, def := range defs {
		if def.IsProcess() == processes {
			out = append(out, def)
		}
	}
	return out
}

// Lookup finds the served version of an intent by its exact name.
func (c *Catalog) Lookup(name string) (*Intent, bool) {
	def, ok := c.byName[name]
	if !ok || def.IsProcess() {
		return nil, false
	}
	return def, true
}

// Process finds the served version of a process by its exact name.
func (c *Catalog) Process(name string) (*Intent, bool) {
	def, ok := c.byName[name]
	if !ok || !def.IsProcess() {
		return nil, false
	}
	return def, true
}

// Version finds one version of an intent or a process.
func (c *Catalog) Version(name string, version int) (*Intent, bool) {
	def, ok := c.version[nameVersion{name, version}]
	return def, ok
}

// Names are the served intents' names, in All's order.
func (c *Catalog) Names() []string {
	var out []string
	for _, def := range c.All() {
		out = append(out, def.Name)
	}
	return out
}

// NotAllowed is the refusal of an intent name the catalog does not serve.
func (c *Catalog) NotAllowed(name string) *codes.Refusal {
	return contract.ErrIntentNotAllowed(name, c.Names())
}

// Targets are the target instances the definitions name, sorted.
func (c *Catalog) Targets() []string {
	var out []string
	for _, def := range c.Definitions() {
		if !slices.Contains(out, def.Target) {
			out = append(out, def.Target)
		}
	}
	sort.Strings(out)
	return out
}

// Title is the people's name of the intent name in lang, or the name
// itself when the catalog does not serve it.
func (c *Catalog) Title(name, lang string) string {
	if def, ok := c.byName[name]; ok {
		return def.Title.In(lang)
	}
	return name
}

// Binding is the definition as its target sees it.
func (def *Intent) Binding() adapters.Binding {
	return adapters.Binding{
		Intent: def.Name, Version: def.Version, Schema: def.SchemaCopy(),
		References: maps.Clone(def.References), Map: slices.Clone(def.Map),
	}
}

// Bind gives each target that serves declared intents (adapters.Binder)
// the bindings of every definition naming it, before the gateway serves.
// A definition with a map at a target that takes none, or any target's
// refusal, is an error naming the target, and the file and line of each
// definition it refuses (located); the gateway does not start.
func (c *Catalog) Bind(targets map[string]adapters.Target) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(targets)) {
		var bindings []adapters.Binding
		for _, def := range c.defs {
			if def.Target == name {
				bindings = append(bindings, def.Binding())
			}
		}
		b, ok := targets[name].(adapters.Binder)
		if !ok {
			for _, def := range c.defs {
				if def.Target == name && def.Source != BuiltIn {
					errs = append(errs, fmt.Errorf("%s: target: the target %s serves only its built-in intents, not declared ones", def.Source, name))
				}
			}
			continue
		}
		if err := b.Bind(bindings); err != nil {
			var files []*Intent
			for _, def := range c.defs {
				if def.Target == name && def.Source != BuiltIn {
					files = append(files, def)
				}
			}
			if where := located(b, files); len(where) > 0 {
				errs = append(errs, fmt.Errorf("target %s refused its intents:\n  %s", name, strings.Join(where, "\n  ")))
				continue
			}
			errs = append(errs, fmt.Errorf("target %s refused its intents: %s", name, indent(err.Error())))
		}
	}
	return errors.Join(errs...)
}

// indent puts each line of a multi-line error after the first on its own
// indented line.
func indent(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	return "\n  " + strings.ReplaceAll(s, "\n", "\n  ")
}
