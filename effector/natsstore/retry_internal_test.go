package natsstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// When the caller's context ends in an attempt that was cut short by it, the
// give-up reports the last error that said more, not the deadline: Open on a
// server without JetStream, on a loaded machine, had answered "context
// deadline exceeded" where it must say "no responders" and what to do.
func TestAGiveUpReportsTheLastErrorThatSaidSomething(t *testing.T) {
	t.Parallel()
	s := &Store{attemptWait: 20 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	attempts := 0
	err := s.retry(ctx, func(actx context.Context) error {
		attempts++
		if attempts == 1 {
			return nats.ErrNoResponders
		}
		<-actx.Done() // every later attempt runs out of time
		return actx.Err()
	})
	if !errors.Is(err, nats.ErrNoResponders) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("retry = %v, want no responders, given up at the deadline", err)
	}
	if attempts < 3 {
		t.Fatalf("%d attempts, want the deadline to end a later one", attempts)
	}
}

// The same when ctx ends as a backoff does, before the next attempt: the
// give-up still says what the last attempt said. (A reviewer's probe, an f
// that always answers no responders under a deadline of 10 ms, lost it in
// 55 of 300 give-ups.)
func TestAGiveUpBetweenAttemptsReportsTheLastError(t *testing.T) {
	t.Parallel()
	s := &Store{attemptWait: time.Second}
	for range 100 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		err := s.retry(ctx, func(context.Context) error { return nats.ErrNoResponders })
		cancel()
		if !errors.Is(err, nats.ErrNoResponders) {
			t.Fatalf("retry = %v, want no responders", err)
		}
	}
}
