package effector

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// MemoryStore is an in-process DedupStore: a map under a mutex. It dedups the
// workers of one process and forgets everything when the process ends, so use
// it for tests, examples and single-process services; use a durable store
// where intents must survive a restart or be shared by several processes.
//
// Results are dropped as their time-to-live ends, oldest first, a few at a
// time as claims and completions come in: memory follows the results still
// live, and no call pauses to scan the whole map.
type MemoryStore struct {
	// clock reads the time as nanoseconds since the store was made, from the
	// monotonic clock unless WithStoreClock gives another.
	clock func() int64
	now   func() time.Time // WithStoreClock's, or nil

	mu      sync.Mutex
	records map[string]memRecord
	// expiries holds the done records in the order they completed, one queue
	// per time-to-live (an effector uses one), so each queue is in expiry
	// order and its head is the next to go.
	expiries []*expiryQueue

	tokens atomic.Uint64
}

type memRecord struct {
	token   string // the owner's token while in flight; "" once done
	result  []byte // the terminal result once done
	expires int64  // lease end while in flight; result expiry once done (clock's ns)
}

// expiryQueue is a FIFO of done records with one time-to-live.
type expiryQueue struct {
	ttl     time.Duration
	ids     []string
	expires []int64
	head    int
}

var _ DedupStore = (*MemoryStore)(nil)

// MemoryStoreOption configures a MemoryStore.
type MemoryStoreOption func(*MemoryStore)

// WithStoreClock sets the clock that leases and result time-to-lives are
// measured with. The default is the monotonic clock of time.Now.
func WithStoreClock(now func() time.Time) MemoryStoreOption {
	return func(s *MemoryStore) { s.now = now }
}

// NewMemoryStore returns an empty in-memory DedupStore.
func NewMemoryStore(opts ...MemoryStoreOption) *MemoryStore {
	s := &MemoryStore{records: make(map[string]memRecord)}
	for _, o := range opts {
		o(s)
	}
	if now := s.now; now != nil {
		origin := now()
		s.clock = func() int64 { return int64(now().Sub(origin)) }
	} else {
		// time.Since reads only the monotonic clock: half the cost of time.Now,
		// and immune to the wall clock being stepped.
		origin := time.Now()
		s.clock = func() int64 { return int64(time.Since(origin)) }
	}
	return s
}

// Claim implements DedupStore.
func (s *MemoryStore) Claim(ctx context.Context, intentID string, lease time.Duration) (Claim, error) {
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[intentID]
	if ok && now < r.expires {
		if r.token == "" {
			// The caller gets its own copy, so the stored bytes cannot be changed.
			return Claim{State: Done, Result: append([]byte(nil), r.result...)}, nil
		}
		return Claim{State: InFlight}, nil
	}
	// A record still holding a token is a claim that ran out without Complete
	// or Release: its owner may have run the tool.
	reclaimed := ok && r.token != ""
	s.expire(now)
	token := strconv.FormatUint(s.tokens.Add(1), 36)
	s.records[intentID] = memRecord{token: token, expires: now + int64(lease)}
	return Claim{State: Claimed, Token: token, Reclaimed: reclaimed}, nil
}

// Complete implements DedupStore.
func (s *MemoryStore) Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.owned(intentID, token, now) {
		return ErrNotOwner
	}
	expires := now + int64(ttl)
	s.records[intentID] = memRecord{result: append([]byte(nil), result...), expires: expires}
	s.queue(ttl).push(intentID, expires)
	return nil
}

// queue returns the expiry queue of ttl.
func (s *MemoryStore) queue(ttl time.Duration) *expiryQueue {
	for _, q := range s.expiries {
		if q.ttl == ttl {
			return q
		}
	}
	q := &expiryQueue{ttl: ttl}
	s.expiries = append(s.expiries, q)
	return q
}

// Release implements DedupStore.
func (s *MemoryStore) Release(ctx context.Context, intentID, token string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.owned(intentID, token, now) {
		return ErrNotOwner
	}
	delete(s.records, intentID)
	return nil
}

// owned says whether token holds intentID's unexpired lease.
func (s *MemoryStore) owned(intentID, token string, now int64) bool {
	r, ok := s.records[intentID]
	return ok && token != "" && r.token == token && now < r.expires
}

// expire drops the results whose time-to-live ended by now. A queued id
// whose record was claimed afresh since it expired is left alone. Lapsed
// claims stay, so that their next claim can say it is Reclaimed; they are
// rare (an owner that neither completed nor released) and are replaced by
// that claim.
func (s *MemoryStore) expire(now int64) {
	for i := 0; i < len(s.expiries); i++ {
		q := s.expiries[i]
		for q.head < len(q.ids) && q.expires[q.head] <= now {
			id := q.ids[q.head]
			if r, ok := s.records[id]; ok && r.token == "" && r.expires <= now {
				delete(s.records, id)
			}
			q.pop()
		}
		if q.head == len(q.ids) && len(s.expiries) > 1 {
			// A time-to-live no longer used leaves no queue behind.
			s.expiries = slices.Delete(s.expiries, i, i+1)
			i--
		}
	}
}

func (q *expiryQueue) push(id string, expires int64) {
	q.ids = append(q.ids, id)
	q.expires = append(q.expires, expires)
}

// pop drops the head, and moves the live entries to the front once the
// dropped ones are half the queue, so its arrays stay within twice the
// entries live.
func (q *expiryQueue) pop() {
	q.ids[q.head] = ""
	q.head++
	if q.head == len(q.ids) {
		q.ids, q.expires, q.head = q.ids[:0], q.expires[:0], 0
	} else if q.head >= 1024 && 2*q.head >= len(q.ids) {
		n := copy(q.ids, q.ids[q.head:])
		copy(q.expires, q.expires[q.head:])
		clear(q.ids[n:])
		q.ids, q.expires, q.head = q.ids[:n], q.expires[:n], 0
	}
}
