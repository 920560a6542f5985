package pgstore

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// listenRetry is how long the listener waits before connecting again after
// its connection failed; waiters fall back to polling meanwhile.
const listenRetry = time.Second

// waitSQL marks a live claim as waited on, so its Complete or Release
// notifies Channel; it returns no row when the claim is no longer live (done,
// released, lapsed, or gone): then there is nothing to wait for.
const waitSQL = `UPDATE toolreg_effector_dedup SET waiters = true
	WHERE intent_id = $1 AND NOT done AND token IS NOT NULL AND expires_at > clock_timestamp()
	RETURNING true`

// WaitInFlight blocks while intentID is claimed by another owner: until that
// owner completes or releases it (a notification on Channel), until at most
// max passes (the polling fallback, also what it does while its listening
// connection is down), or until ctx ends. It returns at once if the claim is
// no longer live. The effector calls it, through effector.InFlightWaiter,
// instead of sleeping its backoff, and claims again when it returns.
//
// The store listens on one connection of its own, dialed with the pool's
// configuration at the first wait and closed by Close. A worker marks the
// claim it waits on, after it listens and before it sleeps, so a Complete
// that commits after the mark notifies, and one that committed before it
// leaves nothing to mark: no wake-up is lost between the two.
func (s *Store) WaitInFlight(ctx context.Context, intentID string, max time.Duration) {
	timer := time.NewTimer(max)
	defer timer.Stop()
	key := hex.EncodeToString([]byte(intentID)) // as Channel's payloads name it
	wake, ready := s.listener.subscribe(s, key)
	defer s.listener.unsubscribe(key, wake)
	select {
	case <-ready:
	case <-timer.C:
		return
	case <-ctx.Done():
		return
	}
	var live bool
	if err := s.pool.QueryRow(ctx, waitSQL, []byte(intentID)).Scan(&live); errors.Is(err, pgx.ErrNoRows) {
		return // nothing in flight to wait for: claim again
	}
	select {
	case <-wake:
	case <-timer.C:
	case <-ctx.Done():
	}
}

// Close stops the store's listening connection, if a wait started it; a
// WaitInFlight after Close only polls. It does not close the pool, which the
// caller owns.
func (s *Store) Close() error {
	s.listener.stop()
	return nil
}

// listener owns the store's LISTEN connection and the workers waiting on it.
type listener struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	ready   chan struct{} // closed while listening
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// subscribe registers a wake-up for intentID, starting the listener if need
// be, and returns it with a channel closed once the listener listens.
func (l *listener) subscribe(s *Store, intentID string) (chan struct{}, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		l.started = true
		l.waiters = map[string]map[chan struct{}]struct{}{}
		l.ready = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		l.cancel, l.done = cancel, make(chan struct{})
		go l.run(ctx, s)
	}
	ch := make(chan struct{}, 1)
	if l.waiters[intentID] == nil {
		l.waiters[intentID] = map[chan struct{}]struct{}{}
	}
	l.waiters[intentID][ch] = struct{}{}
	return ch, l.ready
}

func (l *listener) unsubscribe(intentID string, ch chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.waiters[intentID], ch)
	if len(l.waiters[intentID]) == 0 {
		delete(l.waiters, intentID)
	}
}

// wake wakes the waiters on intentID, or every waiter when all is set.
func (l *listener) wake(intentID string, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, chans := range l.waiters {
		if all || id == intentID {
			for ch := range chans {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (l *listener) setReady(ready bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.ready:
		if !ready {
			l.ready = make(chan struct{})
		}
	default:
		if ready {
			close(l.ready)
		}
	}
}

func (l *listener) run(ctx context.Context, s *Store) {
	defer close(l.done)
	for ctx.Err() == nil {
		l.listen(ctx, s)
		// The connection failed: notifications may have been lost, so every
		// waiter claims again, and later ones poll until it is back.
		l.setReady(false)
		l.wake("", true)
		select {
		case <-ctx.Done():
		case <-time.After(listenRetry):
		}
	}
}

func (l *listener) listen(ctx context.Context, s *Store) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return
	}
	l.setReady(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return
		}
		l.wake(n.Payload, n.Payload == "")
	}
}

func (l *listener) stop() {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
