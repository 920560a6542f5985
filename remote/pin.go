package remote

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// PinOptions says which of a server's tools Pin pins, and where new
// manifests go.
type PinOptions struct {
	// Dir is where a new manifest is written, as Dir/<server>/<name>.yaml.
	Dir string
	// Tools names served tools to pin besides those already pinned; All pins
	// every served tool. With neither, and nothing pinned from the server
	// yet, every served tool is pinned.
	Tools []string
	All   bool
	// Prefix is put before the name of a newly pinned tool (a remote tool's
	// name is otherwise its manifest's name, with any character a tool name
	// cannot have made '_').
	Prefix string
}

// PinnedTool is one manifest Pin wrote or would write.
type PinnedTool struct {
	Spec *toolreg.Spec // as written, with the manifest's own decisions kept
	File string
	Data []byte
	New  bool   // no manifest pinned it before
	Same bool   // the file already holds exactly this
	Note []Note // what pin did to the served schema that changes no value
}

// PinReport is what Pin found and would write.
type PinReport struct {
	Server  string
	Written []PinnedTool
	// Refused are the served tools that cannot be pinned, by tool name, with
	// every reason.
	Refused map[string][]Refusal
	// Gone are manifests pinning a tool the server no longer serves: kept,
	// for a person to remove (toolreg diff shows it as breaking).
	Gone []*toolreg.Spec
	// Unpinned are served tools not pinned and not asked for.
	Unpinned []string
}

// Pin connects to the server called name, lists its tools and returns the
// manifests that pin them: for a tool already pinned (in existing, the
// loaded manifests), its manifest with the served contract in place of the
// pinned one, keeping the manifest's own decisions (name, side_effect,
// strict, approval, tags, keywords); for a new one, a manifest with
// side_effect: true, which a person turns to false after reading the tool:
// the server's readOnlyHint is pinned, never obeyed. Each manifest is loaded
// back before it is offered, so one that breaks a rule of the loader (a
// pattern that is not portable, a default outside its constraints) is
// refused with the loader's reason, like a schema a manifest cannot express.
// Nothing is written: PinReport.Write writes.
func Pin(ctx context.Context, name string, cfg Server, existing []*toolreg.Spec, po PinOptions, opts ...Option) (*PinReport, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("remote: server %q: %v", name, err)
	}
	s := &Set{opts: defaults()}
	for _, o := range opts {
		o(&s.opts)
	}
	sv := &server{name: name, cfg: cfg, set: s, wake: make(chan struct{}, 1)}
	sv.client = mcp.NewClient(&mcp.Implementation{Name: "toolreg-pin", Version: "remote"}, &mcp.ClientOptions{Logger: s.opts.logger})
	tools, err := sv.connect(ctx)
	if err != nil {
		return nil, &ServerError{Server: name, Err: err}
	}
	defer sv.disconnect()
	return plan(name, tools, existing, po)
}

// plan is Pin once the tools are listed.
func plan(server string, tools map[string]*mcp.Tool, existing []*toolreg.Spec, po PinOptions) (*PinReport, error) {
	rep := &PinReport{Server: server, Refused: map[string][]Refusal{}}
	pinnedBy := map[string]*toolreg.Spec{} // remote tool name -> its manifest
	names := map[string]*toolreg.Spec{}
	perFile := map[string]int{}
	for _, s := range existing {
		names[s.Name] = s
		perFile[s.Pos.File]++
		if s.Remote != nil && s.Remote.Server == server {
			pinnedBy[s.Remote.Tool] = s
		}
	}
	served := make([]string, 0, len(tools))
	for n := range tools {
		served = append(served, n)
	}
	sort.Strings(served)
	want := map[string]bool{}
	for n := range pinnedBy {
		want[n] = true
	}
	for _, n := range po.Tools {
		if _, ok := tools[n]; !ok {
			return nil, fmt.Errorf("remote: server %q serves no tool %q; it serves: %s", server, n, cut(strings.Join(served, ", "), 1024))
		}
		want[n] = true
	}
	if po.All || (len(pinnedBy) == 0 && len(po.Tools) == 0) {
		for _, n := range served {
			want[n] = true
		}
	}
	for _, n := range served {
		if !want[n] {
			rep.Unpinned = append(rep.Unpinned, n)
		}
	}
	for rt, s := range pinnedBy {
		if _, ok := tools[rt]; !ok {
			rep.Gone = append(rep.Gone, s)
		}
	}
	sort.Slice(rep.Gone, func(i, j int) bool { return rep.Gone[i].Name < rep.Gone[j].Name })
	for _, n := range served {
		if !want[n] {
			continue
		}
		s, refusals, notes := fromMCP(tools[n])
		if len(refusals) > 0 {
			rep.Refused[n] = refusals
			continue
		}
		old := pinnedBy[n]
		var spec *toolreg.Spec
		var file string
		if old != nil {
			spec = toSpec(old, s)
			file = old.Pos.File
			if ext := filepath.Ext(file); (ext != ".yaml" && ext != ".yml") || perFile[file] > 1 {
				rep.Refused[n] = []Refusal{{Reason: fmt.Sprintf("its manifest is in %s, which pin does not rewrite (a CUE file, or a YAML file with other tools): move it to a YAML file of its own, or edit it by hand", file)}}
				continue
			}
		} else {
			tn := po.Prefix + toolName(n)
			if other, taken := names[tn]; taken {
				rep.Refused[n] = []Refusal{{Reason: fmt.Sprintf("its manifest would be named %q, which %s already declares: pin it with another -prefix", tn, other.Pos)}}
				continue
			}
			if !toolreg.ValidName(tn) {
				rep.Refused[n] = []Refusal{{Reason: fmt.Sprintf("its manifest would be named %q, which is no valid tool name: pin it with a shorter -prefix", tn)}}
				continue
			}
			spec = toSpec(&toolreg.Spec{Name: tn, SideEffect: true, Remote: &toolreg.Remote{Server: server, Tool: n}}, s)
			file = filepath.Join(po.Dir, server, toolName(n)+".yaml")
			names[tn] = spec
		}
		data, err := loader.MarshalYAML(spec, header(server, n))
		if err != nil {
			rep.Refused[n] = []Refusal{{Reason: err.Error()}}
			continue
		}
		// Loaded back as a file would be (testing/fstest's MapFS is the
		// standard library's in-memory fs.FS; it imports no test code).
		if _, err := loader.LoadFS(fstest.MapFS{"pin.yaml": {Data: data}}, "pin.yaml"); err != nil {
			rep.Refused[n] = loaderRefusals(err)
			continue
		}
		pt := PinnedTool{Spec: spec, File: file, Data: data, New: old == nil, Note: notes}
		if cur, err := os.ReadFile(file); err == nil && bytes.Equal(cur, data) {
			pt.Same = true
		}
		rep.Written = append(rep.Written, pt)
	}
	return rep, nil
}

var nameRE = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// toolName is a remote tool's name as a manifest can name it.
func toolName(remote string) string { return nameRE.ReplaceAllString(remote, "_") }

// header is the comment pin writes atop a manifest: the same for every
// pin of one tool, so that a re-pin of what did not change is no change.
func header(server, tool string) string {
	return fmt.Sprintf("Pinned from MCP server %q, tool %q, by toolreg pin.\n", server, tool) +
		"Review every change: the description and the params' descriptions are text\n" +
		"the model obeys. name, side_effect, strict, approval, tags and keywords are\n" +
		"this manifest's decisions, which pin keeps; a new tool starts with\n" +
		"side_effect: true. The server's readOnlyHint is a hint only (read_only_hint).\n"
}

func loaderRefusals(err error) []Refusal {
	var out []Refusal
	if de, ok := err.(*toolreg.ToolDefinitionError); ok {
		for _, p := range de.Problems {
			out = append(out, Refusal{Path: p.Path, Reason: p.Message})
		}
		return out
	}
	return []Refusal{{Reason: err.Error()}}
}

// Write writes the manifests that changed, making directories as needed,
// and returns their files.
func (r *PinReport) Write() ([]string, error) {
	var files []string
	for _, p := range r.Written {
		if p.Same {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p.File), 0o755); err != nil {
			return files, fmt.Errorf("remote: %w", err)
		}
		if err := os.WriteFile(p.File, p.Data, 0o644); err != nil {
			return files, fmt.Errorf("remote: %w", err)
		}
		files = append(files, p.File)
	}
	return files, nil
}

// RefusedNames returns the names of the refused tools, sorted.
func (r *PinReport) RefusedNames() []string {
	names := make([]string, 0, len(r.Refused))
	for n := range r.Refused {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
