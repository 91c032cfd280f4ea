package config

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SourceEvents are the events each kind of target sends, in its own
// names: what a rule's on: may name. The adapters' EventSource.Events
// answer the same lists (checked by the root package's tests).
var SourceEvents = map[string][]string{
	KindYooKassa: {"payment.waiting_for_capture", "payment.succeeded", "payment.canceled", "refund.succeeded"},
	KindBitrix24: {"ONCRMDEALADD", "ONCRMDEALUPDATE", "ONCRMLEADADD", "ONCRMLEADUPDATE",
		"ONCRMCONTACTADD", "ONCRMCONTACTUPDATE", "ONCRMCOMPANYADD", "ONCRMCOMPANYUPDATE"},
}

// EventRule is one rule of events: a source's event that runs a declared
// intent or process, its payload mapped from the object as the source
// answers a read of it (docs/events.md).
type EventRule struct {
	// Source names a target instance of a kind that sends events.
	Source string
	// On is the source's event.
	On string
	// Run is the intent or process the event runs.
	Run string
	// When are conditions on the object read back, each a path and the
	// text its value must be: a notice whose object does not meet them is
	// dropped and runs nothing.
	When []EventCondition
	// Payload maps each field of the run's payload.
	Payload []EventField
	// Line is the rule's line in the configuration file.
	Line int
}

// EventCondition is one of a rule's when: conditions.
type EventCondition struct {
	Path, Equals string
	Line         int
}

// EventField is where one field of a rule's payload comes from: Event, a
// path into the object read back (object.amount.value), or Value, a
// constant.
type EventField struct {
	Name  string
	Event string
	// Money "decimal" reads a decimal amount in major units ("1250.00")
	// into minor units (125000), by the digits of the currency at
	// Currency (a path; by default the sibling currency of Event's).
	Money    string
	Currency string
	Value    any
	Line     int
}

// The forms of money: an event field may take.
const MoneyDecimal = "decimal"

// eventRuleKeys and eventFieldKeys are the keys a rule and a payload
// field may have.
var (
	eventRuleKeys  = []string{"source", "on", "run", "when", "payload"}
	eventFieldKeys = []string{"event", "money", "currency", "value"}
)

// UnmarshalYAML reads a rule, keeping its lines and refusing keys it does
// not know.
func (r *EventRule) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: an event rule is a mapping of %s", n.Line, strings.Join(eventRuleKeys, ", "))
	}
	r.Line = n.Line
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "source":
			err = v.Decode(&r.Source)
		case "on":
			err = v.Decode(&r.On)
		case "run":
			err = v.Decode(&r.Run)
		case "when":
			err = r.decodeWhen(v)
		case "payload":
			err = r.decodePayload(v)
		default:
			return fmt.Errorf("line %d: %q is not a key of an event rule (%s)", k.Line, k.Value, strings.Join(eventRuleKeys, ", "))
		}
		if err != nil {
			return fmt.Errorf("line %d: %s: %s", v.Line, k.Value, strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	return nil
}

func (r *EventRule) decodeWhen(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("a mapping of object paths to the text each must be")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s: the text the value must be", k.Value)
		}
		r.When = append(r.When, EventCondition{Path: k.Value, Equals: v.Value, Line: k.Line})
	}
	return nil
}

func (r *EventRule) decodePayload(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("a mapping of the run's payload fields to where each comes from")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := EventField{Name: k.Value, Line: k.Line}
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: say where it comes from: {event: object.…} or {value: …}", k.Value)
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			fk, fv := v.Content[j], v.Content[j+1]
			var err error
			switch fk.Value {
			case "event":
				err = fv.Decode(&f.Event)
			case "money":
				err = fv.Decode(&f.Money)
			case "currency":
				err = fv.Decode(&f.Currency)
			case "value":
				err = fv.Decode(&f.Value)
			default:
				return fmt.Errorf("%s: %q is not a key of a payload field (%s)", k.Value, fk.Value, strings.Join(eventFieldKeys, ", "))
			}
			if err != nil {
				return fmt.Errorf("%s.%s: %s", k.Value, fk.Value, strings.TrimPrefix(err.Error(), "yaml: "))
			}
		}
		r.Payload = append(r.Payload, f)
	}
	return nil
}

// validateEvents checks each rule against the targets: a source that
// sends events, an event it sends, a run named, payload fields each from
// one place, one rule per source, event and run. What the run is and
// whether the mapping fills its payload is the catalog's to check
// (intent.Catalog.CheckEvents).
func (c Config) validateEvents(bad func(key, format string, args ...any)) {
	seen := map[string]bool{}
	for i, r := range c.Events {
		key := fmt.Sprintf("events[%d]", i)
		at := c.line(r.Line)
		t := c.Targets[r.Source]
		switch {
		case r.Source == "":
			bad(key+".source", "name the target instance that sends the event"+at)
		case t == nil:
			bad(key+".source", "%q is no target instance of this configuration (%s)%s", r.Source, strings.Join(c.Targets.Names(), ", "), at)
		case SourceEvents[t.Kind] == nil:
			bad(key+".source", "%q is a target of kind %s, which sends no events; sources are yookassa and bitrix24 instances%s", r.Source, t.Kind, at)
		case !slices.Contains(SourceEvents[t.Kind], r.On):
			bad(key+".on", "%q is no event a %s source sends (%s)%s", r.On, t.Kind, strings.Join(SourceEvents[t.Kind], ", "), at)
		case t.Kind == KindBitrix24 && !t.Simulated() && t.ApplicationTokenEnv == "":
			bad(t.Setting("application_token_env"), "not set; the portal's events carry its application token, which the gateway checks: name the variable holding it%s", at)
		}
		if r.Run == "" {
			bad(key+".run", "name the intent or process the event runs"+at)
		}
		if id := r.Source + " " + r.On + " " + r.Run; seen[id] {
			bad(key, "a second rule runs %s on %s's %s: one event runs an intent once, so merge the two%s", r.Run, r.Source, r.On, at)
		} else {
			seen[id] = true
		}
		for _, w := range r.When {
			if !strings.HasPrefix(w.Path, "object.") {
				bad(key+".when."+w.Path, "a path into the object as the source answers it, starting object.%s", c.line(w.Line))
			}
		}
		for _, f := range r.Payload {
			fkey, fat := key+".payload."+f.Name, c.line(f.Line)
			switch {
			case (f.Event == "") == (f.Value == nil):
				bad(fkey, "say where it comes from: exactly one of event: (a path into the object read back) and value: (a constant)"+fat)
			case f.Event != "" && !strings.HasPrefix(f.Event, "object."):
				bad(fkey+".event", "%q: a path into the object as the source answers it, starting object.%s", f.Event, fat)
			case f.Money != "" && f.Money != MoneyDecimal:
				bad(fkey+".money", "%q: the one form is decimal (\"1250.00\" in major units, into minor units)%s", f.Money, fat)
			case f.Money != "" && f.Event == "":
				bad(fkey+".money", "reads an event: path; a value: is given as it is"+fat)
			case f.Currency != "" && f.Money == "":
				bad(fkey+".currency", "is the currency of a money: decimal field"+fat)
			case f.Currency != "" && !strings.HasPrefix(f.Currency, "object."):
				bad(fkey+".currency", "%q: a path into the object as the source answers it, starting object.%s", f.Currency, fat)
			}
		}
	}
	for _, name := range c.Targets.Names() {
		t := c.Targets[name]
		checkEnv(bad, t.Setting("application_token_env"), t.ApplicationTokenEnv)
		for _, cidr := range t.NoticesFrom {
			if _, err := parseNet(cidr); err != nil {
				bad(t.Setting("notices_from"), "%s", err)
			}
		}
	}
}

// NoticeNets parses a target's notices_from: nil when any address may
// send its notices.
func (t *Target) NoticeNets() ([]*net.IPNet, error) {
	var out []*net.IPNet
	for _, s := range t.NoticesFrom {
		n, err := parseNet(s)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// line names a line of the configuration file in a message.
func (c Config) line(n int) string {
	if c.file == "" {
		return fmt.Sprintf(" (line %d)", n)
	}
	return fmt.Sprintf(" (%s line %d)", c.file, n)
}

// File is the configuration file it was loaded from, "" for none.
func (c Config) File() string { return c.file }
