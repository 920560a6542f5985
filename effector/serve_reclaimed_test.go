package effector_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// gatedCompletions is a store whose CompleteBatch waits until gate is
// closed (or a second has passed), as a slow batch completion would.
type gatedCompletions struct {
	effector.DedupStore
	gate chan struct{}
}

func (s gatedCompletions) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	select {
	case <-s.gate:
	case <-time.After(time.Second):
	}
	s.DedupStore.CompleteBatch(ctx, reqs, errs)
}

// An intent reclaimed from an owner that stopped mid-way (its effect
// unknown) is completed before its worker starts another tool: were it
// left to the completer's next batch, a crash that recurs (a poison intent
// right behind it, crashing the process each time it runs) would cut it
// between its run and its completion every time, until WithMaxAttempts
// gave a good intent up. With one worker, the tool of the intent after it
// finds its result already in the store, although batch completions are
// held up meanwhile.
func TestServeCompletesAReclaimedIntentBeforeTheNextToolStarts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem := effector.NewMemoryStore()
	ins := intents("reclaimed", 2)
	first, next := ins[0], ins[1]
	// An owner that claimed the first intent and vanished.
	if _, err := mem.Claim(ctx, first.ID, effector.CallOf(first), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)

	store := gatedCompletions{DedupStore: mem, gate: make(chan struct{})}
	var firstState effector.RecordState
	hook := func(ctx context.Context) error {
		info, _ := effector.IntentFrom(ctx)
		if info.ID != next.ID {
			return nil
		}
		rec, _, err := mem.Record(ctx, first.ID)
		if err != nil {
			return err
		}
		firstState = rec.State
		close(store.gate)
		return nil
	}
	e, calls := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{hook})
	sink := newResultSink()
	if err := effector.Serve(ctx, newBatchSource(ins), sink, e, effector.WithWorkers(1), effector.WithServeLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if calls.Of(first.ID) != 1 || calls.Of(next.ID) != 1 {
		t.Fatalf("tool runs: first %d, next %d; want 1 each", calls.Of(first.ID), calls.Of(next.ID))
	}
	if firstState != effector.RecordDone {
		t.Errorf("when the next tool started, the reclaimed intent's record was %v, want it done (completed before the worker took another)", firstState)
	}
	if res := sink.of(first.ID); len(res) != 1 || !strings.HasPrefix(res[0].ErrorMessage, "effect unknown") {
		t.Errorf("the reclaimed intent's results = %+v, want one saying its effect is unknown", res)
	}
}
