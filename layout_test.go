package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The layering of the packages: the journal and the adapters know nothing
// of the gateway or of each other (the journal speaks only the catalogue
// of codes, a leaf of the adapters' tree), the pages know neither, and the
// gateway does not know the simulators; the HTTP server knows no concrete
// adapter either (main builds the targets and hands them over). The MCP
// endpoint is an http.Handler over the API, without Echo, and the engine
// does not know Echo either. The configuration is data: it knows neither
// the server, the engine, Echo nor the journal.
//
// A forbidden import path ending in /... forbids the package and every
// package below it, as in go list; one without forbids that package alone
// (the server, but not server/config or server/contract).
func TestDependencyRules(t *testing.T) {
	t.Parallel()
	const mod = "github.com/oncegate/oncegate/"
	const echo = "github.com/labstack/echo/v4/..."
	concreteAdapters := []string{"adapters/onec/...", "adapters/bitrix24/...", "adapters/yookassa/...", "adapters/sim/..."}
	for _, rule := range []struct {
		pkg    string
		forbid []string
	}{
		// The catalogue of codes, adapters/codes, is the one package of the
		// adapters' tree the journal speaks: a leaf that imports nothing.
		{"store", append([]string{"server/...", "adapters"}, concreteAdapters...)},
		{"adapters/codes", []string{"adapters", "server/...", "store/...", "views/..."}},
		// The redaction, adapters/redact, is a leaf too: the targets name
		// their secrets with it, and every output masks them through it.
		{"adapters/redact", []string{"adapters", "server/...", "store/...", "views/..."}},
		// The mappings of declared intents, adapters/mapping, are a leaf as
		// well: each kind's adapter parses its part of a definition with it.
		{"adapters/mapping", append([]string{"adapters", "adapters/redact", "server/...", "store/...", "views/..."}, concreteAdapters...)},
		// Adapters are given declared intents as plain Bindings: they import
		// neither the catalog that loads them nor the contract.
		{"adapters/...", []string{"server/...", "store/...", "server/intent/...", "server/contract/..."}},
		{"views", []string{"store/...", "adapters/...", "server/..."}},
		{"server/...", []string{"adapters/sim/..."}},
		{"server", concreteAdapters},
		{"server/mcp", []string{echo}},
		{"server/engine", []string{echo}},
		{"server/config", append([]string{"server", "server/engine/...", echo, "store/..."}, concreteAdapters...)},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./"+rule.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", rule.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range rule.forbid {
				if host, _, _ := strings.Cut(f, "/"); !strings.Contains(host, ".") {
					f = mod + f // a path in this module
				}
				tree, below := strings.CutSuffix(f, "/...")
				if dep == tree || below && strings.HasPrefix(dep, tree+"/") {
					t.Errorf("%s depends on %s, which it must not", rule.pkg, dep)
				}
			}
		}
	}
}
