package effector_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// stagedRecorder is a StagedSink outside the package: it records what was
// staged, waited for and published, and fails the first wait of one intent.
type stagedRecorder struct {
	failID string

	mu        sync.Mutex
	staged    []string
	waited    map[string]int // successful waits
	published map[string]int // Publish calls
	failed    bool
}

func (s *stagedRecorder) Publish(ctx context.Context, res intent.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.published[res.IntentID]++
	return nil
}

func (s *stagedRecorder) Stage(ctx context.Context, res intent.Result) (func() error, error) {
	s.mu.Lock()
	s.staged = append(s.staged, res.IntentID)
	s.mu.Unlock()
	return func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if res.IntentID == s.failID && !s.failed {
			s.failed = true
			return errors.New("no answer from the server")
		}
		s.waited[res.IntentID]++
		return nil
	}, nil
}

var _ effector.StagedSink = (*stagedRecorder)(nil)

// Serve publishes through a StagedSink's Stage, one stage per result, and
// answers an intent only once its wait returned nil: a wait that fails has
// its result published again with Publish before the intent is answered.
func TestServeStagesResultsOnAStagedSinkAndRepublishesAFailedWait(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var all []*intent.Intent
	var input strings.Builder
	for i := range 40 {
		in := effectortest.Intent("staged", 3, uint32(i))
		all = append(all, in)
		input.WriteString(effectortest.Line(t, in))
	}
	intents := filepath.Join(dir, "intents.jsonl")
	effectortest.WriteFile(t, intents, input.String())
	src, err := jsonl.OpenFile(intents)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	e, calls := effectortest.Effector(t, effector.NewMemoryStore())
	sink := &stagedRecorder{failID: all[7].ID, waited: map[string]int{}, published: map[string]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := effector.Serve(ctx, src, sink, e, effector.WithWorkers(4),
		effector.WithServeLogger(slog.New(slog.DiscardHandler)), effector.WithRetryBackoff(time.Millisecond, time.Millisecond)); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if len(sink.staged) != len(all) {
		t.Fatalf("Serve staged %d results, want one per intent (%d): it did not publish through Stage", len(sink.staged), len(all))
	}
	for i, in := range all {
		if n := calls.Of(in.ID); n != 1 {
			t.Errorf("intent %d ran %d times, want once", i, n)
		}
		want := map[bool]int{true: 0, false: 1}[in.ID == sink.failID]
		if sink.waited[in.ID] != want {
			t.Errorf("intent %d: %d successful waits, want %d", i, sink.waited[in.ID], want)
		}
		if sink.published[in.ID] != 1-want {
			t.Errorf("intent %d: published %d times with Publish, want %d (only the one whose wait failed)", i, sink.published[in.ID], 1-want)
		}
	}
}
