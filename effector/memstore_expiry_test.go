package effector

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestMemoryStoreDropsExpiredResults holds the memory store to its promise
// that memory follows the results still live: results whose time-to-live
// ended are dropped by the next claim, whatever their time-to-live, while
// live results, in-flight claims and lapsed claims (which must still say
// Reclaimed) stay.
func TestMemoryStoreDropsExpiredResults(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := NewMemoryStore(WithStoreClock(func() time.Time { return now }))
	ctx := context.Background()
	claimed := func(id string, lease time.Duration) string {
		t.Helper()
		c, err := s.Claim(ctx, id, Call{}, lease)
		if err != nil || c.State != Claimed {
			t.Fatalf("Claim(%q) = %+v, %v; want Claimed", id, c, err)
		}
		return c.Token
	}
	done := func(id string, ttl time.Duration) {
		t.Helper()
		if err := s.Complete(ctx, id, claimed(id, time.Minute), []byte("r-"+id), ttl); err != nil {
			t.Fatalf("Complete(%q): %v", id, err)
		}
	}
	const short = 5000
	for i := range short {
		done("short-"+strconv.Itoa(i), time.Second)
	}
	for i := range 10 {
		done("long-"+strconv.Itoa(i), time.Hour)
	}
	claimed("in-flight", time.Hour)
	claimed("lapsed", time.Second)

	now = now.Add(2 * time.Second)
	claimed("trigger", time.Hour)

	if got, want := len(s.records), 10+3; got != want {
		t.Fatalf("records after the short results expired = %d, want %d (10 live results, 2 claims, 1 lapsed claim)", got, want)
	}
	for _, q := range s.expiries {
		if live := len(q.entries) - q.head; q.ttl == time.Second && live != 0 {
			t.Errorf("the 1s queue still holds %d entries after they all expired", live)
		}
	}
	if c, err := s.Claim(ctx, "lapsed", Call{}, time.Hour); err != nil || c.State != Claimed || !c.Reclaimed {
		t.Errorf("Claim of the lapsed claim after expiry = %+v, %v; want Claimed and Reclaimed", c, err)
	}
	if c, err := s.Claim(ctx, "long-3", Call{}, time.Hour); err != nil || c.State != Done || string(c.Result) != "r-long-3" {
		t.Errorf("Claim of a live result = %+v, %v; want Done with its bytes", c, err)
	}

	// An id claimed afresh after its result expired is queued again when it
	// completes, and expires on its own schedule.
	done("short-7", time.Minute)
	now = now.Add(2 * time.Hour)
	claimed("trigger-2", time.Hour)
	for _, id := range []string{"short-7", "long-3"} {
		if _, ok := s.records[id]; ok {
			t.Errorf("%s's result outlived its time-to-live", id)
		}
	}
	if len(s.expiries) != 1 {
		t.Errorf("expiry queues after every result expired = %d, want 1 (a time-to-live no longer used leaves none)", len(s.expiries))
	}
}

// TestMemoryStoreReusesRecordsWithoutSharingResults holds the record reuse
// to what the store promises: a result returned as Done is the caller's own,
// even after its record is reused for another intent, and the records kept
// for reuse are bounded.
func TestMemoryStoreReusesRecordsWithoutSharingResults(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := NewMemoryStore(WithStoreClock(func() time.Time { return now }))
	ctx := context.Background()
	complete := func(id string, result string) {
		t.Helper()
		c, err := s.Claim(ctx, id, Call{}, time.Minute)
		if err != nil || c.State != Claimed {
			t.Fatalf("Claim(%q) = %+v, %v; want Claimed", id, c, err)
		}
		if err := s.Complete(ctx, id, c.Token, []byte(result), time.Second); err != nil {
			t.Fatalf("Complete(%q): %v", id, err)
		}
	}
	complete("a", "result of a")
	c, err := s.Claim(ctx, "a", Call{}, time.Minute)
	if err != nil || c.State != Done {
		t.Fatalf("Claim(a) = %+v, %v; want Done", c, err)
	}
	aRecord := s.records["a"]

	now = now.Add(2 * time.Second)
	complete("b", "B") // a's result expires at this claim, and b takes its record
	if s.records["b"] != aRecord {
		t.Fatalf("b did not reuse a's freed record: the test no longer covers reuse")
	}
	if string(c.Result) != "result of a" {
		t.Errorf("a's Done result changed to %q when its record was reused", c.Result)
	}
	if c, err := s.Claim(ctx, "b", Call{}, time.Minute); err != nil || c.State != Done || string(c.Result) != "B" {
		t.Errorf("Claim(b) = %+v, %v; want Done with B", c, err)
	}
	if c, err := s.Claim(ctx, "a", Call{}, time.Minute); err != nil || c.State != Claimed || c.Reclaimed {
		t.Errorf("Claim(a) after its result expired = %+v, %v; want Claimed, not Reclaimed", c, err)
	}

	for i := range 3 * maxFree {
		complete("burst-"+strconv.Itoa(i), "r")
	}
	now = now.Add(2 * time.Second)
	complete("after", "r")
	if len(s.free) > maxFree {
		t.Errorf("%d records kept for reuse after a burst, want at most %d", len(s.free), maxFree)
	}
}

// TestMemoryStoreDoesNotKeepAReusedBufferFarLargerThanItsResult: a record
// reused after a large result holds a small one in a buffer of its own size.
func TestMemoryStoreDoesNotKeepAReusedBufferFarLargerThanItsResult(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	s := NewMemoryStore(WithStoreClock(func() time.Time { return now }))
	ctx := context.Background()
	complete := func(id string, result []byte) {
		t.Helper()
		c, err := s.Claim(ctx, id, Call{}, time.Minute)
		if err != nil || c.State != Claimed {
			t.Fatalf("Claim(%q) = %+v, %v; want Claimed", id, c, err)
		}
		if err := s.Complete(ctx, id, c.Token, result, time.Second); err != nil {
			t.Fatalf("Complete(%q): %v", id, err)
		}
	}
	complete("big", make([]byte, 4000))
	big := s.records["big"]
	now = now.Add(2 * time.Second)
	complete("small", []byte("ok"))
	if s.records["small"] != big {
		t.Fatalf("small did not reuse big's record: the test no longer covers reuse")
	}
	if c := cap(s.records["small"].result); c > 2*len("ok")+64 {
		t.Errorf("a 2-byte result is held in a buffer of %d bytes", c)
	}
}
