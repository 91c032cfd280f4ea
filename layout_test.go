package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The layering of the packages: the journal and the adapters know nothing
// of the gateway or of each other, the pages know neither, and the
// gateway does not know the simulators (main wires them in); the MCP
// endpoint is an http.Handler over the API, without Echo, and the engine
// does not know Echo either.
func TestDependencyRules(t *testing.T) {
	t.Parallel()
	const mod = "github.com/oncegate/oncegate/"
	for _, rule := range []struct {
		pkg    string
		forbid []string
	}{
		{"store", []string{"server", "adapters"}},
		{"adapters/...", []string{"server", "store"}},
		{"views", []string{"store", "adapters", "server"}},
		{"server/...", []string{"adapters/sim"}},
		{"server/mcp", []string{"github.com/labstack/echo/v4"}},
		{"server/engine", []string{"github.com/labstack/echo/v4"}},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./"+rule.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", rule.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range rule.forbid {
				if !strings.Contains(f, ".") {
					f = mod + f
				}
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s, which it must not", rule.pkg, dep)
				}
			}
		}
	}
}
