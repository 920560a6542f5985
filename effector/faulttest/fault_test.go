package faulttest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/redisstore"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/internal/redistest"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(childMain())
	}
	code := m.Run()
	printSummary()
	os.Exit(code)
}

// downstream is the fake downstream service: it records every call with its
// idempotency key and applies each key's effect once.
type downstream struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newDownstream(t *testing.T) *downstream {
	d := &downstream{calls: map[string]int{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			http.Error(w, "no Idempotency-Key", http.StatusBadRequest)
			return
		}
		d.mu.Lock()
		d.calls[key]++
		d.mu.Unlock()
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *downstream) callsOf(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[key]
}

func (d *downstream) total() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.calls {
		n += c
	}
	return n
}

// intents returns n unique intents of one scenario (seq keeps scenarios apart
// in a shared store).
func intents(seq int64, n int) []*toolreg.Intent {
	now := time.Now()
	out := make([]*toolreg.Intent, n)
	for i := range out {
		entity := []byte("fault")
		out[i] = &toolreg.Intent{
			ID: toolreg.IntentID(entity, seq, uint32(i)), EntityKey: entity, Seq: seq, StepIndex: uint32(i),
			ToolName: "apply", ArgsJSON: []byte(`{"key":"k` + strconv.Itoa(i) + `"}`),
			CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(), Attempt: 1, Kind: toolreg.KindTool,
		}
	}
	return out
}

func writeIntents(t *testing.T, path string, ins []*toolreg.Intent) {
	t.Helper()
	var b bytes.Buffer
	for _, in := range ins {
		j, err := in.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// child is one effector process.
type child struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

func startChild(t *testing.T, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{envChild + "=1"}, env...)...)
	c := &child{cmd: cmd, stderr: new(bytes.Buffer), done: make(chan error, 1)}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting an effector process: %v", err)
	}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		<-c.done
	})
	return c
}

// wait returns nil if the child exited 0, errKilled if SIGKILL ended it.
func (c *child) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-c.done:
		c.done <- err // for Cleanup
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				return errKilled
			}
			return fmt.Errorf("effector process failed: %v\n%s", err, c.stderr)
		}
		return err
	case <-time.After(60 * time.Second):
		t.Fatalf("an effector process did not finish within 60s:\n%s", c.stderr)
		return nil
	}
}

var errKilled = errors.New("killed")

// results reads the results files: the result lines by intent id.
func results(t *testing.T, paths ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var r toolreg.Result
			if err := r.UnmarshalJSON(sc.Bytes()); err != nil {
				t.Fatalf("%s: a torn or bad result line %q: %v", p, sc.Text(), err)
			}
			out[r.IntentID] = append(out[r.IntentID], sc.Text())
		}
	}
	return out
}

// row is one line of the summary table.
type row struct {
	scenario                                 string
	intents, executions, duplicates, lost, n int // n: kills, restarts or processes
	what                                     string
}

var (
	summaryMu sync.Mutex
	summary   []row
)

func report(r row) {
	summaryMu.Lock()
	defer summaryMu.Unlock()
	summary = append(summary, r)
}

func printSummary() {
	if len(summary) == 0 {
		return
	}
	sort.Slice(summary, func(i, j int) bool { return summary[i].scenario < summary[j].scenario })
	fmt.Printf("\n%-38s %8s %11s %11s %5s  %s\n", "scenario", "intents", "executions", "duplicates", "lost", "faults")
	for _, r := range summary {
		fmt.Printf("%-38s %8d %11d %11d %5d  %d %s\n", r.scenario, r.intents, r.executions, r.duplicates, r.lost, r.n, r.what)
	}
}

// checkAnswered fails unless every intent has at least one result and all of
// an intent's result lines are byte-identical (later ones came from the
// store), and returns how many intents have none.
func checkAnswered(t *testing.T, ins []*toolreg.Intent, got map[string][]string) (lost int) {
	t.Helper()
	for i, in := range ins {
		rs := got[in.ID]
		if len(rs) == 0 {
			lost++
			t.Errorf("intent %d (%s) has no result: lost", i, in.ID)
			continue
		}
		for _, r := range rs[1:] {
			if r != rs[0] {
				t.Errorf("intent %d has differing results:\n%s\n%s", i, rs[0], r)
			}
		}
	}
	return lost
}

type storeKind struct {
	name string
	env  func(t *testing.T) string // FT_STORE for a fresh store
}

func sqliteKind() storeKind {
	return storeKind{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "dedup.db") }}
}

func redisKind() storeKind {
	return storeKind{"redis", func(t *testing.T) string { return "redis:" + redistest.Start(t).Addr }}
}

// TestKillPoints SIGKILLs an effector at each named point, again and again,
// restarting it each time until it has answered the whole file.
func TestKillPoints(t *testing.T) {
	t.Parallel()
	const n = 16
	points := []struct {
		name string
		// the tool ran before the kill, so the restart runs it again: the
		// duplicate the crash window allows, absorbed by the idempotency key.
		ranBeforeKill bool
	}{
		{killAfterClaim, false},
		{killInTool, true},
		{killBeforeComplete, true},
		{killAfterComplete, false},
	}
	seq := int64(100)
	for _, sk := range []storeKind{sqliteKind(), redisKind()} {
		for _, p := range points {
			seq++
			t.Run(sk.name+" killed "+p.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				ds := newDownstream(t)
				ins := intents(seq, n)
				in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
				writeIntents(t, in, ins)
				env := []string{envStore + "=" + sk.env(t), envIn + "=" + in, envOut + "=" + out, envDownstream + "=" + ds.URL, envKill + "=" + p.name}
				kills := 0
				for run := 0; ; run++ {
					if run > 4*n {
						t.Fatalf("still not done after %d runs", run)
					}
					c := startChild(t, append(env, fmt.Sprintf("%s=%d", envKillAt, 1+run%3))...)
					err := c.wait(t)
					if err == nil {
						break
					}
					if !errors.Is(err, errKilled) {
						t.Fatal(err)
					}
					kills++
				}
				if kills == 0 {
					t.Fatalf("no process was killed at %s: the kill point is not on the path", p.name)
				}
				lost := checkAnswered(t, ins, results(t, out))
				dups := 0
				for i, in := range ins {
					c := ds.callsOf(in.ID)
					if c == 0 {
						t.Errorf("intent %d never reached the downstream service", i)
					}
					if !p.ranBeforeKill && c != 1 {
						t.Errorf("intent %d reached the downstream service %d times, want exactly once when killed %s", i, c, p.name)
					}
					dups += max(c-1, 0)
				}
				if p.ranBeforeKill && dups > kills {
					t.Errorf("%d duplicate executions from %d kills %s: more than the crash window allows", dups, kills, p.name)
				}
				report(row{"kill " + p.name + " (" + sk.name + ")", n, ds.total(), dups, lost, kills, "kills"})
			})
		}
	}
}

// TestContention runs 4 effector processes on one store over the same stream
// of 1,000 intents with duplicates, each in its own order.
func TestContention(t *testing.T) {
	t.Parallel()
	const procs, lines, unique = 4, 1000, 600
	lease := os.Getenv("FT_CONTENTION_LEASE")
	if lease == "" {
		lease = "5s"
	}
	for i, sk := range []storeKind{sqliteKind(), redisKind()} {
		t.Run(sk.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ds := newDownstream(t)
			ins := intents(200+int64(i), unique)
			store := sk.env(t)
			var outs []string
			var cs []*child
			for p := range procs {
				rng := rand.New(rand.NewPCG(uint64(p), 7))
				stream := make([]*toolreg.Intent, 0, lines)
				stream = append(stream, ins...)
				for len(stream) < lines {
					stream = append(stream, ins[rng.IntN(unique)])
				}
				rng.Shuffle(len(stream), func(a, b int) { stream[a], stream[b] = stream[b], stream[a] })
				in, out := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", p)), filepath.Join(dir, fmt.Sprintf("out%d.jsonl", p))
				writeIntents(t, in, stream)
				outs = append(outs, out)
				cs = append(cs, startChild(t, envStore+"="+store, envIn+"="+in, envOut+"="+out, envDownstream+"="+ds.URL, envWorkers+"=4", envLease+"="+lease))
			}
			notRecorded := 0
			for _, c := range cs {
				if err := c.wait(t); err != nil {
					t.Fatal(err)
				}
				notRecorded += strings.Count(c.stderr.String(), "result not recorded")
			}
			lost := checkAnswered(t, ins, results(t, outs...))
			for p, out := range outs {
				if n := len(results(t, out)); n != unique {
					t.Errorf("process %d answered %d distinct intents, want all %d", p, n, unique)
				}
			}
			dups := 0
			for i, in := range ins {
				if c := ds.callsOf(in.ID); c != 1 {
					t.Errorf("intent %d executed %d times by %d processes, want exactly once", i, c, procs)
					dups += max(c-1, 0)
				}
			}
			if notRecorded > 0 {
				t.Logf("%d completes were refused because the lease ended first", notRecorded)
			}
			report(row{"contention (" + sk.name + ", lease " + lease + ")", procs * lines, ds.total(), dups, lost, procs, "processes"})
		})
	}
}

// TestPausedOwner stops an effector with SIGSTOP inside the tool, past its
// lease; a second one takes the intent over and completes it; the first,
// woken, must not overwrite the record, which stays the second's.
func TestPausedOwner(t *testing.T) {
	t.Parallel()
	for i, sk := range []storeKind{sqliteKind(), redisKind()} {
		t.Run(sk.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ds := newDownstream(t)
			ins := intents(300+int64(i), 1)
			id := ins[0].ID
			store := sk.env(t)
			in := filepath.Join(dir, "in.jsonl")
			writeIntents(t, in, ins)
			inB := filepath.Join(dir, "inB.jsonl")
			writeIntents(t, inB, ins)
			outA, outB := filepath.Join(dir, "outA.jsonl"), filepath.Join(dir, "outB.jsonl")
			common := []string{envStore + "=" + store, envDownstream + "=" + ds.URL}

			a := startChild(t, append(common, envIn+"="+in, envOut+"="+outA, envPause+"="+id)...)
			for deadline := time.Now().Add(20 * time.Second); ds.callsOf(id) == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the first effector never called downstream:\n%s", a.stderr)
				}
			}
			time.Sleep(childLease + 200*time.Millisecond) // A is stopped past its lease
			b := startChild(t, append(common, envIn+"="+inB, envOut+"="+outB)...)
			if err := b.wait(t); err != nil {
				t.Fatal(err)
			}
			a.cmd.Process.Signal(syscall.SIGCONT)
			if err := a.wait(t); err != nil {
				t.Fatal(err)
			}

			rec := storedResult(t, store, id)
			var res toolreg.Result
			if err := res.UnmarshalBinary(rec); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf(`"pid":%d`, b.cmd.Process.Pid)
			if !strings.Contains(string(res.Payload), want) {
				t.Errorf("stored result %s %s, want the second owner's (%s)", res.Status, res.Payload, want)
			}
			if !strings.Contains(a.stderr.String(), "result not recorded") {
				t.Errorf("the woken owner did not report its refused complete:\n%s", a.stderr)
			}
			calls := ds.callsOf(id)
			if calls != 2 {
				t.Errorf("downstream calls = %d, want 2 (the paused one and the takeover)", calls)
			}
			report(row{"paused owner (" + sk.name + ")", 1, calls, calls - 1, checkAnswered(t, ins, results(t, outB)), 1, "SIGSTOP past the lease"})
		})
	}
}

// storedResult reads an intent's record straight from the store: Claim finds
// it Done.
func storedResult(t *testing.T, store, id string) []byte {
	t.Helper()
	kind, where, _ := strings.Cut(store, ":")
	var s effector.DedupStore
	if kind == "sqlite" {
		ss, err := sqlitestore.Open(context.Background(), where)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		s = ss
	} else {
		s = redisstore.New((&redistest.Server{Addr: where}).Client(t))
	}
	c, err := s.Claim(context.Background(), id, time.Minute)
	if err != nil || c.State != effector.Done {
		t.Fatalf("the intent's record: %s, %v; want done", c.State, err)
	}
	return c.Result
}

// TestRedisRestart kills and restarts redis-server (appendonly, fsync always)
// while two effectors work through a stream: nothing is lost or run twice.
// The store retries Complete through the outage; Claims and acknowledgements
// that fail are retried by Serve.
func TestRedisRestart(t *testing.T) {
	t.Parallel()
	const procs, unique = 2, 200
	dir := t.TempDir()
	ds := newDownstream(t)
	srv := redistest.Start(t, redistest.WithDurability())
	ins := intents(400, unique)
	var outs []string
	var cs []*child
	for p := range procs {
		in, out := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", p)), filepath.Join(dir, fmt.Sprintf("out%d.jsonl", p))
		writeIntents(t, in, ins)
		outs = append(outs, out)
		// The lease must outlast the outage: a claim that expires while the
		// server is down cannot be completed after it, and its intent runs again.
		cs = append(cs, startChild(t, envStore+"=redis:"+srv.Addr, envIn+"="+in, envOut+"="+out, envDownstream+"="+ds.URL, envWorkers+"=2", envLease+"=3s"))
	}
	for deadline := time.Now().Add(30 * time.Second); ds.total() < unique/3; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the effectors made no progress")
		}
	}
	srv.Restart(t)
	atRestart := ds.total()
	for _, c := range cs {
		if err := c.wait(t); err != nil {
			t.Fatal(err)
		}
	}
	if atRestart >= unique {
		t.Fatalf("all %d intents ran before the restart; the test proved nothing", unique)
	}
	lost := checkAnswered(t, ins, results(t, outs...))
	dups := 0
	for i, in := range ins {
		if c := ds.callsOf(in.ID); c != 1 {
			t.Errorf("intent %d executed %d times, want exactly once across a redis-server restart", i, c)
			dups += max(c-1, 0)
		}
	}
	report(row{"redis-server restart", procs * unique, ds.total(), dups, lost, 1, fmt.Sprintf("restart (after %d executions)", atRestart)})
}
