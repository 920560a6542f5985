package redisstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/groupcommit"
)

// Store is an effector.DedupStore in Redis. It is safe for concurrent use, and
// any number of Stores on any number of hosts may share one Redis or one
// Redis Cluster.
type Store struct {
	rdb           redis.UniversalClient
	prefix        string
	newToken      func() (string, error)
	attemptMemory time.Duration
	err           error        // a prefix the store refuses, returned by every call
	unpersistedOK bool         // WithUnpersistedServer
	logger        *slog.Logger // WithLogger
	batchSize     int          // WithBatch
	nlanes        int          // WithLanes
	lanes         []*lane      // none with WithBatch(1): see batch.go
	nextLane      atomic.Uint32
	// batchTrips and batchItems count the round trips the batch forms made
	// (pipelines, and calls sent alone) and the items they carried, for
	// benchmarks (batchforms.go).
	batchTrips, batchItems atomic.Int64
}

var _ effector.DedupStore = (*Store)(nil)

// Option configures New.
type Option func(*Store)

// WithKeyPrefix sets the prefix of every key the store writes. An intent's
// record is the prefix followed by "{i:", its id and "}"; its attempt marker
// is that key followed by ":attempt". The braces are a Redis Cluster hash tag:
// an intent's two keys always share a slot, and intents spread over the
// cluster by id. A prefix with a tag of its own, such as "{dedup}:", puts
// every intent in that tag's slot, on one node. The store refuses a prefix
// whose first "{" is directly followed by "}": Redis ignores an empty tag and
// hashes each key whole, which would part an intent's keys. Default:
// "toolreg:effector:dedup:".
func WithKeyPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// WithTokens sets how claim tokens are made. Tokens must be unique across
// every worker sharing the Redis. Default: 16 bytes from crypto/rand, hex
// encoded. Tests inject predictable tokens.
func WithTokens(newToken func() (string, error)) Option {
	return func(s *Store) { s.newToken = newToken }
}

// WithAttemptMemory sets how long the store remembers that an intent was
// claimed and neither completed nor released, which is how a later claim
// learns it is Reclaimed (an earlier owner may have run the tool). Keep it
// longer than intents live. Default (and what a value under 1ms means): 24h.
func WithAttemptMemory(d time.Duration) Option {
	return func(s *Store) { s.attemptMemory = d }
}

// New returns a store using rdb, which the caller owns and closes. It does not
// check that the server persists writes: Open does.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: "toolreg:effector:dedup:", newToken: randomToken, attemptMemory: 24 * time.Hour, batchSize: DefaultBatchSize}
	for _, o := range opts {
		o(s)
	}
	if s.nlanes < 1 {
		s.nlanes = DefaultLanes
	}
	if s.batchSize > 1 {
		s.lanes = make([]*lane, s.nlanes)
		for i := range s.lanes {
			s.lanes[i] = &lane{group: groupcommit.New(s.batchSize, s.runBatch)}
		}
	}
	if s.attemptMemory < time.Millisecond {
		s.attemptMemory = 24 * time.Hour
	}
	if i := strings.IndexByte(s.prefix, '{'); i >= 0 && strings.HasPrefix(s.prefix[i:], "{}") {
		s.err = fmt.Errorf(`redisstore: key prefix %q holds an empty hash tag "{}" before any other, so Redis Cluster would hash an intent's record and attempt marker to different slots; remove the "{}" from WithKeyPrefix`, s.prefix)
	}
	return s
}

func randomToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("redisstore: making a claim token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// The values a key holds, told apart by the first byte, which is followed
// by the call the intent was claimed for (see appendCall).
//
//	record:  "c" call token                          the owner's live claim
//	         "d" call len(token) ":" token result    the terminal record
//	marker:  "c" call attempts                       claimed, not completed nor released
//	         "r" call attempts                       released, earlier attempts counted
const (
	claimTag = "c"
	doneTag  = "d"
)

// key is the key of intentID's record. The id goes in a hash tag after the
// prefix, so the tag that decides the slot always ends inside this key: it is
// the prefix's own, or it starts at "{i:" (never empty) and ends at the first
// "}" of the id or at the last one.
func (s *Store) key(intentID string) string {
	return s.prefix + "{i:" + intentID + "}"
}

// keys are the keys the scripts take for intentID: its record, then its
// attempt marker. The marker is set when a claim is taken, deleted by
// Complete, and counted down by Release, so a claim that finds it set
// follows an owner that vanished, and counts the attempts. It extends the
// record's key, so it shares its slot; it does not end in "}", as every
// record's key does, so it is never an intent's record.
//
// Both are one string: the record's key is the marker's first part.
func (s *Store) keys(intentID string) []string {
	m := s.prefix + "{i:" + intentID + "}:attempt" // s.key(intentID) + ":attempt"
	return []string{m[:len(m)-len(":attempt")], m}
}

// appendCall appends the call in the form the scripts read: the tool name's
// length in one byte, the name, and the 32 bytes of the digest.
func appendCall(b []byte, c effector.Call) []byte {
	b = append(b, byte(len(c.Tool)))
	b = append(b, c.Tool...)
	return append(b, c.Digest[:]...)
}

// parseCall reads a value's call, after its tag byte, and returns the rest.
func parseCall(v []byte) (effector.Call, []byte, bool) {
	if len(v) < 2 {
		return effector.Call{}, nil, false
	}
	n := int(v[1])
	if len(v) < 2+n+32 {
		return effector.Call{}, nil, false
	}
	c := effector.Call{Tool: string(v[2 : 2+n])}
	copy(c.Digest[:], v[2+n:2+n+32])
	return c, v[2+n+32:], true
}

// tokenPrefix is the part of a done record after its call that names the
// completing owner's token, so that a Complete retried after a lost reply
// recognizes its own record (the same token and the same result).
func tokenPrefix(token string) string {
	return strconv.Itoa(len(token)) + ":" + token
}

// parseOlder reads a record of the version before records kept the call
// (the lua function older tells them apart the same way): "c" token, a claim
// of 32 hex digits, in flight until its lease ends, or "d32:" token result,
// a terminal record, done whatever call asks for it, as a SQLite record
// without a call is. A record of this version cannot look like either: a
// claim is longer than 33 bytes, and a done record's fourth byte is inside
// its tool name, which cannot hold ':'.
func parseOlder(v string) ([]byte, effector.ClaimState, bool) {
	switch {
	case len(v) == 33 && v[0] == claimTag[0] && isHex(v[1:]):
		return nil, effector.InFlight, true
	case len(v) >= 36 && strings.HasPrefix(v, doneTag+"32:") && isHex(v[4:36]):
		return []byte(v[36:]), effector.Done, true
	}
	return nil, 0, false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return len(s) > 0
}

// parseDone returns the result of a done record.
func parseDone(v []byte) ([]byte, bool) {
	if len(v) == 0 || v[0] != doneTag[0] {
		return nil, false
	}
	_, rest, ok := parseCall(v)
	if !ok {
		return nil, false
	}
	n, rest, ok := bytes.Cut(rest, []byte(":"))
	if !ok {
		return nil, false
	}
	l, err := strconv.Atoi(string(n))
	if err != nil || l < 0 || l > len(rest) {
		return nil, false
	}
	return rest[l:], true
}

// lua holds the functions the scripts share: split returns a value's tag,
// its call and the rest; digest a call's digest.
const lua = `
local function split(v)
	local n = string.byte(v, 2) or 0
	return string.sub(v, 1, 1), string.sub(v, 2, 2 + n + 32), string.sub(v, 3 + n + 32)
end
local function digest(call)
	return string.sub(call, -32)
end
local function older(v)
	return (#v == 33 and string.sub(v, 1, 1) == 'c' and string.find(v, '^c[0-9a-f]+$') ~= nil)
		or (#v >= 36 and string.sub(v, 1, 4) == 'd32:' and string.find(string.sub(v, 5, 36), '^[0-9a-f]+$') ~= nil)
end
local function wellformed(v)
	local n = string.byte(v, 2)
	local tag = string.sub(v, 1, 1)
	return n ~= nil and #v >= 2 + n + 32 and (tag == 'c' or tag == 'd' or tag == 'r')
end
`

// completeBody replaces the caller's claim with the done record, with the
// result's ttl as the key's expiry, if the key still holds exactly that claim.
// If it already holds this owner's done record, an earlier attempt of this
// same Complete succeeded and only its reply was lost: success again. It
// reads K1 and K2 (the record's and the marker's keys) and TOKEN,
// TOKENPREFIX (tokenPrefix(token)), RESULT, TTL (ms), which completeScript
// and completeBatchScript set. It reads the value as the lua function split
// does, inline: defining lua's functions on every call cost the server more
// than the rest of the script's Lua.
const completeBody = `
local v = redis.call('GET', K1)
if not v then
	return 0
end
local n = string.byte(v, 2) or 0
local tag, rest = string.sub(v, 1, 1), string.sub(v, 3 + n + 32)
if tag == 'c' and rest == TOKEN then
	redis.call('SET', K1, 'd' .. string.sub(v, 2, 2 + n + 32) .. TOKENPREFIX .. RESULT, 'PX', TTL)
	redis.call('DEL', K2)
	return 1
end
if tag == 'd' and rest == TOKENPREFIX .. RESULT then
	return 1
end
return 0`

// completeScript is one completion: completeBody with KEYS: record, marker;
// ARGV: token, tokenPrefix(token), result, ttl ms.
var completeScript = redis.NewScript(`local K1, K2, TOKEN, TOKENPREFIX, RESULT, TTL = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4]` + completeBody)

// releaseBody deletes the key if it still holds exactly the caller's
// claim, and counts its attempt off the marker. It reads K1, K2 and TOKEN.
const releaseBody = lua + `
local v = redis.call('GET', K1)
if not v then
	return 0
end
local tag, call, rest = split(v)
if tag ~= 'c' or rest ~= TOKEN then
	return 0
end
redis.call('DEL', K1)
local m = redis.call('GET', K2)
if m then
	local mtag, mcall, n = split(m)
	n = (tonumber(n) or 1) - 1
	if n <= 0 then
		redis.call('DEL', K2)
	else
		redis.call('SET', K2, 'r' .. mcall .. n, 'KEEPTTL')
	end
end
return 1`

// releaseScript is one release: releaseBody with KEYS: record, marker;
// ARGV: token.
var releaseScript = redis.NewScript(`local K1, K2, TOKEN = KEYS[1], KEYS[2], ARGV[1]` + releaseBody)

// transient reports whether err may pass if the call is tried again: the
// connection failed (the server restarts, a failover) or the server is still
// loading its data. Replies that refuse the command, and a closed client, are
// final.
func transient(err error) bool {
	if errors.Is(err, redis.ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		for _, p := range []string{"LOADING", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN", "READONLY"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true
}

// retry runs call until it succeeds, fails for good, or ctx ends. Every call
// it retries is safe to repeat: the scripts recognize their own earlier effect.
func retry(ctx context.Context, call func() error) error {
	backoff := 10 * time.Millisecond
	for {
		err := call()
		if err == nil || !transient(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up retrying: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// millis rounds d up to whole milliseconds, refusing non-positive durations.
func millis(what string, d time.Duration) (int64, error) {
	if d <= 0 {
		return 0, fmt.Errorf("redisstore: %s %v: want a positive duration", what, d)
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond), nil
}

// claimBody takes the claim if the key is free, setting the attempt
// marker, unless the record or the marker holds another call. It replies
// 1 when it claims a first attempt (a number, not a list: a list reply
// cost the server a microsecond an item in a batch), {1, reclaimed,
// attempts} when it claims a later one, {0, value} with the record it
// found, and {2, call} with the other call. A record holding this very
// claim (its token) is the effect of this call, sent again after its reply
// was lost: it replies claimed again. One round trip whatever it
// finds, atomic with the marker. It reads K1, K2 (the record's and the
// marker's keys) and CALL, TOKEN, LEASE (ms), MARKER (ms: how long the
// marker lives), which claimScript and claimBatchScript set.
//
// Most claims find neither key: that path comes first, before lua's
// functions are defined, which costs the server on every call, and it is
// two commands, not four: SET NX on the record, then on the marker, each
// of which reads its key and writes it only if it was free. (MGET would
// read both keys in one call, but it reads a key of another type as nil,
// and the claim would overwrite it. SET NX does not: a key of any type
// exists, and GET then fails on it.) A record that was free beside a
// marker that is set is deleted again before the marker is read, so the
// rest of the script starts from the keys as they were.
const claimBody = `
local v, m
if redis.call('SET', K1, 'c' .. CALL .. TOKEN, 'NX', 'PX', LEASE) then
	if redis.call('SET', K2, 'c' .. CALL .. '1', 'NX', 'PX', MARKER) then
		return 1
	end
	redis.call('DEL', K1)
	m = redis.call('GET', K2)
else
	v = redis.call('GET', K1)
end
` + lua + `
if v then
	if v == 'c' .. CALL .. TOKEN then
		-- This claim's own: it ran, its reply was lost, and the client sent
		-- it again (go-redis does on a failed connection). Its attempts are
		-- the marker's; whether the attempt before was released or ran out
		-- is not kept, so any earlier attempt counts as reclaimed.
		local attempts = 1
		m = redis.call('GET', K2)
		if m and wellformed(m) then
			local mtag, mcall, n = split(m)
			attempts = tonumber(n) or 1
		end
		if attempts > 1 then
			return {1, 1, attempts}
		end
		return 1
	end
	if older(v) or not wellformed(v) then
		return {0, v}
	end
	local tag, call = split(v)
	if digest(call) ~= digest(CALL) then
		return {2, call}
	end
	return {0, v}
end
local attempts, reclaimed = 1, 0
if m and wellformed(m) then
	local mtag, mcall, n = split(m)
	if digest(mcall) ~= digest(CALL) then
		return {2, mcall}
	end
	attempts = (tonumber(n) or 0) + 1
	if mtag == 'c' then
		reclaimed = 1
	end
elseif m and older(m) then
	-- an older version's owner claimed it and vanished
	attempts, reclaimed = 2, 1
end
redis.call('SET', K1, 'c' .. CALL .. TOKEN, 'PX', LEASE)
redis.call('SET', K2, 'c' .. CALL .. attempts, 'PX', MARKER)
return {1, reclaimed, attempts}`

// claimScript is one claim: claimBody with KEYS: record, marker; ARGV: call,
// token, lease ms, marker ms.
var claimScript = redis.NewScript(`local K1, K2, CALL, TOKEN, LEASE, MARKER = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4]` + claimBody)

// Claim takes intentID for lease unless the key holds a live claim
// (InFlight) or a result (Done), or the record or its attempt marker holds
// another call (Mismatch). It does not retry: a claim whose reply was lost
// runs out by its lease, and the next claim reports Reclaimed. A client that
// sends the script again itself (go-redis does, MaxRetries times, when a
// connection fails after sending) gets the claim its first run took:
// Claimed, not InFlight.
func (s *Store) Claim(ctx context.Context, intentID string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	if s.err != nil {
		return effector.Claim{}, s.err
	}
	ms, err := millis("lease", lease)
	if err != nil {
		return effector.Claim{}, err
	}
	token, err := s.newToken()
	if err != nil {
		return effector.Claim{}, err
	}
	keys := s.keys(intentID)
	reply, err := s.run(ctx, claimScript, keys, appendCall(nil, call), token, ms, s.attemptMemory.Milliseconds()).Result()
	if err != nil {
		return effector.Claim{}, fmt.Errorf("redisstore: claiming intent %q: %w", intentID, err)
	}
	return s.claimReply(intentID, keys[0], token, reply)
}

// claimReply reads the claim script's reply to the claim of intentID, at
// key, with token.
func (s *Store) claimReply(intentID, key, token string, r any) (effector.Claim, error) {
	// bad is made only when needed: formatting the reply on every claim
	// cost the client 6% of its CPU.
	bad := func() error {
		return fmt.Errorf("redisstore: claiming intent %q: the claim script replied %v", intentID, r)
	}
	if n, ok := r.(int64); ok && n == 1 {
		return effector.Claim{State: effector.Claimed, Token: token, Attempts: 1}, nil
	}
	reply, _ := r.([]any)
	if len(reply) < 2 {
		return effector.Claim{}, bad()
	}
	switch state, _ := reply[0].(int64); state {
	case 1:
		if len(reply) != 3 {
			return effector.Claim{}, bad()
		}
		reclaimed, _ := reply[1].(int64)
		attempts, _ := reply[2].(int64)
		return effector.Claim{State: effector.Claimed, Token: token, Reclaimed: reclaimed == 1, Attempts: int(attempts)}, nil
	case 2:
		v, _ := reply[1].(string)
		recorded, _, ok := parseCall([]byte("x" + v))
		if !ok {
			return effector.Claim{}, s.foreign(key, v)
		}
		return effector.Claim{State: effector.Mismatch, Recorded: recorded}, nil
	}
	v, _ := reply[1].(string)
	if res, state, ok := parseOlder(v); ok {
		return effector.Claim{State: state, Result: res}, nil
	}
	if res, ok := parseDone([]byte(v)); ok {
		return effector.Claim{State: effector.Done, Result: res}, nil
	}
	if _, _, ok := parseCall([]byte(v)); ok && v[0] == claimTag[0] {
		return effector.Claim{State: effector.InFlight}, nil
	}
	return effector.Claim{}, s.foreign(key, v)
}

func (s *Store) foreign(key, v string) error {
	return fmt.Errorf("redisstore: key %q holds %q, which this store did not write (or an older version wrote: let its intents finish first); choose another WithKeyPrefix", key, truncate([]byte(v)))
}

func truncate(v []byte) []byte {
	if len(v) > 32 {
		return v[:32]
	}
	return v
}

// Complete stores result as intentID's terminal record for ttl if token still
// holds the claim; otherwise it returns effector.ErrNotOwner. While the server
// is unreachable or loading it retries, until ctx ends: the tool has run, and
// a result not recorded means the intent runs again once the lease ends. A
// retry whose earlier attempt took effect (only the reply was lost) succeeds.
func (s *Store) Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error {
	if s.err != nil {
		return s.err
	}
	ms, err := millis("result ttl", ttl)
	if err != nil {
		return err
	}
	keys := s.keys(intentID)
	tp := tokenPrefix(token)
	var n int
	err = retry(ctx, func() (err error) {
		n, err = s.run(ctx, completeScript, keys, token, tp, result, ms).Int()
		return err
	})
	if err != nil {
		return fmt.Errorf("redisstore: completing intent %q: %w", intentID, err)
	}
	if n != 1 {
		return fmt.Errorf("redisstore: completing intent %q: %w", intentID, effector.ErrNotOwner)
	}
	return nil
}

// Release deletes token's claim on intentID so another worker may claim it at
// once; it returns effector.ErrNotOwner if token no longer holds the claim.
// It retries like Complete; a retry after a lost reply reports ErrNotOwner,
// which is harmless: the claim is gone either way.
func (s *Store) Release(ctx context.Context, intentID, token string) error {
	if s.err != nil {
		return s.err
	}
	keys := s.keys(intentID)
	var n int
	err := retry(ctx, func() (err error) {
		n, err = s.run(ctx, releaseScript, keys, token).Int()
		return err
	})
	if err != nil {
		return fmt.Errorf("redisstore: releasing intent %q: %w", intentID, err)
	}
	if n != 1 {
		return fmt.Errorf("redisstore: releasing intent %q: %w", intentID, effector.ErrNotOwner)
	}
	return nil
}
