package natsstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/natstest"
)

// cluster is the three-node cluster the package's tests share; a test that
// stops nodes starts its own.
var cluster *natstest.Cluster

func TestMain(m *testing.M) { os.Exit(natstest.Main(m, &cluster)) }

var queueSeq atomic.Int64

// openQueue opens a queue of its own for the test on c.
func openQueue(t *testing.T, c *natstest.Cluster, opts ...natsstream.QueueOption) (*natsstream.Queue, jetstream.JetStream) {
	t.Helper()
	js := jetStream(t, c.Connect(t))
	name := fmt.Sprintf("q%d", queueSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q, err := natsstream.Open(ctx, js, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return q, js
}

func jetStream(t *testing.T, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func newSource(t *testing.T, q *natsstream.Queue, opts ...natsstream.Option) *natsstream.Source {
	t.Helper()
	opts = append([]natsstream.Option{natsstream.WithLogger(slog.New(slog.DiscardHandler)), natsstream.WithFetchWait(200 * time.Millisecond)}, opts...)
	s, err := q.NewSource(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// intents returns n intents of entity.
func intents(entity string, n int) []*intent.Intent {
	ins := make([]*intent.Intent, n)
	for i := range ins {
		ins[i] = effectortest.Intent(entity, 1, uint32(i))
	}
	return ins
}

func add(t *testing.T, q *natsstream.Queue, ins ...*intent.Intent) int {
	t.Helper()
	n, err := q.Add(context.Background(), ins...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// streamMsgs returns how many messages stream holds. It asks again for up
// to 30 seconds while the servers do not answer: just
// after a cluster restart, on a loaded machine, one request could go
// unanswered for the client's 5 seconds (it failed
// TestWholeClusterRestartedMidRun once after every intent was answered).
func streamMsgs(t *testing.T, js jetstream.JetStream, stream string) uint64 {
	t.Helper()
	giveUp := time.Now().Add(30 * time.Second)
	for {
		st, err := js.Stream(context.Background(), stream)
		if err == nil {
			var info *jetstream.StreamInfo
			if info, err = st.Info(context.Background()); err == nil {
				return info.State.Msgs
			}
		}
		if time.Now().After(giveUp) {
			t.Fatalf("reading stream %s: %v", stream, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func consumerCount(t *testing.T, js jetstream.JetStream, stream string) int {
	t.Helper()
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

func TestOpenRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	js := jetStream(t, cluster.Connect(t))
	cases := []struct {
		name  string
		qname string
		opts  []natsstream.QueueOption
		want  string
	}{
		{"an empty name is refused", "", nil, `queue name ""`},
		{"a name with a dot is refused, since it makes subjects", "a.b", nil, `queue name "a.b"`},
		{"a name past 32 bytes is refused", strings.Repeat("q", 33), nil, "1 to 32"},
		{"no replicas are refused", "ok", []natsstream.QueueOption{natsstream.WithReplicas(0)}, "WithReplicas(0)"},
		{"a duplicate window past the result TTL is refused", "ok", []natsstream.QueueOption{natsstream.WithDuplicateWindow(time.Hour), natsstream.WithResultTTL(time.Minute)}, "longer than WithResultTTL"},
		{"an intent TTL without per-subject dedup is refused", "ok", []natsstream.QueueOption{natsstream.WithIntentTTL(time.Hour)}, "WithIntentTTL(1h0m0s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := natsstream.Open(context.Background(), js, c.qname, c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: got %v, want an error containing %q", err, c.want)
			}
		})
	}
	if _, err := natsstream.Open(context.Background(), nil, "ok"); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Fatalf("Open(nil js): got %v", err)
	}
}

func TestNewSourceRefusesAckWaitInconsistentWithTheLease(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	cases := []struct {
		name string
		opts []natsstream.Option
		want string
	}{
		{"an AckWait above the default lease is refused", []natsstream.Option{natsstream.WithAckWait(3 * time.Minute)}, "longer than the lease (2m0s)"},
		{"an AckWait above a shorter lease is refused", []natsstream.Option{natsstream.WithLease(10 * time.Second), natsstream.WithAckWait(11 * time.Second)}, "want AckWait <= lease"},
		{"an AckWait below MinAckWait is refused", []natsstream.Option{natsstream.WithAckWait(100 * time.Millisecond)}, "at least 1s"},
		{"a zero delivery limit is refused", []natsstream.Option{natsstream.WithMaxDeliver(0)}, "WithMaxDeliver(0)"},
		{"a consumer name with a space is refused", []natsstream.Option{natsstream.WithConsumer("a b")}, `WithConsumer("a b")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := q.NewSource(context.Background(), c.opts...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewSource: got %v, want an error containing %q", err, c.want)
			}
		})
	}
	// At the bound, it is taken.
	s, err := q.NewSource(context.Background(), natsstream.WithLease(10*time.Second), natsstream.WithAckWait(10*time.Second))
	if err != nil {
		t.Fatalf("an AckWait equal to the lease: %v", err)
	}
	s.Close(context.Background())
}

// The lease NewSource checks AckWait against comes from the effector
// itself (e.Lease()), so it cannot drift from effector.WithLease: an
// effector with a 10s lease makes an 11s AckWait refused and a 10s one
// taken, and one with the default lease takes the default AckWait.
func TestNewSourceChecksAckWaitAgainstTheEffectorsLease(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	short, _ := effectortest.Effector(t, effector.NewMemoryStore(), effector.WithLease(10*time.Second), effector.WithTimeout(5*time.Second))
	if got := short.Lease(); got != 10*time.Second {
		t.Fatalf("Lease() of an effector made WithLease(10s) = %v", got)
	}
	ctx := context.Background()
	if _, err := q.NewSource(ctx, natsstream.WithConsumer("short"), natsstream.WithLease(short.Lease()), natsstream.WithAckWait(11*time.Second)); err == nil || !strings.Contains(err.Error(), "want AckWait <= lease") {
		t.Fatalf("NewSource with an AckWait above the effector's lease: %v, want it refused", err)
	}
	s, err := q.NewSource(ctx, natsstream.WithConsumer("short"), natsstream.WithLease(short.Lease()), natsstream.WithAckWait(10*time.Second))
	if err != nil {
		t.Fatalf("NewSource with an AckWait equal to the effector's lease: %v", err)
	}
	s.Close(ctx)
	def, _ := effectortest.Effector(t, effector.NewMemoryStore())
	if got := def.Lease(); got != effector.DefaultLease {
		t.Fatalf("Lease() of an effector made without WithLease = %v, want DefaultLease (%v)", got, effector.DefaultLease)
	}
	// A work-queue stream takes one consumer: another queue.
	q2, _ := openQueue(t, cluster)
	s, err = q2.NewSource(ctx, natsstream.WithLease(def.Lease()))
	if err != nil {
		t.Fatalf("NewSource with the default effector's lease and the default AckWait: %v", err)
	}
	s.Close(ctx)
}

func TestTokenKeepsEveryIDApart(t *testing.T) {
	t.Parallel()
	ids := []string{"a", " a", "a ", "a\t", "a\r\n", "A", "~a", "a.b", "a*", "a>", strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("x", 10000), "é", ""}
	seen := map[string]string{}
	for _, id := range ids {
		tok := natsstream.Token(id)
		if prev, ok := seen[tok]; ok {
			t.Errorf("Token(%.40q) = Token(%.40q) = %q", id, prev, tok)
		}
		seen[tok] = id
		if len(tok) > 65 || strings.ContainsAny(tok, " \t\r\n.*>") {
			t.Errorf("Token(%.40q) = %.80q: not a short, safe subject token", id, tok)
		}
	}
	if got := natsstream.Token("7d2c4a1e-5b0f-5a3d-9c1e-0f2b3a4c5d6e"); got != "7d2c4a1e-5b0f-5a3d-9c1e-0f2b3a4c5d6e" {
		t.Errorf("a UUID's token is %q, want the UUID itself", got)
	}
}

// withID returns a copy of in with another id.
func withID(in *intent.Intent, id string) *intent.Intent {
	c := *in
	c.ID = id
	return &c
}

func TestIntentsWhoseIDsDifferOnlyInWhiteSpaceAreNotDuplicates(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster, natsstream.WithReplicas(3))
	base := effectortest.Intent("ws", 1, 0)
	ins := []*intent.Intent{withID(base, "id"), withID(base, " id"), withID(base, "id "), withID(base, "id\t")}
	if got := add(t, q, ins...); got != len(ins) {
		t.Fatalf("Add stored %d of %d intents whose ids differ only in white space: the rest were taken for duplicates", got, len(ins))
	}
	if got := streamMsgs(t, js, q.Name()); got != uint64(len(ins)) {
		t.Fatalf("the intents stream holds %d messages, want %d", got, len(ins))
	}
	// Their results too.
	sink := q.Sink()
	for _, in := range ins {
		if err := sink.Publish(context.Background(), intent.Result{IntentID: in.ID, Status: intent.StatusOK}); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range ins {
		r, ok, err := q.Result(context.Background(), in.ID)
		if err != nil || !ok || r.IntentID != in.ID {
			t.Fatalf("Result(%q): %+v, %v, %v", in.ID, r, ok, err)
		}
	}
}

func TestALongIntentIDKeepsTheConnection(t *testing.T) {
	t.Parallel()
	nc := cluster.Connect(t)
	js := jetStream(t, nc)
	q, err := natsstream.Open(context.Background(), js, fmt.Sprintf("q%d", queueSeq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	long := withID(effectortest.Intent("long", 1, 0), strings.Repeat("x", 8000))
	if got := add(t, q, long); got != 1 {
		t.Fatalf("Add stored %d intents, want 1", got)
	}
	if err := q.Sink().Publish(context.Background(), intent.Result{IntentID: long.ID, Status: intent.StatusOK}); err != nil {
		t.Fatal(err)
	}
	if !nc.IsConnected() || nc.Stats().Reconnects > 0 {
		t.Fatalf("the connection was closed by the server (connected %v, reconnects %d): a subject past the protocol line", nc.IsConnected(), nc.Stats().Reconnects)
	}
	r, ok, err := q.Result(context.Background(), long.ID)
	if err != nil || !ok || r.IntentID != long.ID {
		t.Fatalf("Result of the long id: ok %v, %v", ok, err)
	}
	s := newSource(t, q)
	d, err := s.Receive(context.Background())
	if err != nil || d.Intent == nil || d.Intent.ID != long.ID {
		t.Fatalf("Receive: %+v, %v", d, err)
	}
}

func TestRepublishedIntentsAndResultsAreDropped(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ins := intents("dup", 10)
	if got := add(t, q, ins...); got != 10 {
		t.Fatalf("first Add stored %d, want 10", got)
	}
	if got := add(t, q, ins...); got != 0 {
		t.Fatalf("a republished batch stored %d intents, want 0 (dropped inside the duplicate window)", got)
	}
	if got := streamMsgs(t, js, q.Name()); got != 10 {
		t.Fatalf("the intents stream holds %d messages, want 10", got)
	}
	sink := q.Sink()
	for range 2 {
		for _, in := range ins {
			if err := sink.Publish(context.Background(), intent.Result{IntentID: in.ID, Status: intent.StatusOK, Payload: []byte(`{"n":1}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A different answer for an id already answered is dropped too: the
	// first result stays.
	if err := sink.Publish(context.Background(), intent.Result{IntentID: ins[0].ID, Status: intent.StatusError}); err != nil {
		t.Fatal(err)
	}
	rs, err := q.Results(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 10 {
		t.Fatalf("the results stream holds %d results, want 10", len(rs))
	}
	if r, _, _ := q.Result(context.Background(), ins[0].ID); r.Status != intent.StatusOK {
		t.Fatalf("the first result was replaced: %v", r.Status)
	}
}

func TestDedupPastTheWindowNeedsDedupPerSubject(t *testing.T) {
	t.Parallel()
	window := time.Second
	windowed, js := openQueue(t, cluster, natsstream.WithDuplicateWindow(window))
	perSubject, _ := openQueue(t, cluster, natsstream.WithDuplicateWindow(window), natsstream.WithDedupPerSubject())
	in := effectortest.Intent("window", 1, 0)
	for _, q := range []*natsstream.Queue{windowed, perSubject} {
		if got := add(t, q, in); got != 1 {
			t.Fatalf("%s: first Add stored %d", q.Name(), got)
		}
	}
	time.Sleep(window + window/2)
	if got := add(t, windowed, in); got != 1 {
		t.Fatalf("past the window, the windowed queue stored %d copies, want 1: the window is what bounds its dedup", got)
	}
	if got := add(t, perSubject, in); got != 0 {
		t.Fatalf("past the window, the per-subject queue stored %d copies, want 0", got)
	}
	if got := streamMsgs(t, js, perSubject.Name()); got != 1 {
		t.Fatalf("the per-subject stream holds %d messages, want 1", got)
	}
}

func TestReadingResultsLeavesNoConsumer(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	ins := intents("read", 300) // more than one fetch of a read
	sink := q.Sink()
	var wg sync.WaitGroup
	errs := make(chan error, len(ins))
	slots := make(chan struct{}, 16)
	for _, in := range ins {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs <- sink.Publish(context.Background(), intent.Result{IntentID: in.ID, Status: intent.StatusOK})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		rs, err := q.Results(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != len(ins) {
			t.Fatalf("Results read %d, want %d", len(rs), len(ins))
		}
		if _, err := q.DeadLetters(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := q.Result(context.Background(), ins[0].ID); err != nil {
			t.Fatal(err)
		}
	}
	// Fifteen reads of each stream went by. A read deletes its consumer;
	// where the server created it only after the client gave the create
	// up, the delete finds nothing and the consumer is left to the server's
	// inactivity cleanup (ReaderIdle). So at most one may be left at once,
	// under load, and none once ReaderIdle has passed: a reader that left
	// its consumers (the bug this guards) leaves fifteen, for good.
	for _, st := range []string{q.Name() + "_results", q.Name() + "_dead"} {
		if n := consumerCount(t, js, st); n > 1 {
			t.Errorf("stream %s has %d consumers left after reading it", st, n)
		}
		deadline := time.Now().Add(natsstream.ReaderIdle + 10*time.Second)
		for consumerCount(t, js, st) != 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if n := consumerCount(t, js, st); n != 0 {
			t.Errorf("stream %s still has %d consumers %v after reading it", st, n, natsstream.ReaderIdle+10*time.Second)
		}
	}
}

// FuzzToken holds Token to what subjects and message ids need: a short
// token with none of the bytes a subject or a header would take apart, and
// one id per token.
func FuzzToken(f *testing.F) {
	for _, s := range []string{"", "a", " a", "a ", "a.b", "~", strings.Repeat("z", 64), strings.Repeat("z", 65), "\x00", "é"} {
		f.Add(s, s+" ")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ta, tb := natsstream.Token(a), natsstream.Token(b)
		if a != b && ta == tb {
			t.Fatalf("Token(%q) = Token(%q) = %q", a, b, ta)
		}
		if len(ta) == 0 || len(ta) > 65 || strings.ContainsAny(ta, " \t\r\n.*>\x00") || !utf8.ValidString(ta) {
			t.Fatalf("Token(%q) = %q: not a short, safe token", a, ta)
		}
	})
}
