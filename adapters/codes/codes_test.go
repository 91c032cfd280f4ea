package codes

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"slices"
	"strconv"
	"testing"
)

// Every code this package declares is in the catalogue (a constant left
// out would be answered 422 and final without anyone deciding so), each
// once, with a status an answer can have.
func TestEveryCodeIsCatalogued(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					declared = append(declared, s)
				}
			}
		}
	}
	slices.Sort(declared)
	if compact := slices.Compact(slices.Clone(declared)); len(compact) != len(declared) {
		t.Errorf("a code is declared twice: %v", declared)
	}
	if all := All(); !slices.Equal(declared, all) {
		t.Errorf("declared %v\ncatalogued %v", declared, all)
	}
	for _, c := range All() {
		if s := Status(c); http.StatusText(s) == "" || s < 200 {
			t.Errorf("%s: status %d", c, s)
		}
	}
	if Status("A_TARGETS_OWN_CODE") != http.StatusUnprocessableEntity || Retryable("A_TARGETS_OWN_CODE") {
		t.Error("a code not in the catalogue is not a final 422")
	}
	for _, c := range []string{KeyInUse, ApprovalRequired, OutcomeUnknown, TargetUnavailable, RateLimited, JournalUnavailable} {
		if !Retryable(c) {
			t.Errorf("%s is not retryable", c)
		}
	}
}
