package intent

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A process is a definition with steps: each step an ordinary operation
// of a declared or built-in intent, run in order, its payload mapped from
// the process payload and from what earlier steps made, and each but the
// last naming what undoes it (docs/processes.md).

// What undoes a step (Compensation.Kind).
const (
	// CompensateIntent: an intent of its own, with its payload.
	CompensateIntent = "intent"
	// CompensateNone: the effect stays, and that is right.
	CompensateNone = "none"
	// CompensateManual: a person undoes it; the process waits for them.
	CompensateManual = "manual"
)

// The fields of a completed step a mapping may read.
const (
	// StepObjectID is the id of the object the step made at its target.
	StepObjectID = "target_object_id"
	// stepResult prefixes a member of the step's result: result.number.
	stepResult = "result."
)

// Step is one step of a process.
type Step struct {
	Name string
	// Intent names the step's intent; the process runs its served
	// (newest) version.
	Intent  string
	Payload []Field
	// Compensate says what undoes the step should a later one fail for
	// good.
	Compensate Compensation
	line       int // of the step's payload key
}

// Compensation is what undoes a step.
type Compensation struct {
	Kind    string // CompensateIntent, CompensateNone or CompensateManual
	Intent  string // for CompensateIntent
	Payload []Field
	line    int // of its payload key, or compensate's
}

// Field is where one member of a step's payload comes from: exactly one
// of From, Value, Step (with StepField) and Template is set.
type Field struct {
	Name string
	// From is a field path of the process payload.
	From string
	// Value is a constant, as JSON.
	Value json.RawMessage
	// Step names a completed earlier step (or, in a compensation, the
	// step it undoes); StepField is StepObjectID or result.NAME.
	Step, StepField string
	// Template is a text with {field} (the process payload's top-level
	// field) and {steps.NAME.target_object_id | steps.NAME.result.FIELD}
	// filled in.
	Template string
	line     int
}

// processKeys are a process definition's top-level keys.
var processKeys = []string{"name", "version", "title", "labels", "description", "schema", "steps"}

// stepName is the form of a step's name.
var stepName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// placeholder is one {…} of a template.
var placeholder = regexp.MustCompile(`\{([^{}]*)\}`)

// IsProcess reports whether the definition is a process.
func (def *Intent) IsProcess() bool { return def.Steps != nil }

// Needs are the scopes a token needs for the definition: its scope, or
// every scope of a process's steps.
func (def *Intent) Needs() []string {
	if def.IsProcess() {
		return def.StepScopes
	}
	return []string{def.Scope}
}

// StepIntents are a process's steps' intents, in order.
func (def *Intent) StepIntents() []string {
	out := make([]string, len(def.Steps))
	for i, s := range def.Steps {
		out[i] = s.Intent
	}
	return out
}

// decodeSteps reads a process's steps as written; what they name is
// checked once every definition is loaded (checkProcess).
func decodeSteps(p *problems, top map[string]*yaml.Node, def *Intent) {
	for _, k := range topKeys {
		if top[k] != nil && !slices.Contains(processKeys, k) {
			p.add(k, "a process has no %s of its own: each of its steps' intents has its own (a process has %s)", k, strings.Join(processKeys, ", "))
		}
	}
	n := top["steps"]
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		p.add("steps", "must be a list of steps, each {name, intent, payload, compensate} (line %d)", n.Line)
		def.Steps = []Step{}
		return
	}
	if len(n.Content) > maxSteps {
		p.add("steps", "a process has at most %d steps (line %d)", maxSteps, n.Line)
	}
	for i, sn := range n.Content {
		at := "steps[" + strconv.Itoa(i) + "]"
		s := Step{line: sn.Line}
		if l := keyLine(sn, "payload"); l != 0 {
			s.line = l
		}
		if !onlyKeys(p, sn, at, "name", "intent", "payload", "compensate") {
			continue
		}
		for _, kv := range mapping(sn) {
			switch kv[0].Value {
			case "name":
				s.Name = kv[1].Value
				if kv[1].Kind != yaml.ScalarNode || !stepName.MatchString(s.Name) {
					p.add(at+".name", "%q must be a lower-case word of at most 32 letters, digits and _ (line %d)", s.Name, kv[1].Line)
				} else if slices.ContainsFunc(def.Steps, func(o Step) bool { return o.Name == s.Name }) {
					p.add(at+".name", "%q names an earlier step too; each step has its own name (line %d)", s.Name, kv[1].Line)
				}
			case "intent":
				s.Intent = kv[1].Value
			case "payload":
				s.Payload = decodeFields(p, kv[1], at+".payload")
			case "compensate":
				s.Compensate = decodeCompensation(p, kv[1], at+".compensate")
			}
		}
		for _, k := range []string{"name", "intent", "payload"} {
			if keyword(sn, k) == nil {
				p.add(at+"."+k, "is required (line %d)", sn.Line)
			}
		}
		if keyword(sn, "compensate") == nil && i < len(n.Content)-1 {
			p.add(at+".compensate", "every step but the last says what undoes it: an intent with its payload, none (the effect stays) or manual (a person undoes it) (line %d)", sn.Line)
		}
		if s.Compensate.Kind == "" {
			s.Compensate.Kind = CompensateNone
		}
		def.Steps = append(def.Steps, s)
	}
}

// keyLine is the line of key in the mapping n, 0 without it.
func keyLine(n *yaml.Node, key string) int {
	for _, kv := range mapping(n) {
		if kv[0].Value == key {
			return kv[0].Line
		}
	}
	return 0
}

// maxSteps bounds a process.
const maxSteps = 20

// decodeCompensation reads compensate: none | manual | {intent, payload}.
func decodeCompensation(p *problems, n *yaml.Node, at string) Compensation {
	if n.Kind == yaml.ScalarNode && (n.Value == CompensateNone || n.Value == CompensateManual) {
		return Compensation{Kind: n.Value}
	}
	if n.Kind != yaml.MappingNode {
		p.add(at, "must be none, manual or {intent: NAME, payload: {…}} (line %d)", n.Line)
		return Compensation{}
	}
	c := Compensation{Kind: CompensateIntent, line: n.Line}
	if !onlyKeys(p, n, at, "intent", "payload") {
		return c
	}
	if in := keyword(n, "intent"); in == nil {
		p.add(at+".intent", "is required (line %d)", n.Line)
	} else {
		c.Intent = in.Value
	}
	if pl := keyword(n, "payload"); pl != nil {
		c.Payload, c.line = decodeFields(p, pl, at+".payload"), keyLine(n, "payload")
	}
	return c
}

// decodeFields reads a step's payload mapping: field → {from | value |
// step+field | template}.
func decodeFields(p *problems, n *yaml.Node, at string) []Field {
	if n.Kind != yaml.MappingNode {
		p.add(at, "must be a mapping of the step's payload fields, each {from: FIELD}, {value: …}, {step: NAME, field: …} or {template: \"…\"} (line %d)", n.Line)
		return nil
	}
	var out []Field
	for _, kv := range mapping(n) {
		f := Field{Name: kv[0].Value, line: kv[0].Line}
		fat := at + "." + f.Name
		src := kv[1]
		if src.Kind != yaml.MappingNode || len(src.Content) == 0 {
			p.add(fat, "must be {from: FIELD}, {value: …}, {step: NAME, field: …} or {template: \"…\"} (line %d)", src.Line)
			continue
		}
		keys := map[string]*yaml.Node{}
		for _, skv := range mapping(src) {
			keys[skv[0].Value] = skv[1]
		}
		switch {
		case len(keys) == 1 && keys["from"] != nil:
			f.From = keys["from"].Value
		case len(keys) == 1 && keys["value"] != nil:
			raw, err := toJSON(keys["value"])
			if err != nil {
				p.add(fat+".value", "%v (line %d)", err, src.Line)
			}
			f.Value = raw
		case len(keys) == 1 && keys["template"] != nil:
			f.Template = keys["template"].Value
		case len(keys) == 2 && keys["step"] != nil && keys["field"] != nil:
			f.Step, f.StepField = keys["step"].Value, keys["field"].Value
			if f.StepField != StepObjectID && !validResultField(f.StepField) {
				p.add(fat+".field", "%q is none of %s and result.FIELD (line %d)", f.StepField, StepObjectID, src.Line)
			}
		default:
			p.add(fat, "must be exactly one of {from: FIELD}, {value: …}, {step: NAME, field: …} and {template: \"…\"} (line %d)", src.Line)
			continue
		}
		out = append(out, f)
	}
	return out
}

// validResultField reports whether f is result.NAME.
func validResultField(f string) bool {
	name, ok := strings.CutPrefix(f, stepResult)
	return ok && memberPattern.MatchString(name)
}

// checkProcesses checks what every process names, against the whole
// catalog: step and compensation intents exist and are no processes, each
// mapping fills every required field of its intent's payload with a value
// of the field's type, and names only earlier steps.
func (c *Catalog) checkProcesses() error {
	var errs []error
	for _, def := range c.defs {
		if !def.IsProcess() {
			continue
		}
		p := &problems{file: def.Source}
		scopes := map[string]bool{}
		money := false
		for i, s := range def.Steps {
			at := "steps[" + strconv.Itoa(i) + "]"
			earlier := func(name string) bool {
				return slices.ContainsFunc(def.Steps[:i], func(o Step) bool { return o.Name == name })
			}
			if in := c.stepIntent(p, s.Intent, at+".intent", s.line); in != nil {
				scopes[in.Scope], money = true, money || in.Money
				checkFields(p, def, in, s.Payload, at+".payload", earlier, s.line)
			}
			if s.Compensate.Kind != CompensateIntent {
				continue
			}
			self := func(name string) bool { return name == s.Name || earlier(name) }
			if in := c.stepIntent(p, s.Compensate.Intent, at+".compensate.intent", s.line); in != nil {
				scopes[in.Scope] = true
				checkFields(p, def, in, s.Compensate.Payload, at+".compensate.payload", self, s.Compensate.line)
			}
		}
		for _, sc := range Scopes() {
			if scopes[sc] {
				def.StepScopes = append(def.StepScopes, sc)
			}
		}
		def.Money = money
		errs = append(errs, p.errs...)
	}
	return errors.Join(errs...)
}

// stepIntent is the served intent a step names, or nil with the problem
// noted.
func (c *Catalog) stepIntent(p *problems, name, at string, line int) *Intent {
	in, ok := c.byName[name]
	switch {
	case !ok:
		p.add(at, "%q is not an intent of this gateway (served: %s) (line %d)", name, strings.Join(c.Names(), ", "), line)
		return nil
	case in.IsProcess():
		p.add(at, "%q is a process; a process's step is an intent, not another process (line %d)", name, line)
		return nil
	case !in.Journaled:
		p.add(at, "%q only reads, and is not journaled; a step is an operation with an effect (line %d)", name, line)
		return nil
	}
	return in
}

// checkFields checks a step's (or compensation's) payload mapping
// against the intent in it runs: every field is the intent's, every
// required one is filled, each from a source of its type; steps names
// the steps a {step: …} may read.
func checkFields(p *problems, proc, in *Intent, fields []Field, at string, steps func(string) bool, line int) {
	for _, f := range fields {
		fat := at + "." + f.Name
		want, ok := in.fields.types[f.Name]
		if !slices.Contains(in.fields.top, f.Name) || !ok {
			p.add(fat, "%s has no payload field %s (it has %s) (line %d)", in.Name, f.Name, strings.Join(in.fields.top, ", "), f.line)
			continue
		}
		switch {
		case f.From != "":
			got, ok := proc.fields.types[f.From]
			switch {
			case !ok:
				p.add(fat+".from", "the process's schema has no field %s (line %d)", f.From, f.line)
			case !assignable(got, want):
				p.add(fat+".from", "%s is of type %s, and %s.%s of type %s (line %d)", f.From, got, in.Name, f.Name, want, f.line)
			case slices.Contains(in.shape.required, f.Name) && !slices.Contains(proc.shape.required, f.From):
				p.add(fat+".from", "%s is required by %s but %s is optional in the process's payload: require it there, or fill it otherwise (line %d)", f.Name, in.Name, f.From, f.line)
			default:
				checkMembers(p, proc.fields, in.fields, f.From, f.Name, fat, f.line)
			}
		case f.Value != nil:
			if got := jsonType(f.Value); !assignable(got, want) {
				p.add(fat+".value", "a %s, and %s.%s is of type %s (line %d)", got, in.Name, f.Name, want, f.line)
			}
		case f.Step != "":
			if !steps(f.Step) {
				p.add(fat+".step", "%q is no earlier step of this process (line %d)", f.Step, f.line)
			} else if f.StepField == StepObjectID && want != "string" {
				p.add(fat+".field", "%s is a text, and %s.%s is of type %s (line %d)", StepObjectID, in.Name, f.Name, want, f.line)
			}
		default:
			if want != "string" {
				p.add(fat+".template", "a template makes a text, and %s.%s is of type %s (line %d)", in.Name, f.Name, want, f.line)
			}
			checkTemplate(p, proc, f.Template, fat+".template", steps, f.line)
		}
	}
	for _, r := range in.shape.required {
		if !slices.ContainsFunc(fields, func(f Field) bool { return f.Name == r }) {
			p.add(at, "leaves %s's required field %s unfilled (line %d)", in.Name, r, line)
		}
	}
}

// checkMembers checks that the members of the process field from (an
// object, or an array of objects) fit those of the step's field to.
func checkMembers(p *problems, src, dst *schemaFields, from, to, at string, line int) {
	for path, t := range src.types {
		rest, ok := strings.CutPrefix(path, from+".")
		if !ok {
			if rest, ok = strings.CutPrefix(path, from+"[]"); !ok {
				continue
			}
			rest = "[]" + rest
		}
		full := to + "." + rest
		if strings.HasPrefix(rest, "[]") {
			full = to + rest
		}
		if dt, ok := dst.types[full]; !ok {
			p.add(at+".from", "%s.%s has no counterpart %s in the step's payload (line %d)", from, rest, full, line)
		} else if !assignable(t, dt) {
			p.add(at+".from", "%s.%s is of type %s, and %s of type %s (line %d)", from, rest, t, full, dt, line)
		}
	}
}

// checkTemplate checks a template's placeholders.
func checkTemplate(p *problems, proc *Intent, tpl, at string, steps func(string) bool, line int) {
	for _, m := range placeholder.FindAllStringSubmatch(tpl, -1) {
		ref := m[1]
		if rest, ok := strings.CutPrefix(ref, "steps."); ok {
			name, field, _ := strings.Cut(rest, ".")
			if !steps(name) {
				p.add(at, "{%s}: %q is no earlier step of this process (line %d)", ref, name, line)
			} else if field != StepObjectID && !validResultField(field) {
				p.add(at, "{%s}: a step's %q is none of %s and result.FIELD (line %d)", ref, field, StepObjectID, line)
			}
			continue
		}
		if !slices.Contains(proc.fields.top, ref) {
			p.add(at, "{%s} is no top-level field of the process's payload, nor steps.NAME.… (line %d)", ref, line)
		}
	}
}

// assignable reports whether a value of type got fits a field of type want.
func assignable(got, want string) bool {
	return got == want || got == "integer" && want == "number"
}

// jsonType is the schema type of a JSON value.
func jsonType(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) && !strings.ContainsAny(string(raw), ".eE") {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// Made is what a completed step made: the id of its object at its
// target and its result, as a mapping reads them.
type Made struct {
	ObjectID string
	Result   map[string]any
}

// Fill makes the payload of a step (or a compensation) from its mapping
// fields: the process's normalized payload, and what the completed steps
// made, by name. The step's intent validates what it gets as it would an
// agent's payload.
func Fill(fields []Field, payload map[string]any, made map[string]Made) (map[string]any, error) {
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		switch {
		case f.From != "":
			if v, ok := lookupPath(payload, f.From); ok {
				out[f.Name] = v
			}
		case f.Value != nil:
			var v any
			if err := json.Unmarshal(f.Value, &v); err != nil {
				return nil, err
			}
			out[f.Name] = v
		case f.Step != "":
			v, err := madeField(made, f.Step, f.StepField)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			out[f.Name] = v
		default:
			var err error
			text := placeholder.ReplaceAllStringFunc(f.Template, func(m string) string {
				ref := m[1 : len(m)-1]
				if rest, ok := strings.CutPrefix(ref, "steps."); ok {
					name, field, _ := strings.Cut(rest, ".")
					v, ferr := madeField(made, name, field)
					if ferr != nil && err == nil {
						err = fmt.Errorf("%s: %w", f.Name, ferr)
					}
					return fmt.Sprint(v)
				}
				v := payload[ref]
				if v == nil {
					return ""
				}
				return fmt.Sprint(v)
			})
			if err != nil {
				return nil, err
			}
			out[f.Name] = text
		}
	}
	return out, nil
}

// madeField is field (target_object_id or result.NAME) of the step name
// made.
func madeField(made map[string]Made, name, field string) (any, error) {
	m, ok := made[name]
	if !ok {
		return nil, fmt.Errorf("step %s has made nothing yet", name)
	}
	if field == StepObjectID {
		if m.ObjectID == "" {
			return nil, fmt.Errorf("step %s made no object with an id", name)
		}
		return m.ObjectID, nil
	}
	member := strings.TrimPrefix(field, stepResult)
	v, ok := m.Result[member]
	if !ok {
		return nil, fmt.Errorf("step %s's result has no %s", name, member)
	}
	return v, nil
}

// lookupPath is the value at a dotted path of a decoded payload.
func lookupPath(v map[string]any, path string) (any, bool) {
	var cur any = v
	for part := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}
