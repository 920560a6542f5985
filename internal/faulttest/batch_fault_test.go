package faulttest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBatchKillPoints SIGKILLs an effector serving in batches (4 workers,
// batches of 20, SQLite store, JSONL transport) at each point of a batch's
// path, restarts it until the intents file is answered, and checks that no
// intent is lost and that every duplicate execution is one a kill cut
// between the tool's run and its durable completion, whose result says the
// effect is unknown. A kill after a batch's claim interrupts the whole
// batch, and one before its completion every completion it held: the kill
// log names only the intent whose step fired it, so the checks go by the
// process killed and the completions each process made durable.
func TestBatchKillPoints(t *testing.T) {
	t.Parallel()
	const (
		entries  = 120
		unique   = 100
		maxKills = 3
	)
	for i, point := range []string{afterClaim, inTool, afterToolBeforeComplete, afterComplete} {
		scenario := fmt.Sprintf("batch kill %s (sqlite)", point)
		t.Run(fmt.Sprintf("a SIGKILL %s of a batch loses no intent", point), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(i), 32))
			dir := t.TempDir()
			fs := newFiles(dir, "e")
			ins, ids := stream("batch/"+point, entries, unique, rng)
			writeIntents(t, fs.in, ins)
			store := storeFor(t, "sqlite", dir, nil, nil)
			batches := filepath.Join(dir, "batches.log")
			kills := 0
			for {
				args := fs.args(store, append([]string{"-dedup", "-workers", "4", "-batch", "20", "-batches", batches, "-key-prefix", scenario + ":"}, leaseArgs...)...)
				if kills < maxKills {
					args = append(args, "-kill-at", point, "-kill-n", strconv.Itoa(1+rng.IntN(30)))
				}
				if !start(t, args...).wait(t) {
					break
				}
				kills++
			}
			if kills == 0 {
				t.Fatalf("no run was killed at %s: the kill point is never reached", point)
			}
			largest := 0
			for _, l := range lines(t, batches) {
				n, err := strconv.Atoi(l)
				if err != nil {
					t.Fatalf("batches.log: %q: want a batch's size", l)
				}
				largest = max(largest, n)
			}
			if largest < 2 {
				t.Fatalf("the largest batch claimed held %d intents: no batch was served, so the scenario tests nothing a batch of one does not", largest)
			}
			calls := downstreamCalls(t, fs.downstream)
			res := results(t, fs.out)
			killedPID := map[int]bool{}
			for _, l := range lines(t, fs.kills) {
				f := strings.Fields(l)
				pid, err := strconv.Atoi(f[len(f)-1])
				if len(f) != 3 || f[0] != point || err != nil {
					t.Fatalf("kills.log: %q: want %q <intent id> <pid>", l, point)
				}
				killedPID[pid] = true
			}
			r := tally(t, scenario, ids, calls, res)
			ranAgain := wantDuplicatesOnlyInTheWindow(t, calls, res, killedPID, durableCompletions(t, fs.completes))
			if t.Failed() && os.Getenv("FAULTTEST_KEEP") != "" {
				exec.Command("cp", "-r", dir, os.Getenv("FAULTTEST_KEEP")).Run()
			}
			r.note = fmt.Sprintf("4 workers, batches of 20: %d kills; %d intents ran again, each result saying the effect is unknown", kills, ranAgain)
			report(t, r)
		})
	}
}
