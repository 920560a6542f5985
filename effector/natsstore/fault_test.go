package natsstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/natstest"
)

// Faults on a cluster of the test's own, in turn: the bucket's leader shut
// down between a claim and its completion, the cluster without a quorum
// while a claim waits, and the whole cluster restarted.
func TestFaults(t *testing.T) {
	c := natstest.Start(t)
	// Two stores on connections of their own: two effector hosts.
	a := open(t, c, natsstore.WithAttemptTimeout(time.Second))
	b, err := natsstore.Open(ctxT(t), jsOf(t, c), a.Bucket(), natsstore.WithAttemptTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("an owner whose claim was taken over while the leader failed over cannot complete", func(t *testing.T) {
		ctx := ctxT(t)
		stale := storetest.MustClaim(t, a, "failover", 200*time.Millisecond)
		lead := c.StreamLeader(t, "KV_"+a.Bucket())
		c.StopNode(lead)
		time.Sleep(300 * time.Millisecond)
		cl, err := b.Claim(ctx, "failover", call, time.Minute)
		if err != nil || cl.State != effector.Claimed || !cl.Reclaimed {
			t.Fatalf("claim by the next owner on the new leader = %+v, %v; want Claimed, reclaimed", cl, err)
		}
		if err := a.Complete(ctx, "failover", stale, []byte("stale"), time.Hour); !errors.Is(err, effector.ErrNotOwner) {
			t.Fatalf("the stale owner's completion: %v, want ErrNotOwner", err)
		}
		if err := b.Complete(ctx, "failover", cl.Token, []byte("current"), time.Hour); err != nil {
			t.Fatal(err)
		}
		c.RestartNode(t, lead)
		if got := storetest.WantState(t, a, "failover", effector.Done); string(got.Result) != "current" {
			t.Fatalf("result %q, want the current owner's", got.Result)
		}
	})

	t.Run("a claim made without a quorum waits for one, each request with its own timeout", func(t *testing.T) {
		c.StopNode(0)
		c.StopNode(1)
		type answer struct {
			c   effector.Claim
			err error
		}
		done := make(chan answer, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cl, err := a.Claim(ctx, "no-quorum", call, time.Minute)
			done <- answer{cl, err}
		}()
		// Several attempt timeouts pass with no answer.
		time.Sleep(2500 * time.Millisecond)
		select {
		case got := <-done:
			t.Fatalf("a claim without a quorum answered %+v, %v", got.c, got.err)
		default:
		}
		c.RestartNode(t, 0)
		got := <-done
		if got.err != nil || got.c.State != effector.Claimed {
			t.Fatalf("the claim once a quorum came back = %+v, %v; want Claimed", got.c, got.err)
		}
		c.RestartNode(t, 1)
	})

	t.Run("records survive a restart of the whole cluster", func(t *testing.T) {
		ctx := ctxT(t)
		tok := storetest.MustClaim(t, a, "restart-done", time.Minute)
		if err := a.Complete(ctx, "restart-done", tok, []byte("kept"), time.Hour); err != nil {
			t.Fatal(err)
		}
		storetest.MustClaim(t, a, "restart-flight", time.Hour)
		c.Restart(t)
		if got := storetest.WantState(t, b, "restart-done", effector.Done); string(got.Result) != "kept" {
			t.Fatalf("result after the restart %q", got.Result)
		}
		storetest.WantState(t, b, "restart-flight", effector.InFlight)
	})
}
