package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
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

// TestOneRefusal: a refused request has one shape, codes.Refusal, beside
// the catalogue of codes, and one way to an answer, server/errors.go,
// which alone reads a refusal's HTTP status (for HTTP and MCP alike). No
// other type carries a code and a message for an agent, except those named
// here with why.
func TestOneRefusal(t *testing.T) {
	t.Parallel()
	allowed := map[string]string{
		"adapters.Error":       "a target call's classified failure: the engine decides from its class",
		"server.ErrorItem":     "the JSON of one error in an answer, which the table renders",
		"engine.Warning":       "a warning an answer carries; it refuses nothing",
		"store.Failure":        "what the journal records of a failed operation; its answer is the row's",
		"onecodata.odataError": "1C's OData error body, read off the wire",
		"sim.onecError":        "the 1C simulator's error body, written to the wire",
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				st, ok := n.Type.(*ast.StructType)
				if !ok || dir == "adapters/codes" {
					return true
				}
				fields := map[string]bool{}
				for _, fl := range st.Fields.List {
					for _, name := range fl.Names {
						fields[name.Name] = true
					}
				}
				name := f.Name.Name + "." + n.Name.Name
				seen[name] = true
				if fields["Code"] && fields["Message"] && allowed[name] == "" {
					t.Errorf("%s: %s carries a code and a message; a refusal is a *codes.Refusal", path, name)
				}
			case *ast.SelectorExpr:
				if n.Sel.Name == "HTTPStatus" && path != filepath.FromSlash("server/errors.go") && dir != "adapters/codes" {
					t.Errorf("%s reads a refusal's HTTP status; only server/errors.go renders refusals", fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range allowed {
		if !seen[name] {
			t.Errorf("%s is allowed to carry a code and a message but no longer exists", name)
		}
	}
}
