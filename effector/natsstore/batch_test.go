package natsstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/storetest"
)

// A value this store did not write, under the key of one item of a batch,
// fails that item with an error saying so, in a claim batch and in a
// completion batch whose claim it replaced; the other items are answered
// as if it were not there.
func TestABatchOverAForeignValue(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	ctx := ctxT(t)
	js := jsOf(t, cluster)
	kv, err := js.KeyValue(ctx, s.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, keyOf("batch-foreign"), []byte("hello")); err != nil {
		t.Fatal(err)
	}
	reqs := []effector.ClaimRequest{
		{IntentID: "batch-foreign-a", Call: call, Lease: time.Minute},
		{IntentID: "batch-foreign", Call: call, Lease: time.Minute},
		{IntentID: "batch-foreign-b", Call: call, Lease: time.Minute},
	}
	out := make([]effector.ClaimOutcome, len(reqs))
	s.ClaimBatch(ctx, reqs, out)
	if out[1].Err == nil || !strings.Contains(out[1].Err.Error(), "did not write") {
		t.Fatalf("a batch's claim over a foreign value: %+v, %v; want a refusal saying the store did not write it", out[1].Claim, out[1].Err)
	}
	for _, i := range []int{0, 2} {
		if out[i].Err != nil || out[i].Claim.State != effector.Claimed {
			t.Fatalf("item %d beside the foreign value: %+v, %v; want Claimed", i, out[i].Claim, out[i].Err)
		}
	}

	// The claim of item 0 is overwritten by another tool: its owner's
	// completion fails, and reports what is there; item 2's lands.
	if _, err := kv.Put(ctx, keyOf("batch-foreign-a"), []byte("hello")); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 2)
	s.CompleteBatch(ctx, []effector.Completion{
		{IntentID: "batch-foreign-a", Token: out[0].Claim.Token, Result: []byte("a"), TTL: time.Minute},
		{IntentID: "batch-foreign-b", Token: out[2].Claim.Token, Result: []byte("b"), TTL: time.Minute},
	}, errs)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "did not write") {
		t.Fatalf("a batch's completion over a foreign value: %v, want a refusal saying the store did not write it", errs[0])
	}
	if errs[1] != nil {
		t.Fatalf("the completion beside the foreign value: %v", errs[1])
	}
	if c := storetest.WantState(t, s, "batch-foreign-b", effector.Done); string(c.Result) != "b" {
		t.Fatalf("result %q, want %q", c.Result, "b")
	}
	if e, err := kv.Get(ctx, keyOf("batch-foreign-a")); err != nil || string(e.Value()) != "hello" {
		t.Fatalf("the foreign value after the completion batch: %v, want it untouched", err)
	}
}

// failJS is a JetStream on the real cluster that refuses, for good, every
// write to the subjects in fail: the server's refusal of a write that
// sending again would not change (out of storage, say).
type failJS struct {
	jetstream.JetStream
	mu   sync.Mutex
	fail map[string]bool
}

var errRefused = errors.New("nats: injected refusal: insufficient storage")

func (f *failJS) failing(subject string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fail[subject]
}

func (f *failJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if f.failing(m.Subject) {
		return nil, errRefused
	}
	return f.JetStream.PublishMsg(ctx, m, opts...)
}

// PublishMsgAsync sends nothing to a failing subject, and answers with the
// refusal as the server's answer would come: on the future.
func (f *failJS) PublishMsgAsync(m *nats.Msg, opts ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if f.failing(m.Subject) {
		errc := make(chan error, 1)
		errc <- errRefused
		return refusedFuture{m, errc}, nil
	}
	return f.JetStream.PublishMsgAsync(m, opts...)
}

// refusedFuture is the future of a write the server refused.
type refusedFuture struct {
	m    *nats.Msg
	errc chan error
}

func (r refusedFuture) Ok() <-chan *jetstream.PubAck { return nil }
func (r refusedFuture) Err() <-chan error            { return r.errc }
func (r refusedFuture) Msg() *nats.Msg               { return r.m }

// A completion batch whose writes fail for some items in its middle
// answers those items with the failure and the others nil: each nil is a
// result the store holds, each failure leaves the owner's claim as it was,
// so the owner completes it once writes pass again.
func TestACompletionBatchWhoseWritesFailForSome(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	h := open(t, cluster) // reads what the store holds, its writes never refused
	bucket := h.Bucket()
	fj := &failJS{JetStream: jsOf(t, cluster), fail: map[string]bool{}}
	s, err := natsstore.Open(ctx, fj, bucket)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	reqs := make([]effector.ClaimRequest, n)
	for i := range reqs {
		reqs[i] = effector.ClaimRequest{IntentID: fmt.Sprint("failing-", i), Call: call, Lease: time.Minute}
	}
	out := make([]effector.ClaimOutcome, n)
	s.ClaimBatch(ctx, reqs, out)
	comps := make([]effector.Completion, n)
	for i, o := range out {
		if o.Err != nil || o.Claim.State != effector.Claimed {
			t.Fatalf("claim %d: %+v, %v", i, o.Claim, o.Err)
		}
		comps[i] = effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, Result: []byte(fmt.Sprint("r", i)), TTL: time.Minute}
	}
	failed := func(i int) bool { return i >= 3 && i < 7 }
	fj.mu.Lock()
	for i := range n {
		if failed(i) {
			fj.fail["$KV."+bucket+"."+keyOf(reqs[i].IntentID)] = true
		}
	}
	fj.mu.Unlock()
	errs := make([]error, n)
	s.CompleteBatch(ctx, comps, errs)
	for i, err := range errs {
		switch {
		case failed(i) && !errors.Is(err, errRefused):
			t.Fatalf("completion %d, whose write was refused: %v, want the refusal", i, err)
		case failed(i) && !strings.Contains(err.Error(), reqs[i].IntentID):
			t.Fatalf("completion %d's error %q does not name its intent", i, err)
		case !failed(i) && err != nil:
			t.Fatalf("completion %d beside the refused ones: %v", i, err)
		}
		c := storetest.WantState(t, h, reqs[i].IntentID, map[bool]effector.ClaimState{true: effector.InFlight, false: effector.Done}[failed(i)])
		if !failed(i) && string(c.Result) != string(comps[i].Result) {
			t.Fatalf("completion %d: the store holds %q, want %q", i, c.Result, comps[i].Result)
		}
	}
	fj.mu.Lock()
	clear(fj.fail)
	fj.mu.Unlock()
	for i := range n {
		if !failed(i) {
			continue
		}
		if err := s.Complete(ctx, comps[i].IntentID, comps[i].Token, comps[i].Result, time.Minute); err != nil {
			t.Fatalf("the owner's completion %d once writes pass: %v", i, err)
		}
		if c := storetest.WantState(t, h, reqs[i].IntentID, effector.Done); string(c.Result) != string(comps[i].Result) {
			t.Fatalf("completion %d: the store holds %q, want %q", i, c.Result, comps[i].Result)
		}
	}
}

// A claim batch whose creates are refused for some items in its middle
// answers those items with the refusal and the others Claimed: the store
// holds a claim for each item answered Claimed, and none for the others.
func TestAClaimBatchWhoseWritesFailForSome(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	h := open(t, cluster)
	fj := &failJS{JetStream: jsOf(t, cluster), fail: map[string]bool{}}
	s, err := natsstore.Open(ctx, fj, h.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	failed := func(i int) bool { return i >= 3 && i < 7 }
	reqs := make([]effector.ClaimRequest, n)
	for i := range reqs {
		reqs[i] = effector.ClaimRequest{IntentID: fmt.Sprint("refused-", i), Call: call, Lease: time.Minute}
		if failed(i) {
			fj.fail["$KV."+h.Bucket()+"."+keyOf(reqs[i].IntentID)] = true
		}
	}
	out := make([]effector.ClaimOutcome, n)
	s.ClaimBatch(ctx, reqs, out)
	for i, o := range out {
		switch {
		case failed(i) && !errors.Is(o.Err, errRefused):
			t.Fatalf("claim %d, whose create was refused: %+v, %v; want the refusal", i, o.Claim, o.Err)
		case failed(i):
			storetest.WantState(t, h, reqs[i].IntentID, effector.Claimed)
		case o.Err != nil || o.Claim.State != effector.Claimed:
			t.Fatalf("claim %d beside the refused ones: %+v, %v; want Claimed", i, o.Claim, o.Err)
		default:
			storetest.WantState(t, h, reqs[i].IntentID, effector.InFlight)
		}
	}
}

// Two completions of one claim with one token and different results, at
// once (the first from a batch, which holds the claim's revision, the other
// reading it): at most one lands, and neither answers nil unless the store
// holds its result.
func TestCompletionsRacingWithOneToken(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	ctx := ctxT(t)
	for round := range 30 {
		id := fmt.Sprint("racing-", round)
		tok := storetest.MustClaim(t, s, id, time.Minute)
		results := [][]byte{[]byte("batch"), []byte("single")}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		wg.Go(func() {
			s.CompleteBatch(ctx, []effector.Completion{{IntentID: id, Token: tok, Result: results[0], TTL: time.Minute}}, errs[:1])
		})
		wg.Go(func() { errs[1] = s.Complete(ctx, id, tok, results[1], time.Minute) })
		wg.Wait()
		c := storetest.WantState(t, s, id, effector.Done)
		for i, err := range errs {
			if err == nil && string(c.Result) != string(results[i]) {
				t.Fatalf("round %d: completion %q answered nil, but the store holds %q (the other answered %v)", round, results[i], c.Result, errs[1-i])
			}
		}
	}
}
