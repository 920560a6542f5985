package loader_test

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// Tags and keywords are what a tool search filters and matches by; both
// manifest formats carry them to the Spec, in the order written.
func TestTagsAndKeywordsLoadFromYAMLAndCUE(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"m/a.yaml": {Data: []byte(`name: charge_card
description: Charge a saved card.
side_effect: true
tags: [billing, payments]
keywords: [payment, debit, "credit card"]
params:
  amount: {type: number}
`)},
		"m/b.cue": {Data: []byte(`package toolreg

tools: list_invoices: {
	description: "List a customer's invoices."
	tags: ["billing"]
	keywords: ["bills", "statements"]
}
`)},
	}
	specs, err := loader.LoadFS(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2][]string{}
	for _, s := range specs {
		got[s.Name] = [2][]string{s.Tags, s.Keywords}
	}
	want := map[string][2][]string{
		"charge_card":   {{"billing", "payments"}, {"payment", "debit", "credit card"}},
		"list_invoices": {{"billing"}, {"bills", "statements"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tags and keywords (-want +got):\n%s", diff)
	}
}

func TestBadTagsAndKeywordsAreRefusedWithTheirPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, path string
	}{
		{"a tag with a space", "tags: [\"two words\"]", "tags"},
		{"a tag that is not a string", "tags: [3]", "tags"},
		{"tags that are not a list", "tags: billing", "tags"},
		{"an empty keyword", "keywords: [\"\"]", "keywords"},
		{"keywords that are a mapping", "keywords: {a: b}", "keywords"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := "name: t\ndescription: d.\n" + tc.yaml + "\n"
			_, err := loader.LoadFS(fstest.MapFS{"t.yaml": {Data: []byte(src)}}, "t.yaml")
			var de *toolreg.ToolDefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("LoadFS = %v, want a *toolreg.ToolDefinitionError", err)
			}
			found := false
			for _, p := range de.Problems {
				if strings.HasPrefix(p.Path, tc.path) && p.Pos.Line == 3 {
					found = true
				}
			}
			if !found {
				t.Errorf("no problem at %s on line 3 in:\n%v", tc.path, err)
			}
		})
	}
}
