package redisstore

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/internal/groupcommit"
)

// Group commit: concurrent claims, completions and releases share one round
// trip. Each is one script call queued on the store's group; the first
// caller to find no batch in progress sends every queued call (up to
// DefaultBatchSize) in one pipeline, and calls arriving meanwhile wait for the
// next. A caller alone sends its call at once, as without batching. Each
// script runs atomically on its own and replies on its own: one call's error
// is that call's alone. With appendfsync always, Redis replies to a write only
// once it is in the append-only file, so a caller returns only after its own
// record is durable, and one fsync of the server covers a whole pipeline.

// DefaultBatchSize is the most script calls one pipeline sends; WithBatch
// sets another.
const DefaultBatchSize = 128

// WithBatch sets the most calls one pipeline sends; 1 sends each call on its
// own.
func WithBatch(size int) Option {
	return func(s *Store) { s.batchSize = size }
}

// scriptCall is one script run; cmd holds its reply once done.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// run runs script through the store's group and returns its reply.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	o := s.group.Do(ctx, scriptCall{script: script, keys: keys, args: args})
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
