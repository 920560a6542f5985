//go:build unix

package effector_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
)

// TestMain lets the kill test re-run this binary as the effector process it
// kills (approvalChild).
func TestMain(m *testing.M) {
	if dir := os.Getenv("TOOLREG_APPROVAL_CHILD"); dir != "" {
		approvalChild(dir)
		return
	}
	if dir := os.Getenv("TOOLREG_APPROVAL_RACER"); dir != "" {
		approvalRacer(dir)
		return
	}
	os.Exit(m.Run())
}

// pausingStore pauses the process at the claim of one intent id, after
// saying so in a file: the parent kills it there.
type pausingStore struct {
	*sqlitestore.Store // and its Inspector, which approvals read with
	at, flag           string
}

func (s pausingStore) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	if id == s.at {
		if err := os.WriteFile(s.flag, nil, 0o644); err != nil {
			panic(err)
		}
		select {} // killed here
	}
	return s.Store.Claim(ctx, id, call, lease)
}

// approvalChild is the effector process: it approves the approval named in
// dir/approval with Decide, on the SQLite file dir/dedup.db, and pauses at
// the claim of its execution, after the decision is recorded.
func approvalChild(dir string) {
	id, err := os.ReadFile(filepath.Join(dir, "approval"))
	if err != nil {
		panic(err)
	}
	s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "dedup.db"))
	if err != nil {
		panic(err)
	}
	a, err := buildApprovals(pausingStore{Store: s, at: intent.ExecutionID(string(id)), flag: filepath.Join(dir, "paused")})
	if err != nil {
		panic(err)
	}
	_, err = a.eff.Decide(context.Background(), string(id), effector.Decision{Verdict: effector.Approve, By: "child", At: a.clock()})
	fmt.Fprintln(os.Stderr, "the child was not killed:", err)
	os.Exit(3)
}

// TestAnEffectorKilledBetweenTheDecisionAndTheExecutionRunsTheCallOnceAfterARestart:
// a real process records an approval and is killed (SIGKILL) before its
// execution is claimed; an effector started after it on the same SQLite
// file finds the approval decided, executes the call once, not as an
// unknown effect (nothing ran), and every later Resume reads that result.
func TestAnEffectorKilledBetweenTheDecisionAndTheExecutionRunsTheCallOnceAfterARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := func() *sqlitestore.Store {
		s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "dedup.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	first := newApprovals(t, open())
	in := first.stage(t, 21, `{"amount":750,"order_id":"o-21"}`)
	if err := os.WriteFile(filepath.Join(dir, "approval"), []byte(in.ID), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TOOLREG_APPROVAL_CHILD="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
	for paused := false; !paused; {
		select {
		case err := <-exited:
			t.Fatalf("the child exited (%v) before the execution's claim: %s", err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			<-exited
			t.Fatalf("the child never reached the execution's claim: %s", stderr.String())
		case <-time.After(5 * time.Millisecond):
			_, err := os.Stat(filepath.Join(dir, "paused"))
			paused = err == nil
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	ap, err := effector.LookupApproval(context.Background(), open(), in.ID)
	if err != nil || ap.State != effector.ApprovalApproved || ap.Decision.By != "child" || ap.Result != nil {
		t.Fatalf("after the kill: %+v, %v; want approved by the child, not executed", ap, err)
	}
	restarted := newApprovals(t, open())
	var published []intent.Result
	n, err := restarted.eff.ResumeDecided(context.Background(), func(_ context.Context, r intent.Result) error {
		published = append(published, r)
		return nil
	})
	if err != nil || n != 1 || published[0].Status != intent.StatusOK || strings.Contains(published[0].ErrorMessage, "effect unknown") {
		t.Fatalf("ResumeDecided after the restart = %d, %v, %+v; want the call run once, OK", n, err, published)
	}
	again, err := newApprovals(t, open()).eff.Resume(context.Background(), in.ID)
	if err != nil || !bytes.Equal(marshal(t, again), marshal(t, published[0])) {
		t.Fatalf("a later Resume: %v, or another result", err)
	}
	if runs := first.runs.Load() + restarted.runs.Load(); runs != 1 {
		t.Fatalf("the approved call ran %d times, want 1", runs)
	}
}

// approvalRacer is one of several processes approving the approval named in
// dir/approval at once, from 8 goroutines, on dir/dedup.db; each run of
// the tool appends a line to dir/runs, and the result's bytes go to stdout.
func approvalRacer(dir string) {
	id, err := os.ReadFile(filepath.Join(dir, "approval"))
	if err != nil {
		panic(err)
	}
	s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "dedup.db"))
	if err != nil {
		panic(err)
	}
	a, err := buildApprovals(s)
	if err != nil {
		panic(err)
	}
	runs, err := os.OpenFile(filepath.Join(dir, "runs"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	a.onRun = func() { fmt.Fprintln(runs, os.Getpid()) }
	results := make(chan []byte, 8)
	for i := range 8 {
		go func() {
			res, err := a.eff.Decide(context.Background(), string(id), effector.Decision{Verdict: effector.Approve, By: fmt.Sprint("racer-", os.Getpid(), "-", i), At: a.clock()})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(4)
			}
			b, _ := res.MarshalBinary()
			results <- b
		}()
	}
	first := <-results
	for range 7 {
		if !bytes.Equal(<-results, first) {
			fmt.Fprintln(os.Stderr, "deciders in one process got different results")
			os.Exit(5)
		}
	}
	fmt.Printf("%x\n", first)
	os.Exit(0)
}

// TestTwoProcessesApprovingOneApprovalOnOneSQLiteFileRunItOnce: two real
// processes, 8 goroutines each, approve one approval at once on one SQLite
// file; the call runs once, and every decider in both gets its result.
func TestTwoProcessesApprovingOneApprovalOnOneSQLiteFileRunItOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(dir, "dedup.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	in := newApprovals(t, s).stage(t, 31, `{"amount":720,"order_id":"o-31"}`)
	if err := os.WriteFile(filepath.Join(dir, "approval"), []byte(in.ID), 0o644); err != nil {
		t.Fatal(err)
	}
	outs := make([]strings.Builder, 2)
	errs := make([]strings.Builder, 2)
	cmds := make([]*exec.Cmd, 2)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^$")
		cmds[i].Env = append(os.Environ(), "TOOLREG_APPROVAL_RACER="+dir)
		cmds[i].Stdout, cmds[i].Stderr = &outs[i], &errs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("racer %d: %v: %s", i, err, errs[i].String())
		}
	}
	runs, err := os.ReadFile(filepath.Join(dir, "runs"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(runs), "\n"); n != 1 {
		t.Fatalf("the approved call ran %d times across two processes, want 1", n)
	}
	if outs[0].String() != outs[1].String() || outs[0].Len() == 0 {
		t.Fatalf("the two processes got different results: %q and %q", outs[0].String(), outs[1].String())
	}
}
