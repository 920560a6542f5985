package natsstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
)

// Store is an effector.DedupStore on a JetStream KV bucket. It is safe for
// concurrent use, and any number of Stores on any number of hosts may share
// one bucket.
type Store struct {
	js            jetstream.JetStream
	stream        jetstream.Stream
	bucket        string
	subject       string // "$KV.<bucket>."
	attemptMemory time.Duration
	attemptWait   time.Duration
	maxPayload    int
	parallel      int
	now           func() time.Time

	// held remembers, by token, the revision and record of each claim this
	// Store took and has not yet completed or released, so Complete and
	// Release write at that revision without reading it first. A write at
	// a remembered revision is fenced like any other: if the record moved
	// on, it fails, and the slow path reads what is there.
	mu      sync.Mutex
	held    map[string]heldClaim
	pruneAt int

	// unsureOf remembers, by intent, the token of a claim whose write may
	// have landed unanswered (see unsure.go).
	unsureOf      map[string]unsureClaim
	unsurePruneAt int
}

type heldClaim struct {
	rev uint64
	rec record
}

// hold remembers the claim rec written at rev, forgetting lapsed ones when
// the map has doubled since it last did.
func (s *Store) hold(rev uint64, rec record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[string]heldClaim{}
	}
	s.held[rec.token] = heldClaim{rev, rec}
	if len(s.held) >= s.pruneAt {
		now := s.now()
		for t, h := range s.held {
			if !now.Before(h.rec.deadline) {
				delete(s.held, t)
			}
		}
		s.pruneAt = max(1024, 2*len(s.held))
	}
}

// take forgets and returns the claim token holds on intentID, if this
// Store took it.
func (s *Store) take(intentID, token string) (heldClaim, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[token]
	if !ok || h.rec.id != intentID {
		return heldClaim{}, false
	}
	delete(s.held, token)
	return h, true
}

var _ effector.DedupStore = (*Store)(nil)

// Option configures Open.
type Option func(*config)

type config struct {
	replicas      int
	attemptMemory time.Duration
	attemptWait   time.Duration
	parallel      int
	existing      bool
	now           func() time.Time
}

// WithClock sets the clock the store measures leases, time-to-lives and
// budget windows with. Default: time.Now. Tests pass a clock they move.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithExisting makes Open bind to the bucket as it is, and fail if there
// is none: for a tool that reads the store (toolreg intents), where a
// mistyped bucket must not create an empty one, nor change its settings.
func WithExisting() Option { return func(c *config) { c.existing = true } }

// WithReplicas sets the replicas of a bucket Open creates. Default: 3, so
// the bucket survives the loss of one node and keeps every write
// acknowledged by two. A bucket that exists keeps its own.
func WithReplicas(n int) Option { return func(c *config) { c.replicas = n } }

// WithAttemptMemory sets how long a claim's record outlives its lease, and
// a released record lives: how long the store remembers that an intent was
// claimed and neither completed nor released (so a later claim reports
// Reclaimed) and how many attempts it took. Keep it longer than intents
// live. Default (and what a value under 1s means): 24h.
func WithAttemptMemory(d time.Duration) Option { return func(c *config) { c.attemptMemory = d } }

// WithAttemptTimeout bounds each request to the server: a request with no
// answer (the stream has no leader yet, a node is down) is sent again after
// it, until the call's context ends. Default: 5s.
func WithAttemptTimeout(d time.Duration) Option { return func(c *config) { c.attemptWait = d } }

// WithBatchParallel sets how many requests a batch call keeps in flight at
// once on the connection. Default: 128, so a batch of 100 goes at once.
func WithBatchParallel(n int) Option { return func(c *config) { c.parallel = n } }

// Open returns a store on bucket, creating the bucket (R3 by default) if it
// does not exist, and turning on what the store needs if it does: per-key
// TTLs (AllowMsgTTL) and reads answered by the stream's leader
// (AllowDirect off, so a read follows every acknowledged write). It waits
// out a cluster still electing its leader, until ctx ends. The caller owns
// and closes the connection under js.
func Open(ctx context.Context, js jetstream.JetStream, bucket string, opts ...Option) (*Store, error) {
	if err := checkBucket(bucket); err != nil {
		return nil, err
	}
	c := config{replicas: 3, attemptMemory: 24 * time.Hour, attemptWait: 5 * time.Second, parallel: 128}
	for _, o := range opts {
		o(&c)
	}
	if c.attemptMemory < time.Second {
		c.attemptMemory = 24 * time.Hour
	}
	if c.attemptWait <= 0 {
		c.attemptWait = 5 * time.Second
	}
	if c.parallel < 1 {
		c.parallel = 128
	}
	s := &Store{
		js: js, bucket: bucket, subject: "$KV." + bucket + ".",
		attemptMemory: c.attemptMemory, attemptWait: c.attemptWait, parallel: c.parallel,
		maxPayload: int(js.Conn().MaxPayload()), now: time.Now,
	}
	if c.now != nil {
		s.now = c.now
	}
	if s.maxPayload <= 0 {
		s.maxPayload = 1 << 20
	}
	name := "KV_" + bucket
	err := s.retry(ctx, func(ctx context.Context) error {
		st, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) && c.existing {
			return fmt.Errorf("there is no bucket %q (no stream %q): name the bucket the effectors use", bucket, name)
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			st, err = js.CreateStream(ctx, streamConfig(bucket, c.replicas))
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return errRetry
			}
		}
		if err != nil {
			return err
		}
		cfg := st.CachedInfo().Config
		if cfg.MaxAge > 0 {
			return fmt.Errorf("its stream %q removes every message after %v (the bucket's TTL), whatever the record's own time-to-live: a claim or a result would vanish early and a tool run again; use a bucket made without a TTL", name, cfg.MaxAge)
		}
		if !c.existing && (cfg.AllowDirect || !cfg.AllowMsgTTL) {
			cfg.AllowDirect, cfg.AllowMsgTTL = false, true
			if st, err = js.UpdateStream(ctx, cfg); err != nil {
				return err
			}
		}
		s.stream = st
		return nil
	})
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("natsstore: opening bucket %q: no server answers the JetStream API (%w): run nats-server with JetStream on (-js, or jetstream {} in its configuration); a cluster answers once it has elected its leader", bucket, err)
	}
	if err != nil {
		return nil, fmt.Errorf("natsstore: opening bucket %q: %w", bucket, err)
	}
	return s, nil
}

// Bucket returns the name of the store's bucket; its stream is "KV_" and
// the name.
func (s *Store) Bucket() string { return s.bucket }

// streamConfig is the stream of a KV bucket as nats.go makes one, with
// per-message TTLs and no direct gets.
func streamConfig(bucket string, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              "KV_" + bucket,
		Subjects:          []string{"$KV." + bucket + ".>"},
		MaxMsgsPerSubject: 1,
		MaxBytes:          -1,
		MaxMsgs:           -1,
		MaxMsgSize:        -1,
		MaxConsumers:      -1,
		Storage:           jetstream.FileStorage,
		Replicas:          replicas,
		AllowRollup:       true,
		DenyDelete:        true,
		Duplicates:        2 * time.Minute,
		Discard:           jetstream.DiscardNew,
		AllowMsgTTL:       true,
	}
}

// checkBucket refuses a bucket name that JetStream would refuse, or that
// would put more tokens in the store's subjects.
func checkBucket(b string) error {
	if b == "" {
		return errors.New("natsstore: empty bucket name: name one, such as \"toolreg\"")
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("natsstore: bucket name %q holds %q: use letters, digits, '_' and '-'", b, r)
		}
	}
	if len(b) > 64 {
		return fmt.Errorf("natsstore: bucket name of %d bytes: use at most 64", len(b))
	}
	return nil
}

// errRetry asks retry to try again.
var errRetry = errors.New("natsstore: try again")

// retry calls f, each time with its own attemptWait timeout, until it
// returns nil or a final error, or ctx ends. JetStream gives no answer to a
// request while a stream or the cluster has no leader: a request times out
// or finds no responders, and one sent after the election passes.
func (s *Store) retry(ctx context.Context, f func(ctx context.Context) error) error {
	backoff := 10 * time.Millisecond
	// said is the last error that said more than that time ran out, which
	// a give-up reports when ctx ended in the attempt after it: "no
	// responders" tells what to do, a deadline does not.
	var said error
	giveUp := func(err error) error {
		if said != nil && errors.Is(err, context.DeadlineExceeded) {
			err = said
		}
		return fmt.Errorf("%w (gave up retrying: %w)", err, context.Cause(ctx))
	}
	for {
		if ctx.Err() != nil {
			if said != nil { // ctx ended as the backoff did
				return giveUp(said)
			}
			return context.Cause(ctx)
		}
		actx, cancel := context.WithTimeout(ctx, s.attemptWait)
		err := f(actx)
		cancel()
		if err == nil || !transient(err) || ctx.Err() != nil {
			if err != nil && ctx.Err() != nil && transient(err) {
				return giveUp(err)
			}
			return err
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			said = err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return giveUp(err)
		case <-t.C:
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// transient reports whether a request that failed with err may pass if sent
// again: no answer in time, no responders (no leader yet), a connection
// lost (its requests fail "disconnected" and the client reconnects) or
// being re-established, the server's "temporarily unavailable", a key
// whose previous write is still in process (see casFailed).
func transient(err error) bool {
	switch {
	case errors.Is(err, errRetry),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrDisconnected):
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 503 || apiErr.Code == 408 || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return false
}

// casFailed reports whether err is a publish refused because the key's
// last revision was not the one expected.
//
// Not "wrong last sequence" without a sequence (10164): the leader answers
// it to a conditional write on a key whose previous write is still in
// process. It sends a write's ack before the key leaves that state, so the
// owner's release or completion sent as soon as its claim was acked gets
// it, though no other write came: a read then still finds the claim, and
// took it for a claim taken over (ErrNotOwner). It is transient: sent
// again, the write is judged against the applied record.
func casFailed(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// read returns the record at key k; hasRecord is false if there is none.
func (s *Store) read(ctx context.Context, k string) (record, error) {
	var r record
	err := s.retry(ctx, func(ctx context.Context) error {
		m, err := s.getLast(ctx, k)
		if err != nil {
			return err
		}
		r = record{}
		if m == nil {
			return nil
		}
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			r = record{revision: m.Sequence}
			return nil
		}
		if r, err = decode(m.Data); err != nil {
			return fmt.Errorf("key %q holds %d bytes this store did not write: use another bucket", k, len(m.Data))
		}
		r.revision = m.Sequence
		return nil
	})
	return r, err
}

// getLast returns the last message at key k, nil if there is none.
func (s *Store) getLast(ctx context.Context, k string) (*jetstream.RawStreamMsg, error) {
	m, err := s.stream.GetLastMsgForSubject(ctx, s.subject+k)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	return m, err
}

// write publishes value at key k if the key's last revision is rev (0: it
// has none), kept for ttl (rounded up to whole seconds: the server's
// unit), and returns the new revision; casFailed(err) says another write
// came first.
func (s *Store) write(ctx context.Context, k string, value []byte, rev uint64, ttl time.Duration) (uint64, error) {
	m := &nats.Msg{Subject: s.subject + k, Data: value, Header: nats.Header{}}
	ack, err := s.js.PublishMsg(ctx, m, writeOpts(rev, ttl)...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// writeOpts are the options of a write at rev kept for ttl.
func writeOpts(rev uint64, ttl time.Duration) []jetstream.PublishOpt {
	return []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(rev), jetstream.WithMsgTTL(seconds(ttl))}
}

// seconds rounds d up to whole seconds, at least one: message TTLs are
// whole seconds. A record's own deadline says when it ends to the
// millisecond; the TTL only removes it from the server some time after.
func seconds(d time.Duration) time.Duration {
	return max(time.Second, (d+time.Second-1)/time.Second*time.Second)
}

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("natsstore: making a claim token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Claim implements effector.DedupStore: a create of the intent's key that
// fails if it exists, or an update at the revision of a record a claim may
// replace (a lapsed claim, a released one, an expired result). A request
// that gets no answer is sent again (see WithAttemptTimeout) with the same
// token, until ctx ends: a claim that landed unanswered is recognized by
// its token, and its lease renewed. If ctx ends first, the claim answers
// ctx's error and its write may have landed; this Store remembers the
// token, and its next claim of the same call on the intent claims with it
// (Claimed, not InFlight). Only another Store (another process) finds
// that record InFlight, and Reclaimed once its lease runs out.
func (s *Store) Claim(ctx context.Context, intentID string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	if err := checkClaim(intentID, lease); err != nil {
		return effector.Claim{}, err
	}
	token, err := s.claimToken(intentID, call)
	if err != nil {
		return effector.Claim{}, err
	}
	return s.claim(ctx, intentID, call, lease, token, true)
}

// checkClaim refuses a claim the store cannot take.
func checkClaim(intentID string, lease time.Duration) error {
	if lease <= 0 {
		return fmt.Errorf("natsstore: lease %v for intent %q: want a positive duration", lease, trimID(intentID))
	}
	if len(intentID) > MaxIDBytes {
		return fmt.Errorf("natsstore: intent id of %d bytes is longer than the %d this store keeps", len(intentID), MaxIDBytes)
	}
	return nil
}

// claim is Claim with token, trying the create first if createFirst. A
// claim whose create was sent and found a record goes on with createFirst
// false; one whose create got no answer, with true: sent again, the
// create finds its own record if the first landed, and the read after it
// recognizes the token. A claim that answers an error may have written
// its record: the Store remembers its token for the next claim.
func (s *Store) claim(ctx context.Context, intentID string, call effector.Call, lease time.Duration, token string, createFirst bool) (effector.Claim, error) {
	c, err := s.claimAs(ctx, intentID, call, lease, token, createFirst)
	if err != nil {
		s.unsure(intentID, call, token, lease+s.attemptMemory)
	}
	return c, err
}

func (s *Store) claimAs(ctx context.Context, intentID string, call effector.Call, lease time.Duration, token string, createFirst bool) (effector.Claim, error) {
	k := key(intentID)
	if err := ctx.Err(); err != nil {
		return effector.Claim{}, fmt.Errorf("natsstore: claiming intent %q: %w", trimID(intentID), context.Cause(ctx))
	}
	var rev uint64
	if createFirst {
		// Most intents are new: try the create first, and read only if the
		// key has a record.
		nr := s.newClaim(intentID, call, lease, token)
		err := s.retry(ctx, func(ctx context.Context) (err error) {
			rev, err = s.write(ctx, k, nr.append(nil), 0, lease+s.attemptMemory)
			return err
		})
		if err == nil {
			s.hold(rev, nr)
			return effector.Claim{State: effector.Claimed, Token: token, Attempts: 1}, nil
		}
		if !casFailed(err) {
			return effector.Claim{}, fmt.Errorf("natsstore: claiming intent %q: %w", trimID(intentID), err)
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return effector.Claim{}, fmt.Errorf("natsstore: claiming intent %q: %w", trimID(intentID), context.Cause(ctx))
		}
		r, err := s.read(ctx, k)
		if err != nil {
			return effector.Claim{}, fmt.Errorf("natsstore: claiming intent %q: %w", trimID(intentID), err)
		}
		now := s.now()
		c, claim := decideClaim(r, call, token, now)
		if !claim {
			if c.State == effector.Done {
				if c.Result, err = s.result(ctx, k, r); err != nil {
					return effector.Claim{}, fmt.Errorf("natsstore: reading the result of intent %q: %w", trimID(intentID), err)
				}
			}
			if c.State != effector.Claimed {
				return c, nil
			}
			// This claim's own write, whose answer was lost, perhaps long
			// ago (a claim that answered an error): renew its lease, which
			// runs from now.
		}
		nr := record{tag: tagClaim, call: call, token: token, attempts: c.Attempts, deadline: now.Add(lease), id: intentID}
		err = s.retry(ctx, func(ctx context.Context) (err error) {
			rev, err = s.write(ctx, k, nr.append(nil), r.revision, lease+s.attemptMemory)
			return err
		})
		switch {
		case err == nil:
			s.hold(rev, nr)
			return c, nil
		case casFailed(err):
			continue // another write came first, perhaps our own unanswered one: read again
		}
		return effector.Claim{}, fmt.Errorf("natsstore: claiming intent %q: %w", trimID(intentID), err)
	}
}

// newClaim is the record of a first claim of intentID, its lease counted
// from now.
func (s *Store) newClaim(intentID string, call effector.Call, lease time.Duration, token string) record {
	return record{tag: tagClaim, call: call, token: token, attempts: 1, deadline: s.now().Add(lease), id: intentID}
}

// decideClaim says what a claim of call with token finds in r at now: the
// answer, and whether to write the claim (at r's revision).
func decideClaim(r record, call effector.Call, token string, now time.Time) (effector.Claim, bool) {
	fresh := effector.Claim{State: effector.Claimed, Token: token, Attempts: 1}
	if !r.hasRecord {
		return fresh, true
	}
	switch r.tag {
	case tagDone:
		if !now.Before(r.deadline) {
			return fresh, true // the result expired: the id is free for any call
		}
		if r.call.Digest != call.Digest {
			return effector.Claim{State: effector.Mismatch, Recorded: r.call}, false
		}
		return effector.Claim{State: effector.Done}, false
	case tagReleased:
		if r.attempts == 0 {
			return fresh, true
		}
		if r.call.Digest != call.Digest {
			return effector.Claim{State: effector.Mismatch, Recorded: r.call}, false
		}
		return effector.Claim{State: effector.Claimed, Token: token, Attempts: r.attempts + 1}, true
	}
	if r.token == token {
		return effector.Claim{State: effector.Claimed, Token: token, Attempts: r.attempts, Reclaimed: r.attempts > 1}, false
	}
	if r.call.Digest != call.Digest {
		return effector.Claim{State: effector.Mismatch, Recorded: r.call}, false
	}
	if now.Before(r.deadline) {
		return effector.Claim{State: effector.InFlight}, false
	}
	return effector.Claim{State: effector.Claimed, Token: token, Attempts: r.attempts + 1, Reclaimed: true}, true
}

// Complete implements effector.DedupStore: an update of the intent's key at
// the revision of token's claim, so an owner whose claim was taken over
// cannot overwrite the next owner's record. A result too large for one
// message is written in parts first (see the package doc). While requests
// get no answer it retries, until ctx ends; a retry whose earlier write
// landed finds its own record and succeeds.
func (s *Store) Complete(ctx context.Context, intentID, token string, result []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("natsstore: result ttl %v for intent %q: want a positive duration", ttl, trimID(intentID))
	}
	k := key(intentID)
	if h, ok := s.take(intentID, token); ok {
		now := s.now()
		if !now.Before(h.rec.deadline) {
			return fmt.Errorf("natsstore: completing intent %q: %w", trimID(intentID), effector.ErrNotOwner)
		}
		err := s.completeAt(ctx, k, h.rec, h.rev, now, result, ttl)
		if err == nil || !casFailed(err) {
			if err != nil {
				return fmt.Errorf("natsstore: completing intent %q: %w", trimID(intentID), err)
			}
			return nil
		}
		// The record moved on since the claim: read what is there.
	}
	r, err := s.read(ctx, k)
	if err != nil {
		return fmt.Errorf("natsstore: completing intent %q: %w", trimID(intentID), err)
	}
	now := s.now()
	if r.hasRecord && r.tag == tagDone && r.token == token {
		// An earlier attempt of this completion landed (its answer was
		// lost, or a batch held the id twice): the same result succeeds.
		if res, err := s.result(ctx, k, r); err == nil && bytes.Equal(res, result) {
			return nil
		}
	}
	if !r.hasRecord || r.tag != tagClaim || r.token != token || !now.Before(r.deadline) {
		return fmt.Errorf("natsstore: completing intent %q: %w", trimID(intentID), effector.ErrNotOwner)
	}
	err = s.completeAt(ctx, k, r, r.revision, now, result, ttl)
	if casFailed(err) {
		err = effector.ErrNotOwner // another write came first: completeAt read it
	}
	if err != nil {
		return fmt.Errorf("natsstore: completing intent %q: %w", trimID(intentID), err)
	}
	return nil
}

// completeAt replaces the claim r, at revision rev, with its done record
// holding result for ttl from now; casFailed(err) says another write came
// first: the record is no longer at rev, nor this completion's.
func (s *Store) completeAt(ctx context.Context, k string, r record, rev uint64, now time.Time, result []byte, ttl time.Duration) error {
	d := record{tag: tagDone, call: r.call, token: r.token, attempts: r.attempts, deadline: now.Add(ttl), id: r.id}
	if err := s.putResult(ctx, k, &d, result, ttl); err != nil {
		return err
	}
	return s.retry(ctx, func(ctx context.Context) error {
		_, err := s.write(ctx, k, d.append(nil), rev, ttl)
		if casFailed(err) {
			// A write that landed unanswered and was sent again finds its
			// own record: success. Another completion with the same token,
			// sent at once, is not this one unless it holds the same
			// result.
			cur, rerr := s.read(ctx, k)
			if rerr != nil {
				return rerr
			}
			if cur.revision > rev && sameDone(cur, d) {
				return nil
			}
		}
		return err
	})
}

// sameDone reports whether the done records a and b hold one completion:
// the same token and the same result.
func sameDone(a, b record) bool {
	return a.tag == tagDone && b.tag == tagDone && a.token == b.token &&
		a.parts == b.parts && a.total == b.total && a.digest == b.digest && bytes.Equal(a.result, b.result)
}

// Release implements effector.DedupStore: an update at the revision of
// token's claim to a released record, which keeps the call and the
// attempts that may have run, less this one.
func (s *Store) Release(ctx context.Context, intentID, token string) error {
	k := key(intentID)
	var r record
	if h, ok := s.take(intentID, token); ok {
		// Released at the claim's own revision if nothing moved it on;
		// if something did, the write below is refused and says who.
		r = h.rec
		r.revision, r.hasRecord = h.rev, true
	} else {
		var err error
		if r, err = s.read(ctx, k); err != nil {
			return fmt.Errorf("natsstore: releasing intent %q: %w", trimID(intentID), err)
		}
	}
	if !r.hasRecord || r.tag != tagClaim || r.token != token {
		return fmt.Errorf("natsstore: releasing intent %q: %w", trimID(intentID), effector.ErrNotOwner)
	}
	rel := record{tag: tagReleased, call: r.call, token: token, attempts: r.attempts - 1, id: intentID}
	err := s.retry(ctx, func(ctx context.Context) error {
		_, err := s.write(ctx, k, rel.append(nil), r.revision, s.attemptMemory)
		if casFailed(err) {
			cur, rerr := s.read(ctx, k)
			if rerr != nil {
				return rerr
			}
			if cur.tag == tagReleased && cur.token == token {
				return nil
			}
			return effector.ErrNotOwner
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("natsstore: releasing intent %q: %w", trimID(intentID), err)
	}
	return nil
}

// headroom is what a record's message keeps free of the server's maximum
// payload for its headers and the record's own fields.
const headroom = 8 << 10

// inlineLimit is the longest result the done record of intentID holds
// inline, and the length of each part of a longer one. A server with a
// max_payload this small refuses records with long ids anyway; parts stay
// at least 1 KiB.
func (s *Store) inlineLimit(intentID string) int {
	return max(1<<10, s.maxPayload-headroom-len(intentID))
}

// putResult sets d's result: inline if the record fits one message with
// it, else written first in parts of its own keys (the record then names
// their count, length and digest), each kept a little longer than the
// record so that no part ends before it.
func (s *Store) putResult(ctx context.Context, k string, d *record, result []byte, ttl time.Duration) error {
	limit := s.inlineLimit(d.id)
	if len(result) <= limit {
		d.result = result
		return nil
	}
	d.parts = (len(result) + limit - 1) / limit
	d.total = len(result)
	d.digest = sha256.Sum256(result)
	return s.each(ctx, d.parts, func(ctx context.Context, i int) error {
		part := result[i*limit : min(len(result), (i+1)*limit)]
		return s.retry(ctx, func(ctx context.Context) error {
			m := &nats.Msg{Subject: s.subject + partKey(k, d.token, i), Data: part, Header: nats.Header{}}
			_, err := s.js.PublishMsg(ctx, m, jetstream.WithMsgTTL(seconds(ttl)+2*time.Second))
			return err
		})
	})
}

// result returns a done record's result, reading its parts if it has any.
func (s *Store) result(ctx context.Context, k string, r record) ([]byte, error) {
	if r.parts == 0 {
		if r.result == nil {
			return []byte{}, nil
		}
		return r.result, nil
	}
	parts := make([][]byte, r.parts)
	err := s.each(ctx, r.parts, func(ctx context.Context, i int) error {
		return s.retry(ctx, func(ctx context.Context) error {
			m, err := s.stream.GetLastMsgForSubject(ctx, s.subject+partKey(k, r.token, i))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return fmt.Errorf("part %d of %d of the result is gone (removed from the bucket by hand, or its TTL was shortened)", i+1, r.parts)
			}
			if err != nil {
				return err
			}
			parts[i] = m.Data
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	res := bytes.Join(parts, nil)
	if len(res) != r.total || sha256.Sum256(res) != r.digest {
		return nil, fmt.Errorf("the result's %d parts hold %d bytes that are not the %d completed", r.parts, len(res), r.total)
	}
	return res, nil
}

// each calls f for 0..n-1, at most s.parallel at once, and returns the
// first error.
func (s *Store) each(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, s.parallel)
		mu    sync.Mutex
		first error
	)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(ctx, i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// trimID shortens an id for a message.
func trimID(id string) string {
	if len(id) > 80 {
		return strings.ToValidUTF8(id[:80], "") + "..."
	}
	return id
}
