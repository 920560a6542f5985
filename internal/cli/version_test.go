package cli

import (
	"runtime/debug"
	"testing"
)

func TestModuleVersionReadsToolregsModuleWhereverItIs(t *testing.T) {
	t.Parallel()
	dep := func(path, version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: path, Version: version, Replace: replace}
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build information", nil, "devel"},
		{"a checkout of toolreg", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "devel"},
		{"go install of a tag", &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.3.0"}}, "v0.3.0"},
		{"a tool pinned in another module", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/svc", Version: "(devel)"},
			Deps: []*debug.Module{dep("cuelang.org/go", "v0.17.1", nil), dep(modulePath, "v0.4.0-0.20261203081000-abcdefabcdef", nil)},
		}, "v0.4.0-0.20261203081000-abcdefabcdef"},
		{"a pinned tool replaced by a fork's tag", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/svc"},
			Deps: []*debug.Module{dep(modulePath, "v0.4.0", dep("example.com/fork", "v0.4.1", nil))},
		}, "v0.4.1"},
		{"a pinned tool replaced by a local directory", &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/svc"},
			Deps: []*debug.Module{dep(modulePath, "v0.4.0", dep("../toolreg", "", nil))},
		}, "devel"},
		{"a binary that does not hold toolreg's module", &debug.BuildInfo{Main: debug.Module{Path: "example.com/other", Version: "v1.0.0"}}, "devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := moduleVersion(tt.bi); got != tt.want {
				t.Errorf("moduleVersion = %q, want %q", got, tt.want)
			}
		})
	}
}
