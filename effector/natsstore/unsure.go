package natsstore

import (
	"time"

	"github.com/beam-agents/toolreg/effector"
)

// A claim whose write was sent but whose answer never came (the call's
// context ended first, the connection closed, the server refused it in a
// way the store does not retry) may have landed: the record then holds
// the claim's token, which only this Store knows. Made with a new token,
// the next claim of the intent would find that record and take it for
// another owner's: InFlight until the lease runs out, then a reclaim that
// marks the intent "effect unknown" though its tool never ran. So the
// Store remembers such a token, by intent and call, and the next claim of
// the same call on this Store claims with it: if the first write landed,
// it is recognized as this Store's own.

// unsureClaim is a claim this Store may have written and did not answer.
type unsureClaim struct {
	token  string
	digest [32]byte
	until  time.Time // when its record is gone from the bucket
}

// unsure remembers token as the token of a claim of call on intentID whose
// write may have landed unanswered, its record kept for keep.
func (s *Store) unsure(intentID string, call effector.Call, token string, keep time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unsureOf == nil {
		s.unsureOf = map[string]unsureClaim{}
	}
	now := s.now()
	s.unsureOf[intentID] = unsureClaim{token: token, digest: call.Digest, until: now.Add(keep)}
	if len(s.unsureOf) >= s.unsurePruneAt {
		for id, u := range s.unsureOf {
			if !now.Before(u.until) {
				delete(s.unsureOf, id)
			}
		}
		s.unsurePruneAt = max(1024, 2*len(s.unsureOf))
	}
}

// claimToken returns the token a claim of call on intentID uses: that of
// this Store's unanswered claim of the same call, taken (so no concurrent
// claim gets it too), or a new one.
func (s *Store) claimToken(intentID string, call effector.Call) (string, error) {
	s.mu.Lock()
	u, ok := s.unsureOf[intentID]
	if ok {
		delete(s.unsureOf, intentID)
	}
	s.mu.Unlock()
	if ok && u.digest == call.Digest && s.now().Before(u.until) {
		return u.token, nil
	}
	return newToken()
}
