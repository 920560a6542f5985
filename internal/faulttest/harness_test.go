package faulttest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/natstest"
)

// effectord is the path of the built effector service.
var effectord string

// natsCluster is the three-node JetStream cluster the "nats" scenarios
// share, each on a bucket of its own (natsStore).
var natsCluster *natstest.Cluster

var natsBuckets atomic.Int32

// natsStore names a new bucket on natsCluster for effectord's -store flag.
func natsStore() string {
	return fmt.Sprintf("nats://%s/fault-%d", strings.Join(natsCluster.Hosts(), ","), natsBuckets.Add(1))
}

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "faulttest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faulttest:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	effectord = filepath.Join(dir, "effectord")
	build := exec.Command("go", "build", "-o", effectord, "./effectord")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "faulttest: building effectord: %v\n%s", err, out)
		return 2
	}
	natsCluster, err = natstest.StartIn(filepath.Join(dir, "nats"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "faulttest:", err)
		return 2
	}
	defer natsCluster.Shutdown()
	code := m.Run()
	if err := writeSummary(); err != nil {
		fmt.Fprintln(os.Stderr, "faulttest:", err)
		return 2
	}
	return code
}

// row is one line of the summary table.
type row struct {
	scenario   string
	intents    int // distinct intent ids in the stream
	executions int // calls the downstream received
	duplicates int // calls beyond the first per intent id
	lost       int // intent ids with no result
	note       string
}

var summary struct {
	mu   sync.Mutex
	rows []row
}

func report(t *testing.T, r row) {
	t.Helper()
	t.Logf("%-48s intents=%d executions=%d duplicates=%d lost=%d %s", r.scenario, r.intents, r.executions, r.duplicates, r.lost, r.note)
	summary.mu.Lock()
	summary.rows = append(summary.rows, r)
	summary.mu.Unlock()
}

func summaryTable() string {
	summary.mu.Lock()
	rows := append([]row(nil), summary.rows...)
	summary.mu.Unlock()
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].scenario < rows[j].scenario })
	// With -count=N every scenario reports N times: a row that came out the
	// same each time is shown once; one that varied shows each outcome.
	rows = slices.CompactFunc(rows, func(a, b row) bool { return a == b })
	var b strings.Builder
	fmt.Fprintf(&b, "| %-48s | %7s | %10s | %10s | %4s | %s\n", "scenario", "intents", "executions", "duplicates", "lost", "note |")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|%s|%s\n", strings.Repeat("-", 50), strings.Repeat("-", 9), strings.Repeat("-", 12), strings.Repeat("-", 12), strings.Repeat("-", 6), "------|")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %-48s | %7d | %10d | %10d | %4d | %s |\n", r.scenario, r.intents, r.executions, r.duplicates, r.lost, r.note)
	}
	return b.String()
}

// writeSummary prints the table and writes it to $FAULTTEST_SUMMARY if set.
func writeSummary() error {
	if len(summary.rows) == 0 {
		return nil
	}
	table := summaryTable()
	fmt.Print("\nfault test summary\n" + table)
	if path := os.Getenv("FAULTTEST_SUMMARY"); path != "" {
		return os.WriteFile(path, []byte(table), 0o644)
	}
	return nil
}

// stream returns a stream of n entries over intents of one scenario: the
// first unique entries are distinct intents, the rest repeat earlier ones
// (redeliveries), all shuffled by rng. It returns the stream and the distinct
// intent ids.
func stream(tag string, n, unique int, rng *rand.Rand) ([]*intent.Intent, []string) {
	now := time.Now()
	entity := []byte("faulttest/" + tag)
	distinct := make([]*intent.Intent, unique)
	ids := make([]string, unique)
	for i := range distinct {
		distinct[i] = &intent.Intent{
			ID: intent.IntentID(entity, 1, uint32(i)), EntityKey: entity, Seq: 1, StepIndex: uint32(i),
			ToolName: "apply", ArgsJSON: []byte(`{"key":"k` + strconv.Itoa(i) + `"}`),
			CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(), Attempt: 1, Kind: intent.KindTool,
		}
		ids[i] = distinct[i].ID
	}
	out := append([]*intent.Intent(nil), distinct...)
	for len(out) < n {
		out = append(out, distinct[rng.IntN(unique)])
	}
	if rng != nil {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out, ids
}

func writeIntents(t *testing.T, path string, ins []*intent.Intent) {
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

// proc is one running effectord.
type proc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
	err    error // valid after done
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(effectord, args...)
	p := &proc{cmd: cmd, stderr: new(bytes.Buffer), done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting effectord: %v", err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// procTimeout bounds how long any effectord may run: a hang fails the test.
const procTimeout = 90 * time.Second

// wait waits for p to exit and reports whether SIGKILL ended it; any other
// failure fails the test.
func (p *proc) wait(t *testing.T) (killed bool) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(procTimeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("effectord %d did not finish within %v; stderr:\n%s", p.cmd.Process.Pid, procTimeout, p.stderr)
	}
	if p.err == nil {
		return false
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	t.Fatalf("effectord %d failed: %v; stderr:\n%s", p.cmd.Process.Pid, p.err, p.stderr)
	return false
}

// files are the paths one effectord process works with.
type files struct {
	dir        string
	in, out    string
	downstream string // shared by the processes of a scenario
	kills      string
	completes  string
	reclaims   string
}

func newFiles(dir, name string) files {
	return files{
		dir:        dir,
		in:         filepath.Join(dir, name+".intents.jsonl"),
		out:        filepath.Join(dir, name+".results.jsonl"),
		downstream: filepath.Join(dir, "downstream.log"),
		kills:      filepath.Join(dir, "kills.log"),
		completes:  filepath.Join(dir, "completes.log"),
		reclaims:   filepath.Join(dir, "reclaims.log"),
	}
}

func (f files) args(store string, extra ...string) []string {
	return append([]string{"-store", store, "-in", f.in, "-out", f.out, "-downstream", f.downstream,
		"-kills", f.kills, "-completes", f.completes, "-reclaims", f.reclaims}, extra...)
}

// call is one line of the downstream's log.
type call struct {
	pid     int
	applied bool
}

// downstreamCalls reads the downstream log: the calls per intent id.
func downstreamCalls(t *testing.T, path string) map[string][]call {
	t.Helper()
	got := map[string][]call{}
	for i, l := range lines(t, path) {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("%s:%d: %q is no downstream call", path, i+1, l)
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		got[f[0]] = append(got[f[0]], call{pid: pid, applied: f[2] == "applied"})
	}
	return got
}

// results reads results files: every result published per intent id.
func results(t *testing.T, paths ...string) map[string][]intent.Result {
	t.Helper()
	got := map[string][]intent.Result{}
	for _, path := range paths {
		for i, l := range lines(t, path) {
			var r intent.Result
			if err := r.UnmarshalJSON([]byte(l)); err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			got[r.IntentID] = append(got[r.IntentID], r)
		}
	}
	return got
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameResult reports whether two published results are the same terminal
// result (a result republished after a crash must be byte-identical).
func sameResult(a, b intent.Result) bool {
	x, err1 := a.MarshalBinary()
	y, err2 := b.MarshalBinary()
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// tally checks the invariants every scenario shares and returns its row:
// every intent id has a result (lost counts those that have none) and every
// result published for it is the same one (fails otherwise); executions and
// duplicates count the downstream's calls.
func tally(t *testing.T, scenario string, ids []string, calls map[string][]call, res map[string][]intent.Result) row {
	t.Helper()
	r := row{scenario: scenario, intents: len(ids)}
	for _, id := range ids {
		rs := res[id]
		if len(rs) == 0 {
			r.lost++
			t.Errorf("%s: intent %s has no result: lost", scenario, id)
			continue
		}
		for _, other := range rs[1:] {
			if !sameResult(rs[0], other) {
				t.Errorf("%s: intent %s has two different results published:\n%+v\n%+v", scenario, id, rs[0], other)
				break
			}
		}
	}
	for _, cs := range calls {
		r.executions += len(cs)
		r.duplicates += len(cs) - 1
	}
	return r
}

// wantExecutedOnce fails t for each intent of ids the downstream was called
// for other than once; only interrupted, the intent a kill hit between its
// downstream call and Complete ("" for none), may have been called twice.
func wantExecutedOnce(t *testing.T, ids []string, calls map[string][]call, interrupted string) {
	t.Helper()
	for _, id := range ids {
		n := len(calls[id])
		switch {
		case n == 1:
		case id == interrupted && n == 2:
		case interrupted != "":
			t.Errorf("intent %s executed %d times, want 1 (2 only for %s, the intent the kill interrupted)", id, n, interrupted)
		default:
			t.Errorf("intent %s executed %d times, want 1", id, n)
		}
	}
}

// waitFor polls cond every 10ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopped reports whether process pid is stopped (SIGSTOP), from /proc.
func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'T' || s[i+2] == 't')
}

// exitUnanswered is effectord's exit status for a shutdown that left
// deliveries unanswered (its ExitUnanswered).
const exitUnanswered = 3

// waitStopped waits for p, stopped by SIGTERM, to exit, and reports whether
// it left deliveries unanswered (exit status 3); any other failure fails t.
func (p *proc) waitStopped(t *testing.T) (unanswered bool) {
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
		return false
	case errors.As(p.err, &ee) && ee.ExitCode() == exitUnanswered:
		return true
	}
	t.Fatalf("effectord %d failed: %v; stderr:\n%s", p.cmd.Process.Pid, p.err, p.stderr)
	return false
}

// durableCompletions reads the completes log: the "id pid" pairs whose
// completion was durable (outcome ok) in that process.
func durableCompletions(t *testing.T, path string) map[string]bool {
	t.Helper()
	durable := map[string]bool{}
	for _, l := range lines(t, path) {
		if f := strings.Fields(l); len(f) == 3 && f[2] == "ok" {
			durable[f[0]+" "+f[1]] = true
		}
	}
	return durable
}

// wantDuplicatesOnlyInTheWindow fails t for each intent called more than
// once unless every call but its last was made by a process that was
// killed (killed) before that call's completion was durable there
// (durable), and its published result says the effect is unknown. Serve
// hands a result to its completer and starts the next tool, so a kill can
// cut several intents of a process between their run and their durable
// completion: the guarantee is per call, not one intent per kill. It
// returns how many intents ran more than once.
func wantDuplicatesOnlyInTheWindow(t *testing.T, calls map[string][]call, res map[string][]intent.Result, killed map[int]bool, durable map[string]bool) int {
	t.Helper()
	again := 0
	for id, cs := range calls {
		if len(cs) < 2 {
			continue
		}
		again++
		for _, c := range cs[:len(cs)-1] {
			key := id + " " + strconv.Itoa(c.pid)
			if !killed[c.pid] || durable[key] {
				t.Errorf("intent %s ran %d times, but its run in process %d was not cut by a kill before a durable completion (killed %v, durable %v)", id, len(cs), c.pid, killed[c.pid], durable[key])
			}
		}
		if rs := res[id]; len(rs) == 0 || !strings.HasPrefix(rs[0].ErrorMessage, "effect unknown") {
			t.Errorf("intent %s ran %d times, and its result does not say the effect is unknown: %+v", id, len(cs), rs)
		}
	}
	return again
}
