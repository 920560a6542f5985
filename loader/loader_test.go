package loader_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

func ptr[T any](v T) *T { return &v }

// wantFull is the Spec of testdata/manifests/good/full.yaml, which uses every
// keyword of the schema once; pos gives each declaration's position.
func wantFull(pos func(line, col int) toolreg.Pos) *toolreg.Spec {
	return &toolreg.Spec{
		Name:        "create_ticket",
		Description: "Open a support ticket for a customer.",
		SideEffect:  true,
		Strict:      true,
		Pos:         pos(2, 1),
		Params: []*toolreg.Param{
			{Name: "customer_id", Pos: pos(7, 3), Schema: toolreg.Schema{
				Type: toolreg.TypeString, Description: "The customer's id.",
				MinLength: ptr(10), MaxLength: ptr(30), Pattern: "^cus_[a-z0-9]+$", Format: "uuid",
			}},
			{Name: "priority", Pos: pos(14, 3), Schema: toolreg.Schema{
				Type: toolreg.TypeString, Enum: []any{"low", "normal", "urgent"},
				Default: "normal", HasDefault: true,
			}},
			{Name: "amount", Pos: pos(18, 3), Schema: toolreg.Schema{
				Type: toolreg.TypeNumber, Minimum: json.Number("0"), Maximum: json.Number("1000.5"), MultipleOf: json.Number("0.01"),
				Default: json.Number("1.5"), HasDefault: true,
			}},
			{Name: "count", Pos: pos(24, 3), Optional: true, Schema: toolreg.Schema{
				Type: toolreg.TypeInteger, ExclusiveMinimum: json.Number("0"), ExclusiveMaximum: json.Number("100"),
				Enum: []any{json.Number("1"), json.Number("2"), json.Number("3")},
			}},
			{Name: "notify", Pos: pos(30, 3), Schema: toolreg.Schema{
				Type: toolreg.TypeBoolean, Default: true, HasDefault: true,
			}},
			{Name: "tags", Pos: pos(33, 3), Schema: toolreg.Schema{
				Type: toolreg.TypeArray, MinItems: ptr(1), MaxItems: ptr(5), UniqueItems: true,
				Items:   &toolreg.Schema{Type: toolreg.TypeString, MaxLength: ptr(20)},
				Default: []any{"support"}, HasDefault: true,
			}},
			{Name: "lines", Pos: pos(42, 3), Schema: toolreg.Schema{
				Type: toolreg.TypeArray,
				Items: &toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
					{Name: "sku", Pos: pos(47, 9), Schema: toolreg.Schema{Type: toolreg.TypeString}},
					{Name: "qty", Pos: pos(49, 9), Schema: toolreg.Schema{
						Type: toolreg.TypeInteger, Minimum: json.Number("1"), Default: json.Number("1"), HasDefault: true,
					}},
				}},
			}},
			{Name: "extra", Pos: pos(53, 3), Optional: true, Schema: toolreg.Schema{
				Type: toolreg.TypeObject, Description: "Free-form labels.",
				AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeString},
				Default:              map[string]any{"source": "chat"}, HasDefault: true,
			}},
		},
		Annotations: &toolreg.Annotations{
			Title: "Create ticket", DestructiveHint: ptr(false), IdempotentHint: ptr(false), OpenWorldHint: ptr(true),
		},
	}
}

func TestLoadFillsEverySpecField(t *testing.T) {
	t.Parallel()
	specs, err := loader.Load(filepath.Join(corpus, "good", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(corpus, "good", "full.yaml")
	want := []*toolreg.Spec{wantFull(func(l, c int) toolreg.Pos { return toolreg.Pos{File: file, Line: l, Col: c} })}
	if diff := cmp.Diff(want, specs); diff != "" {
		t.Errorf("Load(full.yaml) (-want +got):\n%s", diff)
	}
}

func TestCUEManifestGivesTheSameSpecAsYAML(t *testing.T) {
	t.Parallel()
	specs, err := loader.Load(filepath.Join(corpus, "good", "cue_full"))
	if err != nil {
		t.Fatal(err)
	}
	want := []*toolreg.Spec{wantFull(func(l, c int) toolreg.Pos { return toolreg.Pos{} })}
	ignorePos := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Pos" }, cmp.Ignore())
	if diff := cmp.Diff(want, specs, ignorePos); diff != "" {
		t.Errorf("Load(cue_full) (-want +got):\n%s", diff)
	}
	file := filepath.Join(corpus, "good", "cue_full", "tools.cue")
	s := specs[0]
	for _, tc := range []struct {
		what string
		got  toolreg.Pos
		want toolreg.Pos
	}{
		{"the tool", s.Pos, toolreg.Pos{File: file, Line: 15, Col: 8}},
		{"param priority", s.Param("priority").Pos, toolreg.Pos{File: file, Line: 21, Col: 3}},
		{"property qty", s.Param("lines").Items.Properties[1].Pos, toolreg.Pos{File: file, Line: 39, Col: 6}},
	} {
		if tc.got != tc.want {
			t.Errorf("position of %s: got %s, want %s", tc.what, tc.got, tc.want)
		}
	}
}

func TestCUEPackageSpansItsDirectorysFiles(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(os.DirFS(filepath.Join(corpus, "good")), "cue_split")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range specs {
		got = append(got, s.Name+"@"+s.Pos.String())
	}
	want := []string{"list_tickets@cue_split/tools.cue:3:8", "list_refunds@cue_split/tools.cue:11:8"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	limit := specs[1].Param("limit")
	if limit == nil || !limit.HasDefault || limit.Default != json.Number("10") || limit.Maximum != "100" {
		t.Errorf("limit from the other file's #Limit: got %+v", limit)
	}
}

func TestLoadOrdersBySortedPathThenDocument(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"m/b.yaml":          {Data: []byte("name: b1\ndescription: d\n---\nname: b2\ndescription: d\n")},
		"m/a.yml":           {Data: []byte("name: a1\ndescription: d\n")},
		"m/sub/c.cue":       {Data: []byte("package toolreg\n\ntools: c2: description: \"d\"\ntools: c1: description: \"d\"\n")},
		"m/.git/x.yaml":     {Data: []byte("not: a manifest")},
		"m/README.md":       {Data: []byte("# not a manifest")},
		"m/cue.mod/mod.cue": {Data: []byte("module: \"x\"")},
	}
	specs, err := loader.LoadFS(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range specs {
		got = append(got, s.Name)
	}
	if diff := cmp.Diff([]string{"a1", "b1", "b2", "c2", "c1"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestLoadReportsEveryInvalidDocumentInOneError(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"a.yaml": {Data: []byte("name: a\ndescription: d\nparams:\n  x: {tpye: string}\n")},
		"b.yaml": {Data: []byte("name: b\ndescription: \"\"\n")},
		"c.cue":  {Data: []byte("package toolreg\n\ntools: c: {description: \"d\", params: y: type: \"strng\"}\n")},
		"d.yaml": {Data: []byte("name: ok\ndescription: fine\n")},
	}
	_, err := loader.LoadFS(fsys, ".")
	var tde *toolreg.ToolDefinitionError
	if !errors.As(err, &tde) {
		t.Fatalf("got %v, want a *toolreg.ToolDefinitionError", err)
	}
	var got []string
	for _, p := range tde.Problems {
		got = append(got, p.Pos.String()+" "+p.Tool+" "+p.Path)
	}
	want := []string{"a.yaml:4:3 a params.x", "b.yaml:2:1 b description", "c.cue:3:41 c params.y.type"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestDuplicateToolNamesAreRefusedWithBothPositions(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"a.yaml":      {Data: []byte("name: refund\ndescription: d\n")},
		"b.yaml":      {Data: []byte("# again\nname: refund\ndescription: d\n")},
		"c/tools.cue": {Data: []byte("package toolreg\n\ntools: refund: description: \"d\"\n")},
	}
	_, err := loader.LoadFS(fsys, ".")
	var dup *toolreg.DuplicateToolError
	if !errors.As(err, &dup) {
		t.Fatalf("got %v, want a *toolreg.DuplicateToolError", err)
	}
	want := &toolreg.DuplicateToolError{Name: "refund",
		First: toolreg.Pos{File: "a.yaml", Line: 1, Col: 1}, Second: toolreg.Pos{File: "b.yaml", Line: 2, Col: 1}}
	if diff := cmp.Diff(want, dup); diff != "" {
		t.Errorf("duplicate (-want +got):\n%s", diff)
	}
	if n := strings.Count(err.Error(), "declared twice"); n != 2 {
		t.Errorf("error reports %d duplicates, want 2 (b.yaml and c/tools.cue):\n%v", n, err)
	}
}

func TestBothKindsOfErrorAreJoined(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"a.yaml": {Data: []byte("name: refund\ndescription: d\n")},
		"b.yaml": {Data: []byte("name: refund\ndescription: d\n")},
		"c.yaml": {Data: []byte("name: bad\n")},
	}
	_, err := loader.LoadFS(fsys, ".")
	var dup *toolreg.DuplicateToolError
	var tde *toolreg.ToolDefinitionError
	if !errors.As(err, &dup) || !errors.As(err, &tde) {
		t.Fatalf("errors.As finds duplicate=%v definition=%v in %v; want both", dup != nil, tde != nil, err)
	}
	if !errors.Is(err, toolreg.ErrTool) {
		t.Errorf("joined error does not wrap toolreg.ErrTool")
	}
}

func TestBadPathsAreProblems(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"notes.txt": {Data: []byte("hello")}}
	tests := []struct {
		path, want string
	}{
		{"missing.yaml", "missing.yaml: cannot read: file does not exist"},
		{"notes.txt", "notes.txt: not a manifest: a manifest file ends in .yaml, .yml or .cue"},
		{"../escape.yaml", "../escape.yaml: invalid path"},
	}
	for _, tc := range tests {
		t.Run(tc.path+" is refused", func(t *testing.T) {
			t.Parallel()
			_, err := loader.LoadFS(fsys, tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// The seed scenarios this layer covers, restated in manifest terms.

func TestManifestWithoutSideEffectGivesReadOnlyTool(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(fstest.MapFS{"lookup_customer.yaml": {Data: []byte(
		"name: lookup_customer\ndescription: Look up a customer by id.\nparams:\n  customer_id: {type: string}\n")}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	tool := toolreg.NewTool(specs[0])
	if tool.Name() != "lookup_customer" || tool.Description() != "Look up a customer by id." || tool.SideEffect() {
		t.Errorf("got name %q, description %q, side_effect %v; want lookup_customer, its description, false",
			tool.Name(), tool.Description(), tool.SideEffect())
	}
}

func TestManifestWithSideEffectTrueGivesEffectfulTool(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(fstest.MapFS{"charge.cue": {Data: []byte(
		"package toolreg\n\ntools: charge: {description: \"Charge a card.\", side_effect: true}\n")}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	tool := toolreg.NewTool(specs[0])
	if tool.Name() != "charge" || !tool.SideEffect() {
		t.Errorf("got name %q, side_effect %v; want charge, true", tool.Name(), tool.SideEffect())
	}
}

func TestSchemaMarksTypesRequiresOnlyParamsWithoutDefault(t *testing.T) {
	t.Parallel()
	specs, err := loader.LoadFS(fstest.MapFS{"search.yaml": {Data: []byte(`name: search_orders
description: Search a customer's orders.
params:
  customer_id:
    type: string
  limit:
    type: integer
    default: 10
`)}}, ".")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(toolreg.NewTool(specs[0]).Schema(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name":        "search_orders",
		"description": "Search a customer's orders.",
		"parameters": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"customer_id": map[string]any{"type": "string"},
				"limit":       map[string]any{"type": "integer", "default": 10.0},
			},
			"required":             []any{"customer_id"},
			"additionalProperties": false,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
}

func TestParamWithoutTypeIsRefusedNamingIt(t *testing.T) {
	t.Parallel()
	_, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(
		"name: lookup_customer\ndescription: d\nparams:\n  customer_id:\n    description: The id.\n")}}, ".")
	var tde *toolreg.ToolDefinitionError
	if !errors.As(err, &tde) {
		t.Fatalf("got %v, want a *toolreg.ToolDefinitionError", err)
	}
	want := []toolreg.Problem{{
		Pos: toolreg.Pos{File: "m.yaml", Line: 4, Col: 3}, Tool: "lookup_customer", Path: "params.customer_id",
		Message: "missing type: set type to one of string, integer, number, boolean, array, object",
	}}
	if diff := cmp.Diff(want, tde.Problems, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// A flow mapping's unquoted value ends at its first comma, so the rest of a
// description becomes a key: it is reported once, at its key, with the path
// CUE gives it (a label that is no identifier quoted), and told apart from a
// misspelt keyword. Before, it was reported twice: the second time with the
// path split at the label's own '.' and the message "\"\" is not allowed
// here", and the first with the label quoted twice.
func TestAKeyOfProseIsReportedOnceWithAHintToQuoteTheValue(t *testing.T) {
	t.Parallel()
	_, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte(
		"name: get_x\ndescription: Get x.\nparams:\n  q: {type: string, description: The city, or a zip code.}\n  my.param: {type: string, descripton: d}\n" +
			"---\n{name: get_y, description: Get y, or a z., my.key: 1}\n")}}, ".")
	var tde *toolreg.ToolDefinitionError
	if !errors.As(err, &tde) {
		t.Fatalf("got %v, want a *toolreg.ToolDefinitionError", err)
	}
	keywords := "type, description, default, enum, minLength, maxLength, pattern, format"
	toolKeys := "name, description, side_effect, strict, params, returns, approval, approval_reason, approval_timeout, tags, keywords, annotations, remote, scopes, budgets"
	want := []toolreg.Problem{{
		Pos: toolreg.Pos{File: "m.yaml", Line: 4, Col: 44}, Tool: "get_x", Path: `params.q."or a zip code."`,
		Message: `field not allowed: "or a zip code." is no keyword of type string, which takes ` + keywords +
			`; if it is the rest of a value, quote the value: in a flow mapping ({...}) a comma ends it`,
	}, {
		Pos: toolreg.Pos{File: "m.yaml", Line: 5, Col: 28}, Tool: "get_x", Path: `params."my.param".descripton`,
		Message: `field not allowed: "descripton" is no keyword of type string, which takes ` + keywords,
	}, {
		Pos: toolreg.Pos{File: "m.yaml", Line: 7, Col: 35}, Tool: "get_y", Path: `"or a z."`,
		Message: `field not allowed: a tool takes ` + toolKeys + `; "or a z." is none of them` +
			`; if it is the rest of a value, quote the value: in a flow mapping ({...}) a comma ends it`,
	}, {
		Pos: toolreg.Pos{File: "m.yaml", Line: 7, Col: 44}, Tool: "get_y", Path: `"my.key"`,
		Message: `field not allowed: a tool takes ` + toolKeys + `; "my.key" is none of them`,
	}}
	if diff := cmp.Diff(want, tde.Problems, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestExampleManifestsLoad(t *testing.T) {
	t.Parallel()
	specs, err := loader.Load("../manifests")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range specs {
		got[s.Name] = s.SideEffect
	}
	want := map[string]bool{
		"lookup_customer": false, "lookup_order": false, "search_orders": false, "search_kb": false,
		"refund_order": true, "refund_over_limit": true, "send_email": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools and their side_effect (-want +got):\n%s", diff)
	}
}

func TestCUEPackageWithAFileThatDoesNotParseReportsOnlyThat(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"m/a.cue": {Data: []byte("package toolreg\n\n#Limit: {type: \"integer\"\n")},
		"m/b.cue": {Data: []byte("package toolreg\n\ntools: x: {description: \"d\", params: limit: #Limit}\n")},
	}
	_, err := loader.LoadFS(fsys, "m")
	var tde *toolreg.ToolDefinitionError
	if !errors.As(err, &tde) {
		t.Fatalf("got %v, want a *toolreg.ToolDefinitionError", err)
	}
	if len(tde.Problems) != 1 || tde.Problems[0].Pos.File != "m/a.cue" || !strings.Contains(tde.Problems[0].Message, "invalid CUE") {
		t.Errorf("got problems %v, want only a.cue's syntax error", tde.Problems)
	}
}
