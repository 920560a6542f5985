package natsstore

import "time"

// SetClock makes s measure leases and time-to-lives with now.
func SetClock(s *Store, now func() time.Time) { s.now = now }
