package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/storetest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// Tests of the batch forms (batchforms.go) beyond the conformance suite:
// the pipelines they send, an item the server refuses, an item over the
// server's limit, and a batch of completions across a server restart.

func claimReqs(prefix string, n int) []effector.ClaimRequest {
	reqs := make([]effector.ClaimRequest, n)
	for i := range reqs {
		reqs[i] = effector.ClaimRequest{IntentID: fmt.Sprintf("%s-%03d", prefix, i), Call: storetest.Call, Lease: time.Minute}
	}
	return reqs
}

// claimAll claims reqs in one batch and fails t unless every item is
// Claimed; it returns the completions of them with result.
func claimAll(t *testing.T, s *Store, reqs []effector.ClaimRequest, result []byte) []effector.Completion {
	t.Helper()
	out := make([]effector.ClaimOutcome, len(reqs))
	s.ClaimBatch(context.Background(), reqs, out)
	comps := make([]effector.Completion, len(reqs))
	for i, o := range out {
		if o.Err != nil || o.Claim.State != effector.Claimed {
			t.Fatalf("claim %s: %+v, %v", reqs[i].IntentID, o.Claim, o.Err)
		}
		comps[i] = effector.Completion{IntentID: reqs[i].IntentID, Token: o.Claim.Token, Result: result, TTL: time.Hour}
	}
	return comps
}

// scripts records the number of items (keys / 2) of each script call a
// client sends, and whether it went in a pipeline.
type scripts struct {
	mu        sync.Mutex
	alone     []int
	pipelines [][]int
}

func items(a []any) int {
	if len(a) > 2 && (a[0] == "evalsha" || a[0] == "eval") {
		n, _ := a[2].(int)
		return n / 2
	}
	return 0
}

func (s *scripts) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *scripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := items(cmd.Args()); n > 0 {
			s.mu.Lock()
			s.alone = append(s.alone, n)
			s.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (s *scripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var calls []int
		for _, c := range cmds {
			if n := items(c.Args()); n > 0 {
				calls = append(calls, n)
			}
		}
		if len(calls) > 0 {
			s.mu.Lock()
			s.pipelines = append(s.pipelines, calls)
			s.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

func (s *scripts) reset() (alone []int, pipelines [][]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	alone, pipelines = s.alone, s.pipelines
	s.alone, s.pipelines = nil, nil
	return alone, pipelines
}

// On one server a batch of 100 is one script call of claims and one of
// completions; over the store's limit (WithBatch's size) it is split into
// calls of that many items, that many calls a pipeline; a call carrying
// more than 1MiB goes on its own, after the others, so that the server
// refusing it (its proto-max-bulk-len, by closing the connection) fails it
// alone: every other completion of its batch lands.
func TestBatchCallsAndTheirLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	admin := srv.Client(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	rec := &scripts{}
	rdb.AddHook(rec)

	// Loaded, so that no call is sent again after NOSCRIPT.
	for _, sc := range []*redis.Script{claimScript, completeScript, claimBatchScript, completeBatchScript} {
		if err := sc.Load(ctx, rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rec.reset()
	s := New(rdb, WithKeyPrefix("hundred:"))
	comps := claimAll(t, s, claimReqs("h", 100), []byte("r"))
	errs := make([]error, len(comps))
	s.CompleteBatch(ctx, comps, errs)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("completion %d: %v", i, err)
		}
	}
	if alone, pipelines := rec.reset(); fmt.Sprint(alone) != "[100 100]" || len(pipelines) != 0 {
		t.Fatalf("a batch of 100 claims and one of 100 completions went as calls of %v items and pipelines %v, want one call each", alone, pipelines)
	}

	if err := admin.ConfigSet(ctx, "proto-max-bulk-len", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	small := New(rdb, WithKeyPrefix("split:"), WithBatch(2))
	reqs := claimReqs("s", 5)
	comps = claimAll(t, small, reqs, []byte("r"))
	if alone, pipelines := rec.reset(); len(alone) != 1 || alone[0] != 1 || fmt.Sprint(pipelines) != "[[2 2]]" {
		t.Fatalf("5 claims, 2 a call and 2 calls a pipeline, went as calls of %v items alone and pipelines %v, want one pipeline of [2 2] and one call of 1", alone, pipelines)
	}
	comps[3].Result = make([]byte, 2<<20)
	bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	errs = make([]error, len(comps))
	small.CompleteBatch(bctx, comps, errs)
	// The big one may be sent again: the server closing the connection
	// may reach the client as the connection's error, which is retried.
	if alone, pipelines := rec.reset(); len(alone) == 0 || strings.Trim(strings.ReplaceAll(fmt.Sprint(alone), "1", ""), "[ ]") != "" || fmt.Sprint(pipelines) != "[[2 2]]" {
		t.Errorf("5 completions, one of 2MiB, went as calls of %v items alone and pipelines %v, want a pipeline of [2 2], then the big one alone", alone, pipelines)
	}
	for i, err := range errs {
		switch {
		case i == 3 && err == nil:
			t.Error("the completion the server refuses succeeded")
		case i != 3 && err != nil:
			t.Errorf("completion %d beside the refused one: %v", i, err)
		}
	}
	check := New(admin, WithKeyPrefix("split:"), WithBatch(1))
	storetest.WantState(t, check, reqs[3].IntentID, effector.InFlight)
	storetest.WantState(t, check, reqs[4].IntentID, effector.Done)
}

// A call over 1MiB whose connection is cut every time it is sent (a
// network that drops it) is retried, as a completion is, until the batch's
// context ends: the pipelines of the batch's other completions went first
// and landed.
func TestBatchBigCallRetriedLastWhileTheOthersLand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	proxy := srv.Proxy(t)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr})
	t.Cleanup(func() { rdb.Close() })
	s := New(rdb, WithKeyPrefix("cut:"), WithBatch(8))
	reqs := claimReqs("c", 20)
	comps := claimAll(t, s, reqs, []byte("r"))
	comps[3].Result = make([]byte, 2<<20)
	proxy.CutOn(s.key(reqs[3].IntentID))
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	errs := make([]error, len(comps))
	s.CompleteBatch(bctx, comps, errs)
	if proxy.Cut() == 0 {
		t.Fatal("the proxy cut no connection")
	}
	for i, err := range errs {
		switch {
		case i == 3 && err == nil:
			t.Error("the completion whose connection is cut succeeded")
		case i != 3 && err != nil:
			t.Errorf("completion %d beside the cut one: %v", i, err)
		}
	}
	check := New(srv.Client(t), WithKeyPrefix("cut:"), WithBatch(1))
	storetest.WantState(t, check, reqs[3].IntentID, effector.InFlight)
	storetest.WantState(t, check, reqs[19].IntentID, effector.Done)
}

// One item of a batch fails on the server (its key holds a list, so its
// script's GET fails with WRONGTYPE): it alone fails, with its own error,
// and every other item of the pipeline is answered.
func TestBatchItemTheServerRefusesFailsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	s := New(rdb, WithKeyPrefix("poison:"))
	if err := rdb.RPush(ctx, s.key("poison"), "x").Err(); err != nil {
		t.Fatal(err)
	}
	reqs := claimReqs("ok", 10)
	reqs[5].IntentID = "poison"
	out := make([]effector.ClaimOutcome, len(reqs))
	s.ClaimBatch(ctx, reqs, out)
	for i, o := range out {
		switch {
		case i == 5:
			if o.Err == nil || !strings.Contains(o.Err.Error(), "WRONGTYPE") || !strings.Contains(o.Err.Error(), `"poison"`) {
				t.Errorf("the refused claim: %+v, %v; want its own WRONGTYPE error", o.Claim, o.Err)
			}
		case o.Err != nil || o.Claim.State != effector.Claimed:
			t.Errorf("claim %s beside the refused one: %+v, %v", reqs[i].IntentID, o.Claim, o.Err)
		}
	}
	errs := make([]error, 2)
	s.CompleteBatch(ctx, []effector.Completion{
		{IntentID: "poison", Token: "t", Result: []byte("r"), TTL: time.Hour},
		{IntentID: reqs[0].IntentID, Token: out[0].Claim.Token, Result: []byte("r"), TTL: time.Hour},
	}, errs)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "WRONGTYPE") || errs[1] != nil {
		t.Fatalf("completions %v; want WRONGTYPE, then nil", errs)
	}
}

// A batch of completions is sent while the server is down and coming back:
// each is retried until it lands, as Complete is (the tools have run), and
// each lands once, byte for byte.
func TestCompleteBatchRidesOutAServerRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.WithDurability())
	s := New(srv.Client(t))
	comps := claimAll(t, s, claimReqs("restart", 30), nil)
	for i := range comps {
		comps[i].Result = fmt.Appendf(nil, "result %d", i)
	}
	srv.Stop()
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(200 * time.Millisecond)
		srv.Restart(t)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make([]error, len(comps))
	s.CompleteBatch(ctx, comps, errs)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("completion %d across a restart: %v", i, err)
		}
		if got := storetest.WantState(t, s, comps[i].IntentID, effector.Done).Result; string(got) != string(comps[i].Result) {
			t.Fatalf("intent %s holds %q, want %q", comps[i].IntentID, got, comps[i].Result)
		}
	}
}
