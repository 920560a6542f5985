package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/idrounds"
)

// The batch forms. A batch's items whose keys a script may take together
// go in one call of a batch script, which runs each item's body (the single
// call's own, claimBody, completeBody, releaseBody) under pcall and replies
// with one answer per item: so one item's error is its own, and the batch
// is one command, executed at once (on a server with appendfsync always,
// one fsync; a pipeline of one script per item, read 16KB at a time, costs
// one per read). Which keys go together: on one server, all of them; on
// Redis Cluster, those of one hash slot, since a script's keys must share
// one (an intent's two keys do; intents of different ids rarely do, unless
// the key prefix holds a hash tag of its own). Items alone in their slot go
// as the single call's script. All the calls of a batch go in one pipeline,
// one round trip: go-redis's cluster pipeline sends each node the calls of
// its slots, to every node at once, and follows MOVED and ASK redirections
// call by call, so on a cluster a batch is one round trip to each node that
// holds any of its intents, and a node that fails fails only its own items.
// A client that is neither (a Ring, say) gets one script per item, in one
// pipeline: its shards are its own.
//
// The store's limit: a call carries at most WithBatch's size items, and at
// most 1MiB of arguments, past its first item; a pipeline at most
// WithBatch's size calls; and a call carrying more than 1MiB (a big result)
// goes on its own, after the pipelines, as a single call does: a server
// refuses an argument over its proto-max-bulk-len by closing the
// connection, which would fail the pipeline's other calls, and one the
// network keeps failing must hold none of them back. A larger batch is
// split into calls and pipelines sent one after another.
//
// An intent id that repeats in a batch goes in a later round than its first
// occurrence (package idrounds), sent after it, so that the second finds
// what the first left, as a second caller would.
//
// Completions and releases are sent again while the server is unreachable
// or loading, until the batch's context ends, as Complete and Release are:
// their bodies recognize their own earlier effect. Claims are not: a claim
// whose reply was lost runs out by its lease.

// batchScript is a batch script: it runs body (a function of the keys K1,
// K2 and params) for each item, under pcall, with args (Lua expressions of
// the item's index i into ARGV), and replies with each item's answer, or
// its error in its place.
func batchScript(params, args, body string) *redis.Script {
	return redis.NewScript(`local function item(K1, K2, ` + params + `)` + body + `
end
local out = {}
for i = 1, #KEYS / 2 do
	local ok, r = pcall(item, KEYS[2*i-1], KEYS[2*i], ` + args + `)
	if ok then
		out[i] = r
	elseif type(r) == 'table' and r.err then
		out[i] = r
	else
		out[i] = redis.error_reply(tostring(r))
	end
end
return out`)
}

// The batch scripts. KEYS: each item's record and marker, in turn. ARGV:
// claims, the marker's ms, then each item's call, token and lease ms;
// completions, each item's token, tokenPrefix(token), result and ttl ms;
// releases, each item's token. Each replies with a list of the single
// script's replies, an error in the place of an item that failed.
var (
	claimBatchScript    = batchScript("CALL, TOKEN, LEASE, MARKER", "ARGV[3*i-1], ARGV[3*i], ARGV[3*i+1], ARGV[1]", claimBody)
	completeBatchScript = batchScript("TOKEN, TOKENPREFIX, RESULT, TTL", "ARGV[4*i-3], ARGV[4*i-2], ARGV[4*i-1], ARGV[4*i]", completeBody)
	releaseBatchScript  = batchScript("TOKEN", "ARGV[i]", releaseBody)
)

// batchKind is what a batch of one kind sends: the single script, the batch
// script, and the arguments every item of a batch script shares (first),
// which a single call takes after its own.
type batchKind struct {
	single, batch *redis.Script
	shared        []any
	retry         bool // items whose error is transient are sent again
}

// batchItem is one item of a batch, and its answer.
type batchItem struct {
	id    string
	keys  []string
	args  []any // the item's own arguments
	reply any
	err   error
}

// unit is one script call: a single item, or several of one slot in a
// batch script.
type unit struct {
	items []int
	cmd   *redis.Cmd
}

// sendBatch answers items (those at idx, in batch order) as the kind says.
func (s *Store) sendBatch(ctx context.Context, kind batchKind, items []batchItem, idx []int) {
	for _, round := range idrounds.Split(idx, func(i int) string { return items[i].id }) {
		pipelined, big := s.units(items, round)
		limit := max(s.batchSize, 1)
		for lo := 0; lo < len(pipelined); lo += limit {
			s.sendUnits(ctx, kind, items, pipelined[lo:min(lo+limit, len(pipelined))])
		}
		for _, u := range big {
			s.sendUnits(ctx, kind, items, []*unit{u})
		}
	}
}

// units groups round's items into script calls: items over 1MiB alone (big,
// sent last), the others by the slot their keys share where the client
// allows several in one script, in calls within the store's limit.
func (s *Store) units(items []batchItem, round []int) (pipelined, big []*unit) {
	groups := map[int][]int{}
	var order []int // groups in the order of their first item
	_, cluster := s.rdb.(*redis.ClusterClient)
	_, single := s.rdb.(*redis.Client)
	for _, i := range round {
		it := &items[i]
		if size(it.keys, it.args) > maxPipelined {
			big = append(big, &unit{items: []int{i}})
			continue
		}
		var g int
		switch {
		case cluster:
			g = keySlot(it.keys[0])
		case single:
			g = 0
		default:
			pipelined = append(pipelined, &unit{items: []int{i}})
			continue
		}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], i)
	}
	limit := max(s.batchSize, 1)
	for _, g := range order {
		idx := groups[g]
		for lo := 0; lo < len(idx); {
			hi, n := lo+1, size(items[idx[lo]].keys, items[idx[lo]].args)
			for hi < len(idx) && hi-lo < limit {
				m := size(items[idx[hi]].keys, items[idx[hi]].args)
				if n+m > maxPipelined {
					break
				}
				n += m
				hi++
			}
			pipelined = append(pipelined, &unit{items: idx[lo:hi]})
			lo = hi
		}
	}
	return pipelined, big
}

// sendUnits sends units in one pipeline (a unit alone as a plain script
// run), answers their items, and sends again, while the kind retries, the
// units whose error is transient, until ctx ends.
func (s *Store) sendUnits(ctx context.Context, kind batchKind, items []batchItem, units []*unit) {
	backoff := 10 * time.Millisecond
	for {
		if err := ctx.Err(); err != nil {
			for _, u := range units {
				s.answer(kind, items, u, failed(ctx, err))
			}
			return
		}
		s.pipelineOnce(ctx, kind, items, units)
		var again []*unit
		for _, u := range units {
			if err := u.cmd.Err(); kind.retry && err != nil && transient(err) {
				again = append(again, u)
				continue
			}
			s.answer(kind, items, u, u.cmd)
		}
		if len(again) == 0 {
			return
		}
		units = again
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			for _, u := range units {
				s.answer(kind, items, u, failed(ctx, fmt.Errorf("%w (gave up retrying: %w)", u.cmd.Err(), context.Cause(ctx))))
			}
			return
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// call is a unit's script, keys and arguments.
func (u *unit) call(kind batchKind, items []batchItem) (*redis.Script, []string, []any) {
	if len(u.items) == 1 {
		it := &items[u.items[0]]
		return kind.single, it.keys, append(append([]any(nil), it.args...), kind.shared...)
	}
	keys := make([]string, 0, 2*len(u.items))
	// args is made at its size: grown by append, it cost the client 4% of
	// the bytes it allocated in Serve.
	args := make([]any, 0, len(kind.shared)+len(u.items)*len(items[u.items[0]].args))
	args = append(args, kind.shared...)
	for _, i := range u.items {
		keys = append(keys, items[i].keys...)
		args = append(args, items[i].args...)
	}
	return kind.batch, keys, args
}

// pipelineOnce sends units once, in one pipeline, and runs again through
// Run (which loads the script) those the server did not have the script
// for: they did not run.
func (s *Store) pipelineOnce(ctx context.Context, kind batchKind, items []batchItem, units []*unit) {
	s.batchTrips.Add(1)
	for _, u := range units {
		s.batchItems.Add(int64(len(u.items)))
	}
	if len(units) == 1 {
		script, keys, args := units[0].call(kind, items)
		units[0].cmd = script.Run(ctx, s.rdb, keys, args...)
		return
	}
	pipe := s.rdb.Pipeline()
	for _, u := range units {
		script, keys, args := u.call(kind, items)
		u.cmd = script.EvalSha(ctx, pipe, keys, args...)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
	for _, u := range units {
		if err := u.cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			script, keys, args := u.call(kind, items)
			u.cmd = script.Run(ctx, s.rdb, keys, args...)
		}
	}
}

// answer gives each item of u its reply from cmd: a single script's reply,
// or its place in a batch script's.
func (s *Store) answer(kind batchKind, items []batchItem, u *unit, cmd *redis.Cmd) {
	if len(u.items) == 1 {
		it := &items[u.items[0]]
		it.reply, it.err = cmd.Val(), cmd.Err()
		return
	}
	replies, err := cmd.Slice()
	if err == nil && len(replies) != len(u.items) {
		err = fmt.Errorf("the batch script replied %d answers for %d items", len(replies), len(u.items))
	}
	for k, i := range u.items {
		it := &items[i]
		if err != nil {
			it.reply, it.err = nil, err
			continue
		}
		if e, ok := replies[k].(error); ok {
			it.reply, it.err = nil, e
			continue
		}
		it.reply, it.err = replies[k], nil
	}
}

// failed is a command that failed with err before it was sent.
func failed(ctx context.Context, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(err)
	return cmd
}

// ClaimBatch implements effector.DedupStore.
func (s *Store) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	items := make([]batchItem, len(reqs))
	tokens := make([]string, len(reqs))
	var idx []int
	var lease boxed
	for i, r := range reqs {
		if s.err != nil {
			out[i] = effector.ClaimOutcome{Err: s.err}
			continue
		}
		if r.Lease <= 0 {
			out[i] = effector.ClaimOutcome{Err: fmt.Errorf("redisstore: claiming intent %q for a lease of %v: want a positive duration", r.IntentID, r.Lease)}
			continue
		}
		ms, _ := millis("lease", r.Lease)
		var err error
		if tokens[i], err = s.newToken(); err != nil {
			out[i] = effector.ClaimOutcome{Err: err}
			continue
		}
		items[i] = batchItem{id: r.IntentID, keys: s.keys(r.IntentID), args: []any{appendCall(nil, r.Call), tokens[i], lease.of(ms)}}
		idx = append(idx, i)
	}
	kind := batchKind{single: claimScript, batch: claimBatchScript, shared: []any{s.attemptMemory.Milliseconds()}}
	s.sendBatch(ctx, kind, items, idx)
	for _, i := range idx {
		it := &items[i]
		if it.err != nil {
			out[i] = effector.ClaimOutcome{Err: fmt.Errorf("redisstore: claiming intent %q: %w", reqs[i].IntentID, it.err)}
			continue
		}
		c, err := s.claimReply(reqs[i].IntentID, it.keys[0], tokens[i], it.reply)
		out[i] = effector.ClaimOutcome{Claim: c, Err: err}
	}
}

// CompleteBatch implements effector.DedupStore.
func (s *Store) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	items := make([]batchItem, len(reqs))
	var idx []int
	var ttl boxed
	for i, r := range reqs {
		if s.err != nil {
			errs[i] = s.err
			continue
		}
		if r.TTL <= 0 {
			errs[i] = fmt.Errorf("redisstore: completing intent %q with a result ttl of %v: want a positive duration", r.IntentID, r.TTL)
			continue
		}
		ms, _ := millis("result ttl", r.TTL)
		items[i] = batchItem{id: r.IntentID, keys: s.keys(r.IntentID), args: []any{r.Token, tokenPrefix(r.Token), r.Result, ttl.of(ms)}}
		idx = append(idx, i)
	}
	s.sendBatch(ctx, batchKind{single: completeScript, batch: completeBatchScript, retry: true}, items, idx)
	for _, i := range idx {
		errs[i] = owned(&items[i], "completing", reqs[i].IntentID)
	}
}

// ReleaseBatch implements effector.DedupStore.
func (s *Store) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	items := make([]batchItem, len(reqs))
	var idx []int
	for i, r := range reqs {
		if s.err != nil {
			errs[i] = s.err
			continue
		}
		items[i] = batchItem{id: r.IntentID, keys: s.keys(r.IntentID), args: []any{r.Token}}
		idx = append(idx, i)
	}
	s.sendBatch(ctx, batchKind{single: releaseScript, batch: releaseBatchScript, retry: true}, items, idx)
	for _, i := range idx {
		errs[i] = owned(&items[i], "releasing", reqs[i].IntentID)
	}
}

// boxed is a number as an argument (an interface value), made once for a
// batch whose items share it, as their leases and ttls mostly do: boxing
// each item's allocated.
type boxed struct {
	n   int64
	arg any
}

func (b *boxed) of(n int64) any {
	if b.arg == nil || b.n != n {
		b.n, b.arg = n, n
	}
	return b.arg
}

// owned reads a completion's or release's answer: 1 when the token owned
// the claim, 0 when it did not (ErrNotOwner).
func owned(it *batchItem, doing, intentID string) error {
	if it.err != nil {
		return fmt.Errorf("redisstore: %s intent %q: %w", doing, intentID, it.err)
	}
	if n, ok := it.reply.(int64); !ok || n != 1 {
		if !ok {
			return fmt.Errorf("redisstore: %s intent %q: the script replied %v", doing, intentID, it.reply)
		}
		return fmt.Errorf("redisstore: %s intent %q: %w", doing, intentID, effector.ErrNotOwner)
	}
	return nil
}
