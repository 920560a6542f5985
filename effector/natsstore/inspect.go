package natsstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
)

var _ effector.Inspector = (*Store)(nil)

// inspectPage is how many keys scan reads at a time.
const inspectPage = 500

// Records implements effector.Inspector: the last message of every
// record's key, in key order (see scan). A released record is no
// record.
func (s *Store) Records(ctx context.Context, fn func(effector.Record) error) error {
	var fnErr error
	err := s.scan(ctx, "i.>", func(k string, data []byte, seq uint64) error {
		r, err := decode(data)
		if err != nil || r.tag == tagReleased {
			return nil
		}
		r.revision = seq
		rec, ok, err := s.inspect(ctx, k, r)
		if err != nil || !ok {
			return err
		}
		fnErr = fn(rec)
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("natsstore: listing records: %w", err)
	}
	return nil
}

// scan calls fn with the key, value and revision of the last message of
// every key matching filter, in key order. It reads through the stream's
// leader: the keys from the stream's info, then each key's last message
// (getLast), inspectPage at a time, in parallel. A listing through a
// consumer read from whichever peer hosted it, which may be a moment
// behind the leader, so a listing made right after a write could show the
// value before it. It stops at fn's first error and returns it.
func (s *Store) scan(ctx context.Context, filter string, fn func(k string, data []byte, seq uint64) error) error {
	var keys []string
	err := s.retry(ctx, func(actx context.Context) error {
		info, err := s.stream.Info(actx, jetstream.WithSubjectFilter(s.subject+filter))
		if err != nil {
			return err
		}
		keys = keys[:0]
		for subj := range info.State.Subjects {
			keys = append(keys, strings.TrimPrefix(subj, s.subject))
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(keys)
	msgs := make([]*jetstream.RawStreamMsg, min(len(keys), inspectPage))
	for len(keys) > 0 {
		page := keys[:min(len(keys), inspectPage)]
		keys = keys[len(page):]
		clear(msgs)
		err := s.each(ctx, len(page), func(ctx context.Context, i int) error {
			return s.retry(ctx, func(actx context.Context) (err error) {
				msgs[i], err = s.getLast(actx, page[i])
				return err
			})
		})
		if err != nil {
			return err
		}
		for i, m := range msgs[:len(page)] {
			if m == nil {
				continue // removed since the stream's info was read
			}
			if err := fn(page[i], m.Data, m.Sequence); err != nil {
				return err
			}
		}
	}
	return nil
}

// Record implements effector.Inspector.
func (s *Store) Record(ctx context.Context, id string) (effector.Record, bool, error) {
	k := key(id)
	r, err := s.read(ctx, k)
	if err != nil {
		return effector.Record{}, false, fmt.Errorf("natsstore: reading record %q: %w", trimID(id), err)
	}
	if !r.hasRecord || r.tag == tagReleased {
		return effector.Record{}, false, nil
	}
	return s.inspect(ctx, k, r)
}

// inspect turns the record r at key k into what an operator sees.
func (s *Store) inspect(ctx context.Context, k string, r record) (effector.Record, bool, error) {
	rec := effector.Record{ID: r.id, Tool: r.call.Tool, Attempts: r.attempts, Deadline: r.deadline}
	now := s.now()
	switch {
	case r.tag == tagClaim && now.Before(r.deadline):
		rec.State = effector.RecordInFlight
	case r.tag == tagClaim:
		rec.State = effector.RecordUnknown
	case !now.Before(r.deadline):
		rec.State = effector.RecordExpired
	default:
		rec.State = effector.RecordDone
		res, err := s.result(ctx, k, r)
		if err != nil {
			return effector.Record{}, false, fmt.Errorf("natsstore: reading the result of %q: %w", trimID(r.id), err)
		}
		rec.Result = res
	}
	return rec, true, nil
}

// Resolve implements effector.Inspector: an update at the revision of the
// lapsed claim, so a claim or completion that comes first wins.
func (s *Store) Resolve(ctx context.Context, id string, result []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("natsstore: ttl %v resolving %q: want a positive duration", ttl, trimID(id))
	}
	k := key(id)
	r, err := s.read(ctx, k)
	if err != nil {
		return fmt.Errorf("natsstore: resolving %q: %w", trimID(id), err)
	}
	now := s.now()
	switch {
	case !r.hasRecord || r.tag == tagReleased:
		return fmt.Errorf("%w: intent %q has no record", effector.ErrNotResolvable, trimID(id))
	case r.tag == tagDone:
		return fmt.Errorf("%w: intent %q is done", effector.ErrNotResolvable, trimID(id))
	case now.Before(r.deadline):
		return fmt.Errorf("%w: intent %q is still leased", effector.ErrNotResolvable, trimID(id))
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	d := record{tag: tagDone, call: r.call, token: token, attempts: r.attempts, deadline: now.Add(ttl), id: r.id}
	if err := s.putResult(ctx, k, &d, result, ttl); err != nil {
		return fmt.Errorf("natsstore: resolving %q: %w", trimID(id), err)
	}
	err = s.retry(ctx, func(ctx context.Context) error {
		_, err := s.write(ctx, k, d.append(nil), r.revision, ttl)
		return err
	})
	if casFailed(err) {
		return fmt.Errorf("%w: intent %q changed while it was being resolved", effector.ErrNotResolvable, trimID(id))
	}
	if err != nil {
		return fmt.Errorf("natsstore: resolving %q: %w", trimID(id), err)
	}
	return nil
}

// Purge implements effector.Inspector: the server removes every record
// and part when its TTL ends, so there is nothing to delete.
func (s *Store) Purge(context.Context, time.Duration) (int64, error) { return 0, nil }
