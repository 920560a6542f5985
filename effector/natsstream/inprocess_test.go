package natsstream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/beam-agents/toolreg/intent"
)

// A result published twice at once, under one message id (an intent
// redelivered while its first result is still being stored), may reach the
// stream's leader while the first copy is proposed to the other nodes and
// not yet stored: the server answers that second copy "duplicate message id
// is in process" (10158). That is not a failure: the same result is being
// stored. Every copy's publish, staged or not, must end without an error,
// and the stream must hold one result per intent.
func TestAResultPublishedTwiceAtOnceIsNotAnError(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	sink := q.Sink()
	ctx := context.Background()
	const n = 300
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for i := range n {
		res := intent.Result{IntentID: fmt.Sprintf("twice-%d", i), Status: intent.StatusOK, Payload: []byte(`{"n":1}`)}
		// Two staged copies and one published at once.
		var waits []func() error
		for range 2 {
			w, err := sink.Stage(ctx, res)
			if err != nil {
				t.Fatal(err)
			}
			waits = append(waits, w)
		}
		wg.Go(func() {
			if err := sink.Publish(ctx, res); err != nil {
				fail(err)
			}
		})
		wg.Go(func() {
			for _, w := range waits {
				if err := w(); err != nil {
					fail(err)
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i < 5 {
			t.Errorf("a copy of a result published at once with another: %v", err)
		}
	}
	if len(errs) > 0 {
		t.Fatalf("%d of %d copies failed", len(errs), 3*n)
	}
	rs, err := q.Results(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != n {
		t.Fatalf("the results stream holds %d results, want %d", len(rs), n)
	}
}
