package natsstream_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// receiveN takes n deliveries from src.
func receiveN(t *testing.T, src *natsstream.Source, n int) []effector.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var ds []effector.Delivery
	for len(ds) < n {
		var err error
		if ds, err = src.ReceiveBatch(ctx, n-len(ds), ds); err != nil {
			t.Fatal(err)
		}
	}
	return ds
}

// AckBatch double-acks every delivery of a batch; acknowledging them again
// through Ack is harmless; a batch holding a delivery the source did not
// hand out is refused whole, acknowledging nothing.
func TestAckBatchAcknowledgesEveryDelivery(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	add(t, q, intents("ackbatch", 8)...)
	ctx := context.Background()
	src := newSource(t, q, natsstream.WithBatch(8))
	ds := receiveN(t, src, 8)
	for _, d := range ds {
		if d.Acker != src {
			t.Fatalf("delivery %s has Acker %v, want its source", d.Pos, d.Acker)
		}
	}
	foreign := ds[0]
	foreign.Intent = effectortest.Intent("ackbatch", 1, 0) // same id, not the one handed out
	if err := src.AckBatch(ctx, []effector.Delivery{ds[1], foreign}); err == nil {
		t.Fatal("AckBatch took a delivery it did not hand out")
	}
	if err := newSource(t, q).AckBatch(ctx, ds[:2]); err == nil {
		t.Fatal("another source's AckBatch took this source's deliveries")
	}
	if n := streamMsgs(t, js, q.Name()); n != 8 {
		t.Fatalf("%d intents in the stream after refused batches, want all 8", n)
	}
	if err := src.AckBatch(ctx, ds); err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
	waitFor(t, "the acknowledged intents leaving the stream", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
	for _, d := range ds {
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("Ack of %s after its batch: %v", d.Pos, err)
		}
	}
}

// An AckBatch over a connection that stalls fails when its context ends,
// acknowledging none of the batch or acknowledging it only once the
// connection comes back; then each delivery's Ack (Serve's fallback)
// succeeds and the stream is left empty.
func TestAckBatchOverAStalledConnection(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	add(t, q, intents("stalled", 6)...)
	p := startProxy(t, strings.TrimPrefix(cluster.URLs()[0], "nats://"))
	nc, err := nats.Connect(p.URL(), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	qp, err := natsstream.Open(context.Background(), jetStream(t, nc), q.Name(), natsstream.WithRequestTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	src := newSource(t, qp, natsstream.WithBatch(6))
	ds := receiveN(t, src, 6)
	p.paused.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err = src.AckBatch(ctx, ds)
	cancel()
	if err == nil {
		t.Fatal("AckBatch over a stalled connection returned nil")
	}
	if n := streamMsgs(t, js, q.Name()); n != 6 {
		t.Fatalf("%d intents in the stream while the acknowledgements were stalled, want all 6", n)
	}
	p.paused.Store(false)
	for _, d := range ds {
		if err := d.Ack(context.Background()); err != nil {
			t.Fatalf("Ack of %s once the connection came back: %v", d.Pos, err)
		}
	}
	waitFor(t, "the acknowledged intents leaving the stream", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
}

// failingBatchAckSource wraps its deliveries' Acker with one whose first
// failures AckBatch calls fail, as a connection lost mid-batch would.
type failingBatchAckSource struct {
	effector.BatchSource
	inner    effector.BatchAcker
	failures atomic.Int32 // left to fail
	failed   atomic.Int32
	batches  atomic.Int32
}

func (s *failingBatchAckSource) ReceiveBatch(ctx context.Context, max int, buf []effector.Delivery) ([]effector.Delivery, error) {
	n := len(buf)
	buf, err := s.BatchSource.ReceiveBatch(ctx, max, buf)
	for i := n; i < len(buf); i++ {
		if buf[i].Acker != nil {
			if s.inner == nil { // written once, before any AckBatch reads it
				s.inner = buf[i].Acker
			}
			buf[i].Acker = s
		}
	}
	return buf, err
}

func (s *failingBatchAckSource) AckBatch(ctx context.Context, ds []effector.Delivery) error {
	if s.failures.Add(-1) >= 0 {
		s.failed.Add(1)
		return errors.New("connection lost mid-batch")
	}
	s.batches.Add(1)
	inner := slices.Clone(ds)
	for i := range inner {
		inner[i].Acker = s.inner
	}
	return s.inner.AckBatch(ctx, inner)
}

// Serve whose first batch acknowledgements fail answers every intent
// exactly once: one result each, the tool run once each, the stream left
// empty, the failed batches' intents acknowledged through their own Ack.
func TestServeAnswersEveryIntentOnceWhenBatchAcksFail(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ins := intents("batch-ack-fails", 40)
	add(t, q, ins...)
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	src := &failingBatchAckSource{BatchSource: newSource(t, q)}
	src.failures.Store(2)
	sv := serve(src, q.Sink(), e, effector.WithWorkers(4))
	waitFor(t, "every intent acknowledged", func() bool { return streamMsgs(t, js, q.Name()) == 0 })
	if err := sv.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if src.failed.Load() == 0 {
		t.Fatal("no AckBatch failed: the test proves nothing")
	}
	rs := resultsByID(t, q)
	for _, in := range ins {
		if _, ok := rs[in.ID]; !ok || calls.Of(in.ID) != 1 {
			t.Errorf("intent %s: result %v, %d runs; want a result and 1 run", in.ID, ok, calls.Of(in.ID))
		}
	}
	if len(rs) != len(ins) {
		t.Errorf("%d results for %d intents", len(rs), len(ins))
	}
}
