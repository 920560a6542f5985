package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/redistest"
)

func TestInspectorStatesAndResolve(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(redistest.Start(t).Client(t), WithKeyPrefix("inspect:"))
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
	claim("b-lapsed", 5*time.Millisecond)
	claim("c-leased", time.Hour)
	time.Sleep(50 * time.Millisecond)

	got := map[string]effector.Record{}
	if err := s.Records(ctx, func(r effector.Record) error {
		if _, dup := got[r.ID]; dup {
			t.Errorf("%s listed twice", r.ID)
		}
		got[r.ID] = r
		return nil
	}); err != nil {
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
	if string(got["a-done"].Result) != "result-a" {
		t.Errorf("done result %q", got["a-done"].Result)
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
