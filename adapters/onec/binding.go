package onec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/oncegate/oncegate/adapters"
	"github.com/oncegate/oncegate/adapters/codes"
)

// builtins are the intents the reference module serves by their own
// names. An operation of one of them that is bound to its own name is
// sent, checked and classified exactly as before there were bindings.
var builtins = map[string]bool{
	"invoice.create":           true,
	"sales_order.create_draft": true,
	"sales_order.get_status":   true,
	"sales_order.post":         true,
}

// orderStatusIntent is the built-in read served by GET /sales-orders/{id}
// rather than through the key register.
const orderStatusIntent = "sales_order.get_status"

// routePattern is what the 1C service routes by: an intent name.
var routePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)

// maxRoute is the length of the key register's ТипОперации dimension
// (Строка 50), which holds the route name of every operation.
const maxRoute = 50

// BindError is a declared intent this target cannot serve: the intent and
// version, the path inside its definition and what is wrong.
type BindError struct {
	Intent  string
	Version int
	// Path is where in the definition, e.g. "map.intent".
	Path string
	Msg  string
}

// Error implements error.
func (e *BindError) Error() string {
	return fmt.Sprintf("%s v%d: %s: %s", e.Intent, e.Version, e.Path, e.Msg)
}

// bindKey is a definition: an intent name and version.
type bindKey struct {
	intent  string
	version int
}

// route is how an operation reaches the 1C service.
type route struct {
	// name is the intent the service routes by: the request's "intent",
	// the look-up's intent parameter and the register's ТипОперации.
	name string
	// declared is a route the firm added to its module (not a built-in
	// served by its own name): a service that does not publish it is
	// misconfigured, not refusing the operation.
	declared bool
}

// Bind implements adapters.Binder. A binding's mapping is optional and
// holds one key, intent: the name the firm's 1C service routes the
// operation by (default: the definition's name), an intent name of at most
// 50 characters. Every binding is checked; the errors (*BindError, joined)
// name each refused one. Bind replaces the bindings of an earlier call.
func (c *Client) Bind(bindings []adapters.Binding) error {
	routes := make(map[bindKey]route, len(bindings))
	var errs []error
	for _, b := range bindings {
		k := bindKey{b.Intent, version(b.Version)}
		if _, twice := routes[k]; twice {
			errs = append(errs, &BindError{Intent: b.Intent, Version: k.version, Path: "version", Msg: "bound twice to this target"})
			continue
		}
		name, err := routeName(b)
		if err != nil {
			err.Intent, err.Version = b.Intent, k.version
			errs = append(errs, err)
			continue
		}
		routes[k] = route{name: name, declared: !(builtins[b.Intent] && name == b.Intent)}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.mu.Lock()
	c.routes = routes
	c.mu.Unlock()
	return nil
}

// routeName reads a binding's mapping: {intent: <route name>} or nothing.
func routeName(b adapters.Binding) (string, *BindError) {
	name, path := b.Intent, "name"
	if raw := bytes.TrimSpace(b.Map); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return "", &BindError{Path: "map", Msg: "must be a mapping with one key, intent (the name the 1C service routes by)"}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if k != "intent" {
				return "", &BindError{Path: "map." + k, Msg: "unknown key for kind onec"}
			}
		}
		if v, ok := m["intent"]; ok {
			if err := json.Unmarshal(v, &name); err != nil {
				return "", &BindError{Path: "map.intent", Msg: "must be a string, the name the 1C service routes by"}
			}
			path = "map.intent"
		}
	}
	switch {
	case !routePattern.MatchString(name):
		return "", &BindError{Path: path, Msg: fmt.Sprintf("%q is not an intent name (%s)", name, routePattern)}
	case utf8.RuneCountInString(name) > maxRoute:
		msg := fmt.Sprintf("is longer than %d characters, the length of ТипОперации in 1C's key register", maxRoute)
		if path == "name" {
			msg += "; name a shorter route in map.intent"
		}
		return "", &BindError{Path: path, Msg: msg}
	}
	return name, nil
}

// version is a definition's version; 0 (a journal from before versions)
// is version 1.
func version(v int) int { return max(v, 1) }

// route finds how op reaches the service: its binding's route, or, for an
// intent never bound, its own name as a built-in.
func (c *Client) route(op adapters.Op) route {
	c.mu.RLock()
	r, ok := c.routes[bindKey{op.Intent, version(op.Version)}]
	c.mu.RUnlock()
	if !ok {
		return route{name: op.Intent}
	}
	return r
}

// boundRoutes lists the distinct routes bound, sorted by name.
func (c *Client) boundRoutes() []route {
	c.mu.RLock()
	defer c.mu.RUnlock()
	seen := map[string]bool{}
	var out []route
	for _, r := range c.routes {
		if !seen[r.name] {
			seen[r.name] = true
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b route) int { return strings.Compare(a.name, b.name) })
	return out
}

// DeclaredRoutes are the route names of the firm's own intents bound to
// this target: the handlers its 1C module must have, sorted.
func (c *Client) DeclaredRoutes() []string {
	var out []string
	for _, r := range c.boundRoutes() {
		if r.declared {
			out = append(out, r.name)
		}
	}
	return out
}

// notPublished is a declared route the service refused as unpublished:
// the firm's module lacks its handler. Nothing was done, and adding the
// handler lets the same key go through (adapters.Misconfigured).
func (c *Client) notPublished(r route, cause error) *adapters.Error {
	return adapters.Misconfigured(codes.TargetNotPublished,
		"the 1C HTTP service does not publish the intent "+r.name+"; add its handler to the routing table of the service's module", cause)
}
