package natsstream_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// receiveOne receives one delivery from src, failing the test after a
// minute.
func receiveOne(t *testing.T, src *natsstream.Source) effector.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := src.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// An entry as large as the server takes (its max_payload, 1 MiB) that is no
// intent must still reach the dead letters: its dead letter holds the
// entry's bytes (in base64, a third larger) and the reason, more than the
// server takes in one message. Were it refused, Serve would retry the dead
// letter for ever, the source would keep the entry in progress, and the
// entry would hold a worker and never be dead-lettered or delivered again.
func TestAnEntryAsLargeAsTheServerTakesReachesTheDeadLetters(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	max := int(js.Conn().MaxPayload())
	junk := bytes.Repeat([]byte("x"), max-1024) // room for the subject and headers
	if _, err := js.Publish(context.Background(), "toolreg."+q.Name()+".intents.junk", junk); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, q)
	d := receiveOne(t, src)
	if d.Err == nil {
		t.Fatal("a junk entry decoded as an intent")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := q.EntryDeadLetter(ctx, d); err != nil {
		t.Fatalf("dead-lettering a %d-byte entry: %v", len(junk), err)
	}
	dls, err := q.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 {
		t.Fatalf("%d dead letters, want 1", len(dls))
	}
	dl := dls[0]
	if !strings.Contains(dl.Reason, d.Err.Error()) || dl.Pos != d.Pos || dl.EntrySize != len(junk) ||
		len(dl.Entry) == 0 || !bytes.HasPrefix(junk, dl.Entry) {
		t.Fatalf("dead letter: reason %q, pos %q, entry size %d, %d bytes of entry kept; want the decoding error, %q, %d and a prefix of the entry",
			dl.Reason, dl.Pos, dl.EntrySize, len(dl.Entry), d.Pos, len(junk))
	}
}

// So must an intent as large as the server takes that the effector refuses
// or gives up (Queue.DeadLetter): Serve would otherwise retry its
// processing for ever.
func TestAnIntentAsLargeAsTheServerTakesReachesTheDeadLetters(t *testing.T) {
	t.Parallel()
	q, js := openQueue(t, cluster)
	in := effectortest.Intent("large", 1, 0)
	in.ArgsJSON = []byte(`{"key":"` + strings.Repeat("x", int(js.Conn().MaxPayload())-2048) + `"}`)
	if n := add(t, q, in); n != 1 {
		t.Fatalf("Add stored %d intents, want 1", n)
	}
	whole, err := in.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := q.DeadLetter(ctx, in, errors.New("refused for the test")); err != nil {
		t.Fatalf("dead-lettering a %d-byte intent: %v", len(whole), err)
	}
	dls, err := q.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || dls[0].IntentID != in.ID || dls[0].Reason != "refused for the test" ||
		dls[0].EntrySize != len(whole) || len(dls[0].Entry) == 0 || !bytes.HasPrefix(whole, dls[0].Entry) {
		t.Fatalf("dead letters: %d; want one for %q with its reason, size %d and a prefix of its entry", len(dls), in.ID, len(whole))
	}
}

// An intent the source fetched but never handed out (by ReceiveBatch, the
// batch path) is not a failed
// attempt: when it comes back (the source closed, or its process crashed
// and AckWait passed), its delivery count must not push it past
// WithMaxAttempts, or the effector gives it up with an ERROR result without
// ever running it. A process crash-looping on one poison intent would so
// take with it every intent that sat fetched beside it.
func TestAnIntentFetchedButNeverHandedOutIsNotGivenUp(t *testing.T) {
	t.Parallel()
	q, _ := openQueue(t, cluster)
	ins := intents("fetched", 2)
	add(t, q, ins...)
	ctx := context.Background()
	first := newSource(t, q)
	got, err := first.ReceiveBatch(ctx, 1, nil)
	if err != nil || len(got) != 1 {
		t.Fatalf("ReceiveBatch(1): %d deliveries, %v", len(got), err)
	}
	handed := got[0]
	if err := first.Close(ctx); err != nil { // its process stopped
		t.Fatal(err)
	}
	other := ins[0]
	if handed.Intent.ID == other.ID {
		other = ins[1]
	}
	e, calls := effectortest.Effector(t, effector.NewMemoryStore(), effector.WithMaxAttempts(1), effector.WithDeadLetter(q.DeadLetter))
	s := serve(newSource(t, q), q.Sink(), e)
	waitFor(t, "both results", func() bool {
		_, ok1, _ := q.Result(ctx, ins[0].ID)
		_, ok2, _ := q.Result(ctx, ins[1].ID)
		return ok1 && ok2
	})
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	r, _, _ := q.Result(ctx, other.ID)
	if r.Status != intent.StatusOK || calls.Of(other.ID) != 1 {
		t.Fatalf("the intent never handed out before: result %v %q, %d runs; want OK and one run", r.Status, r.ErrorMessage, calls.Of(other.ID))
	}
}
