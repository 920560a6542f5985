package natsstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
)

// TestListingsSeeTheirOwnWrites lists records right after each write, as
// `toolreg intents` and `toolreg budgets` do after an effector acted: a
// listing must show every write acknowledged before it began. Read from a
// replica that is a moment behind the stream's leader, a listing showed a
// budget's earlier count (storetest's usage case failed so in a loaded run).
func TestListingsSeeTheirOwnWrites(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	ctx := ctxT(t)
	for i := range 40 {
		id := fmt.Sprintf("seen-%d", i)
		tok := storetest.MustClaim(t, s, id, time.Minute)
		if err := s.Complete(ctx, id, tok, []byte("ok"), time.Hour); err != nil {
			t.Fatal(err)
		}
		done := 0
		if err := s.Records(ctx, func(r effector.Record) error {
			if r.State == effector.RecordDone {
				done++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if done != i+1 {
			t.Fatalf("after %d completions acknowledged, a listing showed %d done", i+1, done)
		}
	}
}
