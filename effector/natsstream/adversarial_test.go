package natsstream_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// lostAnswerSink is the queue's Sink whose staged waits report a failure
// after the server took the result, as when the server's answer is lost:
// Serve must publish the result again, and the server drop the copy.
type lostAnswerSink struct {
	*natsstream.Sink
	lost        atomic.Int64 // waits that failed
	republished atomic.Int64 // Publish calls
}

func (s *lostAnswerSink) Publish(ctx context.Context, res intent.Result) error {
	s.republished.Add(1)
	return s.Sink.Publish(ctx, res)
}

func (s *lostAnswerSink) Stage(ctx context.Context, res intent.Result) (func() error, error) {
	wait, err := s.Sink.Stage(ctx, res)
	if err != nil {
		return nil, err
	}
	return func() error {
		if err := wait(); err != nil {
			return err
		}
		s.lost.Add(1)
		return errors.New("lost answer: the server took the result, the client never heard")
	}, nil
}

// A staged wait that fails has Serve publish the result again, once, under
// the same message id: the results stream keeps one result per intent, the
// tool ran once, and every intent is acknowledged.
func TestAStagedWaitThatFailsIsRepublishedAndDeduplicated(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ins := intents("lost-answer", 6)
	add(t, q, ins...)
	sink := &lostAnswerSink{Sink: q.Sink()}
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	s := serve(newSource(t, q), sink, e, effector.WithWorkers(2))
	waitFor(t, "every intent acknowledged", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	if lost, again := sink.lost.Load(), sink.republished.Load(); lost != int64(len(ins)) || again != lost {
		t.Fatalf("%d staged waits failed, %d results published again; want %d and %d: Serve must republish each failed wait once", lost, again, len(ins), len(ins))
	}
	rs := resultsByID(t, q) // fails on two results for one intent
	for _, in := range ins {
		if r, ok := rs[in.ID]; !ok || r.Status != intent.StatusOK || calls.Of(in.ID) != 1 {
			t.Fatalf("intent %s: result %v (%v), %d runs; want one OK result and one run", in.ID, r.Status, ok, calls.Of(in.ID))
		}
	}
}

// failingAckSource is a source whose acknowledgements fail while failing is
// set, without reaching the server: an effector that lost its connection
// after its completion was durable and its result published.
type failingAckSource struct {
	effector.Source // Receive only: Serve takes each delivery through it
	failing         atomic.Bool
	failed          atomic.Int64
}

func (s *failingAckSource) Receive(ctx context.Context) (effector.Delivery, error) {
	d, err := s.Source.Receive(ctx)
	if err != nil {
		return d, err
	}
	ack := d.Ack
	d.Ack = func(ctx context.Context) error {
		if s.failing.Load() {
			s.failed.Add(1)
			return errors.New("ack lost: connection down")
		}
		return ack(ctx)
	}
	d.Acker = nil // Serve must acknowledge through the Ack wrapped here (Delivery.Acker's doc)
	return d, nil
}

// An intent whose acknowledgement fails after its completion is durable
// comes back to another effector, which answers it from the shared store:
// the tool runs once, the results stream keeps one result, and the intent
// is acknowledged.
func TestAnAckThatFailsAfterTheCompletionIsDurableIsAnsweredFromTheStore(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	in := effectortest.Intent("ack-lost", 1, 0)
	add(t, q, in)
	ctx := context.Background()
	store := effector.NewMemoryStore()

	ea, callsA := effectortest.Effector(t, store)
	srcA := newSource(t, q)
	a := &failingAckSource{Source: srcA}
	a.failing.Store(true)
	sa := serve(a, q.Sink(), ea, effector.WithDrainTimeout(time.Second))
	waitFor(t, "A's acknowledgement failing", func() bool { return a.failed.Load() >= 2 })
	if _, ok, err := q.Result(ctx, in.ID); !ok || err != nil {
		t.Fatalf("A acknowledges before its result is published: %v %v", ok, err)
	}
	var ua *effector.UnansweredError
	if err := sa.stop(); !errors.As(err, &ua) {
		t.Fatalf("A's Serve: %v; want the intent left unanswered", err)
	}
	if err := srcA.Close(ctx); err != nil { // gives the intent back
		t.Fatal(err)
	}

	eb, callsB := effectortest.Effector(t, store)
	b := &countingSource{Source: newSource(t, q)}
	sb := serve(b, q.Sink(), eb)
	waitFor(t, "B acknowledging the intent", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
	if err := sb.stop(); err != nil {
		t.Fatal(err)
	}
	if b.maxCount.Load() != 2 {
		t.Fatalf("B saw delivery %d, want the second", b.maxCount.Load())
	}
	if callsA.Of(in.ID) != 1 || callsB.Of(in.ID) != 0 {
		t.Fatalf("runs: A %d, B %d; want 1 and 0 (B answers from the store)", callsA.Of(in.ID), callsB.Of(in.ID))
	}
	if rs := resultsByID(t, q); len(rs) != 1 || rs[in.ID].Status != intent.StatusOK {
		t.Fatalf("results: %+v; want one OK", rs)
	}
}

// A Receive whose context ends while its fetch waits on the server returns
// at once, and an intent the server sends to that abandoned fetch is given
// back at once, not held until AckWait: another source gets it promptly.
func TestAReceiveCancelledMidFetchLosesNoIntent(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	ctx := context.Background()
	// A fetch that waits long, and an AckWait far longer than the test's
	// wait below: an intent kept by the abandoned fetch comes back only
	// after AckWait.
	const ackWait = 2 * time.Minute
	first := newSource(t, q, natsstream.WithFetchWait(30*time.Second), natsstream.WithAckWait(ackWait), natsstream.WithLease(ackWait))
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := first.Receive(rctx)
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond) // the fetch is waiting on the server
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Receive after its context was cancelled: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Receive did not return when its context was cancelled mid-fetch")
	}
	in := effectortest.Intent("cancelled-fetch", 1, 0)
	add(t, q, in) // goes to the abandoned fetch, still open on the server
	second := newSource(t, q, natsstream.WithAckWait(ackWait), natsstream.WithLease(ackWait))
	gctx, gcancel := context.WithTimeout(ctx, time.Minute)
	defer gcancel()
	d, err := second.Receive(gctx)
	if err != nil {
		t.Fatalf("the intent added during an abandoned fetch never came to another source within a minute (AckWait %v): %v", ackWait, err)
	}
	if d.Intent == nil || d.Intent.ID != in.ID {
		t.Fatalf("delivery %+v, want intent %s", d, in.ID)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// Close gives back what the source holds, counted one delivery more, and
// no more than that: a fetch that a cancelled Receive left open on the
// server must not take the given-back intent and give it back again, which
// counted it a second time toward WithMaxAttempts though it never ran (a
// graceful restart of an effector cost its intents two attempts).
func TestCloseAfterACancelledFetchCountsOneDeliveryMore(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	in := effectortest.Intent("close-after-cancel", 1, 0)
	add(t, q, in)
	ctx := context.Background()
	first := newSource(t, q, natsstream.WithFetchWait(10*time.Second))
	if d := receiveOne(t, first); d.Deliveries != 1 {
		t.Fatalf("first delivery counted %d", d.Deliveries)
	}
	// Serve stopping: its next Receive is cancelled while its fetch waits.
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := first.Receive(rctx)
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Receive: %v", err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	d := receiveOne(t, newSource(t, q))
	if d.Intent == nil || d.Intent.ID != in.ID || d.Deliveries != 2 {
		t.Fatalf("after Close the intent came back as delivery %d, want 2: it was counted more than once for one give-back", d.Deliveries)
	}
}
