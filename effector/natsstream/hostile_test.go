package natsstream_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// deadLetters reads q's dead letters once there are any: a read may go to a
// server a moment behind the one that took the publish.
func deadLetters(t *testing.T, q *natsstream.Queue) []natsstream.DeadLetter {
	t.Helper()
	var dls []natsstream.DeadLetter
	waitFor(t, "a dead letter", func() bool {
		var err error
		dls, err = q.DeadLetters(context.Background())
		return err == nil && len(dls) > 0
	})
	return dls
}

// receiveOne receives one delivery from src, failing the test after a
// minute.
func receiveOne(t *testing.T, src *natsstream.Source) effector.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := src.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// An entry as large as the server takes (its max_payload, 1 MiB) that is no
// intent must still reach the dead letters: its dead letter holds the
// entry's bytes (in base64, a third larger) and the reason, more than the
// server takes in one message. Were it refused, Serve would retry the dead
// letter for ever, the source would keep the entry in progress, and the
// entry would hold a worker and never be dead-lettered or delivered again.
func TestAnEntryAsLargeAsTheServerTakesReachesTheDeadLetters(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	max := int(js.Conn().MaxPayload())
	junk := bytes.Repeat([]byte("x"), max-1024) // room for the subject and headers
	if _, err := js.Publish(context.Background(), "toolreg."+q.Name()+".intents.junk", junk); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, q)
	d := receiveOne(t, src)
	if d.Err == nil {
		t.Fatal("a junk entry decoded as an intent")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := q.EntryDeadLetter(ctx, d); err != nil {
		t.Fatalf("dead-lettering a %d-byte entry: %v", len(junk), err)
	}
	dls := deadLetters(t, q)
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	dl := dls[0]
	if !strings.Contains(dl.Reason, d.Err.Error()) || dl.Pos != d.Pos || dl.EntrySize != len(junk) ||
		len(dl.Entry) == 0 || !bytes.HasPrefix(junk, dl.Entry) {
		t.Fatalf("dead letter: reason %q, pos %q, entry size %d, %d bytes of entry kept; want the decoding error, %q, %d and a prefix of the entry",
			dl.Reason, dl.Pos, dl.EntrySize, len(dl.Entry), d.Pos, len(junk))
	}
}

// So must an intent as large as the server takes that the effector refuses
// or gives up (Queue.DeadLetter): Serve would otherwise retry its
// processing for ever.
func TestAnIntentAsLargeAsTheServerTakesReachesTheDeadLetters(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	in := effectortest.Intent("large", 1, 0)
	in.ArgsJSON = []byte(`{"key":"` + strings.Repeat("x", int(js.Conn().MaxPayload())-2048) + `"}`)
	if n := add(t, q, in); n != 1 {
		t.Fatalf("Add stored %d intents, want 1", n)
	}
	whole, err := in.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := q.DeadLetter(ctx, in, errors.New("refused for the test")); err != nil {
		t.Fatalf("dead-lettering a %d-byte intent: %v", len(whole), err)
	}
	dls := deadLetters(t, q)
	if len(dls) != 1 || dls[0].IntentID != in.ID || dls[0].Reason != "refused for the test" ||
		dls[0].EntrySize != len(whole) || len(dls[0].Entry) == 0 || !bytes.HasPrefix(whole, dls[0].Entry) {
		t.Fatalf("dead letters: %d; want one for %q with its reason, size %d and a prefix of its entry", len(dls), in.ID, len(whole))
	}
}

// An intent the source fetched but never handed out (by ReceiveBatch, the
// batch path) is not a failed
// attempt: when it comes back (the source closed, or its process crashed
// and AckWait passed), its delivery count must not push it past
// WithMaxAttempts, or the effector gives it up with an ERROR result without
// ever running it. A process crash-looping on one poison intent would so
// take with it every intent that sat fetched beside it.
func TestAnIntentFetchedButNeverHandedOutIsNotGivenUp(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	ins := intents("fetched", 2)
	add(t, q, ins...)
	ctx := context.Background()
	first := newSource(t, q)
	got, err := first.ReceiveBatch(ctx, 1, nil)
	if err != nil || len(got) != 1 {
		t.Fatalf("ReceiveBatch(1): %d deliveries, %v", len(got), err)
	}
	handed := got[0]
	if err := first.Close(ctx); err != nil { // its process stopped
		t.Fatal(err)
	}
	other := ins[0]
	if handed.Intent.ID == other.ID {
		other = ins[1]
	}
	e, calls := effectortest.Effector(t, effector.NewMemoryStore(), effector.WithMaxAttempts(1), effector.WithDeadLetter(q.DeadLetter))
	s := serve(newSource(t, q), q.Sink(), e)
	waitFor(t, "both results", func() bool {
		_, ok1, _ := q.Result(ctx, ins[0].ID)
		_, ok2, _ := q.Result(ctx, ins[1].ID)
		return ok1 && ok2
	})
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	r, _, _ := q.Result(ctx, other.ID)
	if r.Status != intent.StatusOK || calls.Of(other.ID) != 1 {
		t.Fatalf("the intent never handed out before: result %v %q, %d runs; want OK and one run", r.Status, r.ErrorMessage, calls.Of(other.ID))
	}
}

// A read of the results whose fetch is answered late (past the client's
// one second for a fetch that does not wait) must not end as if it had read
// everything: Results returned no results and no error, and a caller
// counting answers would take the intents for unanswered.
func TestResultsReadThroughALateFetchMissesNone(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ins := intents("late", 5)
	for _, in := range ins {
		if err := q.Sink().Publish(ctx, intent.Result{IntentID: in.ID, EntityKey: in.EntityKey, Seq: in.Seq, Status: intent.StatusOK, Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	p := startProxy(t, strings.TrimPrefix(cluster.URLs()[0], "nats://"))
	nc, err := nats.Connect(p.URL(), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	slow, err := natsstream.Open(ctx, jetStream(t, nc), q.Name())
	if err != nil {
		t.Fatal(err)
	}
	// A read may go to a server a moment behind: wait until one through
	// the proxy reads all, so what follows is the late fetch alone.
	waitFor(t, "a read through the proxy seeing every result", func() bool {
		rs, err := slow.Results(ctx)
		return err == nil && len(rs) == len(ins)
	})
	p.holdNextFetch(2 * time.Second)
	rs, err := slow.Results(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(ins) {
		t.Fatalf("Results read %d results and no error; the stream holds %d", len(rs), len(ins))
	}
}

// A read of the results from a cluster that stops answering mid-read
// returns when its context ends (and at most one request timeout later):
// it deleted its consumer with retries for 30 seconds past the caller's
// deadline, though the server drops that consumer by itself once idle.
func TestResultsFromAClusterGoneMidReadEndWithTheContext(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	ctx := context.Background()
	in := effectortest.Intent("gone", 1, 0)
	if err := q.Sink().Publish(ctx, intent.Result{IntentID: in.ID, EntityKey: in.EntityKey, Seq: in.Seq, Status: intent.StatusOK}); err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, strings.TrimPrefix(cluster.URLs()[0], "nats://"))
	nc, err := nats.Connect(p.URL(), nats.DontRandomize())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const reqTimeout = time.Second
	slow, err := natsstream.Open(ctx, jetStream(t, nc), q.Name(), natsstream.WithRequestTimeout(reqTimeout))
	if err != nil {
		t.Fatal(err)
	}
	p.holdNextFetch(time.Hour) // from the first fetch on, the connection carries nothing to the server
	const deadline = 3 * time.Second
	rctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	start := time.Now()
	_, err = slow.Results(rctx)
	took := time.Since(start)
	if err == nil {
		t.Fatal("Results read a cluster that does not answer, with no error")
	}
	// Generous for a loaded machine; the bug took deadline + 30s.
	if bound := deadline + reqTimeout + 10*time.Second; took > bound {
		t.Fatalf("Results took %v with a %v context and a %v request timeout (want under %v): %v", took.Round(time.Second), deadline, reqTimeout, bound, err)
	}
}

// Effectors share one durable consumer, whose AckWait the server applies to
// all of them, while each source signals progress every third of its own.
// A source opened with a shorter AckWait than the running ones' must be
// refused: it changed the consumer, and the intents the others held (and
// signalled every third of their longer AckWait) came back to it while
// they ran.
func TestASourceDisagreeingWithTheSharedConsumerIsRefused(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	add(t, q, intents("shared", 1)...)
	ctx := context.Background()
	a := newSource(t, q, natsstream.WithAckWait(30*time.Second))
	held, err := a.ReceiveBatch(ctx, 1, nil)
	if err != nil || len(held) != 1 {
		t.Fatalf("A: %d deliveries, %v", len(held), err)
	}
	b, err := q.NewSource(ctx, natsstream.WithAckWait(natsstream.MinAckWait), natsstream.WithLogger(quiet))
	if err == nil {
		defer b.Close(ctx)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got, err := b.ReceiveBatch(rctx, 1, nil)
		if err == nil && len(got) == 1 {
			t.Fatalf("B, opened with AckWait %v on A's consumer (AckWait 30s), got the intent A holds again (delivery %d)", natsstream.MinAckWait, got[0].Deliveries)
		}
		t.Fatal("B was opened with another AckWait than the shared consumer's, with no error")
	}
	if !strings.Contains(err.Error(), "AckWait") {
		t.Fatalf("the refusal does not say what differs: %v", err)
	}
	if err := held[0].Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// A result or an intent larger than the server takes is refused with an
// error saying so and what to do: Serve logs a result's error at every
// retry, and "maximum payload exceeded" alone names no setting.
func TestAMessageLargerThanTheServerTakesGetsAClearError(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	big := strings.Repeat("x", int(js.Conn().MaxPayload()))
	in := effectortest.Intent("big", 1, 0)
	err := q.Sink().Publish(ctx, intent.Result{IntentID: in.ID, EntityKey: in.EntityKey, Seq: in.Seq, Status: intent.StatusOK, Payload: []byte(`"` + big + `"`)})
	if err == nil || !strings.Contains(err.Error(), "max_payload") || !strings.Contains(err.Error(), in.ID) {
		t.Fatalf("publishing a result larger than max_payload: %v; want an error naming the intent and max_payload", err)
	}
	in.ArgsJSON = []byte(`{"key":"` + big + `"}`)
	if _, err := q.Add(ctx, in); err == nil || !strings.Contains(err.Error(), "max_payload") || !strings.Contains(err.Error(), in.ID) {
		t.Fatalf("adding an intent larger than max_payload: %v; want an error naming the intent and max_payload", err)
	}
}

// Open on a queue that exists must not change its streams: a producer or a
// test opening a production queue with WithReplicas(1) made its streams R1,
// so losing one server could lose intents, and a shorter duplicate window
// or result TTL changed every effector's dedup. Open refuses, saying what
// differs.
func TestOpeningAQueueOtherwiseDoesNotChangeIt(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tt := range []struct {
		opt  natsstream.QueueOption
		want string
	}{
		{natsstream.WithReplicas(1), "replicas"},
		{natsstream.WithDuplicateWindow(time.Second), "duplicate window"},
		{natsstream.WithResultTTL(time.Hour), "keeps results"},
	} {
		_, err := natsstream.Open(ctx, js, q.Name(), tt.opt)
		for _, name := range []string{q.Name(), q.Name() + "_results", q.Name() + "_dead"} {
			st, serr := js.Stream(ctx, name)
			if serr != nil {
				t.Fatal(serr)
			}
			cfg := st.CachedInfo().Config
			if cfg.Replicas != natsstream.DefaultReplicas || cfg.Duplicates != natsstream.DefaultDuplicateWindow {
				t.Fatalf("Open with another %s changed stream %q: %d replicas, window %v (Open's error: %v)", tt.want, name, cfg.Replicas, cfg.Duplicates, err)
			}
			if name == q.Name()+"_results" && cfg.MaxAge != natsstream.DefaultResultTTL {
				t.Fatalf("Open with another %s changed stream %q: results kept %v (Open's error: %v)", tt.want, name, cfg.MaxAge, err)
			}
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("Open with another %s: %v; want an error saying what differs", tt.want, err)
		}
	}
	if _, err := natsstream.Open(ctx, js, q.Name()); err != nil {
		t.Fatalf("Open with the queue's own settings: %v", err)
	}
}
