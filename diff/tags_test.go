package diff

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
)

// Tags and keywords only steer tool search: a change to either is reported,
// as compatible.
func TestTagsAndKeywordsChangesAreCompatible(t *testing.T) {
	t.Parallel()
	old, new := refund(), refund()
	old.Tags, new.Tags = []string{"billing"}, []string{"billing", "payments"}
	new.Keywords = []string{"money back"}
	var got []string
	for _, c := range Compare([]*toolreg.Spec{old}, []*toolreg.Spec{new}).Changes {
		got = append(got, c.Class.String()+" "+c.Path)
	}
	if diff := cmp.Diff([]string{"compatible keywords", "compatible tags"}, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
