package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// One call of a pipeline fails on the server (its key holds a list, so the
// script's GET fails with WRONGTYPE): it alone fails, with its own error,
// and every other claim of the same pipeline is claimed.
func TestBatchOneFailingClaimFailsAlone(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	s := New(rdb, WithKeyPrefix("batch:"))
	if err := rdb.RPush(ctx, s.key("poison"), "x").Err(); err != nil {
		t.Fatal(err)
	}
	// Pause writes so the first claim (the leader's) waits on the server
	// while the others queue behind it and go in one pipeline.
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", "300", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	const n = 24
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ok-%d", i)
	}
	ids[n/2] = "poison"
	errs := make([]error, n)
	claims := make([]effector.Claim, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { claims[i], errs[i] = s.Claim(ctx, id, storetest.Call, time.Minute) })
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.group.Queued() < n-1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if q := s.group.Queued(); q < n-1 {
		t.Fatalf("%d claims queued behind the leader, want %d", q, n-1)
	}
	wg.Wait()
	if got := s.group.Batches.Load(); got > 3 {
		t.Errorf("%d claims took %d round trips, want at most 3", n, got)
	}
	for i, id := range ids {
		switch {
		case id == "poison":
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "WRONGTYPE") || !strings.Contains(errs[i].Error(), `"poison"`) {
				t.Errorf("the poisoned claim returned %v, want its own WRONGTYPE error", errs[i])
			}
		case errs[i] != nil:
			t.Errorf("claim %s failed with its pipeline's poisoned claim: %v", id, errs[i])
		case claims[i].State != effector.Claimed:
			t.Errorf("claim %s: %s, want claimed", id, claims[i].State)
		default:
			storetest.WantState(t, New(rdb, WithKeyPrefix("batch:"), WithBatch(1)), id, effector.InFlight)
		}
	}
}
