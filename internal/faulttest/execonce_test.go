package faulttest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// checkRecorded fails t for every intent whose published results are not
// the result its store holds: a result the store could not record must never
// be published (and so acknowledged).
func checkRecorded(t *testing.T, kind, dir string, srv *redistest.Server, prefix string, ins []*intent.Intent, res map[string][]intent.Result) {
	t.Helper()
	seen := map[string]bool{}
	for _, in := range ins {
		id := in.ID
		if seen[id] || len(res[id]) == 0 {
			continue // tally counts it lost
		}
		seen[id] = true
		if stored := storedResult(t, kind, dir, srv, prefix, in); !sameResult(stored, res[id][0]) {
			t.Errorf("intent %s: published %+v, but the store holds %+v", id, res[id][0], stored)
		}
	}
}

// checkRepeats fails t for every intent the downstream saw more than once
// unless the store reported it reclaimed and its result says the effect is
// unknown, and for every effect the deduplicating downstream applied twice.
func checkRepeats(t *testing.T, ids []string, calls map[string][]call, res map[string][]intent.Result, reclaimed map[string]bool) (repeated int) {
	t.Helper()
	for _, id := range ids {
		applied := 0
		for _, c := range calls[id] {
			if c.applied {
				applied++
			}
		}
		if applied > 1 {
			t.Errorf("intent %s: the deduplicating downstream applied it %d times", id, applied)
		}
		if len(calls[id]) <= 1 {
			continue
		}
		repeated++
		if !reclaimed[id] {
			t.Errorf("intent %s ran %d times, but the store never reported it reclaimed", id, len(calls[id]))
		}
		if len(res[id]) > 0 && !strings.HasPrefix(res[id][0].ErrorMessage, "effect unknown") {
			t.Errorf("intent %s ran %d times, but its result does not say the effect is unknown: %+v", id, len(calls[id]), res[id][0])
		}
	}
	return repeated
}

func reclaimedIDs(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, l := range lines(t, path) {
		out[strings.Fields(l)[0]] = true
	}
	return out
}

// TestResultWriteFailing makes the store fail every Complete for a while (a
// full disk, then freed): briefly, within a lease, and for longer than one.
// A result the store could not record is never published nor acknowledged:
// the intent stays on the recoverable path, and its next owner runs it as
// reclaimed (effect unknown). Nothing is lost, and every published result is
// the one the store holds.
func TestResultWriteFailing(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const (
		entries = 50
		unique  = 40
	)
	for _, kind := range []string{"sqlite", "redis"} {
		for _, tc := range []struct {
			name    string
			failFor time.Duration
			repeats bool // whether the failure outlasts a lease, so intents must run again
		}{
			{"briefly", 200 * time.Millisecond, false},
			{"past the lease", 3 * time.Second, true},
		} {
			scenario := fmt.Sprintf("result write failing %s (%s)", tc.name, kind)
			t.Run(scenario, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				fs := newFiles(dir, "e")
				ins, ids := stream("writefail/"+kind+"/"+tc.name, entries, unique, rand.New(rand.NewPCG(11, 11)))
				writeIntents(t, fs.in, ins)
				prefix := scenario + ":"
				p := start(t, fs.args(storeArg(kind, dir, srv), "-dedup", "-workers", "1", "-key-prefix", prefix,
					"-lease", "2s", "-timeout", "500ms", "-fail-complete-after", "5", "-fail-complete-for", tc.failFor.String())...)
				if p.wait(t) {
					t.Fatal("the effector was killed")
				}
				calls := downstreamCalls(t, fs.downstream)
				res := results(t, fs.out)
				r := tally(t, scenario, ids, calls, res)
				checkRecorded(t, kind, dir, srv, prefix, ins, res)
				reclaimed := reclaimedIDs(t, fs.reclaims)
				repeated := checkRepeats(t, ids, calls, res, reclaimed)
				injected := 0
				for _, l := range lines(t, fs.completes) {
					if strings.HasSuffix(l, " injected") {
						injected++
					}
				}
				unrecorded := strings.Count(p.stderr.String(), "result not recorded")
				switch {
				case injected == 0:
					t.Fatal("no Complete failed: the test proves nothing")
				case !tc.repeats && (repeated != 0 || unrecorded != 0):
					t.Errorf("a failure shorter than the lease made %d intents run again (%d results unrecorded), want none: the retries should have recorded them", repeated, unrecorded)
				case tc.repeats && (repeated == 0 || unrecorded == 0):
					t.Errorf("a failure past the lease left %d results unrecorded and %d intents run again, want some of each", unrecorded, repeated)
				}
				r.note = fmt.Sprintf("%d Completes failed; %d results unrecorded, never published; %d intents ran again as reclaimed", injected, unrecorded, repeated)
				report(t, r)
			})
		}
	}
}

// TestCallerCancelledMidTool sends SIGTERM while tools run. With a drain
// timeout longer than the tools, the running intents finish and are answered.
// With a shorter one, Serve stops waiting for them and the process exits
// while they run: no result is recorded for a function still running (never
// a false "canceled" ERROR), their claims lapse, and the next process runs
// them as reclaimed. Nothing is lost either way.
func TestCallerCancelledMidTool(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const unique = 20
	for _, kind := range []string{"sqlite", "redis"} {
		for _, tc := range []struct {
			name  string
			drain time.Duration
			exits bool // whether the process exits with tools still running
		}{
			{"drain outlasts the tool", 5 * time.Second, false},
			{"exit before the tool returns", 50 * time.Millisecond, true},
		} {
			scenario := fmt.Sprintf("caller cancelled mid-tool, %s (%s)", tc.name, kind)
			t.Run(scenario, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				fs := newFiles(dir, "e")
				ins, ids := stream("cancel/"+kind+"/"+tc.name, unique, unique, rand.New(rand.NewPCG(13, 13)))
				writeIntents(t, fs.in, ins)
				prefix := scenario + ":"
				args := fs.args(storeArg(kind, dir, srv), "-dedup", "-workers", "2", "-key-prefix", prefix,
					"-lease", "2s", "-timeout", "1s", "-tool-delay", "400ms", "-drain", tc.drain.String())
				p1 := start(t, args...)
				waitFor(t, procTimeout, "3 downstream calls", func() bool { return len(lines(t, fs.downstream)) >= 3 })
				if err := p1.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				unanswered := p1.waitStopped(t)
				detached := strings.Count(p1.stderr.String(), "the caller's context ended while the tool runs")
				if tc.exits != unanswered || tc.exits != (detached > 0) {
					t.Fatalf("after SIGTERM with drain %v: unanswered %v, %d executions detached; want both %v; stderr:\n%s", tc.drain, unanswered, detached, tc.exits, p1.stderr)
				}
				if p2 := start(t, args...); p2.wait(t) {
					t.Fatal("the second effector was killed")
				}
				calls := downstreamCalls(t, fs.downstream)
				res := results(t, fs.out)
				r := tally(t, scenario, ids, calls, res)
				checkRecorded(t, kind, dir, srv, prefix, ins, res)
				for id, rs := range res {
					if strings.Contains(rs[0].ErrorMessage, "cancel") {
						t.Errorf("intent %s: result %q blames a cancellation: only the function's real outcome may be recorded", id, rs[0].ErrorMessage)
					}
				}
				repeated := checkRepeats(t, ids, calls, res, reclaimedIDs(t, fs.reclaims))
				if !tc.exits && repeated != 0 {
					t.Errorf("%d intents ran again though the drain let every tool finish", repeated)
				}
				r.note = fmt.Sprintf("SIGTERM mid-tool, drain %v: %d execution(s) outlived their caller; %d intents ran again as reclaimed", tc.drain, detached, repeated)
				report(t, r)
			})
		}
	}
}
