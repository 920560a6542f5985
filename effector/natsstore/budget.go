package natsstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

var _ effector.BudgetStore = (*Store)(nil)

// Budgets. The budgets of one group (one tool, one entity: every budget
// an intent is counted against) share one key, "b." and the hex SHA-256 of
// the group, holding each budget's name, limit and uses (a digest of the
// intent id and when the use stops counting, in Unix ms of the admitting
// host's clock). An admission is an update of that key at the revision it
// read, so it counts an intent against every budget or none, and two
// admissions racing for the last room cannot both win: the second finds a
// newer revision, reads again and is refused.
//
// The key's TTL is the end of its longest-lived use, whatever budget it is
// of: a TTL set from the window of the budget being counted would let a
// short window's admission remove a long window's uses with the key.

type budgetGroup struct {
	Budgets map[string]*budgetState `json:"budgets"`
}

type budgetState struct {
	Limit int         `json:"limit"`
	Uses  []budgetUse `json:"uses"`
}

type budgetUse struct {
	ID    string `json:"id"`    // hex SHA-256 of the intent id, first 16 bytes
	Until int64  `json:"until"` // ms
}

func useID(intentID string) string {
	d := sha256.Sum256([]byte(intentID))
	return hex.EncodeToString(d[:16])
}

func groupKey(group string) string {
	d := sha256.Sum256([]byte(group))
	return "b." + hex.EncodeToString(d[:])
}

// live drops the uses that stopped counting at now (ms).
func (b *budgetState) live(now int64) {
	kept := b.Uses[:0]
	for _, u := range b.Uses {
		if u.Until > now {
			kept = append(kept, u)
		}
	}
	b.Uses = kept
}

// ClaimAdmit implements effector.BudgetStore: the claim, then, when it
// claims, the count, one update of the group's key. An intent claimed and
// not counted yet (its owner died in between) is counted by its next
// claim, before it runs.
func (s *Store) ClaimAdmit(ctx context.Context, intentID string, call effector.Call, lease time.Duration, uses []effector.BudgetUse) (effector.Claim, effector.Admission, error) {
	adm := effector.Admission{Refused: -1}
	// Which uses still count is judged at the call's start, and a new use
	// counts from after the claim: each errs towards refusing, by the
	// time the call takes, never towards passing a limit.
	start := s.now().UnixMilli()
	c, err := s.Claim(ctx, intentID, call, lease)
	if err != nil || c.State != effector.Claimed || len(uses) == 0 {
		return c, adm, err
	}
	for _, u := range uses {
		if u.Group != uses[0].Group {
			return effector.Claim{}, adm, fmt.Errorf("natsstore: counting intent %q: its budgets are of groups %q and %q: an intent's budgets share one group (one tool, one entity)", trimID(intentID), uses[0].Group, u.Group)
		}
		if u.Window <= 0 || u.Limit < 1 {
			return effector.Claim{}, adm, fmt.Errorf("natsstore: counting intent %q: budget %q has limit %d and window %v: want both positive", trimID(intentID), u.Key, u.Limit, u.Window)
		}
	}
	k := groupKey(uses[0].Group)
	id := useID(intentID)
	for {
		if err := ctx.Err(); err != nil {
			return effector.Claim{}, adm, fmt.Errorf("natsstore: counting intent %q against its budgets: %w", trimID(intentID), context.Cause(ctx))
		}
		g, rev, err := s.readGroup(ctx, k)
		if err != nil {
			return effector.Claim{}, adm, fmt.Errorf("natsstore: counting intent %q against its budgets: %w", trimID(intentID), err)
		}
		ms := start
		from := max(start, s.now().UnixMilli())
		counted := make([]bool, len(uses))
		for i, u := range uses {
			b := g.Budgets[u.Key]
			if b == nil {
				continue
			}
			b.live(ms)
			for _, x := range b.Uses {
				if x.ID == id {
					counted[i] = true
				}
			}
			if !counted[i] && len(b.Uses) >= u.Limit {
				first := b.Uses[0].Until
				for _, x := range b.Uses {
					first = min(first, x.Until)
				}
				return c, effector.Admission{Refused: i, FreesAt: time.UnixMilli(first)}, nil
			}
		}
		write := false
		for i, u := range uses {
			if counted[i] {
				continue
			}
			b := g.Budgets[u.Key]
			if b == nil {
				b = &budgetState{}
				g.Budgets[u.Key] = b
			}
			b.Limit = u.Limit
			b.Uses = append(b.Uses, budgetUse{ID: id, Until: from + u.Window.Milliseconds()})
			write = true
		}
		if !write {
			return c, adm, nil
		}
		last := ms
		for name, b := range g.Budgets {
			b.live(ms)
			if len(b.Uses) == 0 {
				delete(g.Budgets, name)
			}
			for _, x := range b.Uses {
				last = max(last, x.Until)
			}
		}
		v, err := json.Marshal(g)
		if err != nil {
			return effector.Claim{}, adm, err
		}
		err = s.retry(ctx, func(ctx context.Context) error {
			_, err := s.write(ctx, k, v, rev, time.Duration(last-ms)*time.Millisecond+time.Second)
			return err
		})
		switch {
		case err == nil:
			return c, adm, nil
		case casFailed(err):
			continue // another admission came first (or ours landed unanswered: it finds itself counted)
		}
		return effector.Claim{}, adm, fmt.Errorf("natsstore: counting intent %q against its budgets: %w", trimID(intentID), err)
	}
}

// readGroup reads the budgets at key k and the revision to update them at.
func (s *Store) readGroup(ctx context.Context, k string) (budgetGroup, uint64, error) {
	g := budgetGroup{Budgets: map[string]*budgetState{}}
	var rev uint64
	err := s.retry(ctx, func(ctx context.Context) error {
		m, err := s.getLast(ctx, k)
		if err != nil || m == nil {
			return err
		}
		rev = m.Sequence
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			return nil
		}
		if err := json.Unmarshal(m.Data, &g); err != nil || g.Budgets == nil {
			return fmt.Errorf("key %q holds a value this store did not write: use another bucket", k)
		}
		return nil
	})
	return g, rev, err
}

// BudgetUsage implements effector.BudgetStore: every budget of every
// group's key, in the stream's order, that counts a use now.
func (s *Store) BudgetUsage(ctx context.Context, fn func(effector.BudgetUsage) error) error {
	ms := s.now().UnixMilli()
	var fnErr error
	err := s.scan(ctx, "b.>", func(k string, data []byte, _ uint64) error {
		var g budgetGroup
		if json.Unmarshal(data, &g) != nil {
			return nil
		}
		for name, b := range g.Budgets {
			b.live(ms)
			if len(b.Uses) == 0 {
				continue
			}
			u := effector.BudgetUsage{Key: name, Used: len(b.Uses), Limit: b.Limit}
			first, last := b.Uses[0].Until, b.Uses[0].Until
			for _, x := range b.Uses {
				first, last = min(first, x.Until), max(last, x.Until)
			}
			u.FreesAt, u.Until = time.UnixMilli(first), time.UnixMilli(last)
			if fnErr = fn(u); fnErr != nil {
				return fnErr
			}
		}
		return nil
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("natsstore: listing budgets: %w", err)
	}
	return nil
}
