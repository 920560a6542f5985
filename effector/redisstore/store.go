package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
)

// Store is an effector.DedupStore in Redis. It is safe for concurrent use, and
// any number of Stores on any number of hosts may share one Redis.
type Store struct {
	rdb      redis.UniversalClient
	prefix   string
	newToken func() (string, error)
}

var _ effector.DedupStore = (*Store)(nil)

// Option configures New.
type Option func(*Store)

// WithKeyPrefix sets the prefix of every key the store writes; the key of an
// intent is the prefix followed by its id. Default: "toolreg:effector:dedup:".
func WithKeyPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// WithTokens sets how claim tokens are made. Tokens must be unique across
// every worker sharing the Redis. Default: 16 bytes from crypto/rand, hex
// encoded. Tests inject predictable tokens.
func WithTokens(newToken func() (string, error)) Option {
	return func(s *Store) { s.newToken = newToken }
}

// New returns a store using rdb, which the caller owns and closes.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, prefix: "toolreg:effector:dedup:", newToken: randomToken}
	for _, o := range opts {
		o(s)
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

// The two kinds of value a key holds, told apart by the first byte.
const (
	claimTag = "c" // followed by the owner's token
	doneTag  = "d" // followed by the result's bytes
)

// completeScript replaces the caller's claim with the done record, with the
// result's ttl as the key's expiry, if the key still holds exactly that claim.
var completeScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
	return 1
end
return 0`)

// releaseScript deletes the key if it still holds exactly the caller's claim.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	redis.call('DEL', KEYS[1])
	return 1
end
return 0`)

// millis rounds d up to whole milliseconds, refusing non-positive durations.
func millis(what string, d time.Duration) (int64, error) {
	if d <= 0 {
		return 0, fmt.Errorf("redisstore: %s %v: want a positive duration", what, d)
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond), nil
}

// Claim takes intentID for lease with one SET NX PX. If the key exists it
// reads it: a claim means InFlight, a result means Done.
func (s *Store) Claim(ctx context.Context, intentID string, lease time.Duration) (effector.Claim, error) {
	ms, err := millis("lease", lease)
	if err != nil {
		return effector.Claim{}, err
	}
	token, err := s.newToken()
	if err != nil {
		return effector.Claim{}, err
	}
	key := s.prefix + intentID
	// The key can expire between a refused SET and the GET; then try again.
	// Each round either claims or finds a live value, except in that narrow
	// window, so a few rounds always suffice in practice.
	for range 8 {
		err := s.rdb.Do(ctx, "SET", key, claimTag+token, "NX", "PX", ms).Err()
		if err == nil {
			return effector.Claim{State: effector.Claimed, Token: token}, nil
		}
		if !errors.Is(err, redis.Nil) { // nil reply: the key exists
			return effector.Claim{}, fmt.Errorf("redisstore: claiming intent %q: %w", intentID, err)
		}
		v, err := s.rdb.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return effector.Claim{}, fmt.Errorf("redisstore: reading intent %q: %w", intentID, err)
		}
		switch {
		case len(v) > 0 && v[0] == doneTag[0]:
			return effector.Claim{State: effector.Done, Result: v[1:]}, nil
		case len(v) > 0 && v[0] == claimTag[0]:
			return effector.Claim{State: effector.InFlight}, nil
		default:
			return effector.Claim{}, fmt.Errorf("redisstore: key %q holds %q, which this store did not write; choose another WithKeyPrefix", key, truncate(v))
		}
	}
	return effector.Claim{}, fmt.Errorf("redisstore: claiming intent %q: its key kept expiring between SET and GET; is the lease or result ttl far too short?", intentID)
}

func truncate(v []byte) []byte {
	if len(v) > 32 {
		return v[:32]
	}
	return v
}

// Complete stores result as intentID's terminal record for ttl if token still
// holds the claim; otherwise it returns effector.ErrNotOwner.
func (s *Store) Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error {
	ms, err := millis("result ttl", ttl)
	if err != nil {
		return err
	}
	done := make([]byte, 0, len(doneTag)+len(result))
	done = append(append(done, doneTag...), result...)
	n, err := completeScript.Run(ctx, s.rdb, []string{s.prefix + intentID}, claimTag+token, done, ms).Int()
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
func (s *Store) Release(ctx context.Context, intentID, token string) error {
	n, err := releaseScript.Run(ctx, s.rdb, []string{s.prefix + intentID}, claimTag+token).Int()
	if err != nil {
		return fmt.Errorf("redisstore: releasing intent %q: %w", intentID, err)
	}
	if n != 1 {
		return fmt.Errorf("redisstore: releasing intent %q: %w", intentID, effector.ErrNotOwner)
	}
	return nil
}
