package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCommandsShareNothingSideways: the root reads as main.go (main and
// the list of commands), commands.go (the framework), a cmd_*.go per
// command, and files named for what several commands share (journal.go,
// catalog.go, probe.go, …). A command's file uses the framework and the
// shared files, never another command's: no cmd_*.go uses a name that
// another command's file declares, and no shared file reaches up into a
// command's (main.go alone names them, in the list). Each command has
// its files, cmd_NAME.go and cmd_NAME_*.go (bench's per-platform parts),
// which declare that command alone (with its subcommands, "user add", …).
//
// Every file but the tests counts, whatever its build constraints, so a
// Windows file sharing a name sideways is caught on Linux too. A use is
// an identifier the parser leaves unresolved in its file (a package-level
// name of another file), or a selector naming an unexported method or
// field that only other commands' files declare.
func TestCommandsShareNothingSideways(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// command is the command a file belongs to, "" for a shared file.
	command := func(file string) string {
		rest, ok := strings.CutPrefix(strings.TrimSuffix(file, ".go"), "cmd_")
		if !ok {
			return ""
		}
		name, _, _ := strings.Cut(rest, "_")
		return name
	}
	type decl struct{ file, kind string }
	names := map[string]decl{}     // package-level names declared in a command's file
	members := map[string][]decl{} // methods and fields, wherever declared
	topLevel := map[string]bool{}  // package-level names of every file
	parsed := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[file] = f
		declare := func(n *ast.Ident, kind string) {
			topLevel[n.Name] = true
			if command(file) != "" {
				names[n.Name] = decl{file, kind}
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					members[d.Name.Name] = append(members[d.Name.Name], decl{file, "method"})
				} else {
					declare(d.Name, "func")
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declare(s.Name, "type")
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declare(n, d.Tok.String())
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var fields *ast.FieldList
			kind := "field"
			switch n := n.(type) {
			case *ast.StructType:
				fields = n.Fields
			case *ast.InterfaceType:
				fields, kind = n.Methods, "method"
			default:
				return true
			}
			for _, fl := range fields.List {
				for _, name := range fl.Names {
					members[name.Name] = append(members[name.Name], decl{file, kind})
				}
			}
			return true
		})
	}
	// elsewhere is the declaration of a method or field name when every
	// one is in another command's files. Only unexported names are told
	// apart without type-checking: no other package's member can have one.
	elsewhere := func(name, own string) (decl, bool) {
		ds := members[name]
		if len(ds) == 0 || ast.IsExported(name) {
			return decl{}, false
		}
		for _, d := range ds {
			if c := command(d.file); c == "" || c == own {
				return decl{}, false
			}
		}
		return ds[0], true
	}

	for _, file := range slices.Sorted(maps.Keys(parsed)) {
		if file == "main.go" {
			continue // the list of commands
		}
		f, own := parsed[file], command(file)
		used := map[string]decl{}
		for _, id := range f.Unresolved {
			if d, ok := names[id.Name]; ok && command(d.file) != own {
				used[id.Name] = d
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.CompositeLit); ok {
				if name := commandName(lit); name != "" && name != own {
					t.Errorf("%s declares the command %q: each command has its own cmd_%s.go", file, name, name)
				}
			}
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && !topLevel[x.Name] {
				return true // an imported package's name
			}
			if d, ok := elsewhere(sel.Sel.Name, own); ok {
				used[sel.Sel.Name] = d
			}
			return true
		})
		for _, name := range slices.Sorted(maps.Keys(used)) {
			d := used[name]
			if own != "" {
				t.Errorf("%s uses %s %s of %s: what two commands need lives in a file named for what it holds", file, d.kind, name, d.file)
			} else {
				t.Errorf("%s (shared) uses %s %s of the command file %s: a shared piece does not reach up into a command", file, d.kind, name, d.file)
			}
		}
	}
}

// commandName is the first word of the name of the command lit declares
// ("user" of "user add"), when lit is a command{…} with a name spelled out.
func commandName(lit *ast.CompositeLit) string {
	if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "command" {
		return ""
	}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if key, _ := kv.Key.(*ast.Ident); !ok || key == nil || key.Name != "name" {
			continue
		}
		v := kv.Value
		for {
			b, ok := v.(*ast.BinaryExpr)
			if !ok {
				break
			}
			v = b.X
		}
		if b, ok := v.(*ast.BasicLit); ok && b.Kind == token.STRING {
			if s, err := strconv.Unquote(b.Value); err == nil {
				name, _, _ := strings.Cut(s, " ")
				return name
			}
		}
	}
	return ""
}
