package pgstore

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/pgtest"
)

func TestInspectorStatesAndResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openForTest(t, migrated(t, pgtest.Start(t)))
	call := effector.NewCall("refund", []byte(`{}`))
	claim := func(id string, lease time.Duration) effector.Claim {
		c, err := s.Claim(ctx, id, call, lease)
		if err != nil || c.State != effector.Claimed {
			t.Fatalf("Claim(%s) = %+v, %v", id, c, err)
		}
		return c
	}
	done := claim("a-done", time.Minute)
	if err := s.Complete(ctx, "a-done", done.Token, []byte("result-a"), time.Hour); err != nil {
		t.Fatal(err)
	}
	claim("b-lapsed", 20*time.Millisecond)
	claim("c-leased", time.Hour)
	time.Sleep(100 * time.Millisecond)

	got := map[string]effector.Record{}
	if err := s.Records(ctx, func(r effector.Record) error { got[r.ID] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	want := map[string]effector.RecordState{"a-done": effector.RecordDone, "b-lapsed": effector.RecordUnknown, "c-leased": effector.RecordInFlight}
	if len(got) != len(want) {
		t.Errorf("listed %d records, want %d", len(got), len(want))
	}
	for id, st := range want {
		if got[id].State != st || got[id].Tool != "refund" {
			t.Errorf("%s: %+v, want state %v tool refund", id, got[id], st)
		}
	}
	for _, id := range []string{"a-done", "c-leased", "missing"} {
		if err := s.Resolve(ctx, id, []byte("operator"), time.Hour); !errors.Is(err, effector.ErrNotResolvable) {
			t.Errorf("Resolve(%s) = %v, want ErrNotResolvable", id, err)
		}
	}
	if err := s.Resolve(ctx, "b-lapsed", []byte("operator"), time.Hour); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, "b-lapsed", call, time.Minute)
	if err != nil || c.State != effector.Done || string(c.Result) != "operator" {
		t.Fatalf("Claim after Resolve = %+v, %v; want Done with the operator's result", c, err)
	}
}

// TestPurgeOlderThanKeepsWhatExpiredRecently: Purge deletes a result only
// once its time-to-live has ended, and with an age only one that ended at
// least that long ago; a live result and a claim within the attempt memory
// stay.
func TestPurgeOlderThanKeepsWhatExpiredRecently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openForTest(t, migrated(t, pgtest.Start(t)))
	call := effector.NewCall("refund", []byte(`{}`))
	complete := func(id string, ttl time.Duration) {
		c, err := s.Claim(ctx, id, call, time.Minute)
		if err != nil || c.State != effector.Claimed {
			t.Fatalf("Claim(%s) = %+v, %v", id, c, err)
		}
		if err := s.Complete(ctx, id, c.Token, []byte("r"), ttl); err != nil {
			t.Fatal(err)
		}
	}
	complete("expired", time.Millisecond)
	complete("live", time.Hour)
	if _, err := s.Claim(ctx, "lapsed", call, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if n, err := s.Purge(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("Purge(older than 1h) = %d, %v; want nothing: the result expired 0.1s ago", n, err)
	}
	if _, err := s.Purge(ctx, -time.Second); err == nil {
		t.Error("Purge accepted a negative age")
	}
	if n, err := s.Purge(ctx, 0); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v; want the one expired result", n, err)
	}
	for _, id := range []string{"live", "lapsed"} {
		if _, ok, err := s.Record(ctx, id); err != nil || !ok {
			t.Errorf("Purge deleted %s (%v)", id, err)
		}
	}
}

// TestPurgeProgressReportsEachBatch: PurgeProgress hands the running total
// to its progress function after every batch, for a terminal to show.
func TestPurgeProgressReportsEachBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openForTest(t, migrated(t, pgtest.Start(t)), WithSweepBatch(2), WithSweepInterval(0))
	call := effector.NewCall("refund", []byte(`{}`))
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		c, err := s.Claim(ctx, id, call, time.Minute)
		if err != nil || c.State != effector.Claimed {
			t.Fatalf("Claim(%s) = %+v, %v", id, c, err)
		}
		if err := s.Complete(ctx, id, c.Token, []byte("r"), time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // the results expire
	var totals []int64
	n, err := s.PurgeProgress(ctx, 0, func(deleted int64) { totals = append(totals, deleted) })
	if err != nil || n != 5 {
		t.Fatalf("PurgeProgress = %d, %v; want the 5 expired results", n, err)
	}
	if want := []int64{2, 4, 5}; !slices.Equal(totals, want) {
		t.Errorf("progress got %v, want %v: the running total after each batch of 2", totals, want)
	}
}
