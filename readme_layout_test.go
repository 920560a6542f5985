package toolreg_test

import (
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// readmeBlock returns the body of the first fenced block of the README that
// follows the heading, opened by fence (such as "```mermaid").
func readmeBlock(t *testing.T, heading, fence string) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	_, body, ok := strings.Cut(after, "\n"+fence+"\n")
	if !ok {
		t.Fatalf("README.md's section %q has no %s block", heading, fence)
	}
	body, _, ok = strings.Cut(body, "\n```\n")
	if !ok {
		t.Fatalf("README.md's %s block under %q is not closed", fence, heading)
	}
	return body
}

// TestREADMEFlowNamesExist keeps the README's Mermaid diagram of the flow in
// step with the code: every package-qualified name in it (loader.Load,
// bindings.Effect, runner.Activation) and every method or field named after
// a type of one (Activation.Act, Bound.Pipeline, Effector.Process,
// Tool.Unwrap) must exist.
func TestREADMEFlowNamesExist(t *testing.T) {
	t.Parallel()
	body := readmeBlock(t, "## How a call flows", "```mermaid")
	const mod = "github.com/beam-agents/toolreg"
	paths := map[string]string{
		"toolreg": mod, "loader": mod + "/loader", "bindings": mod + "/bindings", "registry": mod + "/registry",
		"runner": mod + "/runner", "intent": mod + "/intent", "effector": mod + "/effector", "canonjson": mod + "/canonjson",
	}
	var pkgPaths []string
	for _, p := range paths {
		pkgPaths = append(pkgPaths, p)
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedTypes | packages.NeedName}, pkgPaths...)
	if err != nil {
		t.Fatal(err)
	}
	scopes := map[string]*types.Scope{}
	for _, p := range pkgs {
		scopes[p.PkgPath] = p.Types.Scope()
	}
	lookupType := func(name string) types.Type {
		for _, sc := range scopes {
			if tn, ok := sc.Lookup(name).(*types.TypeName); ok {
				return tn.Type()
			}
		}
		return nil
	}

	qualified := regexp.MustCompile(`\b([a-z]+)\.([A-Z]\w*)\b`)
	found := 0
	for _, m := range qualified.FindAllStringSubmatch(body, -1) {
		pkg, name := m[1], m[2]
		if path, ok := paths[pkg]; ok {
			found++
			if scopes[path].Lookup(name) == nil {
				t.Errorf("the README's flow diagram names %s.%s, which package %s does not declare", pkg, name, pkg)
			}
		}
	}
	selector := regexp.MustCompile(`\b([A-Z]\w*)\.([A-Z]\w*)\b`)
	for _, m := range selector.FindAllStringSubmatch(body, -1) {
		typ := lookupType(m[1])
		if typ == nil {
			t.Errorf("the README's flow diagram names %s.%s, but no package of the flow declares type %s", m[1], m[2], m[1])
			continue
		}
		found++
		if obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(typ), true, nil, m[2]); obj == nil {
			t.Errorf("the README's flow diagram names %s.%s, which type %s does not have", m[1], m[2], typ)
		}
	}
	if found < 15 {
		t.Errorf("found %d names in the README's flow diagram; the pattern no longer reads it", found)
	}
}

// TestREADMELayoutIsTheLayout holds the README's Layout section to the tree:
// every path it lists exists, and every directory of the module that holds
// a Go package is listed, itself or under a listed parent.
func TestREADMELayoutIsTheLayout(t *testing.T) {
	t.Parallel()
	body := readmeBlock(t, "## Layout", "```")
	var listed []string
	for _, line := range strings.Split(body, "\n") {
		field, _, _ := strings.Cut(line, "  ")
		for _, p := range strings.Split(field, ",") {
			p = strings.TrimSuffix(strings.TrimSpace(p), "/")
			switch {
			case p == "" || p == "*.go":
			default:
				listed = append(listed, p)
				if _, err := os.Stat(p); err != nil {
					t.Errorf("the README's Layout lists %s, which does not exist", p)
				}
			}
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || rel == "." {
			continue
		}
		rel = filepath.ToSlash(rel)
		if !slices.ContainsFunc(listed, func(l string) bool { return rel == l || strings.HasPrefix(rel, l+"/") }) {
			t.Errorf("package directory %s is not in the README's Layout, nor under a directory it lists", rel)
		}
	}
}
