package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
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
// targets.go), and a test helper is defined once: no two helpers of the
// tests (in _test.go files and the test-support packages, such as
// adapters/adapterstest, store/storetest and server/config/configtest)
// have the same body, whatever their names. Bodies are compared as code,
// comments and layout aside; a body of a couple of statements is an
// idiom, not a helper, and may recur.
func TestOneTestSetUp(t *testing.T) {
	t.Parallel()
	builders := map[string]bool{
		"targets.go": true, filepath.FromSlash("adapters/adapterstest/adapterstest.go"): true,
		"e2e_chaos_test.go": true, // look-up clients at the binary's own simulators, which it starts with its own shop
	}
	helpers, err := testHelpers(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range sameBodies(helpers) {
		var names []string
		for _, h := range group {
			names = append(names, h.where)
		}
		t.Errorf("test helpers with one body: %s; define it once (a test-support package if several packages need it)", strings.Join(names, ", "))
	}
	fset := token.NewFileSet()
	err = walkGo(".", func(path string) error {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
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

// The check of one helper per body finds a helper defined twice under
// two names, in two packages, and leaves short bodies and tests alone.
func TestOneTestSetUpFindsDuplicates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	helper := `
// waitReady polls url until it answers 200.
func %s(t *testing.T, url string) {
	t.Helper()
	for range 100 {
		if resp, err := http.Get(url); err == nil && resp.StatusCode == 200 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%%s never became ready", url)
}
`
	short := "\nfunc %s(t *testing.T) string { t.Helper(); return t.TempDir() }\n"
	test := "\nfunc %s(t *testing.T) {\n\tt.Parallel()\n\tt.Log(1)\n\tt.Log(2)\n}\n"
	files := map[string]string{
		"a/a_test.go":            "package a\n" + fmt.Sprintf(helper, "waitReady") + fmt.Sprintf(short, "dirA") + fmt.Sprintf(test, "TestA"),
		"b/btest/btest.go":       "package btest\n" + fmt.Sprintf(strings.Replace(helper, "\tt.Helper()\n", "\tt.Helper() // a comment of its own\n\n", 1), "WaitUp") + fmt.Sprintf(short, "dirB"),
		"c/c_test.go":            "package c\n" + fmt.Sprintf(test, "TestA"),
		"d/d.go":                 "package d\n" + fmt.Sprintf(helper, "notATest"),
		"e/etest/etest_x.go":     "package etest\n" + fmt.Sprintf(strings.Replace(helper, "100", "200", 1), "waitLonger"),
		"node_modules/x_test.go": "package x\n" + fmt.Sprintf(helper, "vendored"),
	}
	for name, src := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	helpers, err := testHelpers(dir)
	if err != nil {
		t.Fatal(err)
	}
	groups := sameBodies(helpers)
	if len(groups) != 1 || len(groups[0]) != 2 ||
		groups[0][0].where != filepath.FromSlash("a/a_test.go")+": waitReady" || groups[0][1].where != filepath.FromSlash("b/btest/btest.go")+": WaitUp" {
		t.Fatalf("found %+v, want waitReady and WaitUp alone", groups)
	}
}

// helper is a function of the tests' and its body, printed as code.
type helper struct {
	where string // file: name
	body  string
}

// testHelpers returns the helpers of the tests under root: the functions
// but tests, benchmarks, fuzz tests and examples of its _test.go files
// and of its test-support packages (a directory named *test), with more
// than two statements, each with its body printed without comments and
// with its layout normalised.
func testHelpers(root string) ([]helper, error) {
	var helpers []helper
	fset := token.NewFileSet()
	err := walkGo(root, func(path string) error {
		rel, _ := filepath.Rel(root, path)
		if !strings.HasSuffix(path, "_test.go") && !strings.HasSuffix(filepath.Base(filepath.Dir(path)), "test") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0) // without comments
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || len(fn.Body.List) <= 2 || fn.Name.Name == "TestMain" {
				continue
			}
			if strings.HasSuffix(path, "_test.go") && fn.Recv == nil && isTestFunc(fn.Name.Name) {
				continue
			}
			var b strings.Builder
			if err := printer.Fprint(&b, token.NewFileSet(), fn.Body); err != nil {
				return err
			}
			where := rel + ": " + fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				var recv strings.Builder
				printer.Fprint(&recv, token.NewFileSet(), fn.Recv.List[0].Type)
				where = rel + ": (" + recv.String() + ")." + fn.Name.Name
			}
			helpers = append(helpers, helper{where: where, body: strings.Join(strings.Fields(b.String()), " ")})
		}
		return nil
	})
	return helpers, err
}

// isTestFunc reports whether name is that of a test, benchmark, fuzz
// test or example, which go test runs rather than a test calls.
func isTestFunc(name string) bool {
	for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if rest, ok := strings.CutPrefix(name, prefix); ok && (rest == "" || !unicode.IsLower([]rune(rest)[0])) {
			return true
		}
	}
	return false
}

// sameBodies groups the helpers with one body, in the order found.
func sameBodies(helpers []helper) [][]helper {
	byBody := map[string][]helper{}
	var order []string
	for _, h := range helpers {
		if byBody[h.body] == nil {
			order = append(order, h.body)
		}
		byBody[h.body] = append(byBody[h.body], h)
	}
	var groups [][]helper
	for _, body := range order {
		if len(byBody[body]) > 1 {
			groups = append(groups, byBody[body])
		}
	}
	return groups
}

// walkGo calls fn with the path of every .go file under root, in lexical
// order, leaving out hidden directories and node_modules.
func walkGo(root string, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		return fn(path)
	})
}
