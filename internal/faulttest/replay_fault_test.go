package faulttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// The rows of issue 13's part B: a torn last line, a replay that asks for
// other calls, and a poison intent among good ones, on SQLite and Redis.

// exitCode waits for p and returns its exit code; a signal fails the test.
func (p *proc) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(procTimeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("effectord %d did not finish within %v; stderr:\n%s", p.cmd.Process.Pid, procTimeout, p.stderr)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee) && ee.Exited():
		return ee.ExitCode()
	}
	t.Fatalf("effectord %d: %v; stderr:\n%s", p.cmd.Process.Pid, p.err, p.stderr)
	return 0
}

func TestTornLineThenRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, kind := range []string{"sqlite", "redis"} {
		t.Run("on "+kind+" a torn last line is read whole after a restart, never lost", func(t *testing.T) {
			t.Parallel()
			scenario := fmt.Sprintf("torn JSONL line then restart (%s)", kind)
			dir := t.TempDir()
			fs := newFiles(dir, "e")
			ins, ids := stream("torn/"+kind, 50, 50, nil)
			writeIntents(t, fs.in, ins)
			whole, err := os.ReadFile(fs.in)
			if err != nil {
				t.Fatal(err)
			}
			// The producer crashed mid-way through the last line.
			cut := len(whole) - 1 - len(whole[:len(whole)-1])/len(ins)/2
			if err := os.WriteFile(fs.in, whole[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			store := storeArg(kind, dir, srv)
			args := fs.args(store, append([]string{"-workers", "1", "-key-prefix", scenario + ":", "-torn-wait", "0s", "-dead", fs.dir + "/dead.log"}, leaseArgs...)...)
			p := start(t, args...)
			if code := p.exitCode(t); code == 0 || !strings.Contains(p.stderr.String(), "no newline") {
				t.Fatalf("the run over a torn last line exited %d; stderr:\n%s\nwant a failure that reports the torn line", code, p.stderr)
			}
			if got := len(results(t, fs.out)); got != len(ids)-1 {
				t.Fatalf("first run published %d results, want %d: every whole line", got, len(ids)-1)
			}
			// The producer finishes the line; the restarted effector reads it.
			f, err := os.OpenFile(fs.in, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(whole[cut:])
			f.Close()
			if code := start(t, args...).exitCode(t); code != 0 {
				t.Fatalf("the restart exited %d", code)
			}
			calls := downstreamCalls(t, fs.downstream)
			r := tally(t, scenario, ids, calls, results(t, fs.out))
			wantExecutedOnce(t, ids, calls, "")
			if dead := lines(t, fs.dir+"/dead.log"); len(dead) != 0 {
				t.Errorf("dead letters %q, want none: the torn line was whole once finished", dead)
			}
			r.note = "first run stops at the torn line, checkpoint before it; restart reads it whole"
			report(t, r)
		})
	}
}

func TestReplayWithDifferentArguments(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, kind := range []string{"sqlite", "redis"} {
		t.Run("on "+kind+" a replay asking for other calls under known ids is rejected and runs nothing", func(t *testing.T) {
			t.Parallel()
			scenario := fmt.Sprintf("replay with different arguments (%s)", kind)
			dir := t.TempDir()
			a, b := newFiles(dir, "a"), newFiles(dir, "b")
			ins, ids := stream("replay/"+kind, 50, 50, nil)
			writeIntents(t, a.in, ins)
			// The replay: the same ids, every other one asking for other arguments.
			replay := make([]*intent.Intent, len(ins))
			changed := map[string]bool{}
			for i, in := range ins {
				c := *in
				if i%2 == 0 {
					c.ArgsJSON = []byte(`{"key":"changed-` + in.ID + `"}`)
					changed[in.ID] = true
				}
				replay[i] = &c
			}
			writeIntents(t, b.in, replay)
			store := storeArg(kind, dir, srv)
			extra := append([]string{"-workers", "1", "-key-prefix", scenario + ":"}, leaseArgs...)
			if start(t, a.args(store, extra...)...).wait(t) {
				t.Fatal("the first run was killed")
			}
			if start(t, b.args(store, extra...)...).wait(t) {
				t.Fatal("the replay was killed")
			}
			calls := downstreamCalls(t, a.downstream)
			r := tally(t, scenario, ids, calls, results(t, a.out))
			wantExecutedOnce(t, ids, calls, "")
			first, again := results(t, a.out), results(t, b.out)
			rejected := 0
			for _, id := range ids {
				if len(again[id]) != 1 {
					t.Errorf("intent %s: the replay published %d results, want 1", id, len(again[id]))
					continue
				}
				got := again[id][0]
				switch {
				case changed[id]:
					if got.Status != intent.StatusRejected || !strings.Contains(got.ErrorMessage, "non-deterministic replay") || got.Payload != nil {
						t.Errorf("intent %s replayed with other arguments = %v %q %q, want REJECTED as a non-deterministic replay, without the old payload", id, got.Status, got.ErrorMessage, got.Payload)
					}
					rejected++
				case !sameResult(got, first[id][0]):
					t.Errorf("intent %s replayed as it was = %+v, want the first result %+v", id, got, first[id][0])
				}
			}
			r.note = fmt.Sprintf("replay of %d ids: %d with other arguments rejected, none ran; the rest answered from the store", len(ids), rejected)
			report(t, r)
		})
	}
}

func TestPoisonIntentAmongGoodOnes(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, kind := range []string{"sqlite", "redis"} {
		t.Run("on "+kind+" a poison intent among 1000 good ones is given up and the good ones all finish", func(t *testing.T) {
			t.Parallel()
			scenario := fmt.Sprintf("poison intent among 1000 good ones (%s)", kind)
			dir := t.TempDir()
			fs := newFiles(dir, "e")
			ins, ids := stream("poison/"+kind, 1001, 1001, nil)
			poison := ids[500]
			writeIntents(t, fs.in, ins)
			store := storeArg(kind, dir, srv)
			const maxAttempts = 3
			args := fs.args(store, append([]string{"-workers", "1", "-key-prefix", scenario + ":", "-poison", poison,
				"-max-attempts", fmt.Sprint(maxAttempts), "-dead", fs.dir + "/dead.log"}, leaseArgs...)...)
			crashes := 0
			crashed := map[int]bool{}
			for {
				p := start(t, args...)
				if !p.wait(t) {
					break
				}
				crashed[p.cmd.Process.Pid] = true
				if crashes++; crashes > maxAttempts+1 {
					t.Fatalf("the effector crashed %d times on the poison intent, want it given up after %d attempts", crashes, maxAttempts)
				}
			}
			calls := downstreamCalls(t, fs.downstream)
			res := results(t, fs.out)
			r := tally(t, scenario, ids, calls, res)
			delete(calls, poison)
			// A good intent runs again only where a crash cut it between its
			// run and its durable completion (Serve starts the next tool
			// before the last result is durable), and says so.
			again := wantDuplicatesOnlyInTheWindow(t, calls, res, crashed, durableCompletions(t, fs.completes))
			for _, id := range ids {
				if id != poison && len(res[id]) > 0 && res[id][0].Status != intent.StatusOK {
					t.Errorf("good intent %s = %v, want OK", id, res[id][0].Status)
				}
			}
			if p := res[poison]; len(p) == 0 || p[0].Status != intent.StatusError || !strings.Contains(p[0].ErrorMessage, "WithMaxAttempts") {
				t.Errorf("the poison intent's results = %+v, want ERROR naming the attempt limit", p)
			}
			dead := lines(t, fs.dir+"/dead.log")
			if len(dead) != 1 || !strings.Contains(dead[0], poison) || !strings.Contains(dead[0], "given up after") {
				t.Errorf("dead letters = %q, want the poison intent once, with its reason", dead)
			}
			r.note = fmt.Sprintf("%d crashes on the poison, then given up (ERROR, dead-lettered); the other 1000 OK, %d of them run again (cut before their durable completion, effect unknown)", crashes, again)
			report(t, r)
		})
	}
}
