package effector

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryStore is an in-process DedupStore: a map under a mutex. It dedups the
// workers of one process and forgets everything when the process ends, so use
// it for tests, examples and single-process services; use a durable store
// where intents must survive a restart or be shared by several processes.
type MemoryStore struct {
	now func() time.Time

	mu      sync.Mutex
	records map[string]memRecord
	// sweepAt is the map size at which the next full sweep of expired records
	// runs; sweeping on growth keeps memory bounded at amortized O(1) per claim.
	sweepAt int

	tokens atomic.Uint64
}

type memRecord struct {
	token   string    // the owner's token while in flight; "" once done
	result  []byte    // the terminal result once done
	expires time.Time // lease end while in flight; result expiry once done
}

var _ DedupStore = (*MemoryStore)(nil)

// MemoryStoreOption configures a MemoryStore.
type MemoryStoreOption func(*MemoryStore)

// WithStoreClock sets the clock that leases and result time-to-lives are
// measured with. The default is time.Now.
func WithStoreClock(now func() time.Time) MemoryStoreOption {
	return func(s *MemoryStore) { s.now = now }
}

// NewMemoryStore returns an empty in-memory DedupStore.
func NewMemoryStore(opts ...MemoryStoreOption) *MemoryStore {
	s := &MemoryStore{now: time.Now, records: make(map[string]memRecord), sweepAt: 1024}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Claim implements DedupStore.
func (s *MemoryStore) Claim(ctx context.Context, intentID string, lease time.Duration) (Claim, error) {
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[intentID]
	if ok && now.Before(r.expires) {
		if r.token == "" {
			// The caller gets its own copy, so the stored bytes cannot be changed.
			return Claim{State: Done, Result: append([]byte(nil), r.result...)}, nil
		}
		return Claim{State: InFlight}, nil
	}
	// A record still holding a token is a claim that ran out without Complete
	// or Release: its owner may have run the tool.
	reclaimed := ok && r.token != ""
	if len(s.records) >= s.sweepAt {
		s.sweep(now)
	}
	token := strconv.FormatUint(s.tokens.Add(1), 36)
	s.records[intentID] = memRecord{token: token, expires: now.Add(lease)}
	return Claim{State: Claimed, Token: token, Reclaimed: reclaimed}, nil
}

// Complete implements DedupStore.
func (s *MemoryStore) Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.owned(intentID, token, now) {
		return ErrNotOwner
	}
	s.records[intentID] = memRecord{result: append([]byte(nil), result...), expires: now.Add(ttl)}
	return nil
}

// Release implements DedupStore.
func (s *MemoryStore) Release(ctx context.Context, intentID, token string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.owned(intentID, token, now) {
		return ErrNotOwner
	}
	delete(s.records, intentID)
	return nil
}

// owned says whether token holds intentID's unexpired lease.
func (s *MemoryStore) owned(intentID, token string, now time.Time) bool {
	r, ok := s.records[intentID]
	return ok && token != "" && r.token == token && now.Before(r.expires)
}

// sweep drops expired results. Lapsed claims stay, so that their next claim
// can say it is Reclaimed; they are rare (an owner that neither completed
// nor released) and are replaced by that claim.
func (s *MemoryStore) sweep(now time.Time) {
	for id, r := range s.records {
		if r.token == "" && !now.Before(r.expires) {
			delete(s.records, id)
		}
	}
	s.sweepAt = max(1024, 2*len(s.records))
}
