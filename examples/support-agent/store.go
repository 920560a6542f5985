package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/effector/redisstore"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
)

// openStore opens the effector's dedup store that -store names: a
// postgres:// or postgresql:// URL (the tables are migrated first), a
// redis:// URL, or else a SQLite file path; empty means effects.db in the
// state directory. It returns the store, what to call it in the trace, the
// store as `toolreg approvals` takes it (a URL's password left out), and
// how to close it.
func openStore(ctx context.Context, spec, state string) (effector.DedupStore, string, string, func(), error) {
	switch {
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		pool, err := pgxpool.New(ctx, spec)
		if err != nil {
			return nil, "", "", nil, fmt.Errorf("-store %s: %w", redact(spec), err)
		}
		if err := pgstore.Migrate(ctx, pool); err != nil {
			pool.Close()
			return nil, "", "", nil, err
		}
		s, err := pgstore.Open(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, "", "", nil, err
		}
		return s, redact(spec) + " (Postgres)", redact(spec), func() { s.Close(); pool.Close() }, nil
	case strings.HasPrefix(spec, "redis://"), strings.HasPrefix(spec, "rediss://"):
		opts, err := redis.ParseURL(spec)
		if err != nil {
			return nil, "", "", nil, fmt.Errorf("-store %s: %w", redact(spec), err)
		}
		rdb := redis.NewClient(opts)
		s, err := redisstore.Open(ctx, rdb)
		if err != nil {
			rdb.Close()
			return nil, "", "", nil, err
		}
		return s, redact(spec) + " (Redis)", redact(spec), func() { rdb.Close() }, nil
	case strings.Contains(spec, "://"):
		return nil, "", "", nil, fmt.Errorf("-store %s: want a postgres://, postgresql:// or redis:// URL, or a SQLite file path", redact(spec))
	}
	path := spec
	if path == "" {
		if err := os.MkdirAll(state, 0o755); err != nil {
			return nil, "", "", nil, fmt.Errorf("state directory: %w", err)
		}
		path = filepath.Join(state, "effects.db")
	}
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		return nil, "", "", nil, err
	}
	return s, path + " (SQLite)", path, func() { s.Close() }, nil
}

// redact drops the password from a URL for the trace.
func redact(spec string) string {
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return spec
	}
	if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
		userinfo := rest[:at]
		if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
			rest = user + ":xxxxx" + rest[at:]
		}
	}
	return scheme + "://" + rest
}
