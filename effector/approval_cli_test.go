package effector_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/cli"
)

// TestTheCLIDecidingOnASQLiteFileAnEffectorUsesRunsEachCallOnce: `toolreg
// approvals approve|deny` on the SQLite file a running effector uses (its
// ResumeDecided loop going, and Decide racing the CLI on one approval):
// every approved call runs once, one of three people approving at once is
// recorded and the others told theirs was ignored, the CLI and Decide agree
// on who won, and a decision by a blank name records nothing.
func TestTheCLIDecidingOnASQLiteFileAnEffectorUsesRunsEachCallOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "dedup.db")
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a := newApprovals(t, s)
	a.now.Store(time.Now().UnixMilli()) // the CLI decides at the real time
	ctx := context.Background()
	approved := a.stage(t, 1, `{"amount":900,"order_id":"o-1"}`)
	raced := a.stage(t, 2, `{"amount":900,"order_id":"o-2"}`)

	cliRun := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := cli.Main(append([]string{"approvals"}, args...), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	if code, out := cliRun("approve", "-by", "  ", path, approved.ID); code == 0 {
		t.Fatalf("a decision by a blank name: exit 0: %s", out)
	}

	stop := make(chan struct{})
	loop := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				loop <- nil
				return
			default:
			}
			a.now.Store(time.Now().UnixMilli())
			if _, err := a.eff.ResumeDecided(ctx, func(context.Context, intent.Result) error { return nil }); err != nil {
				loop <- err
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	codes := make([]int, 4)
	outs := make([]string, 4)
	for i := range 3 {
		wg.Go(func() { codes[i], outs[i] = cliRun("approve", "-by", "ana", path, approved.ID) })
	}
	wg.Go(func() { codes[3], outs[3] = cliRun("deny", "-by", "bob", "-note", "no", path, raced.ID) })
	var decided intent.Result
	var decideErr error
	wg.Go(func() {
		decided, decideErr = a.eff.Decide(ctx, raced.ID, effector.Decision{Verdict: effector.Approve, By: "carol"})
	})
	wg.Wait()
	close(stop)
	if err := <-loop; err != nil {
		t.Fatalf("ResumeDecided: %v", err)
	}
	if _, err := a.eff.ResumeDecided(ctx, func(context.Context, intent.Result) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// One of the three approvals is recorded; the other two are told
	// theirs was ignored, and fail.
	recorded := 0
	for i := range 3 {
		switch {
		case codes[i] == 0:
			recorded++
		case codes[i] != 1 || !strings.Contains(outs[i], "ignored: approval "+approved.ID+" (big_refund) was already approved by ana at "):
			t.Fatalf("CLI approve %d: exit %d: %s", i, codes[i], outs[i])
		}
	}
	if recorded != 1 {
		t.Fatalf("%d of three CLI approvals were recorded, want 1: %q", recorded, outs[:3])
	}
	ap, err := effector.LookupApproval(ctx, s, approved.ID)
	if err != nil || ap.State != effector.ApprovalApproved || ap.Result == nil || ap.Result.Status != intent.StatusOK {
		t.Fatalf("the CLI-approved one: %+v, %v", ap, err)
	}
	rc, err := effector.LookupApproval(ctx, s, raced.ID)
	if err != nil || rc.Result == nil {
		t.Fatalf("the raced one: %+v, %v", rc, err)
	}
	wantRuns := int32(1)
	switch rc.State {
	case effector.ApprovalDenied:
		if codes[3] != 0 || decideErr == nil || rc.Result.Status != intent.StatusRejected {
			t.Fatalf("denied by the CLI, yet CLI exit %d (%s), Decide %v, result %s", codes[3], outs[3], decideErr, rc.Result.Status)
		}
	case effector.ApprovalApproved:
		wantRuns = 2
		if codes[3] == 0 || !strings.Contains(outs[3], "first decision wins") || decideErr != nil || decided.Status != intent.StatusOK {
			t.Fatalf("approved by Decide, yet CLI exit %d (%s), Decide %v %s", codes[3], outs[3], decideErr, decided.Status)
		}
	default:
		t.Fatalf("the raced one is %s", rc.State)
	}
	if n := a.runs.Load(); n != wantRuns {
		t.Fatalf("runs = %d, want %d", n, wantRuns)
	}
}
