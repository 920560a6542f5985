package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
)

var _ effector.BudgetStore = (*Store)(nil)

// Budgets. A budget key's uses are a sorted set, each intent id scored by
// when its use stops counting (ms, the server's clock), beside a hash of its
// name and limit: the prefix, "{b:", the use's group and "}", then ":" and
// the key (":meta" after it for the hash). The group is a hash tag: an
// intent's uses (one tool, one entity) share a slot, so one script counts
// them all at once, also on a Redis Cluster.

// budgetKeys are the sorted set and the hash of u.
func (s *Store) budgetKeys(u effector.BudgetUse) (set, meta string) {
	set = s.prefix + "{b:" + u.Group + "}:" + u.Key
	return set, set + ":meta"
}

// admitScript counts ARGV[1] against every budget with room, all or none,
// on the server's clock: KEYS are each budget's set and hash, ARGV after the
// id each budget's limit, window (ms) and name. It replies {0, 0} when the
// intent is counted under every key (or already was), else {i, ms}: the
// 1-based budget with no room and when its first use stops counting.
var admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = ARGV[1]
local n = #KEYS / 2
local counted = {}
for i = 1, n do
	local set = KEYS[2 * i - 1]
	redis.call('ZREMRANGEBYSCORE', set, '-inf', now)
	if redis.call('ZSCORE', set, id) then
		counted[i] = true
	elseif redis.call('ZCARD', set) >= tonumber(ARGV[3 * i - 1]) then
		local first = redis.call('ZRANGE', set, 0, 0, 'WITHSCORES')
		return {i, tonumber(first[2] or now)}
	end
end
for i = 1, n do
	if not counted[i] then
		local set, meta = KEYS[2 * i - 1], KEYS[2 * i]
		local win = tonumber(ARGV[3 * i])
		redis.call('ZADD', set, now + win, id)
		redis.call('HSET', meta, 'key', ARGV[3 * i + 1], 'limit', ARGV[3 * i - 1])
		if redis.call('PTTL', set) < win then
			redis.call('PEXPIRE', set, win)
			redis.call('PEXPIRE', meta, win)
		end
	end
end
return {0, 0}`)

// ClaimAdmit implements effector.BudgetStore: the claim, then, when it
// claims, the count in one script on the budgets' slot. An intent claimed
// and not counted yet (its owner died in between) is counted by its next
// claim, before it runs.
func (s *Store) ClaimAdmit(ctx context.Context, intentID string, call effector.Call, lease time.Duration, uses []effector.BudgetUse) (effector.Claim, effector.Admission, error) {
	adm := effector.Admission{Refused: -1}
	c, err := s.Claim(ctx, intentID, call, lease)
	if err != nil || c.State != effector.Claimed || len(uses) == 0 {
		return c, adm, err
	}
	keys := make([]string, 0, 2*len(uses))
	args := make([]any, 0, 1+3*len(uses))
	args = append(args, intentID)
	for _, u := range uses {
		if u.Group != uses[0].Group {
			return effector.Claim{}, adm, fmt.Errorf("redisstore: counting intent %q: its budgets are of groups %q and %q: an intent's budgets share one group (one tool, one entity)", intentID, uses[0].Group, u.Group)
		}
		set, meta := s.budgetKeys(u)
		win, err := millis("budget window", u.Window)
		if err != nil {
			return effector.Claim{}, adm, err
		}
		keys = append(keys, set, meta)
		args = append(args, u.Limit, win, u.Key)
	}
	var reply []any
	err = retry(ctx, func() error {
		var err error
		reply, err = admitScript.Run(ctx, s.rdb, keys, args...).Slice()
		return err
	})
	if err != nil {
		return effector.Claim{}, adm, fmt.Errorf("redisstore: counting intent %q against its budgets: %w", intentID, err)
	}
	var i, ms int64
	if len(reply) == 2 {
		i, _ = reply[0].(int64)
		ms, _ = reply[1].(int64)
	}
	if len(reply) != 2 || i < 0 || int(i) > len(uses) {
		return effector.Claim{}, adm, fmt.Errorf("redisstore: counting intent %q: the budget script replied %v", intentID, reply)
	}
	if i > 0 {
		adm = effector.Admission{Refused: int(i - 1), FreesAt: time.UnixMilli(ms)}
	}
	return c, adm, nil
}

// BudgetUsage implements effector.BudgetStore with SCAN over the budgets'
// keys (on every master of a cluster), in the server's order.
func (s *Store) BudgetUsage(ctx context.Context, fn func(effector.BudgetUsage) error) error {
	scan := func(ctx context.Context, c redis.Cmdable) error {
		t, err := c.Time(ctx).Result()
		if err != nil {
			return fmt.Errorf("redisstore: listing budgets: %w", err)
		}
		now := strconv.FormatInt(t.UnixMilli(), 10)
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, s.prefix+"{b:*", inspectPage).Result()
			if err != nil {
				return fmt.Errorf("redisstore: listing budgets: %w", err)
			}
			for _, k := range keys {
				if strings.HasSuffix(k, ":meta") {
					continue
				}
				u, ok, err := s.usage(ctx, c, k, now)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
				if err := fn(u); err != nil {
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

// usage reads the budget whose set is key, in one pipeline; ok is false
// when it counts no use at now (ms).
func (s *Store) usage(ctx context.Context, c redis.Cmdable, key, now string) (effector.BudgetUsage, bool, error) {
	pipe := c.Pipeline()
	count := pipe.ZCount(ctx, key, "("+now, "+inf")
	first := pipe.ZRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: "(" + now, Max: "+inf", Count: 1})
	last := pipe.ZRevRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{Min: "(" + now, Max: "+inf", Count: 1})
	meta := pipe.HGetAll(ctx, key+":meta")
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return effector.BudgetUsage{}, false, fmt.Errorf("redisstore: reading budget %q: %w", key, err)
	}
	n := int(count.Val())
	if n == 0 || len(first.Val()) == 0 || len(last.Val()) == 0 {
		return effector.BudgetUsage{}, false, nil
	}
	m := meta.Val()
	limit, _ := strconv.Atoi(m["limit"])
	name := m["key"]
	if name == "" {
		name = key
	}
	return effector.BudgetUsage{Key: name, Used: n, Limit: limit,
		FreesAt: time.UnixMilli(int64(first.Val()[0].Score)), Until: time.UnixMilli(int64(last.Val()[0].Score))}, true, nil
}
