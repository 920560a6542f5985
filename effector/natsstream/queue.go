package natsstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

// Defaults of the queue's options.
const (
	// DefaultReplicas is how many servers hold each stream: three, so a
	// stream keeps taking writes with one server down.
	DefaultReplicas = 3
	// DefaultDuplicateWindow is how long the intents and results streams
	// remember a message id (Nats-Msg-Id): a publish of the same id inside
	// it is dropped by the server. It is the server's own default.
	DefaultDuplicateWindow = 2 * time.Minute
	// DefaultResultTTL is how long the results stream keeps a result: the
	// effector's DefaultResultTTL, so a result is readable as long as the
	// dedup store answers its intent.
	DefaultResultTTL = effector.DefaultResultTTL
	// DefaultRequestTimeout bounds one attempt at a JetStream call (a
	// publish, an acknowledgement, a stream lookup). A call that gets no
	// answer in time is tried again, while its context lasts: until a
	// cluster's meta leader or a stream's leader is elected, the servers do
	// not answer at all, and one long wait would spend the whole context on
	// the first attempt.
	DefaultRequestTimeout = 5 * time.Second
)

// maxName is the longest queue name Open takes: three stream names and
// subjects are made from it.
const maxName = 32

// Queue is a queue of intents on NATS JetStream, with its results and dead
// letters: three streams named after it. Open makes it.
type Queue struct {
	js   jetstream.JetStream
	name string

	replicas    int
	dupWindow   time.Duration
	perSubject  bool
	intentTTL   time.Duration
	resultTTL   time.Duration
	reqTimeout  time.Duration
	intents     string // stream names
	results     string
	deadLetters string
}

// QueueOption configures Open.
type QueueOption func(*Queue)

// WithReplicas sets how many servers hold each of the queue's streams.
// Default: DefaultReplicas (3). Use 1 only where losing the server may lose
// intents (a single-server test).
func WithReplicas(n int) QueueOption { return func(q *Queue) { q.replicas = n } }

// WithDuplicateWindow sets how long the intents and results streams
// remember message ids: a publish of an intent (or a result) whose id was
// published within the window is dropped by the server. Past it, a
// republished intent is stored again and delivered again, and the dedup
// store answers it with its recorded result (within the effector's result
// TTL). The server keeps every id of the window in memory. Default:
// DefaultDuplicateWindow (2m).
func WithDuplicateWindow(d time.Duration) QueueOption {
	return func(q *Queue) { q.dupWindow = d }
}

// WithDedupPerSubject makes the server refuse a second intent with the same
// id for as long as the first is in the intents stream, with no window: each
// intent has a subject of its own, and the stream keeps at most one message
// a subject, refusing new ones (MaxMsgsPerSubject 1, DiscardNew,
// DiscardNewPerSubject). For that the stream keeps answered intents too
// (limits retention instead of a work queue), so it grows with every intent
// until WithIntentTTL removes old ones: the dedup then lasts as long as an
// intent is kept. Add counts a refused intent as a duplicate. A stream made
// without it cannot be changed to it (the server refuses a change of
// retention): make a new queue. Default: off.
func WithDedupPerSubject() QueueOption { return func(q *Queue) { q.perSubject = true } }

// WithIntentTTL sets how long the intents stream keeps an intent, answered
// or not, with WithDedupPerSubject (which keeps answered intents): the
// dedup of an id lasts that long. Keep it far above the time an intent
// waits to be answered: an intent removed before it is answered is lost.
// Default: 0, kept until removed by hand. Open refuses it without
// WithDedupPerSubject, where answered intents leave the stream at once.
func WithIntentTTL(d time.Duration) QueueOption { return func(q *Queue) { q.intentTTL = d } }

// WithResultTTL sets how long the results stream keeps a result. Default:
// DefaultResultTTL (24h).
func WithResultTTL(d time.Duration) QueueOption { return func(q *Queue) { q.resultTTL = d } }

// WithRequestTimeout bounds one attempt at a JetStream call; calls are
// tried again while their context lasts. Default: DefaultRequestTimeout.
func WithRequestTimeout(d time.Duration) QueueOption {
	return func(q *Queue) { q.reqTimeout = d }
}

// Open makes the queue's three streams on js, or takes the existing ones,
// and returns the queue: name, holding intents on the subjects "toolreg.<name>.intents.<id>";
// name_results, holding results on "toolreg.<name>.results.<id>"; and
// name_dead, holding dead letters on "toolreg.<name>.dead". <id> is
// Token(intent id). name is 1 to 32 letters, digits, '-' or '_'. Open
// refuses to change existing streams: every Open of a queue passes the same
// options (WithReplicas, WithDuplicateWindow, WithDedupPerSubject,
// WithIntentTTL, WithResultTTL), and the streams are changed by hand (nats
// stream edit) or replaced by a new queue. Open sends
// its calls again while the cluster has no leader to answer them, for up to
// 30 seconds.
func Open(ctx context.Context, js jetstream.JetStream, name string, opts ...QueueOption) (*Queue, error) {
	q := &Queue{js: js, name: name, replicas: DefaultReplicas, dupWindow: DefaultDuplicateWindow,
		resultTTL: DefaultResultTTL, reqTimeout: DefaultRequestTimeout,
		intents: name, results: name + "_results", deadLetters: name + "_dead"}
	for _, o := range opts {
		o(q)
	}
	var ps []string
	if js == nil {
		ps = append(ps, "the JetStream context is nil: pass jetstream.New(nc)")
	}
	if name == "" || len(name) > maxName || !plain(name) {
		ps = append(ps, fmt.Sprintf("queue name %q: want 1 to %d letters, digits, '-' or '_' (it names streams and subjects)", name, maxName))
	}
	if q.replicas < 1 || q.replicas > 5 {
		ps = append(ps, fmt.Sprintf("WithReplicas(%d): want 1 to 5 (3 for a cluster)", q.replicas))
	}
	if q.dupWindow <= 0 {
		ps = append(ps, fmt.Sprintf("WithDuplicateWindow(%v): want a positive duration", q.dupWindow))
	}
	if q.resultTTL <= 0 {
		ps = append(ps, fmt.Sprintf("WithResultTTL(%v): want a positive duration", q.resultTTL))
	}
	if q.intentTTL < 0 || q.intentTTL > 0 && !q.perSubject {
		ps = append(ps, fmt.Sprintf("WithIntentTTL(%v): want a positive duration, with WithDedupPerSubject (without it, answered intents leave the stream at once, and a TTL could only drop unanswered ones)", q.intentTTL))
	}
	if q.reqTimeout <= 0 {
		ps = append(ps, fmt.Sprintf("WithRequestTimeout(%v): want a positive duration", q.reqTimeout))
	}
	if q.resultTTL > 0 && q.dupWindow > q.resultTTL {
		ps = append(ps, fmt.Sprintf("WithDuplicateWindow(%v) is longer than WithResultTTL(%v): the server refuses a window longer than a stream keeps its messages; shorten the window or keep results longer", q.dupWindow, q.resultTTL))
	}
	if len(ps) > 0 {
		return nil, fmt.Errorf("natsstream: Open: %s", strings.Join(ps, "; "))
	}
	intents := jetstream.StreamConfig{
		Name: q.intents, Subjects: []string{q.subject("intents", "*")},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Replicas: q.replicas, Duplicates: q.dupWindow,
	}
	if q.perSubject {
		intents.Retention = jetstream.LimitsPolicy
		intents.MaxMsgsPerSubject = 1
		intents.Discard = jetstream.DiscardNew
		intents.DiscardNewPerSubject = true
		intents.MaxAge = q.intentTTL
	}
	streams := []jetstream.StreamConfig{intents, {
		// The first result of an intent stays: a later one (a redelivery
		// answered again) is refused, also past the duplicate window.
		Name: q.results, Subjects: []string{q.subject("results", "*")},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
		Replicas: q.replicas, Duplicates: q.dupWindow, MaxAge: q.resultTTL,
		MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true,
		AllowDirect: true,
	}, {
		Name: q.deadLetters, Subjects: []string{q.subject("dead", "")},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
		Replicas: q.replicas, Duplicates: q.dupWindow,
	}}
	for _, cfg := range streams {
		// Made, or taken as it is: never changed. An Open with other
		// options (a producer's WithReplicas(1)) would otherwise change
		// the streams every effector of the queue relies on.
		err := q.try(ctx, func(ctx context.Context) error {
			_, err := js.CreateStream(ctx, cfg)
			return err
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, fmt.Errorf("natsstream: Open %q: stream %q exists with another configuration (%s): every Open of a queue must pass the same options; to change them, edit the stream (nats stream edit %s), or use a new queue",
				name, cfg.Name, q.differences(ctx, cfg), cfg.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("natsstream: Open %q: making stream %q: %w", name, cfg.Name, err)
		}
	}
	return q, nil
}

// differences says how the existing stream's configuration differs from
// cfg, in the options that set it.
func (q *Queue) differences(ctx context.Context, cfg jetstream.StreamConfig) string {
	var old jetstream.StreamConfig
	err := q.try(ctx, func(ctx context.Context) error {
		st, err := q.js.Stream(ctx, cfg.Name)
		if err == nil {
			old = st.CachedInfo().Config
		}
		return err
	})
	if err != nil {
		return "it could not be read: " + err.Error()
	}
	var ds []string
	if old.Replicas != cfg.Replicas {
		ds = append(ds, fmt.Sprintf("its replicas are %d, this Open's %d (WithReplicas)", old.Replicas, cfg.Replicas))
	}
	if old.Duplicates != cfg.Duplicates {
		ds = append(ds, fmt.Sprintf("its duplicate window is %v, this Open's %v (WithDuplicateWindow)", old.Duplicates, cfg.Duplicates))
	}
	if old.MaxAge != cfg.MaxAge {
		what, opt := "intents", "WithIntentTTL"
		if cfg.Name == q.results {
			what, opt = "results", "WithResultTTL"
		}
		ds = append(ds, fmt.Sprintf("it keeps %s %v, this Open %v (%s; 0 is for ever)", what, old.MaxAge, cfg.MaxAge, opt))
	}
	if old.Retention != cfg.Retention || old.MaxMsgsPerSubject != cfg.MaxMsgsPerSubject {
		ds = append(ds, fmt.Sprintf("its retention is %v with %d messages a subject, this Open's %v with %d (WithDedupPerSubject)", old.Retention, old.MaxMsgsPerSubject, cfg.Retention, cfg.MaxMsgsPerSubject))
	}
	if fmt.Sprint(old.Subjects) != fmt.Sprint(cfg.Subjects) {
		ds = append(ds, fmt.Sprintf("it takes subjects %q, this Open %q", old.Subjects, cfg.Subjects))
	}
	if len(ds) == 0 {
		return "in settings Open does not make"
	}
	return strings.Join(ds, "; ")
}

// Name returns the queue's name, which is also its intents stream's.
func (q *Queue) Name() string { return q.name }

// subject returns "toolreg.<name>.<kind>.<token>", or without the token
// when it is "".
func (q *Queue) subject(kind, token string) string {
	s := "toolreg." + q.name + "." + kind
	if token != "" {
		s += "." + token
	}
	return s
}

// maxPlainToken is the longest intent id used as it is in subjects and
// message ids.
const maxPlainToken = 64

// Token returns the form of an intent id used in the queue's subjects and
// as the Nats-Msg-Id of its intent and result: the id itself when it is 1
// to 64 letters, digits, '-' or '_' (an intent.IntentID, a UUID, is), and
// otherwise '~' and the hex SHA-256 of the id. Two ids have the same token
// only if they are equal: the hashed form starts with a byte the plain form
// never holds, and it covers every byte of the id. An id is never put in a
// subject or header as it is otherwise: a header value loses its leading
// and trailing white space (so ids differing in it would share one
// Nats-Msg-Id and the later intents be dropped as duplicates), and a long
// id would push a subject past the server's 4 KiB protocol line, which
// closes the connection.
func Token(id string) string {
	if id != "" && len(id) <= maxPlainToken && plain(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "~" + hex.EncodeToString(sum[:])
}

// plain reports whether s holds only letters, digits, '-' and '_'.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// retryFor bounds how long try sends a call again while it fails in
// passing: past it, the error goes to the caller (Serve logs it and retries
// with its backoff; a producer sees it), rather than a stuck cluster
// holding a call silently. It outlasts a leader election on a loaded
// machine.
const retryFor = 30 * time.Second

// try runs call, each attempt with its own timeout (WithRequestTimeout),
// until it succeeds, fails for good, ctx ends or retryFor passes. An
// attempt that got no answer, found no responders, or found the cluster
// without a leader is tried again after a short wait.
func (q *Queue) try(ctx context.Context, call func(context.Context) error) error {
	wait := 50 * time.Millisecond
	giveUp := time.Now().Add(retryFor)
	for {
		actx, cancel := context.WithTimeout(ctx, q.reqTimeout)
		err := call(actx)
		cancel()
		switch {
		case err == nil || !transient(err):
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		case time.Now().After(giveUp):
			return fmt.Errorf("no answer for %v: %w", retryFor, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// msgIDInProcess is the server's "duplicate message id is in process"
// (409, JSStreamDuplicateMessageConflict): a publish whose Nats-Msg-Id a
// copy sent a moment before holds, while that copy is proposed to the
// stream's replicas and not yet stored (nats-server's
// jetstream_batching.go: the id is in the dedup map with no sequence yet).
// The same message is being stored: sent again once it is, the publish is
// answered as a duplicate; if the copy failed, it is stored.
const msgIDInProcess = 10158

// transient reports whether err may pass by itself: no answer in time, no
// responders (a server restarting, a leader not yet elected), a lost
// connection, the server saying the cluster or stream is unavailable, or a
// copy of the same message (the same message id) being stored.
func transient(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, jetstream.ErrNoHeartbeat):
		return true
	case errors.As(err, &apiErr):
		return apiErr.Code == 503 || apiErr.Code == 408 || apiErr.ErrorCode == msgIDInProcess ||
			apiErr.ErrorCode == jetstream.JSErrCodeJetStreamNotEnabledForAccount && strings.Contains(apiErr.Description, "unavailable")
	}
	return false
}

// perSubjectFull reports whether err is the server refusing a publish
// because the subject already holds its one message: a duplicate.
func perSubjectFull(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && strings.Contains(apiErr.Description, "maximum messages per subject exceeded")
}

// publish publishes data on subject with msgID as its Nats-Msg-Id, to
// stream, trying again (with the same id, so the server drops a copy that
// got through) while ctx lasts. It reports whether the server had the
// message already: a duplicate inside the window, or a subject that holds
// its one message.
func (q *Queue) publish(ctx context.Context, stream, subject, msgID string, data []byte) (dup bool, err error) {
	err = q.try(ctx, func(ctx context.Context) error {
		m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, msgID)
		ack, err := q.js.PublishMsg(ctx, m, jetstream.WithExpectStream(stream))
		switch {
		case perSubjectFull(err):
			dup = true
			return nil
		case err != nil:
			return err
		}
		dup = ack.Duplicate
		return nil
	})
	if errors.Is(err, nats.ErrMaxPayload) {
		err = fmt.Errorf("%w: it is %d bytes, more than the servers' max_payload (%d bytes): raise max_payload in the servers' configuration (at most 64 MB), or make it smaller", err, len(data), q.js.Conn().MaxPayload())
	}
	return dup, err
}

// Add publishes each intent to the queue, with Token(in.ID) as its
// Nats-Msg-Id, and returns how many the stream stored anew. An intent whose
// id was published within the duplicate window (or, with
// WithDedupPerSubject, is still in the stream) is dropped by the server and
// not counted: so a producer may retry an Add whose outcome it does not
// know. The intents are published together (asynchronously) and Add returns
// once the server has acknowledged each; one that fails is tried again on
// its own while ctx lasts.
func (q *Queue) Add(ctx context.Context, ins ...*intent.Intent) (added int, err error) {
	type pending struct {
		in   *intent.Intent
		data []byte
		fut  jetstream.PubAckFuture
	}
	ps := make([]pending, 0, len(ins))
	for _, in := range ins {
		if in == nil {
			return 0, errors.New("natsstream: Add: an intent is nil")
		}
		b, err := in.MarshalJSON()
		if err != nil {
			return 0, fmt.Errorf("natsstream: Add: encoding intent %q: %w", in.ID, err)
		}
		ps = append(ps, pending{in: in, data: b})
	}
	for i := range ps {
		tok := Token(ps[i].in.ID)
		m := &nats.Msg{Subject: q.subject("intents", tok), Data: ps[i].data, Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, tok)
		// A failed async publish (a full window) is published again below.
		ps[i].fut, _ = q.js.PublishMsgAsync(m, jetstream.WithExpectStream(q.intents))
	}
	for _, p := range ps {
		if p.fut != nil {
			select {
			case ack := <-p.fut.Ok():
				if !ack.Duplicate {
					added++
				}
				continue
			case err := <-p.fut.Err():
				if perSubjectFull(err) {
					continue
				}
			case <-ctx.Done():
				return added, fmt.Errorf("natsstream: Add: %w", ctx.Err())
			case <-time.After(q.reqTimeout):
			}
		}
		tok := Token(p.in.ID)
		dup, err := q.publish(ctx, q.intents, q.subject("intents", tok), tok, p.data)
		if err != nil {
			return added, fmt.Errorf("natsstream: Add: publishing intent %q to queue %q: %w", p.in.ID, q.name, err)
		}
		if !dup {
			added++
		}
	}
	return added, nil
}

// Sink returns the effector.Sink that publishes results to the queue's
// results stream.
func (q *Queue) Sink() *Sink { return &Sink{q: q} }

// Sink is an effector.Sink publishing results to a queue's results stream.
type Sink struct{ q *Queue }

var _ effector.StagedSink = (*Sink)(nil)

// Publish publishes res on "toolreg.<name>.results.<Token(res.IntentID)>"
// with that token as its Nats-Msg-Id, and returns once the stream has it on
// a quorum of its servers (each fsyncs before answering with sync_interval
// always). The first result of an intent stays: a republished one (a
// redelivered intent answered again from the dedup store, a publish retried
// after a lost answer) is dropped by the server, and Publish returns nil;
// one sent while a copy is being stored is sent again until it is.
// A result larger than the servers' max_payload (1 MiB unless configured)
// is refused, and Serve tries it again until the setting is raised, holding
// its intent meanwhile: size max_payload for the largest result a tool
// returns.
func (s *Sink) Publish(ctx context.Context, res intent.Result) error {
	b, err := res.MarshalJSON()
	if err != nil {
		return fmt.Errorf("natsstream: encoding the result of intent %q: %w", res.IntentID, err)
	}
	tok := Token(res.IntentID)
	if _, err := s.q.publish(ctx, s.q.results, s.q.subject("results", tok), tok, b); err != nil {
		return fmt.Errorf("natsstream: publishing the result of intent %q to %q: %w", res.IntentID, s.q.results, err)
	}
	return nil
}

// Stage sends res as Publish does, without waiting for the server's
// answer, and returns what waits for it (up to WithRequestTimeout, or, if a
// copy of res is being stored, as Publish does): so Serve
// has many results in flight at once, on the one connection, rather than a
// round trip each (effector.StagedSink). The wait returns nil once the
// stream has res, or had it already; any other outcome (a refusal, no
// answer in time, a send the client refused) is its error, and Serve then
// publishes res again with Publish, under the same message id, so a copy
// that got through is dropped. Sending blocks while the JetStream context
// has its limit of asynchronous publishes in flight
// (jetstream.WithPublishAsyncMaxPending, 4000 by default), at most its
// stall wait (200ms by default), then Stage leaves the publish to the wait.
func (s *Sink) Stage(ctx context.Context, res intent.Result) (wait func() error, err error) {
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("natsstream: encoding the result of intent %q: %w", res.IntentID, err)
	}
	tok := Token(res.IntentID)
	m := &nats.Msg{Subject: s.q.subject("results", tok), Data: b, Header: nats.Header{}}
	m.Header.Set(jetstream.MsgIDHeader, tok)
	fut, err := s.q.js.PublishMsgAsync(m, jetstream.WithExpectStream(s.q.results))
	if err != nil {
		// Not sent (the limit in flight, a payload too large): Publish
		// sends it, with its retries and its errors.
		return func() error { return s.Publish(ctx, res) }, nil
	}
	return func() error {
		t := time.NewTimer(s.q.reqTimeout)
		defer t.Stop()
		select {
		case <-fut.Ok():
			return nil
		case err := <-fut.Err():
			if perSubjectFull(err) {
				return nil
			}
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == msgIDInProcess {
				// A copy of res is being stored: Publish waits for it.
				return s.Publish(ctx, res)
			}
			return fmt.Errorf("natsstream: publishing the result of intent %q to %q: %w", res.IntentID, s.q.results, err)
		case <-t.C:
			return fmt.Errorf("natsstream: publishing the result of intent %q to %q: no answer in %v", res.IntentID, s.q.results, s.q.reqTimeout)
		case <-ctx.Done():
			return fmt.Errorf("natsstream: publishing the result of intent %q to %q: %w", res.IntentID, s.q.results, ctx.Err())
		}
	}, nil
}

// Result returns the result published for intent id, and false if there is
// none (yet, or any more: results are kept for WithResultTTL). It reads the
// one message of the intent's subject and makes no consumer. The read may
// go to any of the stream's servers (a direct get), so a result published a
// moment ago may not be seen yet: poll, or read the results in order with
// Results.
func (q *Queue) Result(ctx context.Context, id string) (intent.Result, bool, error) {
	var raw *jetstream.RawStreamMsg
	err := q.try(ctx, func(ctx context.Context) error {
		st, err := q.js.Stream(ctx, q.results)
		if err != nil {
			return err
		}
		raw, err = st.GetLastMsgForSubject(ctx, q.subject("results", Token(id)))
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return intent.Result{}, false, nil
	}
	if err != nil {
		return intent.Result{}, false, fmt.Errorf("natsstream: reading the result of intent %q: %w", id, err)
	}
	var r intent.Result
	if err := r.UnmarshalJSON(raw.Data); err != nil {
		return intent.Result{}, false, fmt.Errorf("natsstream: %s/%d: %w", q.results, raw.Sequence, err)
	}
	return r, true, nil
}

// Results reads every result in the results stream, in order: a helper for
// consumers that read it whole, and for tests. It reads through a consumer
// of its own that it deletes before it returns (and that the server drops
// after 5 idle seconds if Results cannot), so calling it often leaves no
// consumers behind.
func (q *Queue) Results(ctx context.Context) ([]intent.Result, error) {
	var out []intent.Result
	err := q.readAll(ctx, q.results, func(data []byte, seq uint64) error {
		var r intent.Result
		if err := r.UnmarshalJSON(data); err != nil {
			return fmt.Errorf("natsstream: %s/%d: %w", q.results, seq, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// DeadLetter is an entry of the dead-letter stream: an intent (or an entry
// that is no intent) that was given up, and why.
type DeadLetter struct {
	// IntentID is the intent's id; empty for an entry that is no intent.
	IntentID string `json:"intent_id,omitempty"`
	// Reason says why it was given up.
	Reason string `json:"reason"`
	// Deliveries is how many times the queue had delivered it, when known.
	Deliveries int `json:"deliveries,omitempty"`
	// Pos is where it was in the intents stream ("<stream>/<sequence>"),
	// when known.
	Pos string `json:"pos,omitempty"`
	// Entry holds the entry's bytes: an intent's JSON form, as Add wrote it.
	// An entry too large to fit in one message with the rest of its dead
	// letter is cut: Entry holds its first bytes, EntrySize its length.
	Entry []byte `json:"entry"`
	// EntrySize is the length of the whole entry, when Entry holds only its
	// first bytes; 0 when Entry is whole.
	EntrySize int `json:"entry_size,omitempty"`
}

// deadLetter publishes dl to the dead-letter stream, with msgID as its
// Nats-Msg-Id.
func (q *Queue) deadLetter(ctx context.Context, msgID string, dl DeadLetter) error {
	b, err := fitDeadLetter(dl, int(q.js.Conn().MaxPayload())-deadLetterHeaderRoom)
	if err != nil {
		return err
	}
	_, err = q.publish(ctx, q.deadLetters, q.subject("dead", ""), msgID, b)
	return err
}

// deadLetterHeaderRoom is what a dead letter leaves of the server's
// max_payload for its headers (the Nats-Msg-Id and the server's).
const deadLetterHeaderRoom = 1024

// fitDeadLetter encodes dl in at most limit bytes (none when limit is not
// positive: the connection knows no limit yet). An entry may be as large as
// the server takes, and its dead letter holds it in base64 beside the
// reason: one that does not fit keeps the first bytes of its entry that do,
// with EntrySize saying how long it was, and a reason too long to fit with
// no entry is cut. Refused, it would be retried for ever and its entry never
// dead-lettered.
func fitDeadLetter(dl DeadLetter, limit int) ([]byte, error) {
	for {
		b, err := json.Marshal(dl)
		if err != nil || limit <= 0 || len(b) <= limit {
			return b, err
		}
		over := len(b) - limit
		switch {
		case len(dl.Entry) > 0:
			if dl.EntrySize == 0 {
				dl.EntrySize = len(dl.Entry)
			}
			// base64 takes 4 bytes for 3: drop a little more than over.
			dl.Entry = dl.Entry[:max(0, len(dl.Entry)-(over*3/4+4))]
		case len(dl.Reason) > over+len(" [cut]"):
			dl.Reason = strings.ToValidUTF8(dl.Reason[:len(dl.Reason)-over-len(" [cut]")-8], "") + " [cut]"
		default:
			return nil, fmt.Errorf("a dead letter of %d bytes does not fit in the server's %d-byte messages", len(b), limit)
		}
	}
}

// DeadLetter is an effector.DeadLetterFunc keeping each intent the
// effector refuses or gives up in the queue's dead-letter stream, with the
// reason: pass it to effector.WithDeadLetter.
func (q *Queue) DeadLetter(ctx context.Context, in *intent.Intent, reason error) error {
	b, err := in.MarshalJSON()
	if err != nil {
		b = nil // the reason says what is wrong with it; keep what there is
	}
	dl := DeadLetter{IntentID: in.ID, Reason: reason.Error(), Entry: b}
	if err := q.deadLetter(ctx, "intent-"+Token(in.ID), dl); err != nil {
		return fmt.Errorf("natsstream: dead-lettering intent %q: %w", in.ID, err)
	}
	return nil
}

// EntryDeadLetter is an effector.EntryDeadLetterFunc keeping each entry
// that is no intent in the queue's dead-letter stream, with its bytes and
// the decoding error: pass it to effector.WithEntryDeadLetter.
func (q *Queue) EntryDeadLetter(ctx context.Context, d effector.Delivery) error {
	reason := "no reason given"
	if d.Err != nil {
		reason = d.Err.Error()
	}
	dl := DeadLetter{Reason: reason, Deliveries: d.Deliveries, Pos: d.Pos, Entry: d.Bytes}
	if err := q.deadLetter(ctx, "entry-"+d.Pos, dl); err != nil {
		return fmt.Errorf("natsstream: dead-lettering the entry at %s: %w", d.Pos, err)
	}
	return nil
}

// DeadLetters reads every entry of the dead-letter stream, in order,
// leaving no consumer behind (as Results).
func (q *Queue) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	var out []DeadLetter
	err := q.readAll(ctx, q.deadLetters, func(data []byte, seq uint64) error {
		var dl DeadLetter
		if err := json.Unmarshal(data, &dl); err != nil {
			return fmt.Errorf("natsstream: %s/%d: %w", q.deadLetters, seq, err)
		}
		out = append(out, dl)
		return nil
	})
	return out, err
}

// readerIdle is how long the server keeps a reader's consumer that its
// reader lost (a crash between making and deleting it).
const readerIdle = 5 * time.Second

// rawMsg is a message a read took: its data and stream sequence.
type rawMsg struct {
	data []byte
	seq  uint64
}

// readAll calls each for every message of stream up to its last sequence
// at the call. A read goes through an unacknowledged consumer of its own,
// deleted at the end; one that fails in passing (a server stopped under
// it: the consumer may have been placed on it) is made again and the read
// starts over, while ctx lasts, for up to retryFor.
func (q *Queue) readAll(ctx context.Context, stream string, each func(data []byte, seq uint64) error) error {
	wait := 50 * time.Millisecond
	giveUp := time.Now().Add(retryFor)
	for {
		msgs, err := q.readOnce(ctx, stream)
		switch {
		case err == nil:
			for _, m := range msgs {
				if err := each(m.data, m.seq); err != nil {
					return err
				}
			}
			return nil
		case !transient(err) && !errors.Is(err, errReadLost):
			return fmt.Errorf("natsstream: reading %q: %w", stream, err)
		case ctx.Err() != nil:
			return fmt.Errorf("natsstream: reading %q: %w (last attempt: %v)", stream, ctx.Err(), err)
		case time.Now().After(giveUp):
			return fmt.Errorf("natsstream: reading %q: no answer for %v: %w", stream, retryFor, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("natsstream: reading %q: %w (last attempt: %v)", stream, ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// errReadLost is a read whose consumer delivered messages the read never
// got: a fetch the client gave up before the server's answer came (a fetch
// that does not wait is given up after a second), whose messages went to
// no one. The read starts over.
var errReadLost = errors.New("a fetch's messages were lost (its answer came after the client gave it up)")

// readOnce reads stream up to its last sequence at the call. The reader's
// consumer numbers its deliveries one by one: a delivery missing from
// those received, or a fetch ending with nothing while the consumer has
// delivered more, means a fetch answered too late lost messages, and the
// read fails with errReadLost rather than end short.
func (q *Queue) readOnce(ctx context.Context, stream string) ([]rawMsg, error) {
	actx, cancel := context.WithTimeout(ctx, q.reqTimeout)
	defer cancel()
	st, err := q.js.Stream(actx, stream)
	if err != nil {
		return nil, err
	}
	info, err := st.Info(actx)
	if err != nil {
		return nil, err
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil, nil
	}
	cons, err := st.CreateConsumer(actx, jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		InactiveThreshold: readerIdle, MemoryStorage: true, Replicas: 1,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		// Deleted, and tried again in passing for one request timeout
		// past the caller's context (at most: a cluster that does not
		// answer must not hold the caller); one that is not goes after
		// readerIdle.
		name := cons.CachedInfo().Name
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.reqTimeout)
		defer cancel()
		_ = q.try(dctx, func(ctx context.Context) error {
			err := q.js.DeleteConsumer(ctx, stream, name)
			if errors.Is(err, jetstream.ErrConsumerNotFound) {
				return nil
			}
			return err
		})
	}()
	var out []rawMsg
	var delivered uint64 // the consumer's sequence of the last delivery received
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Everything up to last is there to take: take it without waiting
		// for more.
		mb, err := cons.FetchNoWait(256)
		if err != nil {
			return nil, err
		}
		n := 0
		var seq uint64
		for m := range mb.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			if md.Sequence.Consumer != delivered+1 {
				return nil, errReadLost
			}
			delivered = md.Sequence.Consumer
			seq = md.Sequence.Stream
			if seq <= last {
				out = append(out, rawMsg{data: m.Data(), seq: seq})
			}
		}
		if err := mb.Error(); err != nil {
			return nil, err
		}
		if seq >= last {
			return out, nil
		}
		if n == 0 {
			// Nothing more: the rest expired meanwhile, or the fetch was
			// answered after the client gave it up, to no one.
			ci, err := cons.Info(actx)
			switch {
			case err != nil:
				return nil, err
			case ci.Delivered.Consumer > delivered:
				return nil, errReadLost
			case ci.NumPending == 0:
				return out, nil
			}
		}
	}
}
