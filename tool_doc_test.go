package toolreg_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestUnwrapDocNamesItsOnlySanctionedCaller: the seed requires Unwrap's doc
// comment to state that the effector's execution path is its only sanctioned
// caller (issue 3: "its doc comment says the effector's ToolRunner is its only
// sanctioned caller"). effectcheck enforces the rule; this keeps it written
// where a reader of the method meets it.
func TestUnwrapDocNamesItsOnlySanctionedCaller(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "tool.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "Unwrap" || fn.Recv == nil {
			continue
		}
		doc := strings.Join(strings.Fields(fn.Doc.Text()), " ")
		for _, want := range []string{"effector's ToolRunner", "only sanctioned caller"} {
			if !strings.Contains(doc, want) {
				t.Errorf("Tool.Unwrap's doc comment does not say %q:\n%s", want, doc)
			}
		}
		return
	}
	t.Fatal("tool.go declares no method Unwrap")
}
