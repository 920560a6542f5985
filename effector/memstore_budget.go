package effector

import (
	"container/heap"
	"context"
	"slices"
	"time"
)

var _ BudgetStore = (*MemoryStore)(nil)

// memBudgets are a MemoryStore's budget counts: for each key, the intents
// it counts and when each stops; and every use in one heap by when it
// stops, so that expired uses leave a key, and empty keys the map, as uses
// are admitted.
type memBudgets struct {
	keys    map[string]*memBudget
	expires useHeap
}

type memBudget struct {
	uses  map[string]int64 // intent id -> when its use stops (the store clock's ns)
	limit int
}

type memUse struct {
	expires int64
	key, id string
}

type useHeap []memUse

func (h useHeap) Len() int           { return len(h) }
func (h useHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h useHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *useHeap) Push(x any)        { *h = append(*h, x.(memUse)) }
func (h *useHeap) Pop() any {
	old := *h
	u := old[len(old)-1]
	*h = old[:len(old)-1]
	return u
}

// ClaimAdmit implements BudgetStore.
func (s *MemoryStore) ClaimAdmit(ctx context.Context, intentID string, call Call, lease time.Duration, uses []BudgetUse) (Claim, Admission, error) {
	c, err := s.Claim(ctx, intentID, call, lease)
	if err != nil || c.State != Claimed || len(uses) == 0 {
		return c, Admission{Refused: -1}, err
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return c, s.budgets.admit(now, intentID, uses, s.origin), nil
}

// admit counts id against every use with room, all or none, at now.
func (b *memBudgets) admit(now int64, id string, uses []BudgetUse, origin time.Time) Admission {
	b.expire(now)
	if b.keys == nil {
		b.keys = make(map[string]*memBudget)
	}
	counted := make([]bool, len(uses))
	for i, u := range uses {
		k := b.keys[u.Key]
		if k == nil {
			if u.Limit < 1 {
				return Admission{Refused: i}
			}
			continue
		}
		if _, ok := k.uses[id]; ok {
			counted[i] = true
			continue
		}
		if len(k.uses) >= u.Limit {
			first := int64(0)
			for _, e := range k.uses {
				if first == 0 || e < first {
					first = e
				}
			}
			return Admission{Refused: i, FreesAt: origin.Add(time.Duration(first))}
		}
	}
	for i, u := range uses {
		if counted[i] {
			continue
		}
		k := b.keys[u.Key]
		if k == nil {
			k = &memBudget{uses: make(map[string]int64)}
			b.keys[u.Key] = k
		}
		k.limit = u.Limit
		e := now + int64(u.Window)
		k.uses[id] = e
		heap.Push(&b.expires, memUse{expires: e, key: u.Key, id: id})
	}
	return Admission{Refused: -1}
}

// expire drops the uses that stopped counting by now.
func (b *memBudgets) expire(now int64) {
	for len(b.expires) > 0 && b.expires[0].expires <= now {
		u := heap.Pop(&b.expires).(memUse)
		k := b.keys[u.key]
		if k == nil || k.uses[u.id] != u.expires {
			continue
		}
		delete(k.uses, u.id)
		if len(k.uses) == 0 {
			delete(b.keys, u.key)
		}
	}
}

// BudgetUsage implements BudgetStore, in key order.
func (s *MemoryStore) BudgetUsage(ctx context.Context, fn func(BudgetUsage) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.clock()
	s.mu.Lock()
	s.budgets.expire(now)
	out := make([]BudgetUsage, 0, len(s.budgets.keys))
	for key, k := range s.budgets.keys {
		u := BudgetUsage{Key: key, Used: len(k.uses), Limit: k.limit}
		var first, last int64
		for _, e := range k.uses {
			if first == 0 || e < first {
				first = e
			}
			last = max(last, e)
		}
		u.FreesAt, u.Until = s.origin.Add(time.Duration(first)), s.origin.Add(time.Duration(last))
		out = append(out, u)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b BudgetUsage) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	for _, u := range out {
		if err := fn(u); err != nil {
			return err
		}
	}
	return nil
}
