package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

// The batch forms of the contract: ClaimBatch, CompleteBatch and
// ReleaseBatch answer each item as the single call would, one item's error
// is its own, an intent id twice in one batch is claimed once (by its
// first occurrence), and an item reported claimed or completed is durable
// even when the batch's context ends mid-way.

// largeBatch is more items than twice any of this repository's stores
// takes in one statement, pipeline or transaction by default (128: the
// stores' docs say theirs), so a store must split it, not fail it.
const largeBatch = 300

// bigResult is more than the Redis store sends in a pipeline (1MiB), so the
// batch that carries it must send it on its own.
const bigResult = 1<<20 + 1

func claimBatch(t *testing.T, s effector.DedupStore, reqs []effector.ClaimRequest) []effector.ClaimOutcome {
	t.Helper()
	return claimBatchCtx(context.Background(), s, reqs)
}

func claimBatchCtx(ctx context.Context, s effector.DedupStore, reqs []effector.ClaimRequest) []effector.ClaimOutcome {
	out := make([]effector.ClaimOutcome, len(reqs))
	for i := range out {
		// Garbage a store must overwrite: every item is answered.
		out[i] = effector.ClaimOutcome{Claim: effector.Claim{State: effector.ClaimState(99), Token: "unanswered"}, Err: errUnanswered}
	}
	s.ClaimBatch(ctx, reqs, out)
	return out
}

var errUnanswered = errors.New("storetest: item left unanswered")

func completeBatch(ctx context.Context, s effector.DedupStore, reqs []effector.Completion) []error {
	errs := make([]error, len(reqs))
	for i := range errs {
		errs[i] = errUnanswered
	}
	s.CompleteBatch(ctx, reqs, errs)
	return errs
}

func releaseBatch(s effector.DedupStore, reqs []effector.Release) []error {
	errs := make([]error, len(reqs))
	for i := range errs {
		errs[i] = errUnanswered
	}
	s.ReleaseBatch(context.Background(), reqs, errs)
	return errs
}

func req(id string, call effector.Call, lease time.Duration) effector.ClaimRequest {
	return effector.ClaimRequest{IntentID: id, Call: call, Lease: lease}
}

// wantOutcome fails t unless out answers item i (named what) with state
// and no error, and holds a token exactly when claimed.
func wantOutcome(t *testing.T, what string, out effector.ClaimOutcome, state effector.ClaimState) effector.Claim {
	t.Helper()
	if out.Err != nil {
		t.Fatalf("%s: Err = %v, want %s", what, out.Err, state)
	}
	c := out.Claim
	if c.State != state {
		t.Fatalf("%s = %s (%+v), want %s", what, c.State, c, state)
	}
	if (state == effector.Claimed) != (c.Token != "") {
		t.Fatalf("%s is %s with token %q", what, c.State, c.Token)
	}
	if state != effector.Done && c.Result != nil {
		t.Fatalf("%s is %s but carries a result %q", what, c.State, c.Result)
	}
	return c
}

func wantClaimed(t *testing.T, what string, out effector.ClaimOutcome, attempts int, reclaimed bool) effector.Claim {
	t.Helper()
	c := wantOutcome(t, what, out, effector.Claimed)
	if c.Attempts != attempts || c.Reclaimed != reclaimed {
		t.Fatalf("%s = %+v, want Claimed with Attempts %d, Reclaimed %v", what, c, attempts, reclaimed)
	}
	return c
}

func testBatchMixed(t *testing.T, e *env, id string) {
	s := e.s
	inflight, done, mmDone, mmFlight := id+"-inflight", id+"-done", id+"-mismatch-done", id+"-mismatch-inflight"
	MustClaim(t, s, inflight, long)
	mustComplete(t, s, done, MustClaim(t, s, done, long), result)
	mustComplete(t, s, mmDone, MustClaim(t, s, mmDone, long), result)
	MustClaim(t, s, mmFlight, long)

	if out := claimBatch(t, s, nil); len(out) != 0 {
		t.Fatalf("an empty batch answered %d items", len(out))
	}
	reqs := []effector.ClaimRequest{
		req(id+"-fresh-1", callA, long),
		req(inflight, callA, long),
		req(done, callA, long),
		req(mmDone, callB, long),
		req(id+"-bad-lease", callA, 0),
		req(mmFlight, callB, long),
		req(id+"-fresh-2", callA, long),
	}
	out := claimBatch(t, s, reqs)
	a := wantClaimed(t, "a fresh intent's claim", out[0], 1, false)
	wantOutcome(t, "a claim of an intent in flight", out[1], effector.InFlight)
	if c := wantOutcome(t, "a claim of a done intent", out[2], effector.Done); !bytes.Equal(c.Result, result) {
		t.Fatalf("a claim of a done intent in a batch: result %q, want byte-identical %q", c.Result, result)
	}
	for _, i := range []int{3, 5} {
		c := wantOutcome(t, "a claim by another call of "+reqs[i].IntentID, out[i], effector.Mismatch)
		if c.Recorded != callA {
			t.Fatalf("a mismatch in a batch names %v, want the recorded %v", c.Recorded, callA)
		}
	}
	if out[4].Err == nil {
		t.Fatalf("a claim with a lease of 0 = %+v, want an error of its own", out[4].Claim)
	}
	b := wantClaimed(t, "the fresh intent after the failing item", out[6], 1, false)
	if a.Token == b.Token {
		t.Fatalf("two claims of one batch share the token %q", a.Token)
	}
	// What the batch answered is what the store holds.
	WantState(t, s, id+"-fresh-1", effector.InFlight)
	WantState(t, s, id+"-fresh-2", effector.InFlight)
	wantDone(t, s, done, result)
	if c := claim(t, s, id+"-bad-lease", long); c.State != effector.Claimed || c.Attempts != 1 || c.Reclaimed {
		t.Fatalf("the intent whose item failed = %+v, want never claimed: Claimed, attempt 1", c)
	}
	mustComplete(t, s, id+"-fresh-1", a.Token, []byte("a"))
	mustComplete(t, s, id+"-fresh-2", b.Token, []byte("b"))
}

func testBatchDuplicates(t *testing.T, e *env, id string) {
	s := e.s
	a, b, lapsed := id+"-a", id+"-b", id+"-lapsed"
	MustClaim(t, s, lapsed, short)
	e.pass(wait)
	out := claimBatch(t, s, []effector.ClaimRequest{
		req(a, callA, long),
		req(b, callA, long),
		req(a, callA, long),
		req(a, callB, long),
		req(lapsed, callB, long),
		req(lapsed, callA, long),
		req(lapsed, callA, long),
		req(a, callA, long),
	})
	first := wantClaimed(t, "the first occurrence of an id in a batch", out[0], 1, false)
	tb := wantClaimed(t, "another id between its occurrences", out[1], 1, false)
	wantOutcome(t, "the second occurrence of an id, same call", out[2], effector.InFlight)
	if c := wantOutcome(t, "an occurrence by another call", out[3], effector.Mismatch); c.Recorded != callA {
		t.Fatalf("the occurrence by another call names %v, want %v (the first occurrence's)", c.Recorded, callA)
	}
	if c := wantOutcome(t, "a lapsed claim asked for by another call", out[4], effector.Mismatch); c.Recorded != callA {
		t.Fatalf("the mismatch of the lapsed claim names %v, want %v", c.Recorded, callA)
	}
	lc := wantClaimed(t, "the lapsed claim's call after the mismatch, in the same batch", out[5], 2, true)
	wantOutcome(t, "a third occurrence, after the reclaim", out[6], effector.InFlight)
	wantOutcome(t, "the last occurrence of the first id", out[7], effector.InFlight)

	// Completions of one id in one batch: the first with the owner's token
	// lands, the copy after it finds it done, a stale token owns nothing.
	ctx := context.Background()
	errs := completeBatch(ctx, s, []effector.Completion{
		{IntentID: a, Token: first.Token, Result: []byte("first"), TTL: long},
		{IntentID: b, Token: tb.Token + "-stale", Result: []byte("stale"), TTL: long},
		{IntentID: a, Token: first.Token, Result: []byte("second"), TTL: long},
		{IntentID: b, Token: tb.Token, Result: []byte("b"), TTL: long},
		{IntentID: lapsed, Token: lc.Token, Result: []byte("lapsed"), TTL: long},
	})
	for i, want := range []error{nil, effector.ErrNotOwner, effector.ErrNotOwner, nil, nil} {
		if !errors.Is(errs[i], want) || (want == nil) != (errs[i] == nil) {
			t.Fatalf("completion %d of the batch: %v, want %v", i, errs[i], want)
		}
	}
	wantDone(t, s, a, []byte("first"))
	wantDone(t, s, b, []byte("b"))
	wantDone(t, s, lapsed, []byte("lapsed"))
}

func testBatchReclaimed(t *testing.T, e *env, id string) {
	s := e.s
	once, twice, released := id+"-once", id+"-twice", id+"-released"
	MustClaim(t, s, twice, short)
	e.pass(wait)
	MustClaim(t, s, twice, short)
	MustClaim(t, s, once, short)
	tok := MustClaim(t, s, released, long)
	if err := s.Release(context.Background(), released, tok); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	e.pass(wait)
	out := claimBatch(t, s, []effector.ClaimRequest{
		req(id+"-fresh", callA, long),
		req(twice, callA, long),
		req(once, callA, long),
		req(released, callA, long),
	})
	wantClaimed(t, "a fresh claim", out[0], 1, false)
	wantClaimed(t, "the claim after two leases ran out", out[1], 3, true)
	wantClaimed(t, "the claim after a lease ran out", out[2], 2, true)
	wantClaimed(t, "the claim after a release", out[3], 1, false)
}

func testBatchComplete(t *testing.T, e *env, id string) {
	s := e.s
	ctx := context.Background()
	owned, empty, taken, lapsed, wrong, badTTL := id+"-owned", id+"-empty", id+"-taken", id+"-lapsed", id+"-wrong", id+"-bad-ttl"
	stale := MustClaim(t, s, taken, short)
	lapsedTok := MustClaim(t, s, lapsed, short)
	e.pass(wait)
	next := MustClaim(t, s, taken, long)
	ownedTok := MustClaim(t, s, owned, long)
	emptyTok := MustClaim(t, s, empty, long)
	wrongTok := MustClaim(t, s, wrong, long)
	badTok := MustClaim(t, s, badTTL, long)
	res := bytes.Clone(result)
	reqs := []effector.Completion{
		{IntentID: owned, Token: ownedTok, Result: res, TTL: long},
		{IntentID: taken, Token: stale, Result: []byte("stale"), TTL: long},
		{IntentID: id + "-unknown", Token: "some-token", Result: []byte("x"), TTL: long},
		{IntentID: lapsed, Token: lapsedTok, Result: []byte("late"), TTL: long},
		{IntentID: wrong, Token: wrongTok + "-not-mine", Result: []byte("forged"), TTL: long},
		{IntentID: badTTL, Token: badTok, Result: []byte("x"), TTL: 0},
		{IntentID: empty, Token: emptyTok, Result: nil, TTL: long},
	}
	errs := completeBatch(ctx, s, reqs)
	if errs[0] != nil || errs[6] != nil {
		t.Fatalf("the owners' completions in a batch: %v, %v; want nil", errs[0], errs[6])
	}
	for _, i := range []int{1, 2, 3, 4} {
		wantNotOwner(t, fmt.Sprintf("completion %d (%s) of the batch", i, reqs[i].IntentID), errs[i])
	}
	if errs[5] == nil || errors.Is(errs[5], effector.ErrNotOwner) {
		t.Fatalf("a completion with a time-to-live of 0: %v, want an error of its own", errs[5])
	}
	// The store copied the bytes: the caller may reuse its buffer.
	for i := range res {
		res[i] = 'x'
	}
	wantDone(t, s, owned, result)
	if c := WantState(t, s, empty, effector.Done); len(c.Result) != 0 {
		t.Fatalf("a nil result completed in a batch reads back as %q, want empty", c.Result)
	}
	WantState(t, s, taken, effector.InFlight) // the next owner's claim stands
	mustComplete(t, s, taken, next, []byte("from the next owner"))
	wantDone(t, s, taken, []byte("from the next owner"))
	MustClaim(t, s, id+"-unknown", long)       // nothing was stored for it
	WantState(t, s, wrong, effector.InFlight)  // the forged token changed nothing
	WantState(t, s, badTTL, effector.InFlight) // the failed item changed nothing
	mustComplete(t, s, wrong, wrongTok, result)
	mustComplete(t, s, badTTL, badTok, result)
}

func testBatchRelease(t *testing.T, e *env, id string) {
	s := e.s
	owned, other, done, counted := id+"-owned", id+"-other", id+"-done", id+"-counted"
	ownedTok := MustClaim(t, s, owned, long)
	otherTok := MustClaim(t, s, other, long)
	doneTok := MustClaim(t, s, done, long)
	mustComplete(t, s, done, doneTok, result)
	MustClaim(t, s, counted, short)
	e.pass(wait)
	countedTok := claim(t, s, counted, long).Token
	errs := releaseBatch(s, []effector.Release{
		{IntentID: owned, Token: ownedTok},
		{IntentID: other, Token: otherTok + "-not-mine"},
		{IntentID: done, Token: doneTok},
		{IntentID: id + "-unknown", Token: "some-token"},
		{IntentID: counted, Token: countedTok},
		{IntentID: owned, Token: ownedTok},
	})
	if errs[0] != nil || errs[4] != nil {
		t.Fatalf("the owners' releases in a batch: %v, %v; want nil", errs[0], errs[4])
	}
	for _, i := range []int{1, 2, 3, 5} {
		wantNotOwner(t, fmt.Sprintf("release %d of the batch", i), errs[i])
	}
	if c := claim(t, s, owned, long); c.State != effector.Claimed || c.Attempts != 1 || c.Reclaimed {
		t.Fatalf("the claim after a batch release = %+v, want Claimed, attempt 1", c)
	}
	WantState(t, s, other, effector.InFlight)
	wantDone(t, s, done, result)
	if c := claim(t, s, counted, long); c.State != effector.Claimed || c.Attempts != 2 || c.Reclaimed {
		t.Fatalf("the claim after releasing a reclaimed intent = %+v, want Claimed, Attempts 2 (the lapsed one counted), not Reclaimed", c)
	}
}

// testBatchLarge claims, completes and reads back more intents in one
// batch of each than any store takes in one statement or pipeline, with a
// result over the Redis store's pipeline limit among them, byte for byte.
func testBatchLarge(t *testing.T, e *env, id string) {
	s := e.s
	ctx := context.Background()
	reqs := make([]effector.ClaimRequest, largeBatch)
	for i := range reqs {
		reqs[i] = req(fmt.Sprintf("%s-%d", id, i), callA, long)
	}
	out := claimBatch(t, s, reqs)
	tokens := map[string]int{}
	comps := make([]effector.Completion, len(reqs))
	for i, o := range out {
		c := wantClaimed(t, fmt.Sprintf("item %d of %d", i, len(reqs)), o, 1, false)
		if j, ok := tokens[c.Token]; ok {
			t.Fatalf("items %d and %d got the same token %q", j, i, c.Token)
		}
		tokens[c.Token] = i
		comps[i] = effector.Completion{IntentID: reqs[i].IntentID, Token: c.Token, Result: resultOf(i), TTL: long}
	}
	errs := completeBatch(ctx, s, comps)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("completion %d of %d: %v", i, len(comps), err)
		}
	}
	out = claimBatch(t, s, reqs)
	for i, o := range out {
		c := wantOutcome(t, fmt.Sprintf("item %d of %d once done", i, len(reqs)), o, effector.Done)
		if !bytes.Equal(c.Result, resultOf(i)) {
			t.Fatalf("item %d: result of %d bytes, want the %d completed, byte for byte", i, len(c.Result), len(resultOf(i)))
		}
	}
}

// resultOf is the result of item i of a large batch: each differs, they hold
// bytes text would mangle, and one is over 1MiB.
func resultOf(i int) []byte {
	r := append(fmt.Appendf(nil, "%d:", i), result...)
	if i == largeBatch/2 {
		r = append(r, bytes.Repeat([]byte{0, 0xff, '\n'}, bigResult/3+1)...)
	}
	return r
}

// testBatchContextEnds cancels batches' contexts before and while they run:
// an item answered claimed holds a claim in the store, one answered
// completed holds its result, byte for byte; nothing is answered that is
// not so. A batch whose context had already ended claims nothing.
func testBatchContextEnds(t *testing.T, e *env, id string) {
	s := e.s
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	reqs := make([]effector.ClaimRequest, 20)
	for i := range reqs {
		reqs[i] = req(fmt.Sprintf("%s-ended-%d", id, i), callA, long)
	}
	for i, o := range claimBatchCtx(ctx, s, reqs) {
		if o.Err == nil {
			t.Fatalf("item %d of a batch whose context had ended = %+v, want an error", i, o.Claim)
		}
	}
	for _, r := range reqs {
		if c := claim(t, s, r.IntentID, long); c.State != effector.Claimed || c.Attempts != 1 || c.Reclaimed {
			t.Fatalf("an intent of a batch whose context had ended = %+v: it was claimed", c)
		}
	}

	const n = 200
	for round, after := range []time.Duration{0, 20 * time.Microsecond, 200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
		reqs := make([]effector.ClaimRequest, n)
		for i := range reqs {
			reqs[i] = req(fmt.Sprintf("%s-%d-%d", id, round, i), callA, long)
		}
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(after, cancel)
		out := claimBatchCtx(ctx, s, reqs)
		timer.Stop()
		cancel()
		var comps []effector.Completion
		for i, o := range out {
			if errors.Is(o.Err, errUnanswered) {
				t.Fatalf("round %d: item %d left unanswered", round, i)
			}
			if o.Err != nil {
				continue
			}
			c := wantClaimed(t, fmt.Sprintf("round %d: item %d", round, i), o, 1, false)
			WantState(t, s, reqs[i].IntentID, effector.InFlight)
			comps = append(comps, effector.Completion{IntentID: reqs[i].IntentID, Token: c.Token, Result: resultOf(i), TTL: long})
		}
		ctx, cancel = context.WithCancel(context.Background())
		timer = time.AfterFunc(after, cancel)
		errs := completeBatch(ctx, s, comps)
		timer.Stop()
		cancel()
		for i, err := range errs {
			if errors.Is(err, errUnanswered) {
				t.Fatalf("round %d: completion %d left unanswered", round, i)
			}
			c := claim(t, s, comps[i].IntentID, long)
			switch {
			case err == nil && (c.State != effector.Done || !bytes.Equal(c.Result, comps[i].Result)):
				t.Fatalf("round %d: completion %d answered nil, but the store holds %s %q", round, i, c.State, truncated(c.Result))
			case err != nil && c.State == effector.Done && !bytes.Equal(c.Result, comps[i].Result):
				t.Fatalf("round %d: completion %d failed (%v), and the store holds another result %q", round, i, err, truncated(c.Result))
			case err != nil && c.State != effector.Done && c.State != effector.InFlight:
				t.Fatalf("round %d: completion %d failed (%v), and the store holds %s", round, i, err, c.State)
			}
		}
	}
}

func truncated(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
