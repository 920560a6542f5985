package faulttest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/natstest"
)

// TestNATSCluster runs effectord processes on a NATS JetStream queue
// (effector/natsstream: intents fetched through a shared durable consumer,
// results published to the results stream) with a natsstore bucket as the
// dedup store, and faults the cluster or the effectors mid-batch: the
// intents stream's leader node shut down, an effector SIGKILLed, the whole
// cluster stopped and restarted from its store directories, an effector
// stalled (SIGSTOP) past AckWait. Each row counts the intents sent, the
// tool's executions, the duplicates, and the intents with no result on the
// results stream (lost: none may be); a duplicate is allowed only where the
// kill fell between a tool's run and its durable completion, and its result
// must say the effect is unknown.
//
// The scenarios run one after another on a cluster of their own: they stop
// its nodes, which would fault the other "nats" scenarios running in
// parallel on the shared cluster (natsCluster) and change their rows. Each
// leaves the cluster whole for the next.
func TestNATSCluster(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t)
	t.Run("leader", func(t *testing.T) { natsLeaderShutDown(t, c) })
	t.Run("kill", func(t *testing.T) { natsEffectorKilled(t, c) })
	t.Run("restart", func(t *testing.T) { natsClusterRestarted(t, c) })
	t.Run("stall", func(t *testing.T) { natsConsumerStalled(t, c) })
}

// The effectors' settings where no process dies or stalls: a lease far
// above a leader election on a loaded machine (seconds), so that no claim
// lapses while its owner waits for the cluster (and a claim whose answer
// an outage lost is taken again by its own token, not left to lapse: see
// reclaimNote), and an AckWait (at
// most the lease, as natsstream demands) after which the server delivers
// again an intent whose acknowledgement a leader change lost: the store
// answers it from the recorded result.
var natsCalmArgs = []string{"-lease", "30s", "-timeout", "2s", "-ack-wait", "5s"}

var natsQueues atomic.Int32

// natsRun is one scenario's queue, bucket and effectord processes on c.
type natsRun struct {
	c     *natstest.Cluster
	q     *natsstream.Queue // the test's own handle on the queue
	js    jetstream.JetStream
	fs    files
	store string // -store: a bucket of its own
	ready string // -ready: the pid of each effector serving
	found string // -found: claims that found another's claim or a result
	ins   []*intent.Intent
	queue string // -stream: nats://hosts/queue
	ids   []string
	ps    []*proc
}

// newNATSRun makes a queue on c for n intents of tag; send sends them.
func newNATSRun(t *testing.T, c *natstest.Cluster, tag string, n int) *natsRun {
	t.Helper()
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("nf%d", natsQueues.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := natsstream.Open(ctx, js, name, natsstream.WithRequestTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ins, ids := stream("nats-cluster/"+tag, n, n, nil)
	dir := t.TempDir()
	hosts := strings.Join(c.Hosts(), ",")
	return &natsRun{c: c, q: q, js: js, fs: newFiles(dir, "unused"), ready: filepath.Join(dir, "ready.log"), found: filepath.Join(dir, "found.log"), ins: ins, ids: ids,
		store: "nats://" + hosts + "/" + name, queue: "nats://" + hosts + "/" + name}
}

// send waits until every effector started serves (each has made its
// consumer: a slow one would otherwise find the others done, or meet the
// fault in its start-up), then sends the intents, each once.
func (r *natsRun) send(t *testing.T) {
	t.Helper()
	waitFor(t, procTimeout, fmt.Sprintf("the %d effectors serving", len(r.ps)), func() bool { return len(lines(t, r.ready)) == len(r.ps) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if added, err := r.q.Add(ctx, r.ins...); err != nil || added != len(r.ins) {
		t.Fatalf("sending %d intents: %d added, %v", len(r.ins), added, err)
	}
}

// start starts an effectord on the run's queue and store: batches of 8,
// 4 workers, 20ms in each tool after its downstream call, so that a run
// lasts long enough for a fault to land mid-batch.
func (r *natsRun) start(t *testing.T, extra ...string) *proc {
	t.Helper()
	args := append([]string{"-store", r.store, "-stream", r.queue, "-downstream", r.fs.downstream,
		"-kills", r.fs.kills, "-completes", r.fs.completes, "-reclaims", r.fs.reclaims, "-ready", r.ready, "-found", r.found,
		"-workers", "4", "-batch", "8", "-tool-delay", "20ms"}, extra...)
	p := start(t, args...)
	r.ps = append(r.ps, p)
	return p
}

// calls returns how many downstream calls the effectors have made.
func (r *natsRun) calls(t *testing.T) int { return len(lines(t, r.fs.downstream)) }

// waitCalls waits for at least n downstream calls.
func (r *natsRun) waitCalls(t *testing.T, n int) {
	t.Helper()
	waitFor(t, procTimeout, fmt.Sprintf("%d downstream calls", n), func() bool { return r.calls(t) >= n })
}

// msgs returns how many messages stream holds, or false while the cluster
// does not answer (a leader not yet elected, every node stopped).
func (r *natsRun) msgs(stream string) (uint64, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := r.js.Stream(ctx, stream)
	if err != nil {
		return 0, false
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, false
	}
	return info.State.Msgs, true
}

// waitAnswered waits until the results stream holds a result for every
// intent and the intents stream is empty: every intent acknowledged.
func (r *natsRun) waitAnswered(t *testing.T) {
	t.Helper()
	waitFor(t, procTimeout, "a result for every intent, and every intent acknowledged", func() bool {
		res, ok := r.msgs(r.q.Name() + "_results")
		pending, ok2 := r.msgs(r.q.Name())
		return ok && ok2 && res == uint64(len(r.ids)) && pending == 0
	})
}

// stop SIGTERMs the effectors still running and waits for them: each
// but those of killed (SIGKILLed, waited for already) must have lived to
// the SIGTERM and exited by itself, every delivery answered or left for
// redelivery; one that failed on its own fails the test.
func (r *natsRun) stop(t *testing.T, killed ...*proc) {
	t.Helper()
	for _, p := range r.ps {
		select {
		case <-p.done:
			if !slices.Contains(killed, p) {
				t.Errorf("effectord %d exited before the SIGTERM: %v; stderr:\n%s", p.cmd.Process.Pid, p.err, p.stderr)
			}
			continue
		default:
		}
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		p.waitStopped(t)
	}
}

// wantNoReclaims fails t if the store reported a claim taken over after it
// lapsed: where no effector dies, every delivery that came back (a stalled
// effector's, or one whose claim's answer a node's or the cluster's outage
// lost) must find its claim held, its own, or its result recorded.
func (r *natsRun) wantNoReclaims(t *testing.T) {
	t.Helper()
	if rc := lines(t, r.fs.reclaims); len(rc) > 0 {
		t.Errorf("the store reported %d claims taken over after their lease (no effector died): %q", len(rc), rc)
	}
}

// reclaimNote says how many claims the store reported taken over after
// their lease where no effector died. A claim whose answer an outage lost
// is taken again by its own token (natsstore), so this is 0 in the runs
// seen; one whose call's context ended before any answer, and whose
// intent then reaches another effector, still waits its lease out and
// says its effect is unknown (natsstore's doc): noted, not failed, so that
// an outage longer than the store's timeout on a loaded machine is a
// figure here and not a flake, while wantExecutedOnce holds every run.
func (r *natsRun) reclaimNote(t *testing.T) string {
	t.Helper()
	return fmt.Sprintf("store reported %d reclaims", len(lines(t, r.fs.reclaims)))
}

// tally reads the results stream and the downstream's log into the row.
func (r *natsRun) tally(t *testing.T, scenario string) (row, map[string][]call, map[string][]intent.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs, err := r.q.Results(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res := map[string][]intent.Result{}
	for _, x := range rs {
		res[x.IntentID] = append(res[x.IntentID], x)
	}
	calls := downstreamCalls(t, r.fs.downstream)
	return tally(t, scenario, r.ids, calls, res), calls, res
}

// natsLeaderShutDown shuts the intents stream's leader node down mid-batch
// while three effectors serve, and restarts it later: the others elect a
// new leader and the effectors go on. Nothing may be lost or run twice.
func natsLeaderShutDown(t *testing.T, c *natstest.Cluster) {
	const n = 300
	r := newNATSRun(t, c, "leader", n)
	for range 3 {
		r.start(t, natsCalmArgs...)
	}
	r.send(t)
	r.waitCalls(t, n/4)
	leader := c.StreamLeader(t, r.q.Name())
	if r.calls(t) >= n {
		t.Fatal("the effectors finished before the leader was stopped: the test proves nothing")
	}
	c.StopNode(leader)
	stoppedAt := r.calls(t)
	r.waitCalls(t, 2*n/3)
	c.RestartNode(t, leader)
	t.Logf("node %d, the leader, stopped at %d calls, restarted by %d", leader, stoppedAt, r.calls(t))
	r.waitAnswered(t)
	r.stop(t)
	row, calls, _ := r.tally(t, "nats stream leader shut down mid-batch")
	wantExecutedOnce(t, r.ids, calls, "")
	row.note = "natsstream + natsstore, 3 effectors, batches of 8: the intents stream's leader node stopped at 1/4 of the calls, restarted from 2/3; " + r.reclaimNote(t)
	report(t, row)
}

// natsEffectorKilled SIGKILLs one of three effectors inside its tool, in its
// second batch: its deliveries come back to the others after AckWait (the
// lease), whose claims take over its lapsed ones. An intent may run twice
// only where the kill cut it between its run and its durable completion,
// and then its result says the effect is unknown.
func natsEffectorKilled(t *testing.T, c *natstest.Cluster) {
	const n = 200
	r := newNATSRun(t, c, "kill", n)
	lease := append([]string{"-ack-wait", "2s"}, leaseArgs...)
	victim := r.start(t, append(lease, "-kill-at", inTool, "-kill-n", "12")...)
	for range 2 {
		r.start(t, lease...)
	}
	r.send(t)
	if !victim.wait(t) {
		t.Fatal("the effector to be killed exited by itself")
	}
	if kills := lines(t, r.fs.kills); len(kills) != 1 {
		t.Fatalf("kills.log: %q, want one kill", kills)
	}
	r.waitAnswered(t)
	r.stop(t, victim)
	row, calls, res := r.tally(t, "nats effector killed mid-batch")
	killed := map[int]bool{victim.cmd.Process.Pid: true}
	again := wantDuplicatesOnlyInTheWindow(t, calls, res, killed, durableCompletions(t, r.fs.completes))
	row.note = fmt.Sprintf("natsstream + natsstore, 3 effectors, batches of 8: 1 SIGKILLed in-tool; %d intents ran again, each result saying the effect is unknown", again)
	report(t, row)
}

// natsClusterRestarted stops every node of the cluster mid-batch and starts
// them again from their store directories while two effectors serve:
// they wait for the cluster and go on. Nothing may be lost or run twice.
func natsClusterRestarted(t *testing.T, c *natstest.Cluster) {
	const n = 300
	r := newNATSRun(t, c, "restart", n)
	for range 2 {
		r.start(t, natsCalmArgs...)
	}
	r.send(t)
	r.waitCalls(t, n/3)
	if r.calls(t) >= n {
		t.Fatal("the effectors finished before the cluster was stopped: the test proves nothing")
	}
	c.Restart(t)
	r.waitAnswered(t)
	r.stop(t)
	row, calls, _ := r.tally(t, "nats whole cluster restarted mid-batch")
	wantExecutedOnce(t, r.ids, calls, "")
	row.note = "natsstream + natsstore, 2 effectors, batches of 8: all 3 nodes stopped at 1/3 of the calls, restarted from their store directories; " + r.reclaimNote(t)
	report(t, row)
}

// natsConsumerStalled stops one of two effectors (SIGSTOP) inside its tool
// for one intent, mid-batch, holding its deliveries, past AckWait (no
// in-progress signal reaches the server), until the server has delivered
// that intent again to the other and the other's claim found it claimed;
// then it SIGCONTs the stalled one, within its lease and its tool's
// timeout: it makes its call, completes, and the store answers the other
// from its record. Every intent runs once, and those the other took over
// ran in the stalled effector.
func natsConsumerStalled(t *testing.T, c *natstest.Cluster) {
	const (
		n       = 200
		ackWait = 3 * time.Second
	)
	r := newNATSRun(t, c, "stall", n)
	// Whichever effector takes it stops itself in the tool for this intent,
	// before its downstream call. A stall of a few seconds stays far inside
	// the tool's timeout and the lease. AckWait is past the fetch wait
	// (natsstream's default, 1s), so the stalled effector's open fetch has
	// ended when its deliveries come back, and they go to the other.
	stallID := r.ids[n/4]
	args := []string{"-lease", "30s", "-timeout", "20s", "-ack-wait", ackWait.String(), "-stop-in-tool", stallID}
	ps := []*proc{r.start(t, args...), r.start(t, args...)}
	r.send(t)
	var stalled, other *proc
	waitFor(t, procTimeout, "an effector stopped in its tool", func() bool {
		for i, p := range ps {
			if stopped(p.cmd.Process.Pid) {
				stalled, other = p, ps[1-i]
				return true
			}
		}
		return false
	})
	pid := stalled.cmd.Process.Pid
	stoppedAt := time.Now()
	waitFor(t, procTimeout, "the other effector finding the stalled one's intent claimed", func() bool {
		return r.takenOver(t, other.cmd.Process.Pid)[stallID] == "in-flight"
	})
	stall := time.Since(stoppedAt)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t.Logf("stalled %v", stall.Round(time.Millisecond))
	r.waitAnswered(t)
	r.stop(t)
	r.wantNoReclaims(t)
	row, calls, _ := r.tally(t, "nats consumer stalled past AckWait")
	wantExecutedOnce(t, r.ids, calls, "")
	// The intent the stalled one held, it ran: the store answered the
	// other from its record. Any other intent the other found claimed or
	// answered ran once (wantExecutedOnce), either in the stalled one or
	// in the other itself: on a loaded machine the other's own delivery
	// can outlive AckWait between its in-progress signals and come back
	// to it, and its claim then finds its own claim or result. That is
	// at-least-once delivery doing what it says, not a second run.
	taken := r.takenOver(t, other.cmd.Process.Pid)
	fromStalled, own := 0, 0
	for id := range taken {
		cs := calls[id]
		switch {
		case len(cs) == 1 && cs[0].pid == pid:
			fromStalled++
		case id == stallID:
			t.Errorf("intent %s, held by the stalled effector (pid %d) and found claimed by the other, was run by %+v, want once by the stalled one", id, pid, cs)
		case len(cs) == 1:
			own++
		}
	}
	row.note = fmt.Sprintf("natsstream + natsstore, 2 effectors, batches of 8: 1 SIGSTOPped in a tool, mid-batch, past AckWait (%v) until the other found that intent claimed, then SIGCONT within the lease; the other found %d of the stalled one's intents claimed or answered, and ran none", ackWait, fromStalled)
	if own > 0 {
		row.note += fmt.Sprintf("; %d of its own deliveries came back to it past AckWait and found its own claim", own)
	}
	report(t, row)
}

// takenOver returns the intents whose claims by process pid found them
// claimed by another owner ("in-flight") or answered ("done"), with what
// the last such claim found.
func (r *natsRun) takenOver(t *testing.T, pid int) map[string]string {
	t.Helper()
	ids := map[string]string{}
	for _, l := range lines(t, r.found) {
		if f := strings.Fields(l); len(f) == 3 && f[1] == strconv.Itoa(pid) {
			ids[f[0]] = f[2]
		}
	}
	return ids
}
