package loader_test

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// A pinned remote tool's remote block reaches the Spec from both formats;
// a local tool has none.
func TestRemoteLoadsFromYAMLAndCUE(t *testing.T) {
	t.Parallel()
	specs, err := loader.Load(filepath.Join(corpus, "good", "remote.yaml"), filepath.Join(corpus, "good", "cue_remote"), filepath.Join(corpus, "good", "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*toolreg.Remote{}
	for _, s := range specs {
		got[s.Name] = s.Remote
	}
	want := map[string]*toolreg.Remote{
		"gh_create_issue": {Server: "github", Tool: "create_issue", Title: "Create issue"},
		"search_docs":     {Server: "docs", Tool: "search"},
	}
	for _, s := range specs {
		if _, ok := want[s.Name]; !ok {
			want[s.Name] = nil
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("remote (-want +got):\n%s", diff)
	}
	for _, s := range specs {
		if s.Name == "gh_create_issue" && (!s.SideEffect || s.Returns == nil || s.Annotations == nil || s.Param("labels") == nil || !s.Param("labels").Optional) {
			t.Errorf("gh_create_issue lost the rest of its contract: %+v", s)
		}
	}
}

// Spec.Validate holds a Spec built in Go to the rules schema.cue states for
// remote.
func TestRemoteValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		remote toolreg.Remote
		paths  []string
	}{
		{"a valid remote", toolreg.Remote{Server: "github", Tool: "repos/create_issue"}, nil},
		{"a server name with a space", toolreg.Remote{Server: "git hub", Tool: "x"}, []string{"remote.server"}},
		{"no server, no tool", toolreg.Remote{}, []string{"remote.server", "remote.tool"}},
		{"a tool name with a space", toolreg.Remote{Server: "s", Tool: "create issue"}, []string{"remote.tool"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.remote
			s := &toolreg.Spec{Name: "t", Description: "d", Remote: &r}
			err := s.Validate()
			var paths []string
			if de, ok := err.(*toolreg.ToolDefinitionError); ok {
				for _, p := range de.Problems {
					paths = append(paths, p.Path)
				}
			} else if err != nil {
				t.Fatalf("Validate = %v", err)
			}
			if diff := cmp.Diff(tc.paths, paths); diff != "" {
				t.Errorf("problem paths (-want +got):\n%s", diff)
			}
		})
	}
}
