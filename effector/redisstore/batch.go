package redisstore

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/internal/groupcommit"
)

// Group commit: concurrent claims, completions and releases share round
// trips. Each is one script call queued on one of the store's groups
// (package internal/groupcommit), its lanes: the first free one, else the
// one with the fewest calls. The first caller to find no batch in progress on
// its lane leads: it sends every call queued there (up to the batch size) in
// one pipeline, on a connection of the client's pool, and calls arriving
// meanwhile wait for the lane's next. So a caller sends its call at once,
// alone, while a lane is free, and batches form only when every lane has a
// pipeline out; each lane has at most one, so the server works on one lane's
// pipeline while the client reads another's replies and writes a third.
// Each script runs atomically on its own and replies on its own: one call's
// error is that call's alone, and a pipeline whose connection fails fails
// its own calls only. With appendfsync always, Redis replies to a write only
// once it is in the append-only file, so a caller returns only after its own
// record is durable, and one fsync of the server covers every pipeline it
// read in one pass of its event loop.

// DefaultBatchSize is the most script calls one pipeline sends; WithBatch
// sets another.
const DefaultBatchSize = 128

// DefaultLanes is how many pipelines a store has out at once, unless
// WithLanes sets another number. One: on a 2-core host with redis-server on
// loopback (BenchmarkProcessWorkersLanes, delay=0s), where the client's and
// the server's CPU is the limit, 2 lanes ran 10-25% slower than 1 at 16
// workers and no faster at 64, and on a durable server (appendfsync always)
// the figures did not tell 1 and 2 apart. Behind a proxy delaying each
// request by 200µs, as a network would, 2 lanes ran 10-40% faster and 4 lanes
// 15-60%: set WithLanes for a server across a network.
const DefaultLanes = 1

// WithBatch sets the most calls one pipeline sends; 1 sends each call on its
// own, at once, as a store without group commit does (lanes do not apply).
// It is also the most items one call of the batch forms carries
// (batchforms.go): a larger batch is split into calls.
func WithBatch(size int) Option {
	return func(s *Store) { s.batchSize = size }
}

// WithLanes sets how many pipelines a store may have out at once, each on a
// connection of its own (the client's pool must hold that many; go-redis's
// default holds 10 per CPU). Fewer lanes make bigger pipelines, which cost
// the client and the server less CPU per call; more keep the server busy
// while a pipeline is on the network. A number under 1 means DefaultLanes.
func WithLanes(n int) Option {
	return func(s *Store) { s.nlanes = n }
}

// lane is one group of a store, with the calls in it (queued or out).
type lane struct {
	group *groupcommit.Group[scriptCall]
	calls atomic.Int32
}

// lane picks the lane a call joins and counts the call in it: the first with
// no call, from a rotating start, taken atomically so that two calls never
// pick one free lane at once and a call is sent at once while a lane is
// free; else the one with the fewest calls.
func (s *Store) lane() *lane {
	n := len(s.lanes)
	start := int(s.nextLane.Add(1) % uint32(n))
	var best *lane
	fewest := int32(0)
	for i := range n {
		l := s.lanes[(start+i)%n]
		if l.calls.CompareAndSwap(0, 1) {
			return l
		}
		if c := l.calls.Load(); best == nil || c < fewest {
			best, fewest = l, c
		}
	}
	best.calls.Add(1)
	return best
}

// batches and calls are how many pipelines the store's lanes sent and how
// many calls they held, for benchmarks and tests.
func (s *Store) batches() (n int64) {
	for _, l := range s.lanes {
		n += l.group.Batches.Load()
	}
	return n
}

func (s *Store) calls() (n int64) {
	for _, l := range s.lanes {
		n += l.group.Ops.Load()
	}
	return n
}

// maxPipelined is the most bytes of keys and arguments a call may carry to
// go in a pipeline; a bigger one (a big result) is sent on its own. A server
// refuses an argument longer than its proto-max-bulk-len, which is at least
// 1MiB, by closing the connection, and with it every call of the pipeline
// (those before it having run), again on each retry of a completion.
const maxPipelined = 1 << 20

// size is how many bytes of keys and arguments a call carries, at least.
func size(keys []string, args []any) (n int) {
	for _, k := range keys {
		n += len(k)
	}
	for _, a := range args {
		switch a := a.(type) {
		case string:
			n += len(a)
		case []byte:
			n += len(a)
		}
	}
	return n
}

// scriptCall is one script run; cmd holds its reply once done.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// run runs script through one of the store's lanes and returns its reply.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if len(s.lanes) == 0 || size(keys, args) > maxPipelined { // WithBatch(1), or a big call
		if err := ctx.Err(); err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		return script.Run(ctx, s.rdb, keys, args...)
	}
	l := s.lane()
	o := l.group.Do(ctx, scriptCall{script: script, keys: keys, args: args})
	l.calls.Add(-1)
	if o.In.cmd == nil { // the caller gave up before its batch
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(o.Err)
		return cmd
	}
	return o.In.cmd
}

func (s *Store) runBatch(batch []*groupcommit.Op[scriptCall]) {
	if len(batch) == 1 {
		o := batch[0]
		if err := o.Ctx.Err(); err != nil {
			o.Err = err
			return
		}
		o.In.cmd = o.In.script.Run(o.Ctx, s.rdb, o.In.keys, o.In.args...)
		return
	}
	live := groupcommit.Live(batch)
	if len(live) == 0 {
		return
	}
	// No caller may end the pipeline: it carries the other callers' calls.
	ctx, cancel := groupcommit.Context(live)
	defer cancel()
	pipe := s.rdb.Pipeline()
	for _, o := range live {
		o.In.cmd = o.In.script.EvalSha(ctx, pipe, o.In.keys, o.In.args...)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
	for _, o := range live {
		if o.In.cmd != nil && o.In.cmd.Err() != nil && strings.HasPrefix(o.In.cmd.Err().Error(), "NOSCRIPT") {
			// The server has not cached the script yet: Run loads it.
			o.In.cmd = o.In.script.Run(ctx, s.rdb, o.In.keys, o.In.args...)
		}
	}
}
