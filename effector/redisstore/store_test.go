package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	var n atomic.Int32
	storetest.Run(t, func(t *testing.T) effector.DedupStore {
		// One server for the whole suite; a prefix per subtest keeps them apart.
		return New(rdb, WithKeyPrefix(fmt.Sprintf("conformance-%d:", n.Add(1))))
	})
}

// TestStaleTokenAfterLeaseExpiry is the paused owner against the real server:
// the lease is the key's expiry, so after it the next owner's SET NX wins, and
// the compare-and-set script refuses the first owner's token, leaving the
// stored value, byte for byte, the new owner's.
func TestStaleTokenAfterLeaseExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := New(rdb, WithKeyPrefix("p:"))

	// The lease is long enough that the PTTL check runs well inside it on a
	// loaded machine; the test then waits for the server to expire the key.
	const lease = 500 * time.Millisecond
	stale := storetest.MustClaim(t, s, "i", lease)
	if ttl := rdb.PTTL(ctx, "p:{i:i}").Val(); ttl <= 0 || ttl > lease {
		t.Fatalf("PTTL of a claim with a %v lease = %v, want the lease kept by the server", lease, ttl)
	}
	for deadline := time.Now().Add(10 * time.Second); rdb.Exists(ctx, "p:{i:i}").Val() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server still holds the claim 10s after its %v lease", lease)
		}
	}
	current := storetest.MustClaim(t, s, "i", time.Minute)

	err := s.Complete(ctx, "i", stale, []byte("stale"), time.Hour)
	if !errorsIsNotOwner(err) {
		t.Fatalf("Complete with the expired owner's token: err = %v, want ErrNotOwner", err)
	}
	if err := s.Release(ctx, "i", stale); !errorsIsNotOwner(err) {
		t.Fatalf("Release with the expired owner's token: err = %v, want ErrNotOwner", err)
	}
	if got := rdb.Get(ctx, "p:{i:i}").Val(); !strings.HasPrefix(got, "c") || !strings.HasSuffix(got, current) {
		t.Fatalf("stored value after the stale owner's attempts = %q, want the current claim, ending in its token %q", got, current)
	}
	if err := s.Complete(ctx, "i", current, []byte("current"), time.Hour); err != nil {
		t.Fatalf("Complete by the current owner: %v", err)
	}
	if ttl := rdb.PTTL(ctx, "p:{i:i}").Val(); ttl < 59*time.Minute || ttl > time.Hour {
		t.Fatalf("PTTL of a result kept for an hour = %v, want about an hour", ttl)
	}
	if err := s.Complete(ctx, "i", stale, []byte("stale"), time.Hour); !errorsIsNotOwner(err) {
		t.Fatalf("Complete with the expired owner's token after the result: err = %v, want ErrNotOwner", err)
	}
	if got := storetest.WantState(t, s, "i", effector.Done).Result; string(got) != "current" {
		t.Fatalf("result = %q, want the current owner's %q", got, "current")
	}
}

func errorsIsNotOwner(err error) bool { return errors.Is(err, effector.ErrNotOwner) }

// TestServerRestart decides what a redis-server crash means for execute-once:
// with the append-only file fsynced on every write, claims and results survive
// a SIGKILL, and the scripts work again after the restart (the client reloads
// them); without persistence the server forgets, and the intent can be claimed
// and executed again. Production Redis for effectors must run the first way.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("with appendonly and appendfsync always, claims and results survive a kill", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.WithDurability())
		s := New(srv.Client(t))
		tok := storetest.MustClaim(t, s, "done-before-crash", time.Minute)
		if err := s.Complete(ctx, "done-before-crash", tok, []byte("kept"), time.Hour); err != nil {
			t.Fatal(err)
		}
		inflight := storetest.MustClaim(t, s, "in-flight-at-crash", time.Minute)

		srv.Restart(t)

		if got := storetest.WantState(t, s, "done-before-crash", effector.Done).Result; string(got) != "kept" {
			t.Fatalf("result after the restart = %q, want %q", got, "kept")
		}
		storetest.WantState(t, s, "in-flight-at-crash", effector.InFlight)
		if err := s.Complete(ctx, "in-flight-at-crash", inflight, []byte("late"), time.Hour); err != nil {
			t.Fatalf("the owner completing after the restart: %v", err)
		}
		if got := storetest.WantState(t, s, "in-flight-at-crash", effector.Done).Result; string(got) != "late" {
			t.Fatalf("result = %q, want %q", got, "late")
		}
	})

	t.Run("without persistence a kill forgets results, so the intent is claimed again", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		s := New(srv.Client(t))
		tok := storetest.MustClaim(t, s, "forgotten", time.Minute)
		if err := s.Complete(ctx, "forgotten", tok, []byte("lost"), time.Hour); err != nil {
			t.Fatal(err)
		}
		srv.Restart(t)
		storetest.MustClaim(t, s, "forgotten", time.Minute)
	})

	t.Run("while the server is down calls fail instead of claiming", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		s := New(srv.Client(t))
		srv.Stop()
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if c, err := s.Claim(cctx, "x", effector.Call{}, time.Minute); err == nil {
			t.Fatalf("Claim with the server down = %s, want an error", c.State)
		}
		srv.Restart(t)
		storetest.MustClaim(t, s, "x", time.Minute)
	})
}

func TestTwoClientsContend(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	storetest.ClaimContended(t, 50, 4, New(srv.Client(t)), New(srv.Client(t)))
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	var n atomic.Int32
	s := New(rdb, WithKeyPrefix("r:"), WithTokens(func() (string, error) {
		return fmt.Sprintf("tok-%d", n.Add(1)), nil
	}))
	if err := rdb.Set(ctx, "r:{i:foreign}", "someone else's value", 0).Err(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"a zero lease is refused", func() error { _, err := s.Claim(ctx, "x", effector.Call{}, 0); return err }, "lease 0s: want a positive duration"},
		{"a negative ttl is refused", func() error { return s.Complete(ctx, "x", "t", nil, -time.Second) }, "result ttl -1s: want a positive duration"},
		{"a prefix with an empty hash tag is refused", func() error {
			_, err := New(rdb, WithKeyPrefix("r{}:")).Claim(ctx, "x", effector.Call{}, time.Minute)
			return err
		}, `key prefix "r{}:" holds an empty hash tag "{}" before any other`},
		{"a prefix with an empty hash tag is refused by Complete and Release too", func() error {
			s := New(rdb, WithKeyPrefix("{}"))
			return errors.Join(s.Complete(ctx, "x", "t", nil, time.Minute), s.Release(ctx, "x", "t"))
		}, "key prefix \"{}\" holds an empty hash tag \"{}\" before any other, so Redis Cluster would hash an intent's record and attempt marker to different slots; remove the \"{}\" from WithKeyPrefix\nredisstore: key prefix \"{}\""},
		{"a key this store did not write is reported, not claimed", func() error { _, err := s.Claim(ctx, "foreign", effector.Call{}, time.Minute); return err }, `key "r:{i:foreign}" holds "someone else's value", which this store did not write (or an older version wrote: let its intents finish first); choose another WithKeyPrefix`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.err(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	t.Run("injected tokens are used", func(t *testing.T) {
		tok := storetest.MustClaim(t, s, "injected", time.Minute)
		if got := rdb.Get(ctx, "r:{i:injected}").Val(); got != string(appendCall([]byte("c"), storetest.Call))+tok || !strings.HasPrefix(tok, "tok-") {
			t.Fatalf("token %q stored as %q, want an injected token stored as c+call+token", tok, got)
		}
	})
	t.Run("a sub-millisecond lease is rounded up, not sent as zero", func(t *testing.T) {
		storetest.MustClaim(t, s, "tiny", time.Microsecond)
	})
	t.Run("an empty result is done with empty bytes", func(t *testing.T) {
		tok := storetest.MustClaim(t, s, "empty", time.Minute)
		if err := s.Complete(ctx, "empty", tok, nil, time.Minute); err != nil {
			t.Fatal(err)
		}
		if c := storetest.WantState(t, s, "empty", effector.Done); len(c.Result) != 0 {
			t.Fatalf("result = %q, want empty", c.Result)
		}
	})
}

// TestCompleteRidesOutAServerRestart records a result while the server is
// down and coming back: the tool has run, so giving up would let the intent
// run again once the lease ended.
func TestCompleteRidesOutAServerRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.WithDurability())
	s := New(srv.Client(t))
	ctx := context.Background()
	tok := storetest.MustClaim(t, s, "i", time.Minute)
	srv.Stop()
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		time.Sleep(200 * time.Millisecond)
		srv.Restart(t)
	}()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := s.Complete(cctx, "i", tok, []byte("recorded"), time.Hour)
	<-restarted
	if err != nil {
		t.Fatalf("Complete across a restart: %v", err)
	}
	if got := storetest.WantState(t, s, "i", effector.Done).Result; string(got) != "recorded" {
		t.Fatalf("result = %q, want %q", got, "recorded")
	}
	t.Run("repeating the same complete, as after a lost reply, succeeds and changes nothing", func(t *testing.T) {
		if err := s.Complete(ctx, "i", tok, []byte("recorded"), time.Hour); err != nil {
			t.Fatalf("repeated Complete: %v", err)
		}
		if err := s.Complete(ctx, "i", tok, []byte("other"), time.Hour); !errorsIsNotOwner(err) {
			t.Fatalf("Complete with other bytes after done: err = %v, want ErrNotOwner", err)
		}
		if got := storetest.WantState(t, s, "i", effector.Done).Result; string(got) != "recorded" {
			t.Fatalf("result = %q, want %q", got, "recorded")
		}
	})
	t.Run("a closed client fails at once instead of retrying", func(t *testing.T) {
		c := srv.Client(t)
		c.Close()
		start := time.Now()
		if err := New(c).Complete(ctx, "j", "t", nil, time.Hour); err == nil || time.Since(start) > 5*time.Second {
			t.Fatalf("Complete on a closed client = %v after %v, want an error at once", err, time.Since(start))
		}
	})
}

// TestARecordOfAnOlderVersionIsNotAMismatch upgrades in place: records the
// store wrote before it kept the call ("d" len(token) ":" token result for a
// result, "c" token for a claim) are read as what they are. A finished
// intent stays done, with its result byte for byte, for whatever call asks;
// an older owner's live claim is in flight until its lease ends. Neither is
// a non-deterministic replay.
func TestARecordOfAnOlderVersionIsNotAMismatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := New(rdb, WithKeyPrefix("old:"))
	const token = "0123456789abcdef0123456789abcdef"
	long := strings.Repeat(`{"status":"OK","payload":"refund issued"}`, 3) // long enough to look like a call
	for name, result := range map[string]string{"short": "ok", "long": long, "empty": ""} {
		key := "old:{i:done-" + name + "}"
		if err := rdb.Set(ctx, key, "d32:"+token+result, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(ctx, "done-"+name, storetest.Call, time.Minute)
		if err != nil || c.State != effector.Done || string(c.Result) != result {
			t.Fatalf("Claim of an older version's %s done record = %v %q, %v; want done with %q", name, c.State, c.Result, err, result)
		}
	}
	if err := rdb.Set(ctx, "old:{i:claimed}", "c"+token, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Claim(ctx, "claimed", storetest.Call, time.Minute); err != nil || c.State != effector.InFlight {
		t.Fatalf("Claim of an intent an older version holds = %v, %v; want in flight", c.State, err)
	}
	// The older owner vanished: its claim ran out, its attempt marker stayed.
	if err := rdb.Set(ctx, "old:{i:vanished}:attempt", "c"+token, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Claim(ctx, "vanished", storetest.Call, time.Minute); err != nil || c.State != effector.Claimed || !c.Reclaimed || c.Attempts != 2 {
		t.Fatalf("Claim after an older owner vanished = %+v, %v; want claimed, reclaimed, second attempt", c, err)
	}
}

// TestAClaimBesideAMarkerLeavesTheRecordAsItWas: a claim finds the record
// free with SET NX, which takes it at once; when the attempt marker then
// turns out to be set, the record is free again before the marker decides.
// A marker of another call is a mismatch and one of another type an error,
// and neither leaves a claim behind, alone or in a batch beside a claim
// that lands; a marker of this call is counted, and the record claimed.
func TestAClaimBesideAMarkerLeavesTheRecordAsItWas(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := New(rdb, WithKeyPrefix("m:"))
	other := effector.Call{Tool: "other", Digest: [32]byte{7}}
	setup := func(t *testing.T) {
		t.Helper()
		if err := rdb.Set(ctx, "m:{i:other}:attempt", "c"+string(appendCall(nil, other))+"1", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Del(ctx, "m:{i:typed}:attempt").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.RPush(ctx, "m:{i:typed}:attempt", "a list").Err(); err != nil {
			t.Fatal(err)
		}
	}
	free := func(t *testing.T, ids ...string) {
		t.Helper()
		for _, id := range ids {
			if n := rdb.Exists(ctx, "m:{i:"+id+"}").Val(); n != 0 {
				t.Fatalf("the record of %s exists after a claim that did not take it: %q", id, rdb.Get(ctx, "m:{i:"+id+"}").Val())
			}
		}
	}
	t.Run("alone", func(t *testing.T) {
		setup(t)
		c, err := s.Claim(ctx, "other", storetest.Call, time.Minute)
		if err != nil || c.State != effector.Mismatch || c.Recorded != other {
			t.Fatalf("Claim beside another call's marker = %+v, %v; want a mismatch recording %v", c, err, other)
		}
		if _, err := s.Claim(ctx, "typed", storetest.Call, time.Minute); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("Claim beside a marker of another type: err = %v, want WRONGTYPE", err)
		}
		free(t, "other", "typed")
	})
	t.Run("in a batch", func(t *testing.T) {
		setup(t)
		reqs := []effector.ClaimRequest{
			{IntentID: "other", Call: storetest.Call, Lease: time.Minute},
			{IntentID: "typed", Call: storetest.Call, Lease: time.Minute},
			{IntentID: "fresh", Call: storetest.Call, Lease: time.Minute},
		}
		out := make([]effector.ClaimOutcome, len(reqs))
		s.ClaimBatch(ctx, reqs, out)
		if o := out[0]; o.Err != nil || o.Claim.State != effector.Mismatch || o.Claim.Recorded != other {
			t.Fatalf("batch claim beside another call's marker = %+v; want a mismatch recording %v", o, other)
		}
		if o := out[1]; o.Err == nil || !strings.Contains(o.Err.Error(), "WRONGTYPE") {
			t.Fatalf("batch claim beside a marker of another type = %+v; want WRONGTYPE", o)
		}
		if o := out[2]; o.Err != nil || o.Claim.State != effector.Claimed || o.Claim.Attempts != 1 || o.Claim.Reclaimed {
			t.Fatalf("batch claim of a fresh intent = %+v; want claimed, first attempt", o)
		}
		free(t, "other", "typed")
	})
	t.Run("a marker of this call is counted", func(t *testing.T) {
		if err := rdb.Set(ctx, "m:{i:mine}:attempt", "c"+string(appendCall(nil, storetest.Call))+"2", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		c, err := s.Claim(ctx, "mine", storetest.Call, time.Minute)
		if err != nil || c.State != effector.Claimed || !c.Reclaimed || c.Attempts != 3 {
			t.Fatalf("Claim beside this call's marker of 2 attempts = %+v, %v; want claimed, reclaimed, third attempt", c, err)
		}
		if got, want := rdb.Get(ctx, "m:{i:mine}").Val(), "c"+string(appendCall(nil, storetest.Call))+c.Token; got != want {
			t.Fatalf("record after the claim = %q, want %q", got, want)
		}
		if got, want := rdb.Get(ctx, "m:{i:mine}:attempt").Val(), "c"+string(appendCall(nil, storetest.Call))+"3"; got != want {
			t.Fatalf("marker after the claim = %q, want %q", got, want)
		}
	})
}

// TestABatchKeepsEachItemsLeaseAndTTL: a batch's items that share a lease
// or a ttl share one argument, and an item with another keeps its own.
func TestABatchKeepsEachItemsLeaseAndTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	s := New(rdb, WithKeyPrefix("l:"))
	durs := []time.Duration{time.Minute, time.Minute, time.Hour, time.Minute}
	reqs := make([]effector.ClaimRequest, len(durs))
	for i, d := range durs {
		reqs[i] = effector.ClaimRequest{IntentID: fmt.Sprint("lease-", i), Call: storetest.Call, Lease: d}
	}
	out := make([]effector.ClaimOutcome, len(reqs))
	s.ClaimBatch(ctx, reqs, out)
	comps := make([]effector.Completion, len(reqs))
	for i, o := range out {
		if o.Err != nil || o.Claim.State != effector.Claimed {
			t.Fatalf("claim %d = %+v", i, o)
		}
		// The ttls go the other way round: an hour where the lease was a minute.
		comps[i] = effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, TTL: 61*time.Minute - durs[i]}
	}
	// The leases, read before the completions replace the records.
	for i, d := range durs {
		if got := rdb.PTTL(ctx, "l:{i:"+reqs[i].IntentID+"}").Val(); got > d || got < d-time.Minute/2 {
			t.Fatalf("record %d expires in %v, want its own lease %v", i, got, d)
		}
	}
	errs := make([]error, len(comps))
	s.CompleteBatch(ctx, comps, errs)
	for i, c := range comps {
		if errs[i] != nil {
			t.Fatalf("completion %d: %v", i, errs[i])
		}
		if got := rdb.PTTL(ctx, "l:{i:"+c.IntentID+"}").Val(); got > c.TTL || got < c.TTL-time.Minute/2 {
			t.Fatalf("result %d expires in %v, want its own ttl %v", i, got, c.TTL)
		}
	}
}
