package effector

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"
)

// MemoryStore is an in-process DedupStore: a map under a mutex. It dedups the
// workers of one process and forgets everything when the process ends, so use
// it for tests, examples and single-process services; use a durable store
// where intents must survive a restart or be shared by several processes.
//
// Results are dropped as their time-to-live ends, oldest first, a few at a
// time as claims come in: memory follows the results still live, and no call
// pauses to scan the whole map.
//
// It refuses non-positive leases and result time-to-lives, as every store
// does: a lease of 0 would hand out a claim already over.
type MemoryStore struct {
	// clock reads the time as nanoseconds since the store was made, from the
	// monotonic clock unless WithStoreClock gives another.
	clock func() int64
	// origin is the wall time the clock reads 0 at, for Inspector's
	// deadlines (memstore_inspect.go).
	origin time.Time

	mu      sync.Mutex
	records map[string]*memRecord
	// expiries holds the done records in the order they completed, one queue
	// per time-to-live (an effector uses one), so each queue is in expiry
	// order and its head is the next to go.
	expiries []*expiryQueue
	// free holds records dropped from the map, for the next claims to reuse
	// with their result buffers: at a steady rate of intents, claiming and
	// completing allocates nothing but the claim token.
	free   []*memRecord
	tokens uint64 // claims made, for the next token
	// budgets are the call budgets' counts (memstore_budget.go).
	budgets memBudgets
}

type memRecord struct {
	id      string
	token   string // the owner's token while in flight; "" once done or released
	done    bool
	result  []byte // the terminal result once done
	expires int64  // lease end while in flight; result expiry once done (clock's ns)
	call    Call   // what the intent id was claimed for
	// attempts counts the claims that did not end in a Release. A record
	// released with attempts left (earlier owners' leases ran out) stays,
	// with no token and expires 0, so the next claim counts on from it.
	attempts int
	// gen counts the record's uses, so that an expiry queued for one use is
	// not applied to the next.
	gen uint64
}

// expiryQueue is a FIFO of done records with one time-to-live.
type expiryQueue struct {
	ttl     time.Duration
	entries []expiryEntry
	head    int
}

type expiryEntry struct {
	r       *memRecord
	gen     uint64
	expires int64
}

const (
	// maxFree bounds the records kept for reuse, so a burst's memory returns
	// to the heap once it has expired.
	maxFree = 1024
	// maxReusedResult is the largest result buffer a freed record keeps.
	maxReusedResult = 4 << 10
)

var _ DedupStore = (*MemoryStore)(nil)

// MemoryStoreOption configures a MemoryStore.
type MemoryStoreOption func(*MemoryStore)

// WithStoreClock sets the clock that leases and result time-to-lives are
// measured with. The default is the monotonic clock of time.Now.
func WithStoreClock(now func() time.Time) MemoryStoreOption {
	return func(s *MemoryStore) {
		if now == nil {
			s.clock = nil // the default
			return
		}
		origin := now()
		s.origin = origin
		s.clock = func() int64 { return int64(now().Sub(origin)) }
	}
}

// NewMemoryStore returns an empty in-memory DedupStore.
func NewMemoryStore(opts ...MemoryStoreOption) *MemoryStore {
	s := &MemoryStore{records: make(map[string]*memRecord)}
	for _, o := range opts {
		o(s)
	}
	if s.clock == nil {
		// time.Since reads only the monotonic clock: half the cost of time.Now,
		// and immune to the wall clock being stepped.
		origin := time.Now()
		s.origin = origin
		s.clock = func() int64 { return int64(time.Since(origin)) }
	}
	return s
}

// Claim implements DedupStore.
func (s *MemoryStore) Claim(ctx context.Context, intentID string, call Call, lease time.Duration) (Claim, error) {
	if err := ctx.Err(); err != nil {
		return Claim{}, err
	}
	if lease <= 0 {
		return Claim{}, fmt.Errorf("effector: memory store: claiming intent %q for a lease of %v: want a positive duration", intentID, lease)
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[intentID]
	live := r != nil && now < r.expires
	if r != nil && (live || !r.done) && r.call.Digest != call.Digest {
		// Done, in flight, or claimed by an owner that may have run it.
		return Claim{State: Mismatch, Recorded: r.call}, nil
	}
	if live {
		if r.done {
			// The caller gets its own copy, so the stored bytes cannot be changed.
			return Claim{State: Done, Result: append([]byte(nil), r.result...)}, nil
		}
		return Claim{State: InFlight}, nil
	}
	// A record still holding a token is a claim that ran out without Complete
	// or Release: its owner may have run the tool.
	reclaimed := r != nil && r.token != ""
	attempts := 0
	if r != nil && !r.done {
		attempts = r.attempts
	}
	s.expire(now)
	if r == nil || r.id != intentID { // absent, or dropped by expire just now
		r = s.newRecord(intentID)
	} else {
		r.gen++ // a lapsed claim, or a result not yet dropped: its queued expiry is void
	}
	s.tokens++
	r.token = strconv.FormatUint(s.tokens, 36)
	r.done = false
	r.expires = now + int64(lease)
	r.call = call
	r.attempts = attempts + 1
	return Claim{State: Claimed, Token: r.token, Reclaimed: reclaimed, Attempts: r.attempts}, nil
}

// Complete implements DedupStore.
func (s *MemoryStore) Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("effector: memory store: completing intent %q with a result time-to-live of %v: want a positive duration", intentID, ttl)
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(intentID, token, now)
	if r == nil {
		return ErrNotOwner
	}
	r.token = ""
	r.done = true
	if c := cap(r.result); c < len(result) || c > 2*len(result)+64 {
		// A reused buffer much larger than the result would hold memory
		// for nothing as long as the result lives.
		r.result = make([]byte, 0, len(result))
	}
	r.result = append(r.result[:0], result...)
	r.expires = now + int64(ttl)
	s.queue(ttl).push(expiryEntry{r: r, gen: r.gen, expires: r.expires})
	return nil
}

// Release implements DedupStore.
func (s *MemoryStore) Release(ctx context.Context, intentID, token string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.owned(intentID, token, now)
	if r == nil {
		return ErrNotOwner
	}
	if r.attempts--; r.attempts > 0 {
		// Earlier owners' attempts stay counted.
		r.token, r.expires = "", 0
		return nil
	}
	s.drop(r)
	return nil
}

// owned returns intentID's record if token holds its unexpired lease.
func (s *MemoryStore) owned(intentID, token string, now int64) *memRecord {
	r := s.records[intentID]
	if r == nil || token == "" || r.done || r.token != token || now >= r.expires {
		return nil
	}
	return r
}

// newRecord puts a record for id in the map, reusing a freed one if any.
func (s *MemoryStore) newRecord(id string) *memRecord {
	var r *memRecord
	if n := len(s.free); n > 0 {
		r, s.free[n-1] = s.free[n-1], nil
		s.free = s.free[:n-1]
	} else {
		r = &memRecord{}
	}
	r.id = id
	r.gen++
	s.records[id] = r
	return r
}

// drop removes r from the map and keeps it for reuse.
func (s *MemoryStore) drop(r *memRecord) {
	delete(s.records, r.id)
	r.id, r.token, r.expires, r.done, r.call, r.attempts = "", "", 0, false, Call{}, 0
	r.gen++
	if len(s.free) < maxFree && cap(r.result) <= maxReusedResult {
		r.result = r.result[:0]
		s.free = append(s.free, r)
	}
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

// expire drops the results whose time-to-live ended by now. An entry whose
// record has been reused since it was queued is skipped. Lapsed claims stay,
// so that their next claim can say it is Reclaimed; they are rare (an owner
// that neither completed nor released) and are replaced by that claim.
func (s *MemoryStore) expire(now int64) {
	for i := 0; i < len(s.expiries); i++ {
		q := s.expiries[i]
		for q.head < len(q.entries) && q.entries[q.head].expires <= now {
			if e := q.entries[q.head]; e.r.gen == e.gen && e.r.done && e.r.expires <= now {
				s.drop(e.r)
			}
			q.pop()
		}
		if q.head == len(q.entries) && len(s.expiries) > 1 {
			// A time-to-live no longer used leaves no queue behind.
			s.expiries = slices.Delete(s.expiries, i, i+1)
			i--
		}
	}
}

func (q *expiryQueue) push(e expiryEntry) { q.entries = append(q.entries, e) }

// pop drops the head, and moves the live entries to the front once the
// dropped ones are half the queue, so its array stays within twice the
// entries live.
func (q *expiryQueue) pop() {
	q.entries[q.head] = expiryEntry{}
	q.head++
	if q.head == len(q.entries) {
		q.entries, q.head = q.entries[:0], 0
	} else if q.head >= 1024 && 2*q.head >= len(q.entries) {
		n := copy(q.entries, q.entries[q.head:])
		clear(q.entries[n:])
		q.entries, q.head = q.entries[:n], 0
	}
}

// ClaimBatch implements DedupStore, each item in turn, as Claim: a
// memory store has no round trip to share, and no limit on a batch.
func (s *MemoryStore) ClaimBatch(ctx context.Context, reqs []ClaimRequest, out []ClaimOutcome) {
	for i, r := range reqs {
		c, err := s.Claim(ctx, r.IntentID, r.Call, r.Lease)
		out[i] = ClaimOutcome{Claim: c, Err: err}
	}
}

// CompleteBatch implements DedupStore.
func (s *MemoryStore) CompleteBatch(ctx context.Context, reqs []Completion, errs []error) {
	for i, r := range reqs {
		errs[i] = s.Complete(ctx, r.IntentID, r.Token, r.Result, r.TTL)
	}
}

// ReleaseBatch implements DedupStore.
func (s *MemoryStore) ReleaseBatch(ctx context.Context, reqs []Release, errs []error) {
	for i, r := range reqs {
		errs[i] = s.Release(ctx, r.IntentID, r.Token)
	}
}
