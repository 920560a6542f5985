package effectortest

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/intent"
)

// ServeIntents returns b.N fresh intents for a Serve benchmark, one entity
// per call, so that the rounds and -count repetitions of a benchmark sharing
// one store never meet each other's ids.
func ServeIntents(b *testing.B) []*intent.Intent {
	seq := benchSeq.Add(1)
	ins := make([]*intent.Intent, b.N)
	for i := range ins {
		ins[i] = Intent("serve-bench", seq, uint32(i))
	}
	return ins
}

// JSONLFile writes ins, one JSON line each, to a file in a temporary
// directory and returns a source reading it (jsonl.OpenFile, with its
// checkpoint) and a sink appending results to another file there: the JSONL
// transport as a deployment runs it, both fsynced. Both are closed when b
// ends.
func JSONLFile(b *testing.B, ins []*intent.Intent) (effector.Source, effector.Sink) {
	dir := b.TempDir()
	var buf bytes.Buffer
	for _, in := range ins {
		line, err := in.MarshalJSON()
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	path := filepath.Join(dir, "intents.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	src, err := jsonl.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	out, err := os.OpenFile(filepath.Join(dir, "results.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { out.Close() })
	return src, jsonl.NewSink(out)
}

// BenchmarkServe serves ins (already in src, which must hold nothing else)
// through effector.Serve with the given workers until every delivery is
// acknowledged, then stops it, and reports intents/s from the start of
// Serve to the last acknowledgement. A source with no end (a stream, a
// queue) is served until then; a JSONL file ends there too. It fails b
// unless Serve returned cleanly, every intent was acknowledged, and the tool
// ran exactly once for each intent (calls from the Effector given).
func BenchmarkServe(b *testing.B, src effector.Source, sink effector.Sink, e *effector.Effector, calls *Calls, ins []*intent.Intent, workers int) {
	all := make(chan struct{})
	acks := &ackCounter{want: int64(len(ins)), all: all}
	var counted effector.Source = &countingSource{Source: src, acks: acks}
	if bs, ok := src.(effector.BatchSource); ok {
		counted = &countingBatchSource{countingSource{Source: src, acks: acks}, bs}
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	go func() {
		done <- effector.Serve(ctx, counted, sink, e, effector.WithWorkers(workers), effector.WithServeLogger(slog.New(slog.DiscardHandler)))
	}()
	select {
	case <-all:
	case err := <-done: // a JSONL file's end, or a failure
		if acks.n.Load() != acks.want {
			b.Fatalf("Serve returned %v with %d of %d intents acknowledged", err, acks.n.Load(), acks.want)
		}
		done <- err
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	if err := <-done; err != nil {
		b.Fatalf("Serve: %v", err)
	}
	b.ReportMetric(float64(len(ins))/elapsed.Seconds(), "intents/s")
	if got := calls.Total(); got != len(ins) {
		b.Fatalf("the tool ran %d times for %d intents", got, len(ins))
	}
	for _, in := range ins {
		if n := calls.Of(in.ID); n != 1 {
			b.Fatalf("the tool ran %d times for intent %s", n, in.ID)
		}
	}
}

// ackCounter closes all once want deliveries are acknowledged.
type ackCounter struct {
	want  int64
	n     atomic.Int64
	all   chan struct{}
	inner effector.BatchAcker // the source's, set by wrap (a Serve has one source)
}

// wrap counts d's acknowledgement, through its Ack or, as Delivery.Acker's
// doc asks of a wrapper, in a batch through the counter's AckBatch, so that
// Serve acknowledges d as it would unwrapped.
func (a *ackCounter) wrap(d effector.Delivery) effector.Delivery {
	ack := d.Ack
	d.Ack = func(ctx context.Context) error {
		if ack != nil {
			if err := ack(ctx); err != nil {
				return err
			}
		}
		a.count(1)
		return nil
	}
	if d.Acker != nil {
		if a.inner == nil { // written once, before any AckBatch reads it
			a.inner = d.Acker
		}
		d.Acker = a
	}
	return d
}

// AckBatch acknowledges ds through the source's AckBatch, with the source's
// own Acker, and counts them.
func (a *ackCounter) AckBatch(ctx context.Context, ds []effector.Delivery) error {
	inner := make([]effector.Delivery, len(ds))
	copy(inner, ds)
	for i := range inner {
		inner[i].Acker = a.inner
	}
	if err := a.inner.AckBatch(ctx, inner); err != nil {
		return err
	}
	a.count(int64(len(ds)))
	return nil
}

func (a *ackCounter) count(n int64) {
	if now := a.n.Add(n); now >= a.want && now-n < a.want {
		close(a.all)
	}
}

// countingSource counts the acknowledgements of src's deliveries.
type countingSource struct {
	effector.Source
	acks *ackCounter
}

func (s *countingSource) Receive(ctx context.Context) (effector.Delivery, error) {
	d, err := s.Source.Receive(ctx)
	if err != nil {
		return d, err
	}
	return s.acks.wrap(d), nil
}

// countingBatchSource is countingSource for a BatchSource, which it stays,
// so that Serve takes its deliveries in batches.
type countingBatchSource struct {
	countingSource
	bs effector.BatchSource
}

func (s *countingBatchSource) ReceiveBatch(ctx context.Context, max int, buf []effector.Delivery) ([]effector.Delivery, error) {
	n := len(buf)
	buf, err := s.bs.ReceiveBatch(ctx, max, buf)
	for i := n; i < len(buf); i++ {
		buf[i] = s.acks.wrap(buf[i])
	}
	return buf, err
}
