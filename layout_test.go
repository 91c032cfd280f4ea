package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
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

// The journal's two backends sit behind one seam in the store: only the
// store talks to a SQL driver, and inside it only the backend's own files
// (sqlite*.go, postgres*.go) and the one interpreter of driver errors
// (errors.go) import one. The backend is the store's business: no
// exported name of the store shows it, and no file but the backends'
// names a concrete one.
func TestJournalSeam(t *testing.T) {
	t.Parallel()
	drivers := []string{"modernc.org/sqlite", "github.com/jackc/pgx", "github.com/golang-migrate/migrate/v4/database"}
	isDriver := func(path string) bool {
		for _, d := range drivers {
			if path == d || strings.HasPrefix(path, d+"/") {
				return true
			}
		}
		return false
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/oncegate/oncegate"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg == mod+"/store" || strings.HasPrefix(pkg, mod+"/store/") {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if isDriver(imp) {
				t.Errorf("%s imports the SQL driver %s: only the store talks to the journal's database", pkg, imp)
			}
		}
	}

	files, err := filepath.Glob("store/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		name := filepath.Base(file)
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		backendFile := strings.HasPrefix(name, "sqlite") || strings.HasPrefix(name, "postgres")
		for _, imp := range f.Imports {
			if p := strings.Trim(imp.Path.Value, `"`); isDriver(p) && !backendFile && name != "errors.go" {
				t.Errorf("store/%s imports the SQL driver %s: what differs between the backends belongs in sqlite.go or postgres.go", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && !backendFile && (id.Name == "sqliteBackend" || id.Name == "postgresBackend") {
				t.Errorf("store/%s names %s: only the backend's own file knows which backend it is", name, id.Name)
			}
			return true
		})
		for _, decl := range f.Decls {
			var exported []ast.Node
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() {
					exported = append(exported, d.Type)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						if st, ok := ts.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									if n.IsExported() {
										exported = append(exported, field.Type)
									}
								}
							}
						}
					}
				}
			}
			for _, node := range exported {
				ast.Inspect(node, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok && strings.Contains(strings.ToLower(id.Name), "backend") {
						t.Errorf("store/%s: an exported name shows the store's backend (%s); it is unexported", name, id.Name)
					}
					return true
				})
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

// The binary carries the IANA zone database (time/tzdata): a Windows
// server has none Go can read, and the configured time zones of 1C bases
// and portals must load there too.
func TestBinaryCarriesZoneDatabase(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !slices.Contains(strings.Fields(string(out)), "time/tzdata") {
		t.Fatal("the binary does not embed time/tzdata: time_zone: Europe/Moscow would not load on Windows")
	}
}

// One way to set up a test: the three built-in targets are built for
// tests in one place, adapterstest.Start (serve builds them in
// targets.go), and the helpers tests of several packages share are
// defined once, in a test-support package, not again under their own
// names in each.
func TestOneTestSetUp(t *testing.T) {
	t.Parallel()
	builders := map[string]bool{
		"targets.go": true, filepath.FromSlash("adapters/adapterstest/adapterstest.go"): true,
		"e2e_chaos_test.go": true, // look-up clients at the binary's own simulators, which it starts with its own shop
	}
	shared := map[string]string{
		"writeConfig": "configtest.Write", "noEnv": "configtest.NoEnv",
		"classified": "adapterstest.WantError", "mustError": "adapterstest.WantError", "wantError": "adapterstest.WantError", "wantCode": "adapterstest.WantError",
		"simTargets": "adapterstest.Start", "builtTargets": "adapterstest.Start", "invoicePayload": "adapterstest.InvoicePayload",
	}
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
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			if use := shared[fn.Name.Name]; use != "" && fn.Recv == nil && strings.HasSuffix(path, "_test.go") {
				t.Errorf("%s defines %s: tests share %s", path, fn.Name.Name, use)
			}
			built := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" {
					if x, ok := sel.X.(*ast.Ident); ok {
						built[x.Name] = true
					}
				}
				return true
			})
			if built["onec"] && built["bitrix24"] && built["yookassa"] && !builders[path] {
				t.Errorf("%s: %s builds the three targets; tests build them with adapterstest.Start", path, fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
