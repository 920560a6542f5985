package natsstream_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// The benchmarks run on the package's three-node cluster (R3, every write
// fsynced). Run them with a fixed count, as the README's figures were:
//
//	go test -run '^$' -bench . -benchtime 2000x ./effector/natsstream/
//
// BenchmarkServe is Serve with 16 and 64 workers over the queue with the
// memory store (the dedup store's own writes are not in it), and with 16
// over the queue and natsstore, the whole NATS path. BenchmarkFloor is
// what a hand-written consumer must do at least for the same intents, in
// the same run: publish them (async), fetch them in batches of 100 and ack
// them; with kv=true also one KV create and one KV update at the create's
// revision per intent, pipelined, which is what a KV-fenced store adds.

var benchSeq atomic.Int64

func benchIntents(n int) []*intent.Intent {
	tag := "bench-" + strconv.FormatInt(benchSeq.Add(1), 10)
	ins := make([]*intent.Intent, n)
	for i := range ins {
		ins[i] = effectortest.Intent(tag, int64(i), 0)
	}
	return ins
}

func benchQueue(b *testing.B) (*natsstream.Queue, jetstream.JetStream) {
	b.Helper()
	nc, err := nats.Connect(cluster.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1024))
	if err != nil {
		b.Fatal(err)
	}
	q, err := natsstream.Open(context.Background(), js, "bench"+strconv.FormatInt(benchSeq.Add(1), 10))
	if err != nil {
		b.Fatal(err)
	}
	return q, js
}

// drained waits until the queue's consumer has nothing pending or awaiting
// its ack.
func drained(b *testing.B, js jetstream.JetStream, stream, consumer string) {
	b.Helper()
	c, err := js.Consumer(context.Background(), stream, consumer)
	if err != nil {
		b.Fatal(err)
	}
	for {
		info, err := c.Info(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// countingSink counts the results published. It is a StagedSink when the
// sink it wraps is one, so that Serve stages through it as it would
// through the sink alone.
type countingSink struct {
	effector.Sink
	n atomic.Int64
}

type countingStagedSink struct{ *countingSink }

func (c countingStagedSink) Stage(ctx context.Context, res intent.Result) (func() error, error) {
	wait, err := c.Sink.(effector.StagedSink).Stage(ctx, res)
	if err != nil {
		return nil, err
	}
	return func() error {
		err := wait()
		if err == nil {
			c.n.Add(1)
		}
		return err
	}, nil
}

func (c *countingSink) Publish(ctx context.Context, res intent.Result) error {
	err := c.Sink.Publish(ctx, res)
	if err == nil {
		c.n.Add(1)
	}
	return err
}

func BenchmarkServe(b *testing.B) {
	memory := func(testing.TB, jetstream.JetStream) effector.DedupStore { return effector.NewMemoryStore() }
	for _, workers := range []int{16, 64} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchServe(b, workers, memory) })
	}
	// The whole NATS path: the queue and the dedup store in a bucket on the
	// same cluster (natsstore: a claim and a completion, two R3 writes, per
	// intent).
	b.Run("workers=16/store=natsstore", func(b *testing.B) {
		benchServe(b, 16, func(b testing.TB, js jetstream.JetStream) effector.DedupStore {
			s, err := natsstore.Open(context.Background(), js, "benchstore"+strconv.FormatInt(benchSeq.Add(1), 10))
			if err != nil {
				b.Fatal(err)
			}
			return s
		})
	})
}

func benchServe(b *testing.B, workers int, newStore func(testing.TB, jetstream.JetStream) effector.DedupStore) {
	benchServeSink(b, workers, newStore, nil)
}

func benchServeSink(b *testing.B, workers int, newStore func(testing.TB, jetstream.JetStream) effector.DedupStore, inner effector.Sink) {
	{
		q, js := benchQueue(b)
		ins := benchIntents(b.N)
		e, _ := effectortest.Effector(b, newStore(b, js))
		src, err := q.NewSource(context.Background(), natsstream.WithBatch(100), natsstream.WithLogger(quiet))
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close(context.Background())
		if inner == nil {
			inner = q.Sink()
		}
		sink := &countingSink{Sink: inner}
		var served effector.Sink = sink
		if _, ok := inner.(effector.StagedSink); ok {
			served = countingStagedSink{sink}
		}
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		s := serve(src, served, e, effector.WithWorkers(workers))
		if _, err := q.Add(context.Background(), ins...); err != nil {
			b.Fatal(err)
		}
		for sink.n.Load() < int64(b.N) {
			time.Sleep(time.Millisecond)
		}
		drained(b, js, q.Name(), natsstream.DefaultConsumer)
		elapsed := time.Since(start)
		b.StopTimer()
		if err := s.stop(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "intents/s")
	}
}

func BenchmarkFloor(b *testing.B) {
	for _, kv := range []bool{false, true} {
		b.Run(fmt.Sprintf("kv=%v", kv), func(b *testing.B) { benchFloor(b, kv) })
	}
}

func benchFloor(b *testing.B, withKV bool) {
	q, js := benchQueue(b)
	ctx := context.Background()
	ins := benchIntents(b.N)
	bucket := q.Name() + "kv"
	// The KV writes go through a JetStream context of their own. Async
	// publishes in flight are bounded per context, and the producer's Add
	// keeps up to 1024 intents (benchQueue's limit) in flight on the
	// queue's: a KV write sharing that context waited for room, and under
	// load gave up after nats.go's 200ms stall wait ("stalled with too
	// many outstanding async published messages"), failing the run. A
	// batch has at most floorBatch creates and floorBatch updates in
	// flight and awaits all of them before the next fetch, so this
	// context's limit never makes it wait.
	kvjs, err := jetstream.New(js.Conn(), jetstream.WithPublishAsyncMaxPending(2*floorBatch))
	if err != nil {
		b.Fatal(err)
	}
	if withKV {
		if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, Replicas: 3, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, q.Name(), jetstream.ConsumerConfig{Durable: "floor", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	go func() {
		if _, err := q.Add(ctx, ins...); err != nil {
			panic(err)
		}
	}()
	done := 0
	var creates, updates []jetstream.PubAckFuture
	for done < b.N {
		mb, err := cons.Fetch(floorBatch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		var msgs []jetstream.Msg
		for m := range mb.Messages() {
			msgs = append(msgs, m)
		}
		if withKV {
			creates, updates = creates[:0], updates[:0]
			for _, m := range msgs {
				md, _ := m.Metadata()
				creates = append(creates, kvPublish(b, kvjs, bucket, md.Sequence.Stream, 0))
			}
			for i, f := range creates {
				ack := await(b, f)
				md, _ := msgs[i].Metadata()
				updates = append(updates, kvPublish(b, kvjs, bucket, md.Sequence.Stream, ack.Sequence))
			}
			for _, f := range updates {
				await(b, f)
			}
		}
		for _, m := range msgs {
			if err := m.Ack(); err != nil {
				b.Fatal(err)
			}
		}
		done += len(msgs)
	}
	drained(b, js, q.Name(), "floor")
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "intents/s")
}

// floorBatch is how many intents the floor fetches at once.
const floorBatch = 100

// await returns f's acknowledgement, and fails b if the server refused the
// publish.
func await(b *testing.B, f jetstream.PubAckFuture) *jetstream.PubAck {
	select {
	case ack := <-f.Ok():
		return ack
	case err := <-f.Err():
		b.Fatal(err)
		return nil
	}
}

// kvPublish writes key "k<seq>" of bucket, expecting the key's last
// revision to be rev (0: a create), asynchronously.
func kvPublish(b *testing.B, js jetstream.JetStream, bucket string, seq, rev uint64) jetstream.PubAckFuture {
	m := nats.NewMsg("$KV." + bucket + ".k" + strconv.FormatUint(seq, 10))
	m.Data = []byte(`{"state":"claimed","token":"0123456789abcdef"}`)
	m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	f, err := js.PublishMsgAsync(m)
	if err != nil {
		b.Fatal(err)
	}
	return f
}
