package intent

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/server/config"
)

// EventRule is a rule of events: checked against the catalog, with the
// definition it runs.
type EventRule struct {
	config.EventRule
	// Def is the served (newest) version of the intent or process the
	// rule runs.
	Def *Intent
	// Scopes are the rights its operation runs under: the intent's scope,
	// or a process's steps'.
	Scopes []string
}

// CheckEvents checks each rule of events against the catalog: it runs an
// intent or process this gateway serves that has an effect, and its
// mapping names only fields of the run's payload, fills every required
// one, reads money into an integer field and gives constants of the
// field's type. Errors name the file and line. It returns the rules with
// their definitions.
func (c *Catalog) CheckEvents(rules []config.EventRule, file string) ([]*EventRule, error) {
	var (
		out  []*EventRule
		errs []error
	)
	for i, r := range rules {
		p := &problems{file: file}
		at := "events[" + strconv.Itoa(i) + "]"
		def, ok := c.byName[r.Run]
		switch {
		case !ok:
			p.add(at+".run", "%q is not an intent or process of this gateway (served: %s) (line %d)", r.Run, strings.Join(c.Names(), ", "), r.Line)
		case !def.IsProcess() && !def.Journaled:
			p.add(at+".run", "%q only reads, and is not journaled; an event runs an operation with an effect (line %d)", r.Run, r.Line)
		default:
			checkEventFields(p, def, r.Payload, at+".payload", r.Line)
		}
		if len(p.errs) > 0 {
			errs = append(errs, p.errs...)
			continue
		}
		scopes := def.StepScopes
		if !def.IsProcess() {
			scopes = []string{def.Scope}
		}
		out = append(out, &EventRule{EventRule: r, Def: def, Scopes: scopes})
	}
	return out, errors.Join(errs...)
}

// checkEventFields checks a rule's payload mapping against the
// definition it runs.
func checkEventFields(p *problems, def *Intent, fields []config.EventField, at string, line int) {
	for _, f := range fields {
		fat := at + "." + f.Name
		want, ok := def.fields.types[f.Name]
		if !slices.Contains(def.fields.top, f.Name) || !ok {
			p.add(fat, "%s has no payload field %s (it has %s) (line %d)", def.Name, f.Name, strings.Join(def.fields.top, ", "), f.Line)
			continue
		}
		switch {
		case f.Money != "" && want != "integer":
			p.add(fat+".money", "money: decimal makes whole minor units, and %s.%s is of type %s (line %d)", def.Name, f.Name, want, f.Line)
		case f.Value != nil:
			raw, _ := json.Marshal(f.Value)
			if got := jsonType(raw); !assignable(got, want) {
				p.add(fat+".value", "a %s, and %s.%s is of type %s (line %d)", got, def.Name, f.Name, want, f.Line)
			}
		}
	}
	for _, r := range def.shape.required {
		if !slices.ContainsFunc(fields, func(f config.EventField) bool { return f.Name == r }) {
			p.add(at, "leaves %s's required field %s unfilled (line %d)", def.Name, r, line)
		}
	}
}

// Unmet says which of the rule's when: conditions the object read back
// does not meet, "" when it meets them all.
func (r *EventRule) Unmet(object map[string]any) string {
	root := map[string]any{"object": object}
	for _, w := range r.When {
		v, ok := lookupPath(root, w.Path)
		if !ok {
			return fmt.Sprintf("%s is not in what the source answered; the rule wants %q", w.Path, w.Equals)
		}
		if got := text(v); got != w.Equals {
			return fmt.Sprintf("%s is %q; the rule wants %q", w.Path, got, w.Equals)
		}
	}
	return ""
}

// Map makes the run's payload from the object as the source answered it.
// A value the source sends as text fills a number field when it reads as
// one (Bitrix24 sends its ids and amounts as text), and a number fills a
// text field as its digits; the run's schema checks the rest, as it would
// an agent's payload.
func (r *EventRule) Map(object map[string]any) (map[string]any, error) {
	root := map[string]any{"object": object}
	out := make(map[string]any, len(r.Payload))
	for _, f := range r.Payload {
		if f.Value != nil {
			out[f.Name] = f.Value
			continue
		}
		v, ok := lookupPath(root, f.Event)
		if !ok || v == nil {
			if slices.Contains(r.Def.shape.required, f.Name) {
				return nil, fmt.Errorf("%s: %s is not in what the source answered", f.Name, f.Event)
			}
			continue
		}
		if f.Money == config.MoneyDecimal {
			minor, err := r.minorUnits(root, f, v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			out[f.Name] = minor
			continue
		}
		out[f.Name] = fitted(v, r.Def.fields.types[f.Name])
	}
	return out, nil
}

// decimal is an amount in major units as sources write it: "1250.00".
var decimal = regexp.MustCompile(`^(-?)([0-9]+)(?:\.([0-9]+))?$`)

// minorUnits reads the decimal amount v of field f in minor units, by the
// digits of its currency.
func (r *EventRule) minorUnits(root map[string]any, f config.EventField, v any) (int64, error) {
	curPath := f.Currency
	if curPath == "" {
		curPath = f.Event[:strings.LastIndex(f.Event, ".")+1] + "currency"
	}
	cur, ok := lookupPath(root, curPath)
	if !ok {
		return 0, fmt.Errorf("%s, the currency of %s, is not in what the source answered; name it with currency:", curPath, f.Event)
	}
	code := strings.ToUpper(text(cur))
	digits, ok := adapters.MinorDigits(code)
	if !ok {
		return 0, fmt.Errorf("%s is %q, which is no currency the gateway knows", curPath, code)
	}
	s := text(v)
	m := decimal.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%s is %q, which is no decimal amount", f.Event, s)
	}
	frac := m[3]
	if len(frac) > digits {
		if strings.Trim(frac[digits:], "0") != "" {
			return 0, fmt.Errorf("%s is %q, finer than %s's %d decimals", f.Event, s, code, digits)
		}
		frac = frac[:digits]
	}
	frac += strings.Repeat("0", digits-len(frac))
	n, err := strconv.ParseInt(m[2]+frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is %q, too large an amount", f.Event, s)
	}
	if m[1] == "-" {
		n = -n
	}
	return n, nil
}

// text is a value read back as the text it says.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// fitted is v for a field of type want: a number written as text read as
// the number, a number as its digits for a text field; anything else as
// it is, for the schema to judge.
func fitted(v any, want string) any {
	switch want {
	case "integer", "number":
		s, ok := v.(string)
		if !ok {
			return v
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
		if want == "number" {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f
			}
		}
	case "string":
		switch v.(type) {
		case json.Number, float64:
			return text(v)
		}
	}
	return v
}
