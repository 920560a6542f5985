package effector_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
	"github.com/beam-agents/toolreg/internal/syncbuf"
)

func serveStore(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("sqlitestore.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestServeJSONLAnswersEveryIntentAndRunsEachOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var unique []*intent.Intent
	for i := range 6 {
		unique = append(unique, effectortest.Intent("secret-customer", 1, uint32(i)))
	}
	var input strings.Builder
	for i, in := range unique {
		input.WriteString(effectortest.Line(t, in))
		if i%2 == 0 { // every other intent is delivered twice
			input.WriteString(effectortest.Line(t, in))
		}
		if i == 1 {
			input.WriteString("{not an intent\n\n")
		}
	}
	intents := filepath.Join(dir, "intents.jsonl")
	effectortest.WriteFile(t, intents, input.String())
	results := filepath.Join(dir, "results.jsonl")

	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	e, calls := effectortest.Effector(t, serveStore(t, filepath.Join(dir, "dedup.db")))
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, results)), e,
		effector.WithWorkers(3), effector.WithServeLogger(logger)); err != nil {
		t.Fatalf("Serve: %v", err)
	}

	got := effectortest.Results(t, results)
	for i, in := range unique {
		want := 1 + (1 - i%2)
		if n := len(got[in.ID]); n != want {
			t.Errorf("intent %d has %d result lines, want one per delivery (%d)", i, n, want)
		}
		if n := calls.Of(in.ID); n != 1 {
			t.Errorf("intent %d ran %d times, want once", i, n)
		}
		for _, r := range got[in.ID] {
			if r.Status != intent.StatusOK || string(r.Payload) != `{"applied":"secret-customer"}` {
				t.Errorf("intent %d: result %s %q, want OK with the tool's payload", i, r.Status, r.Payload)
			}
		}
		if rs := got[in.ID]; len(rs) == 2 && rs[0].CompletedAtMs != rs[1].CompletedAtMs {
			t.Errorf("intent %d: the redelivery's result differs from the first (%d vs %d ms): it was not answered from the store", i, rs[0].CompletedAtMs, rs[1].CompletedAtMs)
		}
	}
	if !strings.Contains(logs.String(), "intents.jsonl:4") {
		t.Errorf("logs do not name the bad line intents.jsonl:4:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "secret-customer") {
		t.Errorf("logs carry tool arguments or payloads:\n%s", logs.String())
	}
	ck, err := os.ReadFile(intents + ".ack")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d %d\n", len(input.String()), strings.Count(input.String(), "\n")); string(ck) != want {
		t.Errorf("checkpoint = %q, want the end of the file %q", ck, want)
	}
}

// failingSink publishes the first n results to the file, then fails, like a
// disk that filled up or a process about to die.
type failingSink struct {
	effector.Sink
	mu     sync.Mutex
	n      int
	failed chan struct{}
	once   sync.Once
}

func (s *failingSink) Publish(ctx context.Context, res intent.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == 0 {
		s.once.Do(func() { close(s.failed) })
		return errors.New("disk full")
	}
	s.n--
	return s.Sink.Publish(ctx, res)
}

// TestServeResumesAfterAFailedPublishWithoutLosingOrRepeating stops Serve while
// a processed intent's result cannot be published: it must stay
// unacknowledged, and the next Serve must answer it from the store, without
// running it again, and go on from there.
func TestServeResumesAfterAFailedPublishWithoutLosingOrRepeating(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var all []*intent.Intent
	var input strings.Builder
	for i := range 8 {
		in := effectortest.Intent("e", 2, uint32(i))
		all = append(all, in)
		input.WriteString(effectortest.Line(t, in))
	}
	intents := filepath.Join(dir, "intents.jsonl")
	effectortest.WriteFile(t, intents, input.String())
	results := filepath.Join(dir, "results.jsonl")
	storePath := filepath.Join(dir, "dedup.db")
	quiet := effector.WithServeLogger(slog.New(slog.DiscardHandler))

	// First run: three results published, the fourth fails; then shutdown.
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	e, calls := effectortest.Effector(t, serveStore(t, storePath))
	sink := &failingSink{Sink: jsonl.NewSink(effectortest.AppendFile(t, results)), n: 3, failed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-sink.failed; cancel() }()
	err = effector.Serve(ctx, src, sink, e, quiet, effector.WithRetryBackoff(time.Millisecond, time.Millisecond))
	src.Close()
	// Serve takes the lines it has read in one batch, and publishes in
	// order: the fourth is unanswered, and so may be every later line the
	// batch took (their results are recorded, not published).
	var ue *effector.UnansweredError
	if !errors.As(err, &ue) || ue.Unanswered < 1 || ue.Unanswered > len(all)-3 {
		t.Fatalf("Serve with a failing sink = %v, want an *UnansweredError with 1 to %d unanswered", err, len(all)-3)
	}
	if got := len(effectortest.Results(t, results)); got != 3 {
		t.Fatalf("first run published %d results, want 3", got)
	}

	// Second run, as a restarted effector: a new store handle on the same file.
	src, err = jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	e2, calls2 := effectortest.Effector(t, serveStore(t, storePath))
	if err := effector.Serve(context.Background(), src, jsonl.NewSink(effectortest.AppendFile(t, results)), e2, quiet); err != nil {
		t.Fatalf("second Serve: %v", err)
	}
	got := effectortest.Results(t, results)
	for i, in := range all {
		if len(got[in.ID]) != 1 {
			t.Errorf("intent %d has %d results, want exactly 1", i, len(got[in.ID]))
		}
		if n := calls.Of(in.ID) + calls2.Of(in.ID); n != 1 {
			t.Errorf("intent %d ran %d times across both runs, want once", i, n)
		}
	}
	if calls.Of(all[3].ID) != 1 {
		t.Errorf("the intent whose publish failed ran %d times in the first run, want 1 (it was processed, then not published)", calls.Of(all[3].ID))
	}
}

func TestServeShutdown(t *testing.T) {
	t.Parallel()
	quiet := effector.WithServeLogger(slog.New(slog.DiscardHandler))

	// startBlocked serves one intent from a pipe whose tool blocks until
	// release is closed, and returns once the tool is running.
	startBlocked := func(t *testing.T, drain time.Duration) (cancel func(), release chan struct{}, out *bytes.Buffer, served chan error, store effector.DedupStore) {
		entered, release := make(chan struct{}), make(chan struct{})
		store = effector.NewMemoryStore()
		e, _ := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{
			func(ctx context.Context) error {
				close(entered)
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			},
		})
		pr, pw := io.Pipe()
		t.Cleanup(func() { pw.Close() })
		go pw.Write([]byte(effectortest.Line(t, effectortest.Intent("e", 3, 0))))
		ctx, cancelCtx := context.WithCancel(context.Background())
		out = new(bytes.Buffer)
		sink := &lockedSink{w: jsonl.NewSink(out)}
		served = make(chan error, 1)
		go func() {
			served <- effector.Serve(ctx, jsonl.NewSource(pr, "pipe"), sink, e, quiet, effector.WithDrainTimeout(drain))
		}()
		<-entered
		return cancelCtx, release, out, served, store
	}

	t.Run("an intent in flight at shutdown finishes and is published, and the open stream is not waited for", func(t *testing.T) {
		t.Parallel()
		cancel, release, out, served, _ := startBlocked(t, 10*time.Second)
		cancel()
		time.Sleep(20 * time.Millisecond)
		close(release)
		if err := <-served; err != nil {
			t.Fatalf("Serve after a graceful shutdown = %v, want nil", err)
		}
		if n := strings.Count(out.String(), "\n"); n != 1 || !strings.Contains(out.String(), `"status":"OK"`) {
			t.Fatalf("published %q, want the one OK result", out)
		}
	})

	t.Run("an intent still running after the drain timeout is left unanswered", func(t *testing.T) {
		t.Parallel()
		cancel, release, out, served, store := startBlocked(t, 30*time.Millisecond)
		cancel()
		err := <-served
		var ue *effector.UnansweredError
		if !errors.As(err, &ue) || ue.Unanswered != 1 || !errors.Is(err, context.Canceled) {
			t.Fatalf("Serve = %v, want an *UnansweredError with 1 unanswered, caused by the cancellation", err)
		}
		if out.Len() != 0 {
			t.Fatalf("published %q after the drain timeout, want nothing", out)
		}
		// The tool still runs, so shutdown must neither record a result it
		// does not know (a false ERROR) nor release the claim (the
		// redelivery would run it again): the claim holds while the function
		// runs, and when it returns its real outcome is recorded.
		in3 := effectortest.Intent("e", 3, 0)
		id := in3.ID
		c, err := store.Claim(context.Background(), id, effector.CallOf(in3), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if c.State != effector.InFlight {
			t.Fatalf("after the drain timeout, with the tool still running, the store holds %v; want it in flight", c.State)
		}
		close(release)
		var res intent.Result
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err = store.Claim(context.Background(), id, effector.CallOf(in3), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if c.State == effector.Done || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if c.State != effector.Done || res.UnmarshalBinary(c.Result) != nil || res.Status != intent.StatusOK {
			t.Fatalf("after the tool returned the store holds %v %q (%+v); want its real outcome, OK", c.State, c.Result, res)
		}
	})
}

// lockedSink lets the test read what was published while Serve may still write.
type lockedSink struct {
	mu sync.Mutex
	w  effector.Sink
}

func (s *lockedSink) Publish(ctx context.Context, r intent.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Publish(ctx, r)
}

type brokenReader struct{ r io.Reader }

func (b brokenReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errors.New("device unplugged")
	}
	return n, err
}

func TestServeStopsOnASourceErrorAfterAnsweringWhatItRead(t *testing.T) {
	t.Parallel()
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	in := effectortest.Intent("e", 4, 0)
	var out bytes.Buffer
	err := effector.Serve(context.Background(),
		jsonl.NewSource(brokenReader{strings.NewReader(effectortest.Line(t, in))}, "dev"),
		jsonl.NewSink(&out), e, effector.WithServeLogger(slog.New(slog.DiscardHandler)))
	if err == nil || !strings.Contains(err.Error(), "reading dev after line 1: device unplugged") {
		t.Fatalf("Serve = %v, want the source's error naming where it happened", err)
	}
	if calls.Of(in.ID) != 1 || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("the intent read before the error ran %d times and published %q, want once and one line", calls.Of(in.ID), out.String())
	}
}

func TestServeRefusesBadOptions(t *testing.T) {
	t.Parallel()
	e, _ := effectortest.Effector(t, effector.NewMemoryStore())
	src := jsonl.NewSource(strings.NewReader(""), "empty")
	sink := jsonl.NewSink(io.Discard)
	tests := []struct {
		name string
		opt  effector.ServeOption
		want string
	}{
		{"zero workers", effector.WithWorkers(0), "WithWorkers(0): want at least 1"},
		{"a negative drain timeout", effector.WithDrainTimeout(-time.Second), "WithDrainTimeout(-1s)"},
		{"a backoff maximum below its minimum", effector.WithRetryBackoff(time.Second, time.Millisecond), "WithRetryBackoff(1s, 1ms): want 0 < min <= max"},
		{"a nil logger", effector.WithServeLogger(nil), "WithServeLogger(nil)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := effector.Serve(context.Background(), src, sink, e, tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Serve = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	t.Run("a nil source, sink or processor is named", func(t *testing.T) {
		for _, c := range []struct {
			src  effector.Source
			sink effector.Sink
			p    effector.Processor
			want string
		}{{nil, sink, e, "nil source"}, {src, nil, e, "nil sink"}, {src, sink, nil, "nil processor"}} {
			if err := effector.Serve(context.Background(), c.src, c.sink, c.p); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Serve = %v, want an error containing %q", err, c.want)
			}
		}
	})
}
