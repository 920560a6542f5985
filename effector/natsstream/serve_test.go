package natsstream_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/natstest"
)

// within bounds how long a test waits for a condition; generous, for a
// loaded machine.
const within = 90 * time.Second

// waitFor polls cond until it holds, failing the test after within.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serving is Serve running in the background.
type serving struct {
	cancel context.CancelFunc
	done   chan error
}

func serve(src effector.Source, sink effector.Sink, e effector.Processor, opts ...effector.ServeOption) *serving {
	ctx, cancel := context.WithCancel(context.Background())
	s := &serving{cancel: cancel, done: make(chan error, 1)}
	opts = append([]effector.ServeOption{effector.WithServeLogger(quiet), effector.WithRetryBackoff(10*time.Millisecond, 200*time.Millisecond)}, opts...)
	go func() { s.done <- effector.Serve(ctx, src, sink, e, opts...) }()
	return s
}

// stop stops Serve and returns its error.
func (s *serving) stop() error {
	s.cancel()
	return <-s.done
}

// countingSource records the highest delivery count it handed out.
type countingSource struct {
	effector.Source
	received atomic.Int64
	maxCount atomic.Int64
}

func (c *countingSource) Receive(ctx context.Context) (effector.Delivery, error) {
	d, err := c.Source.Receive(ctx)
	if err == nil {
		c.received.Add(1)
		for {
			m := c.maxCount.Load()
			if int64(d.Deliveries) <= m || c.maxCount.CompareAndSwap(m, int64(d.Deliveries)) {
				break
			}
		}
	}
	return d, err
}

func resultsByID(t *testing.T, q *natsstream.Queue) map[string]intent.Result {
	t.Helper()
	rs, err := q.Results(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]intent.Result{}
	for _, r := range rs {
		if _, ok := m[r.IntentID]; ok {
			t.Fatalf("intent %q has two results in the results stream", r.IntentID)
		}
		m[r.IntentID] = r
	}
	return m
}

func consumerInfo(t *testing.T, js jetstream.JetStream, stream string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(context.Background(), stream, natsstream.DefaultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func sqliteStore(t *testing.T, path string) effector.DedupStore {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// startEffectors starts n effectors serving q on cluster c, each with a
// connection of its own, sharing one store, each tool taking 5ms.
func startEffectors(t *testing.T, c *natstest.Cluster, q *natsstream.Queue, n int) ([]*effectortest.Calls, []*serving) {
	t.Helper()
	store := effector.NewMemoryStore()
	var all []*effectortest.Calls
	var servers []*serving
	for range n {
		qe, err := natsstream.Open(context.Background(), jetStream(t, c.Connect(t)), q.Name(), natsstream.WithRequestTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		e, calls := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{func(context.Context) error {
			time.Sleep(5 * time.Millisecond)
			return nil
		}})
		all = append(all, calls)
		servers = append(servers, serve(newSource(t, qe, natsstream.WithBatch(8)), qe.Sink(), e, effector.WithWorkers(4)))
	}
	return all, servers
}

// runs returns how many times the effectors of all ran intent id.
func runs(all []*effectortest.Calls, id string) int {
	n := 0
	for _, c := range all {
		n += c.Of(id)
	}
	return n
}

// total returns how many intents the effectors of all ran.
func total(all []*effectortest.Calls) int {
	n := 0
	for _, c := range all {
		n += c.Total()
	}
	return n
}

func TestServeAnswersEveryIntentOnceAcrossThreeEffectors(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ins := intents("e2e", 90)
	add(t, q, ins...)
	path := filepath.Join(t.TempDir(), "dedup.db")
	var all []*effectortest.Calls
	var servers []*serving
	for range 3 {
		// Each effector has its own connection, as on its own host, and its
		// own handle on the shared store.
		qe, err := natsstream.Open(context.Background(), jetStream(t, cluster.Connect(t)), q.Name())
		if err != nil {
			t.Fatal(err)
		}
		e, calls := effectortest.Effector(t, sqliteStore(t, path))
		all = append(all, calls)
		servers = append(servers, serve(newSource(t, qe, natsstream.WithBatch(8)), qe.Sink(), e, effector.WithWorkers(4)))
	}
	waitFor(t, "every intent answered", func() bool { return len(resultsByID(t, q)) == len(ins) })
	for _, s := range servers {
		if err := s.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	rs := resultsByID(t, q)
	ran := 0
	for _, in := range ins {
		n := runs(all, in.ID)
		if n != 1 {
			t.Errorf("intent %s ran %d times, want 1", in.ID, n)
		}
		if r := rs[in.ID]; r.Status != intent.StatusOK {
			t.Errorf("intent %s: result %v %q", in.ID, r.Status, r.ErrorMessage)
		}
		ran += n
	}
	for i, c := range all {
		t.Logf("effector %d ran %d intents", i, c.Total())
	}
	if got := streamMsgs(t, js, q.Name()); got != 0 {
		t.Errorf("the intents stream still holds %d messages: not every delivery was acknowledged", got)
	}
	if info := consumerInfo(t, js, q.Name()); info.NumAckPending != 0 || info.NumPending != 0 {
		t.Errorf("consumer: %d awaiting ack, %d pending, want 0 and 0", info.NumAckPending, info.NumPending)
	}
}

// flakySink fails every publish while failing is set.
type flakySink struct {
	effector.Sink
	failing  atomic.Bool
	failures atomic.Int64
}

func (f *flakySink) Publish(ctx context.Context, res intent.Result) error {
	if f.failing.Load() {
		f.failures.Add(1)
		return errors.New("flaky sink: down")
	}
	return f.Sink.Publish(ctx, res)
}

func TestAnIntentIsAcknowledgedOnlyAfterItsResultIsPublished(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	in := effectortest.Intent("ack", 1, 0)
	add(t, q, in)
	started, release := make(chan struct{}), make(chan struct{})
	e, calls := effectortest.EffectorWithHooks(t, effector.NewMemoryStore(), []func(context.Context) error{func(context.Context) error {
		close(started)
		<-release
		return nil
	}})
	sink := &flakySink{Sink: q.Sink()}
	sink.failing.Store(true)
	s := serve(newSource(t, q), sink, e)
	defer s.stop()

	<-started
	unacked := func(when string) {
		t.Helper()
		if n := streamMsgs(t, js, q.Name()); n != 1 {
			t.Fatalf("%s: the intents stream holds %d messages, want 1 (acknowledged too early)", when, n)
		}
		if info := consumerInfo(t, js, q.Name()); info.NumAckPending != 1 {
			t.Fatalf("%s: %d deliveries await their ack, want 1", when, info.NumAckPending)
		}
	}
	unacked("while the tool runs")
	close(release)
	waitFor(t, "publishes failing", func() bool { return sink.failures.Load() >= 3 })
	unacked("while the result cannot be published")
	if _, ok, _ := q.Result(context.Background(), in.ID); ok {
		t.Fatal("a result is published while the sink fails")
	}
	sink.failing.Store(false)
	waitFor(t, "the intent acknowledged", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
	if _, ok, err := q.Result(context.Background(), in.ID); !ok || err != nil {
		t.Fatalf("acknowledged without a published result: %v %v", ok, err)
	}
	if calls.Of(in.ID) != 1 {
		t.Fatalf("ran %d times, want 1", calls.Of(in.ID))
	}
}

func TestAToolLongerThanAckWaitIsNotDeliveredAgain(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	in := effectortest.Intent("long-tool", 1, 0)
	add(t, q, in)
	// Signals go every third of AckWait: a loaded machine may hold one back
	// for a while, and still one of them reaches the server in time.
	const ackWait = 2 * time.Second
	started := make(chan struct{}, 1)
	e, calls := effectortest.EffectorWithHooks(t, effector.NewMemoryStore(), []func(context.Context) error{func(context.Context) error {
		started <- struct{}{}
		time.Sleep(5 * ackWait / 2)
		return nil
	}})
	a := &countingSource{Source: newSource(t, q, natsstream.WithAckWait(ackWait))}
	sa := serve(a, q.Sink(), e)
	defer sa.stop()
	<-started
	// A second effector, idle, would receive the intent if the server
	// delivered it again.
	other, _ := effectortest.Effector(t, effector.NewMemoryStore())
	b := &countingSource{Source: newSource(t, q, natsstream.WithAckWait(ackWait))}
	sb := serve(b, q.Sink(), other)
	defer sb.stop()
	waitFor(t, "the result", func() bool { _, ok, _ := q.Result(context.Background(), in.ID); return ok })
	if n := b.received.Load(); n != 0 {
		t.Fatalf("the intent was delivered again to another effector while its tool ran (%d deliveries): the in-progress signals did not hold it", n)
	}
	if a.maxCount.Load() != 1 || calls.Of(in.ID) != 1 {
		t.Fatalf("delivery count %d, runs %d: want 1 and 1", a.maxCount.Load(), calls.Of(in.ID))
	}
}

func TestAnIntentDeliveredTooOftenGoesToTheDeadLetters(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	in := effectortest.Intent("dead", 1, 0)
	add(t, q, in)
	ctx := context.Background()
	// Each delivery is left unanswered by a source that then closes (as
	// Serve does when it stops before it can answer), which gives it back.
	for want := 1; want <= 2; want++ {
		src := newSource(t, q, natsstream.WithMaxDeliver(2))
		d, err := src.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Intent == nil || d.Intent.ID != in.ID || d.Deliveries != want {
			t.Fatalf("delivery %d: %+v", want, d)
		}
		if err := src.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	src := newSource(t, q, natsstream.WithMaxDeliver(2))
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if d, err := src.Receive(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third delivery was handed out past WithMaxDeliver(2): %+v, %v", d, err)
	}
	dls, err := q.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].IntentID != in.ID || dls[0].Deliveries != 3 || !strings.Contains(dls[0].Reason, "more than WithMaxDeliver(2)") {
		t.Fatalf("dead letters: %+v", dls)
	}
	var back intent.Intent
	if err := back.UnmarshalJSON(dls[0].Entry); err != nil || back.ID != in.ID {
		t.Fatalf("the dead letter does not hold the intent: %v", err)
	}
	if n := streamMsgs(t, js, q.Name()); n != 0 {
		t.Fatalf("the dead-lettered intent is still in the intents stream (%d messages)", n)
	}
}

func TestEntriesThatAreNoIntentAndRefusedIntentsGoToTheDeadLetters(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	if _, err := js.Publish(context.Background(), "toolreg."+q.Name()+".intents.junk", []byte("not an intent")); err != nil {
		t.Fatal(err)
	}
	forged := effectortest.Intent("forged", 1, 0)
	forged.ID = "not-derived-from-its-entity" // refused: *effector.IntentIDError
	good := effectortest.Intent("good", 1, 0)
	add(t, q, forged, good)
	e, calls := effectortest.Effector(t, effector.NewMemoryStore(), effector.WithDeadLetter(q.DeadLetter))
	s := serve(newSource(t, q), q.Sink(), e, effector.WithEntryDeadLetter(q.EntryDeadLetter))
	waitFor(t, "every entry answered", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	dls, err := q.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 2 {
		t.Fatalf("%d dead letters, want 2: %+v", len(dls), dls)
	}
	var junk, refused bool
	for _, dl := range dls {
		switch {
		case dl.IntentID == "" && string(dl.Entry) == "not an intent" && dl.Reason != "":
			junk = true
		case dl.IntentID == forged.ID && strings.Contains(dl.Reason, "not-derived-from-its-entity"):
			refused = true
		}
	}
	if !junk || !refused {
		t.Fatalf("dead letters: %+v", dls)
	}
	if calls.Of(good.ID) != 1 || calls.Of(forged.ID) != 0 {
		t.Fatalf("runs: good %d, forged %d", calls.Of(good.ID), calls.Of(forged.ID))
	}
}

func TestAConsumerStalledPastAckWaitIsAnsweredFromTheStore(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	in := effectortest.Intent("stall", 1, 0)
	add(t, q, in)
	store := effector.NewMemoryStore() // the store both effectors share
	const ackWait = natsstream.MinAckWait

	// Effector A reaches the cluster through a proxy the test stalls.
	p := startProxy(t, strings.TrimPrefix(cluster.URLs()[0], "nats://"))
	ncA, err := nats.Connect(p.URL(), nats.NoReconnect(), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer ncA.Close()
	qa, err := natsstream.Open(context.Background(), jetStream(t, ncA), q.Name(), natsstream.WithRequestTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	ea, callsA := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{func(context.Context) error {
		close(started)
		<-release
		return nil
	}})
	sa := serve(newSource(t, qa, natsstream.WithAckWait(ackWait)), qa.Sink(), ea, effector.WithDrainTimeout(2*time.Second))
	<-started
	p.paused.Store(true) // A stalls mid-tool: no in-progress signals reach the server

	eb, callsB := effectortest.Effector(t, store)
	b := &countingSource{Source: newSource(t, q, natsstream.WithAckWait(ackWait))}
	sb := serve(b, q.Sink(), eb)
	defer sb.stop()
	waitFor(t, "the intent delivered again to B", func() bool { return b.maxCount.Load() >= 2 })
	// B's claim finds A's in flight and waits; A finishes and records its
	// result in the store, which answers B.
	close(release)
	waitFor(t, "B answering the intent", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
	p.paused.Store(false)
	r, ok, err := q.Result(context.Background(), in.ID)
	if err != nil || !ok || r.Status != intent.StatusOK {
		t.Fatalf("result: %+v %v %v", r, ok, err)
	}
	if n := callsA.Of(in.ID) + callsB.Of(in.ID); n != 1 {
		t.Fatalf("the tool ran %d times (A %d, B %d), want once: the store did not answer the redelivery", n, callsA.Of(in.ID), callsB.Of(in.ID))
	}
	var ua *effector.UnansweredError
	if err := sa.stop(); err != nil && !errors.As(err, &ua) {
		t.Fatalf("A's Serve: %v", err)
	}
	if rs := resultsByID(t, q); len(rs) != 1 {
		t.Fatalf("%d results, want 1", len(rs))
	}
}

func TestStreamLeaderShutDownMidRun(t *testing.T) {
	c := natstest.Start(t) // its own cluster: a node is stopped
	q, js := openQueue(t, c)
	ins := intents("leader", 150)
	add(t, q, ins...)
	all, servers := startEffectors(t, c, q, 3)
	waitFor(t, "a third of the intents answered", func() bool { return total(all) >= len(ins)/3 })
	leader := c.StreamLeader(t, q.Name())
	c.StopNode(leader)
	t.Logf("stopped node %d, the intents stream's leader", leader)
	waitFor(t, "every intent answered", func() bool { return len(resultsByID(t, q)) == len(ins) })
	for _, s := range servers {
		if err := s.stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	rs := resultsByID(t, q)
	twice := 0
	for _, in := range ins {
		n := runs(all, in.ID)
		r, ok := rs[in.ID]
		switch {
		case !ok:
			t.Errorf("intent %s lost: no result", in.ID)
		case n == 0:
			t.Errorf("intent %s never ran, result %v", in.ID, r.Status)
		case n > 1 && !strings.Contains(r.ErrorMessage, "effect unknown"):
			t.Errorf("intent %s ran %d times and its result does not say the effect is unknown: %v %q", in.ID, n, r.Status, r.ErrorMessage)
		}
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d intents, %d results, %d ran more than once", len(ins), len(rs), twice)
	waitFor(t, "the intents stream empty", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
}

// quiet is the tests' Serve logger.
var quiet = slog.New(slog.DiscardHandler)

func TestWholeClusterRestartedMidRun(t *testing.T) {
	c := natstest.Start(t) // its own cluster: it is stopped
	q, js := openQueue(t, c)
	ins := intents("restart", 120)
	add(t, q, ins...)
	all, servers := startEffectors(t, c, q, 2)
	waitFor(t, "a third of the intents run", func() bool { return total(all) >= len(ins)/3 })
	c.Restart(t)
	t.Logf("restarted the cluster after %d runs", total(all))
	waitFor(t, "every intent answered", func() bool { return len(resultsByID(t, q)) == len(ins) })
	for _, s := range servers {
		var ua *effector.UnansweredError
		if err := s.stop(); err != nil && !errors.As(err, &ua) {
			t.Errorf("Serve: %v", err)
		}
	}
	rs := resultsByID(t, q)
	for _, in := range ins {
		n := runs(all, in.ID)
		r, ok := rs[in.ID]
		switch {
		case !ok:
			t.Errorf("intent %s lost: no result", in.ID)
		case n != 1:
			t.Errorf("intent %s ran %d times (result %v %q), want once: no effector died", in.ID, n, r.Status, r.ErrorMessage)
		}
	}
	waitFor(t, "the intents stream empty", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
}

func TestReceiveBatchHandsOverWhatAFetchReturned(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ins := intents("batch", 10)
	add(t, q, ins...)
	src := newSource(t, q, natsstream.WithBatch(4))
	ctx := context.Background()
	var got []effector.Delivery
	var sizes []int
	for len(got) < len(ins) {
		before := len(got)
		var err error
		got, err = src.ReceiveBatch(ctx, 3, got)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(got)-before)
	}
	// Fetches of at most 3 (what was asked, within the batch of 4): none is
	// left fetched and not handed out, where it would count a delivery
	// that was no attempt.
	if want := []int{3, 3, 3, 1}; fmt.Sprint(sizes) != fmt.Sprint(want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
	seen := map[string]bool{}
	for _, d := range got {
		if d.Intent == nil || seen[d.Intent.ID] || d.Deliveries != 1 {
			t.Fatalf("delivery %+v", d)
		}
		seen[d.Intent.ID] = true
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A double ack returns once the consumer has the ack: nothing awaits
	// one when the last Ack returns.
	if info := consumerInfo(t, js, q.Name()); info.NumAckPending != 0 {
		t.Fatalf("%d deliveries await their ack after every Ack returned", info.NumAckPending)
	}
	waitFor(t, "the acknowledged intents removed from the stream", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
}

func TestTheDeliveryCountFeedsMaxAttempts(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	in := effectortest.Intent("attempts", 1, 0)
	add(t, q, in)
	ctx := context.Background()
	first := newSource(t, q)
	if d, err := first.Receive(ctx); err != nil || d.Deliveries != 1 {
		t.Fatalf("first delivery: %+v, %v", d, err)
	}
	if err := first.Close(ctx); err != nil { // left unanswered: delivered again
		t.Fatal(err)
	}
	e, calls := effectortest.Effector(t, effector.NewMemoryStore(), effector.WithMaxAttempts(1), effector.WithDeadLetter(q.DeadLetter))
	s := serve(newSource(t, q), q.Sink(), e)
	waitFor(t, "the result", func() bool { _, ok, _ := q.Result(ctx, in.ID); return ok })
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	r, _, _ := q.Result(ctx, in.ID)
	if r.Status != intent.StatusError || calls.Of(in.ID) != 0 {
		t.Fatalf("the second delivery, past WithMaxAttempts(1): result %v %q, %d runs; want ERROR and no run", r.Status, r.ErrorMessage, calls.Of(in.ID))
	}
	dls, err := q.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].IntentID != in.ID || !strings.Contains(dls[0].Reason, "given up after 2 attempts") {
		t.Fatalf("dead letters: %+v", dls)
	}
}

func TestServeOnAQueueWithDedupPerSubject(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster, natsstream.WithDedupPerSubject())
	ins := intents("per-subject", 5)
	add(t, q, ins...)
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	s := serve(newSource(t, q), q.Sink(), e)
	waitFor(t, "every result", func() bool { return len(resultsByID(t, q)) == len(ins) })
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if info := consumerInfo(t, js, q.Name()); info.NumAckPending != 0 || info.NumPending != 0 {
		t.Fatalf("consumer: %d awaiting ack, %d pending", info.NumAckPending, info.NumPending)
	}
	// Answered intents stay, and keep refusing their ids.
	if n := streamMsgs(t, js, q.Name()); n != uint64(len(ins)) {
		t.Fatalf("the stream holds %d intents, want %d", n, len(ins))
	}
	if got := add(t, q, ins...); got != 0 {
		t.Fatalf("answered intents published again: %d stored, want 0", got)
	}
	if calls.Total() != len(ins) {
		t.Fatalf("%d runs, want %d", calls.Total(), len(ins))
	}
}
