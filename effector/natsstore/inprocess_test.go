package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/storetest"
)

// busyJS is a JetStream on the real cluster whose second and third publishes to each
// subject is answered as the stream's leader answers a conditional write
// to a subject whose previous write is still being applied: its ack is
// sent before the subject leaves "in process", so a write sent as soon as
// the ack came (a claim, then its release) may get, under load, "wrong
// last sequence" (10164) though nothing else wrote. The write is not
// stored; the fourth publish goes through.
type busyJS struct {
	jetstream.JetStream
	mu   sync.Mutex
	sent map[string]int
}

func (b *busyJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	b.mu.Lock()
	b.sent[m.Subject]++
	n := b.sent[m.Subject]
	b.mu.Unlock()
	if n == 2 || n == 3 {
		return nil, fmt.Errorf("nats: %w", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence"})
	}
	return b.JetStream.PublishMsg(ctx, m, opts...)
}

// A write refused because the key's previous write is still in process is
// no write by another owner: the owner's release and completion sent right
// after its claim succeed (the server's answer is sent again later).
func TestWriteToASubjectInProcessIsRetried(t *testing.T) {
	t.Parallel()
	bucket := open(t, cluster).Bucket()
	s, err := natsstore.Open(ctxT(t), &busyJS{JetStream: jsOf(t, cluster), sent: map[string]int{}}, bucket)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)

	tok := storetest.MustClaim(t, s, "released", time.Minute)
	if err := s.Release(ctx, "released", tok); err != nil {
		t.Fatalf("Release by the owner right after its claim: %v", err)
	}
	if c := storetest.WantState(t, s, "released", effector.Claimed); c.Attempts != 1 || c.Reclaimed {
		t.Fatalf("the claim after the release = %+v, want attempt 1, not reclaimed", c)
	}

	tok = storetest.MustClaim(t, s, "completed", time.Minute)
	if err := s.Complete(ctx, "completed", tok, []byte("done"), time.Minute); err != nil {
		t.Fatalf("Complete by the owner right after its claim: %v", err)
	}
	if c := storetest.WantState(t, s, "completed", effector.Done); string(c.Result) != "done" {
		t.Fatalf("result %q, want %q", c.Result, "done")
	}
}
