package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/natstest"
)

// roleEnv makes the program an effector process, which run starts (the same
// binary, so nothing else needs building).
const roleEnv = "NATS_CLUSTER_EXAMPLE_EFFECTOR"

const (
	queueName = "refunds"
	// The dedup store's KV bucket, on the same cluster (its stream is
	// KV_refunds-dedup, R3).
	bucket     = "refunds-dedup"
	numIntents = 60
	effectors  = 3
	// The effectors' claim lease, and AckWait within it (natsstream
	// refuses an AckWait above the lease): short, so that what the killed
	// effector held comes back within seconds.
	lease   = 4 * time.Second
	ackWait = 2 * time.Second
	// Each request to the dedup bucket waits this long for an answer
	// before it is sent again (none comes while the bucket's stream elects
	// a leader), well within the effectors' 1s store timeout.
	storeAttempt = 500 * time.Millisecond
)

func main() {
	if name := os.Getenv(roleEnv); name != "" {
		if err := effectorMain(name, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		return
	}
	exe, err := os.Executable()
	if err == nil {
		err = run(context.Background(), os.Stdout, exe)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nats-cluster:", err)
		os.Exit(1)
	}
}

// run starts the cluster, publishes the intents, starts the effectors as
// processes of exe (with roleEnv set), stops the stream's leader node and
// kills an effector midway, waits for every result, and checks that every
// intent was answered once.
func run(ctx context.Context, out io.Writer, exe string) error {
	dir, err := os.MkdirTemp("", "nats-cluster-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c, err := natstest.StartIn(filepath.Join(dir, "cluster"))
	if err != nil {
		return err
	}
	defer c.Shutdown()
	fmt.Fprintln(out, "cluster: 3 JetStream servers in this process (R3 streams, every write fsynced before it is acknowledged)")

	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	q, err := natsstream.Open(ctx, js, queueName)
	if err != nil {
		return err
	}
	ins := make([]*intent.Intent, numIntents)
	for i := range ins {
		ins[i] = refund(i)
	}
	added, err := q.Add(ctx, ins...)
	if err != nil {
		return err
	}
	again, err := q.Add(ctx, ins...) // a producer retrying after a lost answer
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "published %d intents; published them again: %d stored (the server drops a repeated Nats-Msg-Id)\n", added, again)

	// The dedup store: one R3 KV bucket on the same cluster, created here
	// once (an effector's Open binds to it as it is), so the effectors share
	// nothing but the cluster.
	store, err := natsstore.Open(ctx, js, bucket, natsstore.WithAttemptTimeout(storeAttempt))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dedup store: KV bucket %q on the same cluster (R3, claims fenced on revisions)\n", store.Bucket())

	// The effectors: processes of their own, sharing the queue and the
	// bucket.
	ran := &ledger{runs: map[string]map[string]int{}, lines: out, started: map[string]chan struct{}{}}
	procs := map[string]*exec.Cmd{}
	var stderr sync.Map // name -> *strings.Builder
	var wg sync.WaitGroup
	for i := range effectors {
		name := "effector-" + strconv.Itoa(i+1)
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), roleEnv+"="+name, "NATS_URL="+c.URL())
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		var eb strings.Builder
		stderr.Store(name, &eb)
		cmd.Stderr = &syncWriter{w: &eb}
		if err := cmd.Start(); err != nil {
			return err
		}
		procs[name] = cmd
		ran.started[name] = make(chan struct{}, 1)
		wg.Go(func() { ran.read(name, stdout) })
	}
	defer func() {
		for _, p := range procs {
			p.Process.Kill()
		}
		wg.Wait()
	}()

	// Midway: the intents stream's leader node stops, and an effector dies
	// with a tool running.
	if err := waitUntil(ctx, time.Minute, func() bool { return ran.total() >= numIntents/4 }); err != nil {
		return fmt.Errorf("waiting for the effectors to start: %w", err)
	}
	leader, err := c.WaitStreamLeader(queueName)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "--- stopping node n%d, the leader of the intents stream\n", leader)
	c.StopNode(leader)
	// The victim is whichever effector starts a tool next: waiting for one
	// named effector failed when the others took the rest of the work
	// first. A tool started before the node stopped may be done by now.
	for _, ch := range ran.started {
		select {
		case <-ch:
		default:
		}
	}
	victim, err := ran.nextStart(ctx, time.Minute)
	if err != nil {
		return fmt.Errorf("no effector ran anything after the node stopped: %w", err)
	}
	_ = procs[victim].Process.Signal(syscall.SIGKILL)
	fmt.Fprintf(out, "--- killed %s (SIGKILL) with a tool running\n", victim)

	// Every intent answered: its result in the results stream.
	var results map[string]intent.Result
	err = waitUntil(ctx, 2*time.Minute, func() bool {
		rs, err := q.Results(ctx)
		if err != nil {
			return false
		}
		results = map[string]intent.Result{}
		for _, r := range rs {
			results[r.IntentID] = r
		}
		return len(results) == numIntents
	})
	if err != nil {
		return fmt.Errorf("waiting for every result (%d of %d): %w", len(results), numIntents, err)
	}
	for name, p := range procs {
		if name != victim {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
	}
	for name, p := range procs {
		err := p.Wait()
		if name == victim {
			continue
		}
		if err != nil {
			eb, _ := stderr.Load(name)
			return fmt.Errorf("%s: %v\n%s", name, err, eb.(*strings.Builder).String())
		}
	}
	wg.Wait()
	procs = nil
	if err := ran.summary(out, ins, results); err != nil {
		return err
	}
	// The answers came from the bucket: each intent's record there is done.
	recorded := 0
	for _, in := range ins {
		rec, ok, err := store.Record(ctx, in.ID)
		if err != nil {
			return err
		}
		if ok && rec.State == effector.RecordDone {
			recorded++
		}
	}
	fmt.Fprintf(out, "dedup bucket %q: %d of %d intents have their result recorded\n", store.Bucket(), recorded, len(ins))
	if recorded != len(ins) {
		return fmt.Errorf("%d intents have no result recorded in bucket %q", len(ins)-recorded, store.Bucket())
	}
	return nil
}

// refund returns the i-th intent: refund order-i.
func refund(i int) *intent.Intent {
	entity := "order-" + strconv.Itoa(i)
	now := time.Now()
	return &intent.Intent{
		ID:          intent.IntentID([]byte(entity), 1, 0),
		EntityKey:   []byte(entity),
		Seq:         1,
		ToolName:    "refund",
		ArgsJSON:    []byte(`{"order":"` + entity + `"}`),
		CreatedAtMs: now.UnixMilli(),
		ExpiresAtMs: now.Add(time.Hour).UnixMilli(),
		Attempt:     1,
		Kind:        intent.KindTool,
	}
}

func waitUntil(ctx context.Context, d time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// ledger keeps what each effector reports it ran.
type ledger struct {
	mu      sync.Mutex
	runs    map[string]map[string]int // intent id -> effector -> runs
	lines   io.Writer
	started map[string]chan struct{} // an effector started a tool
}

// read reads an effector's reports, "ran <intent id> <order>", and prints
// them.
func (l *ledger) read(name string, r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ran" {
			continue
		}
		l.mu.Lock()
		if l.runs[f[1]] == nil {
			l.runs[f[1]] = map[string]int{}
		}
		l.runs[f[1]][name]++
		fmt.Fprintf(l.lines, "%s ran refund %s\n", name, f[2])
		l.mu.Unlock()
		select {
		case l.started[name] <- struct{}{}:
		default:
		}
	}
}

// nextStart returns the name of the first effector to start a tool from
// now on, waiting at most max.
func (l *ledger) nextStart(ctx context.Context, max time.Duration) (string, error) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		for name, ch := range l.started {
			select {
			case <-ch:
				return name, nil
			default:
			}
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return "", fmt.Errorf("none started a tool within %v", max)
}

func (l *ledger) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, by := range l.runs {
		for _, k := range by {
			n += k
		}
	}
	return n
}

// summary prints how many each effector ran and checks every intent: one
// result, and a tool run more than once only with a result saying its
// effect is unknown.
func (l *ledger) summary(out io.Writer, ins []*intent.Intent, results map[string]intent.Result) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	per := map[string]int{}
	var once, unknownOnce, again int
	var problems []string
	for _, in := range ins {
		n := 0
		for name, k := range l.runs[in.ID] {
			n += k
			per[name] += k
		}
		r, ok := results[in.ID]
		unknown := strings.Contains(r.ErrorMessage, "effect unknown")
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: no result (lost)", in.ID))
		case n == 0:
			problems = append(problems, fmt.Sprintf("%s: answered %v without running", in.ID, r.Status))
		case n > 1 && !unknown:
			problems = append(problems, fmt.Sprintf("%s: ran %d times, and its result does not say the effect is unknown", in.ID, n))
		case n > 1:
			again++
		case unknown:
			unknownOnce++
		default:
			once++
		}
	}
	names := make([]string, 0, len(per))
	for name := range per {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(out, "%s ran %d tools\n", name, per[name])
	}
	fmt.Fprintf(out, "%d intents, %d results: every intent answered once\n", len(ins), len(results))
	fmt.Fprintf(out, "%d ran once; %d ran once after a claim the killed effector left (effect unknown); %d ran again after the kill (effect unknown)\n", once, unknownOnce, again)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// effectorMain is one effector process: it serves the queue until SIGTERM,
// reporting each tool it runs on out.
func effectorMain(name string, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	nc, err := nats.Connect(os.Getenv("NATS_URL"), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Name(name))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	q, err := natsstream.Open(ctx, js, queueName)
	if err != nil {
		return err
	}
	store, err := natsstore.Open(ctx, js, bucket, natsstore.WithAttemptTimeout(storeAttempt))
	if err != nil {
		return err
	}

	spec := &toolreg.Spec{
		Name:        "refund",
		Description: "Refund an order.",
		SideEffect:  true,
		Params:      []*toolreg.Param{{Name: "order", Schema: toolreg.Schema{Type: toolreg.TypeString}}},
	}
	b := bindings.New([]*toolreg.Spec{spec})
	var mu sync.Mutex
	bindings.Effect(b, "refund", func(ctx context.Context, a struct {
		Order string `json:"order"`
	}) (string, error) {
		info, _ := effector.IntentFrom(ctx)
		mu.Lock()
		fmt.Fprintf(out, "ran %s %s\n", info.ID, a.Order)
		mu.Unlock()
		time.Sleep(100 * time.Millisecond) // the refund's call to the payment provider
		return "refunded " + a.Order, nil
	})
	bound, err := b.Bind()
	if err != nil {
		return err
	}
	quiet := slog.New(slog.DiscardHandler)
	e, err := effector.New(bound.Effector, store, effector.WithLease(lease), effector.WithTimeout(time.Second),
		effector.WithStoreTimeout(time.Second), effector.WithLogger(quiet), effector.WithDeadLetter(q.DeadLetter))
	if err != nil {
		return err
	}
	src, err := q.NewSource(ctx, natsstream.WithLease(e.Lease()), natsstream.WithAckWait(ackWait), natsstream.WithBatch(4), natsstream.WithLogger(quiet))
	if err != nil {
		return err
	}
	defer src.Close(context.WithoutCancel(ctx))
	return effector.Serve(ctx, src, q.Sink(), e, effector.WithWorkers(2), effector.WithServeLogger(quiet),
		effector.WithEntryDeadLetter(q.EntryDeadLetter), effector.WithDrainTimeout(5*time.Second))
}
