package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// workflow is the part of a GitHub Actions workflow the test runs.
type workflow struct {
	Jobs map[string]struct {
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// runner runs the steps of the workflow toolreg init wrote, as the Actions
// runner does (bash -eo pipefail, the job's and the step's env, the
// ${{ }} expressions of a pull request's event), in a temporary repository.
type runner struct {
	t       *testing.T
	dir     string
	env     []string
	ghState string
}

// pullRequest is what the ${{ }} expressions of the workflow read.
type pullRequest struct {
	labels []string
}

var expression = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

func (r *runner) expand(s string, pr pullRequest) string {
	return expression.ReplaceAllStringFunc(s, func(m string) string {
		switch e := expression.FindStringSubmatch(m)[1]; e {
		case "github.base_ref":
			return "main"
		case "join(github.event.pull_request.labels.*.name, ',')":
			return strings.Join(pr.labels, ",")
		case "github.token":
			return "test-token"
		case "github.event.pull_request.number":
			return "7"
		default:
			r.t.Fatalf("the workflow uses the expression %q, which this test does not know: teach it", e)
			return ""
		}
	})
}

// outcome is one step's run.
type outcome struct {
	ok     bool
	output string
}

// run runs every step with a run script, as a pull request with pr's labels
// triggers the job, and returns each step's outcome and the job summary.
func (r *runner) run(pr pullRequest) (map[string]outcome, string) {
	r.t.Helper()
	raw, err := os.ReadFile(filepath.Join(r.dir, ".github", "workflows", "manifests.yml"))
	if err != nil {
		r.t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		r.t.Fatal(err)
	}
	job, ok := wf.Jobs["manifests"]
	if !ok {
		r.t.Fatal("the workflow has no job manifests")
	}
	summary := filepath.Join(r.t.TempDir(), "summary.md")
	out := map[string]outcome{}
	for _, st := range job.Steps {
		if st.Run == "" {
			continue // checkout and setup-go: the test's repository is both
		}
		env := slices.Clone(r.env)
		for _, m := range []map[string]string{job.Env, st.Env} {
			for k, v := range m {
				env = append(env, k+"="+r.expand(v, pr))
			}
		}
		env = append(env, "GITHUB_STEP_SUMMARY="+summary, "GITHUB_REPOSITORY=acme/svc")
		cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", r.expand(st.Run, pr))
		cmd.Dir = r.dir
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
			r.t.Fatalf("step %q: %v", st.Name, err)
		}
		out[st.Name] = outcome{ok: err == nil, output: string(b)}
	}
	sum, _ := os.ReadFile(summary)
	return out, string(sum)
}

func (r *runner) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	if b, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

func (r *runner) write(name, text string) {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *runner) edit(name, old, new string) {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		r.t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		r.t.Fatalf("%s does not hold %q", name, old)
	}
	r.write(name, strings.Replace(string(b), old, new, 1))
}

// fakeGH is a gh that answers the two API calls the comment step makes from
// a file of comments, through the real jq (gh's --jq is jq's language).
const fakeGH = `#!/bin/bash
set -euo pipefail
state="$GH_STATE"
echo "$*" >> "$state/calls"
[ "$1" = api ] || { echo "fake gh: only api" >&2; exit 2; }
shift
if [ "$1" = --paginate ]; then
	[ "$3" = --jq ] || exit 2
	jq -r "$4" "$state/comments.json"
	exit
fi
[ "$1" = --method ] && [ "$4" = -f ] || { echo "fake gh: $*" >&2; exit 2; }
method=$2 path=$3 body=${5#body=}
case "$method" in
POST)
	id=$(( $(jq length "$state/comments.json") + 100 ))
	jq --arg body "$body" --argjson id "$id" '. + [{id: $id, user: {login: "github-actions[bot]"}, body: $body}]' "$state/comments.json" > "$state/next" ;;
PATCH)
	id=${path##*/}
	jq --arg body "$body" --argjson id "$id" 'map(if .id == $id then .body = $body else . end)' "$state/comments.json" > "$state/next" ;;
*) exit 2 ;;
esac
mv "$state/next" "$state/comments.json"
`

// TestTheWorkflowInitWritesOnAPullRequest runs the commands of the workflow
// toolreg init writes, in a repository with a base branch and a pull
// request's branch, with the real go, cue, toolreg (built from this checkout)
// and git: a compatible change passes; a removed param fails the diff step,
// with the change in the summary and in one comment; the label lets it pass;
// a manifest out of step with its function fails the binding check.
func TestTheWorkflowInitWritesOnAPullRequest(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &runner{t: t, dir: dir, ghState: t.TempDir()}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(fakeGH), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.ghState, "comments.json"), []byte(`[{"id": 1, "user": {"login": "someone"}, "body": "<!-- toolreg diff --> quoted by a person"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	r.env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GH_STATE="+r.ghState,
		// The module's requirements are this checkout's, in the module cache.
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off",
		"GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@example.test", "GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@example.test",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	)

	var stdout, stderr bytes.Buffer
	if code := Main([]string{"init", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("init: %d\n%s%s", code, stdout.String(), stderr.String())
	}
	// A service module that requires this checkout of toolreg and pins the
	// two tools, as init's next steps say.
	r.write("go.mod", fmt.Sprintf(`module example.com/svc

go 1.26.0

require github.com/beam-agents/toolreg v0.0.0

replace github.com/beam-agents/toolreg => %s

tool (
	cuelang.org/go/cmd/cue
	github.com/beam-agents/toolreg/cmd/toolreg
)
`, repo))
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	r.write("go.sum", string(sum))
	r.write("tools/tools.go", `package tools

import (
	"context"

	"github.com/beam-agents/toolreg/bindings"
)

type LookupArgs struct {
	CustomerID     string `+"`json:\"customer_id\"`"+`
	IncludeHistory bool   `+"`json:\"include_history\"`"+`
}

func lookup(context.Context, LookupArgs) (string, error) { return "", nil }

// Bind is what the service does with its Binder at startup.
func Bind(b *bindings.Binder) { bindings.ReadOnly(b, "lookup_customer", lookup) }
`)
	r.edit("manifests/bindings_test.go", "func bind(b *bindings.Binder) {\n}", "func bind(b *bindings.Binder) { tools.Bind(b) }")
	r.edit("manifests/bindings_test.go", `"github.com/beam-agents/toolreg/bindingstest"`, `"github.com/beam-agents/toolreg/bindingstest"
	"example.com/svc/tools"`)
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir, tidy.Env = dir, r.env
	if b, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, b)
	}
	steps := []string{"cue vet", "toolreg vet", "toolreg diff", "toolreg diff comment", "binding check"}
	expect := func(name string, got map[string]outcome, failing ...string) {
		t.Helper()
		for _, s := range steps {
			o, ran := got[s]
			if !ran {
				t.Errorf("%s: step %q did not run", name, s)
				continue
			}
			if want := !slices.Contains(failing, s); o.ok != want {
				t.Errorf("%s: step %q passed=%v, want %v:\n%s", name, s, o.ok, want, o.output)
			}
		}
	}
	comments := func() []map[string]any {
		b, err := os.ReadFile(filepath.Join(r.ghState, "comments.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cs []map[string]any
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatal(err)
		}
		return cs
	}

	// The first pull request adds the manifests: there is nothing at the
	// base to compare them with, and that is no failure.
	r.git("init", "-q", "-b", "main")
	r.git("add", "go.mod", "go.sum")
	r.git("commit", "-q", "-m", "a service")
	r.git("remote", "add", "origin", dir) // BASE is origin/main, as after actions/checkout
	r.git("fetch", "-q", "origin")
	r.git("checkout", "-q", "-b", "setup")
	r.git("add", ".")
	r.git("commit", "-q", "-m", "toolreg init")
	got, summary := r.run(pullRequest{})
	expect("the pull request that adds the manifests", got)
	if want := "No manifests at origin/main yet: no contract changes to compare.\n"; summary != want {
		t.Errorf("the first pull request: summary %q, want %q", summary, want)
	}
	r.git("checkout", "-q", "main")
	r.git("merge", "-q", "--ff-only", "setup")
	r.git("fetch", "-q", "origin")
	r.git("checkout", "-q", "-b", "pr")

	// A compatible change passes every step.
	r.edit("manifests/lookup_customer.yaml", "return their profile.", "return their profile and plan.")
	r.git("commit", "-q", "-am", "describe the plan too")
	got, summary = r.run(pullRequest{})
	expect("a compatible change", got)
	if !strings.Contains(summary, "| compatible | `lookup_customer` | `description` | description edited |") {
		t.Errorf("a compatible change: the summary does not show it:\n%s", summary)
	}
	if cs := comments(); len(cs) != 2 || !strings.Contains(cs[1]["body"].(string), "description edited") || cs[0]["body"] != "<!-- toolreg diff --> quoted by a person" {
		t.Errorf("a compatible change: want the person's comment untouched and one new comment with the table, got %v", cs)
	}

	// A removed param (its Go field removed too, so it still binds) fails
	// the diff step, with the change and the label that accepts it in the
	// summary and in the same comment, updated in place.
	r.edit("manifests/lookup_customer.yaml", `  include_history:
    type: boolean
    description: Also return the customer's last support tickets.
    default: false            # a param with a default is optional
`, "")
	r.edit("tools/tools.go", "\tIncludeHistory bool   `json:\"include_history\"`\n", "")
	r.git("commit", "-q", "-am", "drop include_history")
	got, summary = r.run(pullRequest{labels: []string{"docs"}})
	expect("a removed param", got, "toolreg diff")
	for _, want := range []string{"| **breaking** | `lookup_customer` | `params.include_history` | param removed", "add the label `contract-change`"} {
		if !strings.Contains(summary, want) {
			t.Errorf("a removed param: the summary does not say %q:\n%s", want, summary)
		}
	}
	if !strings.Contains(got["toolreg diff"].output, "::error file=manifests/lookup_customer.yaml,line=") {
		t.Errorf("a removed param: no annotation at the tool's manifest:\n%s", got["toolreg diff"].output)
	}
	if cs := comments(); len(cs) != 2 || !strings.Contains(cs[1]["body"].(string), "param removed") {
		t.Errorf("a removed param: want the one comment updated in place, got %v", cs)
	}

	// The label the team named lets it pass, and the summary says so.
	got, summary = r.run(pullRequest{labels: []string{"docs", "contract-change"}})
	expect("a removed param with the label", got)
	if !strings.Contains(summary, "Accepted: the pull request carries the label `contract-change`.") {
		t.Errorf("with the label: the summary does not say it is accepted:\n%s", summary)
	}

	// A manifest edited out of step with its function fails the binding
	// check, which names the param.
	r.edit("manifests/lookup_customer.yaml", `    pattern: "^cus_[a-z0-9]{6,24}$"
`, `    pattern: "^cus_[a-z0-9]{6,24}$"
  limit:
    type: integer
    description: How many tickets.
`)
	r.git("commit", "-q", "-am", "add limit")
	got, _ = r.run(pullRequest{labels: []string{"contract-change"}})
	expect("a param with no Go field", got, "binding check")
	if out := got["binding check"].output; !strings.Contains(out, "limit") || !strings.Contains(out, "lookup_customer.yaml") {
		t.Errorf("the binding check does not name the param and its manifest:\n%s", out)
	}
	calls, _ := os.ReadFile(filepath.Join(r.ghState, "calls"))
	if n := strings.Count(string(calls), "--method POST"); n != 1 {
		t.Errorf("%d comments posted over five runs, want 1:\n%s", n, calls)
	}
}
