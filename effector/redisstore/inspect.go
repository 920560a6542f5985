package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
)

var _ effector.Inspector = (*Store)(nil)

// inspectPage is the SCAN count of one page of Records.
const inspectPage = 500

// Records implements effector.Inspector with SCAN over the store's keys (on
// every master of a cluster), a page at a time, each page's records read in
// one pipeline: the order is the server's, not the ids'. A claim whose
// lease ran out leaves only its attempt marker: that is a RecordUnknown.
// Results expire by themselves in Redis, so there is no RecordExpired.
func (s *Store) Records(ctx context.Context, fn func(effector.Record) error) error {
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, s.prefix+"{i:*", inspectPage).Result()
			if err != nil {
				return fmt.Errorf("redisstore: listing records: %w", err)
			}
			for _, k := range keys {
				id, marker, ok := s.idOf(k)
				if !ok {
					continue
				}
				r, found, err := s.Record(ctx, id)
				if err != nil {
					return err
				}
				// A record with a marker too is reported once, for its record key.
				if !found || marker && r.State != effector.RecordUnknown {
					continue
				}
				if err := fn(r); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	}
	return scan(ctx, s.rdb)
}

// idOf returns the intent id of a record's or marker's key.
func (s *Store) idOf(key string) (id string, marker bool, ok bool) {
	rest, ok := strings.CutPrefix(key, s.prefix+"{i:")
	if !ok {
		return "", false, false
	}
	if r, ok := strings.CutSuffix(rest, "}:attempt"); ok {
		return r, true, true
	}
	if r, ok := strings.CutSuffix(rest, "}"); ok {
		return r, false, true
	}
	return "", false, false
}

// Record implements effector.Inspector: the record, its lease and its
// attempt marker, in one pipeline.
func (s *Store) Record(ctx context.Context, id string) (effector.Record, bool, error) {
	ks := s.keys(id)
	var (
		recV  *redis.StringCmd
		ttl   *redis.DurationCmd
		markV *redis.StringCmd
	)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		recV = p.Get(ctx, ks[0])
		ttl = p.PTTL(ctx, ks[0])
		markV = p.Get(ctx, ks[1])
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return effector.Record{}, false, fmt.Errorf("redisstore: reading record %q: %w", id, err)
	}
	r := effector.Record{ID: id, Attempts: 1}
	if m, err := markV.Bytes(); err == nil {
		if c, rest, ok := parseCall(m); ok {
			r.Tool = c.Tool
			if n, err := strconv.Atoi(string(rest)); err == nil {
				r.Attempts = n
			}
			if len(m) > 0 && m[0] == claimTag[0] {
				r.State = effector.RecordUnknown
			}
		}
	}
	v, err := recV.Bytes()
	if errors.Is(err, redis.Nil) {
		if r.State == effector.RecordUnknown {
			return r, true, nil
		}
		return effector.Record{}, false, nil
	}
	if c, _, ok := parseCall(v); ok {
		r.Tool = c.Tool
	}
	if d := ttl.Val(); d > 0 {
		r.Deadline = time.Now().Add(d)
	}
	if res, ok := parseDone(v); ok {
		r.State, r.Result = effector.RecordDone, res
	} else if res, st, ok := parseOlder(string(v)); ok && st == effector.Done {
		r.State, r.Result = effector.RecordDone, res
	} else {
		r.State = effector.RecordInFlight
	}
	return r, true, nil
}

// resolveScript stores a done record for an intent whose claim lapsed (no
// record, a claim's attempt marker) and deletes the marker. It replies 1, or
// 'd', 'c' or 'n' for a record that is done, leased, or none.
// ARGV: tokenPrefix, result, ttl ms.
var resolveScript = redis.NewScript(lua + `
local v = redis.call('GET', KEYS[1])
if v then
	return string.sub(v, 1, 1)
end
local m = redis.call('GET', KEYS[2])
if not m or not wellformed(m) or string.sub(m, 1, 1) ~= 'c' then
	return 'n'
end
local mtag, mcall = split(m)
redis.call('SET', KEYS[1], 'd' .. mcall .. ARGV[1] .. ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
return 1`)

// Resolve implements effector.Inspector in one script.
func (s *Store) Resolve(ctx context.Context, id string, result []byte, ttl time.Duration) error {
	ms, err := millis("ttl", ttl)
	if err != nil {
		return err
	}
	v, err := resolveScript.Run(ctx, s.rdb, s.keys(id), tokenPrefix("resolved"), result, ms).Result()
	if err != nil {
		return fmt.Errorf("redisstore: resolving %q: %w", id, err)
	}
	switch v {
	case int64(1):
		return nil
	case "d":
		return fmt.Errorf("%w: intent %q is done", effector.ErrNotResolvable, id)
	case "c":
		return fmt.Errorf("%w: intent %q is still leased", effector.ErrNotResolvable, id)
	}
	return fmt.Errorf("%w: intent %q has no record", effector.ErrNotResolvable, id)
}

// Purge implements effector.Inspector: Redis expires results and markers by
// itself, so there is nothing to delete.
func (s *Store) Purge(context.Context, time.Duration) (int64, error) { return 0, nil }
