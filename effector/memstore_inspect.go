package effector

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

var _ Inspector = (*MemoryStore)(nil)

// record is r as an operator inspects it at now.
func (s *MemoryStore) record(r *memRecord, now int64) Record {
	rec := Record{ID: r.id, Tool: r.call.Tool, Attempts: r.attempts, Deadline: s.origin.Add(time.Duration(r.expires))}
	switch {
	case r.done && now < r.expires:
		rec.State = RecordDone
		rec.Result = append([]byte(nil), r.result...)
	case r.done:
		rec.State = RecordExpired
		rec.Result = append([]byte(nil), r.result...)
	case r.token != "" && now < r.expires:
		rec.State = RecordInFlight
	default:
		rec.State = RecordUnknown
	}
	return rec
}

// Records implements Inspector, in id order. It copies the records under
// the lock and calls fn without it, so fn may use the store.
func (s *MemoryStore) Records(ctx context.Context, fn func(Record) error) error {
	now := s.clock()
	s.mu.Lock()
	recs := make([]Record, 0, len(s.records))
	for _, r := range s.records {
		recs = append(recs, s.record(r, now))
	}
	s.mu.Unlock()
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.ID, b.ID) })
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Record implements Inspector.
func (s *MemoryStore) Record(ctx context.Context, id string) (Record, bool, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, false, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[id]
	if r == nil {
		return Record{}, false, nil
	}
	return s.record(r, now), true, nil
}

// Resolve implements Inspector.
func (s *MemoryStore) Resolve(ctx context.Context, id string, result []byte, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.records[id]
	switch {
	case r == nil:
		return fmt.Errorf("%w: intent %q has no record", ErrNotResolvable, id)
	case r.done && now < r.expires:
		return fmt.Errorf("%w: intent %q is done", ErrNotResolvable, id)
	case !r.done && r.token != "" && now < r.expires:
		return fmt.Errorf("%w: intent %q is still leased, for %v more", ErrNotResolvable, id, time.Duration(r.expires-now).Round(time.Millisecond))
	case r.done || r.token == "":
		// An expired result, or a released record keeping its attempts:
		// neither is an effect unknown.
		return fmt.Errorf("%w: intent %q has no lapsed claim", ErrNotResolvable, id)
	}
	r.gen++
	r.token = ""
	r.done = true
	r.result = append(r.result[:0], result...)
	r.expires = now + int64(ttl)
	s.queue(ttl).push(expiryEntry{r: r, gen: r.gen, expires: r.expires})
	return nil
}

// Purge implements Inspector.
func (s *MemoryStore) Purge(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("effector: MemoryStore.Purge: olderThan %v is negative: give 0 or more", olderThan)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range s.records {
		if r.done && r.expires+int64(olderThan) <= now {
			s.drop(r)
			n++
		}
	}
	return n, nil
}
