package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

const (
	// long is a lease or time-to-live that never runs out during a test.
	long = time.Minute
	// short is a lease or time-to-live the test waits out by sleeping wait.
	short = 40 * time.Millisecond
	wait  = 120 * time.Millisecond
	// brief is a lease or time-to-live that the test must act within before
	// it runs out (complete the claim, read the result), then waits out: long
	// enough for a loaded CI machine running every package under -race,
	// where short is not.
	brief = time.Second
)

// result holds bytes a text-only store would mangle: NUL, invalid UTF-8, CR LF.
var result = []byte("\x00\x01\xff\xfe result\r\n{\"ok\":true}")

// Run runs the conformance suite against stores made by newStore, which must
// return a fresh, empty store for each subtest (or one where no intent id the
// suite uses exists: each subtest uses ids unique to it). The stores measure
// time with the real clock: the suite waits leases out by sleeping. Use
// RunWithClock for a store that takes a clock.
func Run(t *testing.T, newStore func(t *testing.T) effector.DedupStore) {
	t.Helper()
	run(t, func(t *testing.T) *env {
		return &env{s: newStore(t), pass: time.Sleep}
	})
}

// RunWithClock runs the conformance suite against stores made by newStore,
// which must measure leases and time-to-lives with now. The suite moves now
// forward where Run sleeps, so no subtest depends on how fast the machine is.
func RunWithClock(t *testing.T, newStore func(t *testing.T, now func() time.Time) effector.DedupStore) {
	t.Helper()
	run(t, func(t *testing.T) *env {
		c := &clock{}
		c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
		return &env{s: newStore(t, c.now), pass: c.advance, fake: true}
	})
}

// env is one subtest's store and the way its time passes.
type env struct {
	s    effector.DedupStore
	pass func(time.Duration) // sleeps, or moves the fake clock
	fake bool
}

// clock is a fake clock, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// Call is the call MustClaim, WantState and the suite claim intents for.
var Call = callA

// callA is the call the suite claims intents for; callB is another call.
var (
	callA = effector.NewCall("storetest_tool", []byte(`{"amount":1,"to":"a"}`))
	callB = effector.NewCall("storetest_tool", []byte(`{"amount":2,"to":"a"}`))
)

func run(t *testing.T, newEnv func(t *testing.T) *env) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, e *env, id string)
	}{
		{"a fresh intent is claimed with a token", testClaimFresh},
		{"a second claim while leased is in flight", testClaimWhileLeased},
		{"tokens of different claims differ", testTokensDiffer},
		{"intents are claimed independently", testIndependentIntents},
		{"a claim after the lease ran out succeeds with a new token", testClaimAfterLeaseExpiry},
		{"only a claim after a lapsed lease says it is reclaimed", testReclaimed},
		{"completing by the owner makes a claim return the result byte-identical", testCompleteThenDone},
		{"a done intent stays done after its lease would have run out", testDoneOutlivesLease},
		{"completing with a stale token is refused and changes nothing", testCompleteStaleToken},
		{"completing after the lease ran out is refused even if no one claimed since", testCompleteAfterExpiry},
		{"completing twice is refused and keeps the first result", testCompleteTwice},
		{"completing with a wrong token is refused and keeps the claim", testCompleteWrongToken},
		{"completing or releasing an unknown intent is refused", testUnknownIntent},
		{"releasing lets another worker claim at once", testReleaseThenClaim},
		{"releasing by a non-owner is refused and keeps the claim", testReleaseNonOwner},
		{"releasing a done intent is refused and keeps the result", testReleaseDone},
		{"completing a released claim is refused", testCompleteAfterRelease},
		{"an expired result frees the intent id", testResultExpiry},
		{"concurrent claims from many goroutines give exactly one owner", testConcurrentClaims},
		{"concurrent completes by stale and current owners keep the current owner's result", testConcurrentComplete},
		{"a done intent asked for by another call is a mismatch naming the recorded call, without the result", testMismatchDone},
		{"an intent in flight asked for by another call is a mismatch", testMismatchInFlight},
		{"a lapsed claim asked for by another call is a mismatch, and the same call reclaims it", testMismatchLapsed},
		{"an expired result frees the id for another call", testMismatchAfterExpiry},
		{"attempts count the claims not released", testAttempts},
		{"a claim batch answers each item for itself, and an item's error is its own", testBatchMixed},
		{"an id twice in a batch is claimed once, by its first occurrence, and completed once", testBatchDuplicates},
		{"a lapsed claim reclaimed in a batch says so and counts its attempts", testBatchReclaimed},
		{"a completion batch lands each item only where its token owns the claim", testBatchComplete},
		{"a release batch releases each item only where its token owns the claim", testBatchRelease},
		{"a batch larger than the store's own limit is split, not failed, and its results read back byte for byte", testBatchLarge},
		{"a batch whose context ends answers only what is durable", testBatchContextEnds},
		{"approval decisions: the first wins and reads back as recorded", testDecisions},
		{"approvals read the tool a record was claimed for: another tool's result is no decision nor approval", testForeignRecords},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newEnv(t), "storetest-"+t.Name())
		})
	}
}

func claim(t *testing.T, s effector.DedupStore, id string, lease time.Duration) effector.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), id, callA, lease)
	if err != nil {
		t.Fatalf("Claim(%q, %v): %v", id, lease, err)
	}
	return c
}

// MustClaim claims id for lease in s and returns the token; it fails t
// unless the claim is Claimed with a token and no result.
func MustClaim(t *testing.T, s effector.DedupStore, id string, lease time.Duration) string {
	t.Helper()
	c := claim(t, s, id, lease)
	if c.State != effector.Claimed {
		t.Fatalf("Claim(%q) = %s, want claimed", id, c.State)
	}
	if c.Token == "" {
		t.Fatalf("Claim(%q) is claimed with an empty token", id)
	}
	if c.Result != nil {
		t.Fatalf("Claim(%q) is claimed but carries a result %q", id, c.Result)
	}
	return c.Token
}

// WantState claims id in s and fails t unless the claim's state is want (and,
// unless want is Claimed, it hands out no token); it returns the claim.
func WantState(t *testing.T, s effector.DedupStore, id string, want effector.ClaimState) effector.Claim {
	t.Helper()
	c := claim(t, s, id, long)
	if c.State != want {
		t.Fatalf("Claim(%q) = %s, want %s", id, c.State, want)
	}
	if want != effector.Claimed && c.Token != "" {
		t.Fatalf("Claim(%q) is %s but hands out token %q", id, c.State, c.Token)
	}
	return c
}

func wantDone(t *testing.T, s effector.DedupStore, id string, want []byte) {
	t.Helper()
	c := WantState(t, s, id, effector.Done)
	if !bytes.Equal(c.Result, want) {
		t.Fatalf("Claim(%q) result = %q, want byte-identical %q", id, c.Result, want)
	}
}

func complete(s effector.DedupStore, id, token string, res []byte, ttl time.Duration) error {
	return s.Complete(context.Background(), id, token, res, ttl)
}

func mustComplete(t *testing.T, s effector.DedupStore, id, token string, res []byte) {
	t.Helper()
	if err := complete(s, id, token, res, long); err != nil {
		t.Fatalf("Complete(%q) by its owner: %v", id, err)
	}
}

func wantNotOwner(t *testing.T, op string, err error) {
	t.Helper()
	if !errors.Is(err, effector.ErrNotOwner) {
		t.Fatalf("%s: err = %v, want effector.ErrNotOwner", op, err)
	}
}

func testClaimFresh(t *testing.T, e *env, id string) {
	s := e.s
	MustClaim(t, s, id, long)
}

func testClaimWhileLeased(t *testing.T, e *env, id string) {
	s := e.s
	MustClaim(t, s, id, long)
	WantState(t, s, id, effector.InFlight)
	WantState(t, s, id, effector.InFlight)
}

func testTokensDiffer(t *testing.T, e *env, id string) {
	s := e.s
	seen := map[string]string{}
	for i := range 8 {
		iid := fmt.Sprintf("%s-%d", id, i)
		tok := MustClaim(t, s, iid, long)
		if prev, ok := seen[tok]; ok {
			t.Fatalf("intents %q and %q got the same token %q", prev, iid, tok)
		}
		seen[tok] = iid
	}
}

func testIndependentIntents(t *testing.T, e *env, id string) {
	s := e.s
	a, b := id+"-a", id+"-b"
	ta := MustClaim(t, s, a, long)
	MustClaim(t, s, b, long)
	mustComplete(t, s, a, ta, []byte("a"))
	wantDone(t, s, a, []byte("a"))
	WantState(t, s, b, effector.InFlight)
}

func testClaimAfterLeaseExpiry(t *testing.T, e *env, id string) {
	s := e.s
	first := MustClaim(t, s, id, short)
	e.pass(wait)
	second := MustClaim(t, s, id, long)
	if second == first {
		t.Fatalf("the claim after the lease ran out reused the old token %q", first)
	}
	WantState(t, s, id, effector.InFlight)
}

func testReclaimed(t *testing.T, e *env, id string) {
	s := e.s
	if c := claim(t, s, id+"-fresh", long); c.State != effector.Claimed || c.Reclaimed {
		t.Fatalf("a fresh claim = %+v, want Claimed and not Reclaimed", c)
	}

	MustClaim(t, s, id+"-lapsed", short)
	e.pass(wait)
	if c := claim(t, s, id+"-lapsed", long); c.State != effector.Claimed || !c.Reclaimed {
		t.Fatalf("the claim after a lease ran out without Complete = %+v, want Claimed and Reclaimed: the earlier owner may have run the tool", c)
	}

	tok := MustClaim(t, s, id+"-released", long)
	if err := s.Release(context.Background(), id+"-released", tok); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	if c := claim(t, s, id+"-released", long); c.State != effector.Claimed || c.Reclaimed {
		t.Fatalf("the claim after a Release = %+v, want Claimed and not Reclaimed: the owner said nothing ran", c)
	}

	tok = MustClaim(t, s, id+"-expired", long)
	if err := complete(s, id+"-expired", tok, []byte("r"), short); err != nil {
		t.Fatalf("Complete by the owner: %v", err)
	}
	e.pass(wait)
	if c := claim(t, s, id+"-expired", long); c.State != effector.Claimed || c.Reclaimed {
		t.Fatalf("the claim after a result expired = %+v, want Claimed and not Reclaimed", c)
	}
}

func testCompleteThenDone(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	res := bytes.Clone(result)
	mustComplete(t, s, id, tok, res)
	// The store must have copied the bytes: the caller may reuse its buffer.
	for i := range res {
		res[i] = 'x'
	}
	wantDone(t, s, id, result)
	// Done twice: reading the result does not consume it.
	c := WantState(t, s, id, effector.Done)
	if !bytes.Equal(c.Result, result) {
		t.Fatalf("second Done result = %q, want %q", c.Result, result)
	}
	// Nor does changing the returned slice change what is stored.
	for i := range c.Result {
		c.Result[i] = 'y'
	}
	wantDone(t, s, id, result)
}

func testDoneOutlivesLease(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, brief)
	mustComplete(t, s, id, tok, result)
	e.pass(brief + wait)
	wantDone(t, s, id, result)
}

// testCompleteStaleToken is the paused owner: A's lease runs out while it is
// stopped (a GC pause, a partition), B claims and executes, and A wakes up and
// tries to complete. A must not overwrite B's claim or B's result.
func testCompleteStaleToken(t *testing.T, e *env, id string) {
	s := e.s
	a := MustClaim(t, s, id, short)
	e.pass(wait)
	b := MustClaim(t, s, id, long)

	wantNotOwner(t, "Complete by the paused owner while the next owner holds the lease",
		complete(s, id, a, []byte("from A"), long))
	WantState(t, s, id, effector.InFlight)

	mustComplete(t, s, id, b, []byte("from B"))
	wantNotOwner(t, "Complete by the paused owner after the next owner completed",
		complete(s, id, a, []byte("from A"), long))
	wantDone(t, s, id, []byte("from B"))
}

func testCompleteAfterExpiry(t *testing.T, e *env, id string) {
	s := e.s
	a := MustClaim(t, s, id, short)
	e.pass(wait)
	wantNotOwner(t, "Complete after the lease ran out", complete(s, id, a, result, long))
	// Nothing was stored: the intent is free for the next worker.
	MustClaim(t, s, id, long)
}

func testCompleteTwice(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	mustComplete(t, s, id, tok, []byte("first"))
	wantNotOwner(t, "second Complete with the same token", complete(s, id, tok, []byte("second"), long))
	wantDone(t, s, id, []byte("first"))
}

func testCompleteWrongToken(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	wantNotOwner(t, "Complete with a made-up token", complete(s, id, tok+"-not-mine", []byte("forged"), long))
	wantNotOwner(t, "Complete with an empty token", complete(s, id, "", []byte("forged"), long))
	WantState(t, s, id, effector.InFlight)
	mustComplete(t, s, id, tok, result)
	wantDone(t, s, id, result)
}

func testUnknownIntent(t *testing.T, e *env, id string) {
	s := e.s
	wantNotOwner(t, "Complete of an intent never claimed", complete(s, id, "some-token", result, long))
	wantNotOwner(t, "Release of an intent never claimed", s.Release(context.Background(), id, "some-token"))
	MustClaim(t, s, id, long)
}

func testReleaseThenClaim(t *testing.T, e *env, id string) {
	s := e.s
	a := MustClaim(t, s, id, long)
	if err := s.Release(context.Background(), id, a); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	b := MustClaim(t, s, id, long)
	if b == a {
		t.Fatalf("the claim after a release reused the released token %q", a)
	}
	wantNotOwner(t, "Complete with the released token", complete(s, id, a, []byte("from A"), long))
	mustComplete(t, s, id, b, []byte("from B"))
	wantDone(t, s, id, []byte("from B"))
}

func testReleaseNonOwner(t *testing.T, e *env, id string) {
	s := e.s
	a := MustClaim(t, s, id, long)
	wantNotOwner(t, "Release with a token that does not own the claim", s.Release(context.Background(), id, a+"-not-mine"))
	WantState(t, s, id, effector.InFlight)
	mustComplete(t, s, id, a, result)
	wantDone(t, s, id, result)
}

func testReleaseDone(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	mustComplete(t, s, id, tok, result)
	wantNotOwner(t, "Release after Complete", s.Release(context.Background(), id, tok))
	wantDone(t, s, id, result)
}

func testCompleteAfterRelease(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	if err := s.Release(context.Background(), id, tok); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	wantNotOwner(t, "Complete after Release", complete(s, id, tok, result, long))
	wantNotOwner(t, "second Release", s.Release(context.Background(), id, tok))
	MustClaim(t, s, id, long)
}

func testResultExpiry(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	start := time.Now() // before Complete: what passes since then bounds what passed since the result was stored
	if err := complete(s, id, tok, result, brief); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	wantDone(t, s, id, result)
	// Claim until the result has expired; a Done answer before then changes nothing.
	var slept time.Duration
	for {
		c := claim(t, s, id, long)
		// With the real clock, time passes in the store calls too (a loaded
		// machine makes them slow), not only in the sleeps.
		since := slept
		if !e.fake {
			since = time.Since(start)
		}
		if c.State == effector.Claimed {
			if since < brief-short {
				t.Fatalf("a claim %v after completing with a %v time-to-live is claimed, want done until the result expires", since, brief)
			}
			return
		}
		if c.State != effector.Done || since > 10*time.Second {
			t.Fatalf("a claim %v after completing with a %v time-to-live = %s, want done until the result expires, then claimed", since, brief, c.State)
		}
		e.pass(wait)
		slept += wait
	}
}

func testConcurrentClaims(t *testing.T, e *env, id string) {
	s := e.s
	const n = 32
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		claims = make([]effector.Claim, n)
		errs   = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			claims[i], errs[i] = s.Claim(context.Background(), id, callA, long)
		})
	}
	close(start)
	wg.Wait()
	var owner string
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: Claim: %v", i, errs[i])
		}
		switch claims[i].State {
		case effector.Claimed:
			if owner != "" {
				t.Fatalf("two goroutines claimed %q (tokens %q and %q)", id, owner, claims[i].Token)
			}
			owner = claims[i].Token
		case effector.InFlight:
		default:
			t.Fatalf("goroutine %d: Claim = %s, want claimed or in-flight", i, claims[i].State)
		}
	}
	if owner == "" {
		t.Fatalf("none of %d concurrent claims of a fresh intent succeeded", n)
	}
	mustComplete(t, s, id, owner, result)
	wantDone(t, s, id, result)
}

// testConcurrentComplete races a paused owner's Complete against the current
// owner's: whatever the order, the stale one is refused and the current one's
// result is what is stored.
func testConcurrentComplete(t *testing.T, e *env, id string) {
	s := e.s
	const rounds = 8
	ids := make([]string, rounds)
	stale := make([]string, rounds)
	for r := range rounds {
		ids[r] = fmt.Sprintf("%s-%d", id, r)
		stale[r] = MustClaim(t, s, ids[r], short)
	}
	e.pass(wait)
	var wg sync.WaitGroup
	staleErrs := make([]error, rounds)
	currentErrs := make([]error, rounds)
	for r := range rounds {
		current := MustClaim(t, s, ids[r], long)
		wg.Go(func() { staleErrs[r] = complete(s, ids[r], stale[r], []byte("stale"), long) })
		wg.Go(func() { currentErrs[r] = complete(s, ids[r], current, []byte("current"), long) })
	}
	wg.Wait()
	for r := range rounds {
		wantNotOwner(t, "Complete by the stale owner", staleErrs[r])
		if currentErrs[r] != nil {
			t.Fatalf("Complete by the current owner of %q: %v", ids[r], currentErrs[r])
		}
		wantDone(t, s, ids[r], []byte("current"))
	}
}

// claimFor claims id for call in s with a long lease.
func claimFor(t *testing.T, s effector.DedupStore, id string, call effector.Call) effector.Claim {
	t.Helper()
	c, err := s.Claim(context.Background(), id, call, long)
	if err != nil {
		t.Fatalf("Claim(%q, %v): %v", id, call, err)
	}
	return c
}

// wantMismatch claims id for callB and fails t unless the store refuses it
// as a mismatch that names callA, with no token and no result.
func wantMismatch(t *testing.T, s effector.DedupStore, id string) {
	t.Helper()
	c := claimFor(t, s, id, callB)
	if c.State != effector.Mismatch {
		t.Fatalf("Claim(%q) by another call = %s, want mismatch: the id is recorded for %v", id, c.State, callA)
	}
	if c.Recorded != callA {
		t.Fatalf("Claim(%q) by another call: recorded call = %v, want %v", id, c.Recorded, callA)
	}
	if c.Token != "" || c.Result != nil {
		t.Fatalf("Claim(%q) by another call hands out token %q and result %q, want neither", id, c.Token, c.Result)
	}
}

func testMismatchDone(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	mustComplete(t, s, id, tok, result)
	wantMismatch(t, s, id)
	wantDone(t, s, id, result) // the recorded call still gets its result
}

func testMismatchInFlight(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	wantMismatch(t, s, id)
	WantState(t, s, id, effector.InFlight)
	mustComplete(t, s, id, tok, result)
	wantDone(t, s, id, result)
}

func testMismatchLapsed(t *testing.T, e *env, id string) {
	s := e.s
	MustClaim(t, s, id, short)
	e.pass(wait)
	// The lapsed owner may have run callA: callB must not run under its id.
	wantMismatch(t, s, id)
	if c := claim(t, s, id, long); c.State != effector.Claimed || !c.Reclaimed {
		t.Fatalf("the claim by the same call after the lease ran out = %+v, want Claimed and Reclaimed", c)
	}
}

func testMismatchAfterExpiry(t *testing.T, e *env, id string) {
	s := e.s
	tok := MustClaim(t, s, id, long)
	if err := complete(s, id, tok, result, short); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	e.pass(wait)
	if c := claimFor(t, s, id, callB); c.State != effector.Claimed || c.Reclaimed || c.Attempts != 1 {
		t.Fatalf("a claim by another call after the result expired = %+v, want Claimed, not Reclaimed, attempt 1", c)
	}
}

func testAttempts(t *testing.T, e *env, id string) {
	s := e.s
	want := func(what string, c effector.Claim, attempts int, reclaimed bool) {
		t.Helper()
		if c.State != effector.Claimed || c.Attempts != attempts || c.Reclaimed != reclaimed {
			t.Fatalf("%s = %+v, want Claimed, Attempts %d, Reclaimed %v", what, c, attempts, reclaimed)
		}
	}
	c := claim(t, s, id, short)
	want("a first claim", c, 1, false)
	e.pass(wait)
	c = claim(t, s, id, short)
	want("the claim after a lease ran out", c, 2, true)
	e.pass(wait)
	c = claim(t, s, id, long)
	want("the claim after a second lease ran out", c, 3, true)
	if err := s.Release(context.Background(), id, c.Token); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	// A release gives its own attempt back, not the lapsed ones.
	c = claim(t, s, id, long)
	want("the claim after a release", c, 3, false)
	if err := s.Release(context.Background(), id, c.Token); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	// A released id keeps the call of the attempts that may have run.
	wantMismatch(t, s, id)

	fresh := id + "-fresh"
	c = claim(t, s, fresh, long)
	want("a first claim", c, 1, false)
	if err := s.Release(context.Background(), fresh, c.Token); err != nil {
		t.Fatalf("Release by the owner: %v", err)
	}
	want("the claim after the only claim was released", claim(t, s, fresh, long), 1, false)
}
