package adapters

import "encoding/json"

// Binding is one declared intent as the target that serves it sees it:
// plain data, so adapters never import the catalog that loaded it. A
// target is given the bindings of every intent that names it before the
// gateway serves, and refuses the ones it cannot carry out.
type Binding struct {
	// Intent is the intent's name, e.g. "deal.create".
	Intent string
	// Version is the definition's version; versions may be served side
	// by side, each with its own mapping.
	Version int
	// Schema is the payload's JSON Schema (2020-12), already checked by
	// the catalog: every object closed, every string and array bounded.
	Schema json.RawMessage
	// References maps payload fields holding external ids to their kind
	// ("customer", "product"); the target resolves them before any write.
	References map[string]string
	// Map is the definition's target-specific part (its `map:` key) as
	// JSON; only the kind's adapter reads it. Nil when the definition has
	// none (a built-in the adapter knows by name).
	Map json.RawMessage
}

// Binder is a target that serves declared intents. Bind is called once,
// before serving, with every binding of the target; an error names the
// intent, the path inside its mapping and what is wrong, and the gateway
// refuses to start. Execute, Lookup and the checks then find an
// operation's binding by Op.Intent and Op.Version.
type Binder interface {
	Bind(bindings []Binding) error
}
