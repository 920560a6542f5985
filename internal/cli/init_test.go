package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEShowsTheCIJobInitWrites keeps the README's "Use it in your
// service" snippet and the job toolreg init writes the same text, so the one
// a reader copies is the one that is tested with the real cue vet
// (cmd/toolreg/testdata/script/init.txtar).
func TestREADMEShowsTheCIJobInitWrites(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Use it in your service\n")
	if !ok {
		t.Fatal(`README.md has no "Use it in your service" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	if !strings.Contains(section, "```yaml\n"+initWorkflow(defaultAcceptLabel)+"```\n") {
		t.Errorf("the README's \"Use it in your service\" section does not show internal/cli/initdata/workflow.yml as it stands; copy it into a yaml block there:\n%s", initWorkflow(defaultAcceptLabel))
	}
	for _, cmd := range []string{"go get github.com/beam-agents/toolreg", "go get -tool github.com/beam-agents/toolreg/cmd/toolreg", "go get -tool cuelang.org/go/cmd/cue@", "toolreg init"} {
		if !strings.Contains(section, cmd) {
			t.Errorf("the README's \"Use it in your service\" section does not say %q", cmd)
		}
	}
}
