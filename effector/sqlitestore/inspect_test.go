package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

func TestInspectorStatesResolveAndPurge(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := openForTest(t, filepath.Join(t.TempDir(), "effects.db"), WithClock(clock), WithSweepInterval(0))
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
	claim("b-lapsed", time.Second)
	claim("c-leased", time.Hour)
	advance(2 * time.Second)

	got := map[string]effector.RecordState{}
	if err := s.Records(ctx, func(r effector.Record) error {
		got[r.ID] = r.State
		if r.Tool != "refund" {
			t.Errorf("%s: tool %q", r.ID, r.Tool)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]effector.RecordState{"a-done": effector.RecordDone, "b-lapsed": effector.RecordUnknown, "c-leased": effector.RecordInFlight}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("%s: state %v, want %v", id, got[id], st)
		}
	}

	for _, id := range []string{"a-done", "c-leased", "missing"} {
		if err := s.Resolve(ctx, id, []byte("operator"), time.Hour); !errors.Is(err, effector.ErrNotResolvable) {
			t.Errorf("Resolve(%s) = %v, want ErrNotResolvable", id, err)
		}
	}
	if r, _, _ := s.Record(ctx, "a-done"); string(r.Result) != "result-a" {
		t.Errorf("a refused Resolve changed the done record: %q", r.Result)
	}
	if err := s.Resolve(ctx, "b-lapsed", []byte("operator"), time.Hour); err != nil {
		t.Fatal(err)
	}
	// The next delivery is answered with the operator's result; nothing runs again.
	c, err := s.Claim(ctx, "b-lapsed", call, time.Minute)
	if err != nil || c.State != effector.Done || string(c.Result) != "operator" {
		t.Fatalf("Claim after Resolve = %+v, %v; want Done with the operator's result", c, err)
	}

	advance(2 * time.Hour) // the results expire
	// -older-than: both results expired under an hour ago, so neither goes.
	if n, err := s.Purge(ctx, 3*time.Hour); err != nil || n != 0 {
		t.Fatalf("Purge(older than 3h) = %d, %v; want nothing: the results expired under an hour ago", n, err)
	}
	if _, err := s.Purge(ctx, -time.Second); err == nil {
		t.Error("Purge accepted a negative age")
	}
	n, err := s.Purge(ctx, 0)
	if err != nil || n != 2 {
		t.Fatalf("Purge = %d, %v; want the 2 expired results", n, err)
	}
	if _, ok, _ := s.Record(ctx, "c-leased"); !ok {
		t.Error("Purge deleted a claim within the attempt memory")
	}
}

// TestInspectorRunsBesideAWriter lists, and purges, a file another Store
// writes to at the same time: the writer, with a short busy timeout, never
// fails on the lock, so inspection holds it only briefly.
func TestInspectorRunsBesideAWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "effects.db")
	writer := openForTest(t, path, WithBusyTimeout(2*time.Second), WithSweepInterval(0))
	inspector := openForTest(t, path, WithSweepInterval(0))
	call := effector.NewCall("refund", []byte(`{}`))
	for i := range 1200 { // more than two pages
		id := fmt.Sprintf("seed-%04d", i)
		c, err := writer.Claim(ctx, id, call, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := writer.Complete(ctx, id, c.Token, []byte("r"), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	werr := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				werr <- nil
				return
			default:
			}
			id := fmt.Sprintf("live-%05d", i)
			c, err := writer.Claim(ctx, id, call, time.Minute)
			if err == nil {
				err = writer.Complete(ctx, id, c.Token, []byte("r"), time.Hour)
			}
			if err != nil {
				werr <- err
				return
			}
		}
	}()
	for range 5 {
		n := 0
		if err := inspector.Records(ctx, func(effector.Record) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n < 1200 {
			t.Errorf("listed %d records, want at least the 1200 seeded", n)
		}
		if _, err := inspector.Purge(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-werr; err != nil {
		t.Fatalf("the writer failed while the store was inspected: %v", err)
	}
}
