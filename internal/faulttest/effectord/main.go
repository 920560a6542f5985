package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/jsonl"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/natsstream"
	"github.com/beam-agents/toolreg/effector/pgqueue"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/effector/redisstore"
	"github.com/beam-agents/toolreg/effector/redisstream"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/registry"
)

// The kill points.
const (
	AfterClaim              = "after-claim"
	InTool                  = "in-tool"
	AfterToolBeforeComplete = "after-tool-before-complete"
	AfterComplete           = "after-complete"
)

var killPoints = []string{AfterClaim, InTool, AfterToolBeforeComplete, AfterComplete}

// ExitUnanswered is the exit status of a shutdown (SIGTERM) that left
// deliveries unanswered, for redelivery (effector.UnansweredError).
const ExitUnanswered = 3

type flags struct {
	store      string
	in, out    string
	downstream string
	dedup      bool
	batch      int
	killAt     string
	killN      int64
	kills      string
	stopInTool string
	completes  string
	reclaims   string
	found      string
	batches    string
	lease      time.Duration
	timeout    time.Duration
	workers    int
	keyPrefix  string
	stream     string
	consumer   string
	queue      string
	queueLease time.Duration
	ackWait    time.Duration
	ready      string
	reclaim    time.Duration
	toolDelay  time.Duration
	tornWait   time.Duration
	maxAtt     int
	poison     string
	dead       string
	storeTO    time.Duration
	drain      time.Duration
	failAfter  int64
	failFor    time.Duration
}

func main() {
	var f flags
	flag.StringVar(&f.store, "store", "", "the dedup store: sqlite:<path>, redis:<host:port>, a postgres:// or a nats:// URL")
	flag.StringVar(&f.in, "in", "", "intents JSONL file (a checkpoint is kept beside it)")
	flag.StringVar(&f.out, "out", "", "results JSONL file, appended")
	flag.StringVar(&f.downstream, "downstream", "", "the fake downstream's log file")
	flag.BoolVar(&f.dedup, "dedup", false, "the downstream deduplicates on the idempotency key")
	flag.StringVar(&f.killAt, "kill-at", "", "SIGKILL self at this point: "+strings.Join(killPoints, "|"))
	flag.Int64Var(&f.killN, "kill-n", 1, "die the n-th time the kill point is reached")
	flag.StringVar(&f.kills, "kills", "", "file to note each kill in")
	flag.StringVar(&f.stopInTool, "stop-in-tool", "", "SIGSTOP self inside the tool for this intent id")
	flag.StringVar(&f.completes, "completes", "", "file to note each Complete's outcome in")
	flag.StringVar(&f.reclaims, "reclaims", "", "file to note each claim the store reports as reclaimed in")
	flag.StringVar(&f.found, "found", "", "file to note each claim that found the intent claimed by another (in-flight) or answered (done) in")
	flag.StringVar(&f.batches, "batches", "", "file to note the size of each batch claimed (ClaimBatch) in")
	flag.DurationVar(&f.lease, "lease", 400*time.Millisecond, "the effector's lease")
	flag.DurationVar(&f.timeout, "timeout", 250*time.Millisecond, "the tool's timeout (below the lease)")
	flag.IntVar(&f.workers, "workers", 1, "Serve's workers")
	flag.IntVar(&f.batch, "batch", 1, "Serve's batch size (WithBatchSize): 1 claims each intent alone, so a kill after a claim interrupts that intent only")
	flag.StringVar(&f.keyPrefix, "key-prefix", "", "redis store key prefix (default: the store's)")
	flag.StringVar(&f.stream, "stream", "", "read intents from, and publish results to, Redis streams on this host:port, or the NATS JetStream queue of nats://host:port[,host:port...]/<queue>, instead of files")
	flag.DurationVar(&f.ackWait, "ack-wait", 0, "with a nats:// -stream, the consumer's AckWait (default: the lease)")
	flag.StringVar(&f.ready, "ready", "", "with a nats:// -stream, file to append this process's pid to once its source is made, as Serve starts")
	flag.StringVar(&f.consumer, "consumer", "", "the consumer name with -stream")
	flag.StringVar(&f.queue, "queue", "", "read intents from, and publish results to, the Postgres queue of this name in the -store database (a postgres:// URL) instead of files")
	flag.DurationVar(&f.queueLease, "queue-lease", 2*time.Second, "with -queue, how long a claimed row stays invisible to other consumers")
	flag.DurationVar(&f.reclaim, "reclaim-idle", 2*time.Second, "with -stream, reclaim entries other consumers left pending this long")
	flag.DurationVar(&f.storeTO, "store-timeout", -1, "the effector's store timeout (default: what the lease leaves after the tool timeout and effector.LeaseMargin, at most 5s)")
	flag.DurationVar(&f.drain, "drain", 30*time.Second, "Serve's drain timeout after SIGTERM")
	flag.Int64Var(&f.failAfter, "fail-complete-after", 0, "after this many Completes, fail every Complete for -fail-complete-for (a full disk, a lost connection); 0: never")
	flag.DurationVar(&f.failFor, "fail-complete-for", 0, "how long Completes fail after -fail-complete-after")
	flag.DurationVar(&f.toolDelay, "tool-delay", 0, "the tool's run time after its downstream call, so a run lasts at least intents x delay / workers")
	flag.DurationVar(&f.tornWait, "torn-wait", jsonl.DefaultTornLineWait, "how long to wait for the rest of a torn last line")
	flag.IntVar(&f.maxAtt, "max-attempts", effector.DefaultMaxAttempts, "the effector's attempt limit")
	flag.StringVar(&f.poison, "poison", "", "SIGKILL self inside the tool every time it runs this intent id")
	flag.StringVar(&f.dead, "dead", "", "file to append dead letters to")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(f, log); err != nil {
		var ue *effector.UnansweredError
		if errors.As(err, &ue) {
			// A shutdown that left deliveries for redelivery: not a failure.
			log.Warn("effectord stopped with deliveries unanswered", "error", err.Error())
			os.Exit(ExitUnanswered)
		}
		log.Error("effectord failed", "error", err.Error())
		os.Exit(1)
	}
}

func run(f flags, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if f.killAt != "" && !slices.Contains(killPoints, f.killAt) {
		return fmt.Errorf("-kill-at=%q: want one of %s", f.killAt, strings.Join(killPoints, ", "))
	}
	if (f.stream == "" && f.queue == "" && (f.in == "" || f.out == "")) || f.downstream == "" {
		return errors.New("-downstream, and -in and -out, -stream or -queue, are required")
	}
	k := &killer{point: f.killAt, n: f.killN, notes: f.kills}

	var store effector.DedupStore
	var pgPool *pgxpool.Pool // the store's, for -queue
	kind, where, _ := strings.Cut(f.store, ":")
	switch kind {
	case "sqlite":
		s, err := sqlitestore.Open(ctx, where)
		if err != nil {
			return err
		}
		defer s.Close()
		store = s
	case "redis":
		// Retry forever: a redis-server restart must look like a slow store,
		// not a failure.
		rdb := redis.NewClient(&redis.Options{Addr: where, MaxRetries: -1, DialTimeout: time.Second})
		defer rdb.Close()
		var opts []redisstore.Option
		if f.keyPrefix != "" {
			opts = append(opts, redisstore.WithKeyPrefix(f.keyPrefix))
		}
		// The fault tests' servers persist nothing unless a test asks
		// (redistest.WithDurability): accept them, with Open's warning.
		s, err := redisstore.Open(ctx, rdb, append(opts, redisstore.WithUnpersistedServer(), redisstore.WithLogger(log))...)
		if err != nil {
			return err
		}
		store = s
	case "postgres", "postgresql":
		// As a service opens it by URL (examples/support-agent): migrate,
		// which several processes may do at once, then open. A pool dials
		// again after a server restart; the effector's retries cover the
		// statements that fail meanwhile.
		pool, err := pgxpool.New(ctx, f.store)
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := pgstore.Migrate(ctx, pool); err != nil {
			return err
		}
		s, err := pgstore.Open(ctx, pool)
		if err != nil {
			return err
		}
		defer s.Close()
		store, pgPool = s, pool
	case "nats", "tls":
		// A bucket on a JetStream cluster, as a service opens it by URL;
		// the store retries each request until a leader answers.
		s, closeConn, err := natsstore.OpenURL(ctx, f.store)
		if err != nil {
			return err
		}
		defer closeConn()
		store = s
	default:
		return fmt.Errorf("-store=%q: want sqlite:<path>, redis:<host:port>, a postgres:// or a nats:// URL", f.store)
	}
	completes, err := openLog(f.completes)
	if err != nil {
		return err
	}
	reclaims, err := openLog(f.reclaims)
	if err != nil {
		return err
	}
	batches, err := openLog(f.batches)
	if err != nil {
		return err
	}
	found, err := openLog(f.found)
	if err != nil {
		return err
	}
	store = &killStore{DedupStore: store, k: k, completes: completes, reclaims: reclaims, found: found, batches: batches, failAfter: f.failAfter, failFor: f.failFor}

	ds, err := openDownstream(f.downstream, f.dedup)
	if err != nil {
		return err
	}
	table, err := applyTable(ds, k, f.stopInTool, f.poison, f.toolDelay)
	if err != nil {
		return err
	}
	dead, err := openLog(f.dead)
	if err != nil {
		return err
	}
	if f.storeTO < 0 {
		f.storeTO = min(f.lease-f.timeout-effector.LeaseMargin-time.Millisecond, 5*time.Second)
	}
	e, err := effector.New(table, store, effector.WithLease(f.lease), effector.WithTimeout(f.timeout),
		effector.WithBackoff(5*time.Millisecond, 50*time.Millisecond), effector.WithStoreTimeout(f.storeTO),
		effector.WithLogger(log), effector.WithMaxAttempts(f.maxAtt),
		effector.WithDeadLetter(func(ctx context.Context, in *intent.Intent, reason error) error {
			return dead.line(fmt.Sprintf("intent %s %q", in.ID, reason.Error()))
		}))
	if err != nil {
		return err
	}
	opts := []effector.ServeOption{effector.WithWorkers(f.workers), effector.WithBatchSize(f.batch), effector.WithDrainTimeout(f.drain),
		effector.WithRetryBackoff(10*time.Millisecond, 200*time.Millisecond), effector.WithServeLogger(log),
		effector.WithEntryDeadLetter(func(ctx context.Context, d effector.Delivery) error {
			return dead.line(fmt.Sprintf("entry %s %d %q %q", d.Pos, d.Offset, d.Bytes, d.Err.Error()))
		})}
	if strings.HasPrefix(f.stream, "nats://") {
		return serveNATS(ctx, f, e, opts, log)
	}
	if f.stream != "" {
		rdb := redis.NewClient(&redis.Options{Addr: f.stream, MaxRetries: -1, DialTimeout: time.Second})
		defer rdb.Close()
		src, err := redisstream.NewSource(ctx, rdb, "intents", "effectors", f.consumer,
			redisstream.WithReclaimIdle(f.reclaim), redisstream.WithBlock(100*time.Millisecond))
		if err != nil {
			return err
		}
		return effector.Serve(ctx, src, redisstream.NewSink(rdb, "results"), e, opts...)
	}
	if f.queue != "" {
		if pgPool == nil {
			return errors.New("-queue needs a postgres:// -store: the queue lives in the store's database")
		}
		q, err := pgqueue.Open(ctx, pgPool, f.queue)
		if err != nil {
			return err
		}
		src, err := q.NewSource(pgqueue.WithLease(f.queueLease), pgqueue.WithPollInterval(100*time.Millisecond), pgqueue.WithLogger(log))
		if err != nil {
			return err
		}
		defer src.Close(context.WithoutCancel(ctx))
		return effector.Serve(ctx, src, q.Sink(), e, opts...)
	}
	src, err := jsonl.OpenFile(f.in, jsonl.WithTornLineWait(f.tornWait))
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(f.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	return effector.Serve(ctx, src, jsonl.NewSink(out), e, opts...)
}

// serveNATS serves the queue f.stream names (nats://hosts/queue, package
// effector/natsstream) through its shared durable consumer, publishing
// results to its results stream, until SIGTERM. The connection reconnects
// for ever and the queue retries each request until a leader answers: a
// node or the whole cluster restarting must look like a slow transport,
// not a failure.
func serveNATS(ctx context.Context, f flags, e *effector.Effector, opts []effector.ServeOption, log *slog.Logger) error {
	servers, queue, err := natsStream(f.stream)
	if err != nil {
		return err
	}
	nc, err := nats.Connect(servers, nats.Name("effectord"), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
	if err != nil {
		return fmt.Errorf("-stream=%q: %w", f.stream, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	q, err := natsstream.Open(ctx, js, queue, natsstream.WithRequestTimeout(2*time.Second))
	if err != nil {
		return err
	}
	ackWait := f.ackWait
	if ackWait == 0 {
		ackWait = f.lease
	}
	src, err := q.NewSource(ctx, natsstream.WithAckWait(ackWait), natsstream.WithLease(e.Lease()),
		natsstream.WithBatch(max(f.batch, 1)), natsstream.WithLogger(log))
	if err != nil {
		return err
	}
	// Given back after Serve returns, with a context of its own: ctx is
	// cancelled by then.
	defer src.Close(context.WithoutCancel(ctx))
	ready, err := openLog(f.ready)
	if err != nil {
		return err
	}
	if err := ready.line(strconv.Itoa(os.Getpid())); err != nil {
		return err
	}
	return effector.Serve(ctx, src, q.Sink(), e, opts...)
}

// natsStream splits -stream=nats://host:port[,host:port...]/<queue> into
// the servers, as nats.Connect takes them, and the queue's name.
func natsStream(raw string) (servers, queue string, err error) {
	rest, _ := strings.CutPrefix(raw, "nats://")
	hosts, queue, ok := strings.Cut(rest, "/")
	if !ok || hosts == "" || queue == "" {
		return "", "", fmt.Errorf("-stream=%q: want nats://host:port[,host:port...]/<queue>", raw)
	}
	hs := strings.Split(hosts, ",")
	for i, h := range hs {
		hs[i] = "nats://" + h
	}
	return strings.Join(hs, ","), queue, nil
}

// killer SIGKILLs this process the n-th time it reaches its point.
type killer struct {
	point string
	n     int64
	seen  atomic.Int64
	notes string
}

func (k *killer) at(point, intentID string) {
	if point != k.point || k.seen.Add(1) != k.n {
		return
	}
	if k.notes != "" {
		if f, err := openLog(k.notes); err == nil {
			f.line(fmt.Sprintf("%s %s %d", point, intentID, os.Getpid()))
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

// killStore wraps the real store with the store-side kill points and notes
// every Complete's outcome.
type killStore struct {
	effector.DedupStore
	k         *killer
	completes *appendLog
	reclaims  *appendLog
	found     *appendLog
	batches   *appendLog

	// Completes fail from the failAfter-th on, for failFor.
	failAfter int64
	failFor   time.Duration
	calls     atomic.Int64
	mu        sync.Mutex
	failUntil time.Time
}

// injected reports whether this Complete is to fail.
func (s *killStore) injected() bool {
	if s.failAfter <= 0 {
		return false
	}
	n := s.calls.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == s.failAfter {
		s.failUntil = time.Now().Add(s.failFor)
	}
	return time.Now().Before(s.failUntil)
}

func (s *killStore) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	c, err := s.DedupStore.Claim(ctx, id, call, lease)
	if err == nil {
		s.noteFound(id, c.State)
	}
	if err == nil && c.State == effector.Claimed {
		if c.Reclaimed {
			s.reclaims.line(fmt.Sprintf("%s %d", id, os.Getpid()))
		}
		s.k.at(AfterClaim, id)
	}
	return c, err
}

func (s *killStore) Complete(ctx context.Context, id, token string, result []byte, ttl time.Duration) error {
	s.k.at(AfterToolBeforeComplete, id)
	var err error
	outcome := "ok"
	if s.injected() {
		err = errors.New("effectord: injected Complete failure: disk I/O error: database or disk is full")
		outcome = "injected"
	} else {
		err = s.DedupStore.Complete(ctx, id, token, result, ttl)
	}
	switch {
	case errors.Is(err, effector.ErrNotOwner):
		outcome = "not-owner"
	case err != nil && outcome != "injected":
		outcome = "error"
	}
	s.completes.line(fmt.Sprintf("%s %d %s", id, os.Getpid(), outcome))
	if err == nil {
		s.k.at(AfterComplete, id)
	}
	return err
}

// noteFound notes a claim of id that found it claimed by another owner
// (in-flight) or answered (done): a delivery of an intent that another
// process holds or has answered.
func (s *killStore) noteFound(id string, st effector.ClaimState) {
	switch st {
	case effector.InFlight:
		s.found.line(fmt.Sprintf("%s %d in-flight", id, os.Getpid()))
	case effector.Done:
		s.found.line(fmt.Sprintf("%s %d done", id, os.Getpid()))
	}
}

// ClaimBatch notes the batch's size, claims it, notes its reclaims, and then reaches the
// after-claim point once per intent it claimed: a kill there falls after
// the whole batch's claim and before any of its tools runs.
func (s *killStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	s.batches.line(strconv.Itoa(len(reqs)))
	s.DedupStore.ClaimBatch(ctx, reqs, out)
	for i, o := range out {
		if o.Err == nil {
			s.noteFound(reqs[i].IntentID, o.Claim.State)
		}
	}
	for i, o := range out {
		if o.Err == nil && o.Claim.State == effector.Claimed && o.Claim.Reclaimed {
			s.reclaims.line(fmt.Sprintf("%s %d", reqs[i].IntentID, os.Getpid()))
		}
	}
	for i, o := range out {
		if o.Err == nil && o.Claim.State == effector.Claimed {
			s.k.at(AfterClaim, reqs[i].IntentID)
		}
	}
}

// CompleteBatch reaches the after-tool-before-complete point once per
// completion before writing any (a kill there loses the whole batch's
// completions), fails the injected ones, notes every outcome, and then
// reaches the after-complete point once per durable completion.
func (s *killStore) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	for _, r := range reqs {
		s.k.at(AfterToolBeforeComplete, r.IntentID)
	}
	var rest []effector.Completion
	var at []int
	injected := make([]bool, len(reqs))
	for i, r := range reqs {
		if s.injected() {
			injected[i] = true
			errs[i] = errors.New("effectord: injected Complete failure: disk I/O error: database or disk is full")
			continue
		}
		rest, at = append(rest, r), append(at, i)
	}
	if len(rest) > 0 {
		es := make([]error, len(rest))
		s.DedupStore.CompleteBatch(ctx, rest, es)
		for k, i := range at {
			errs[i] = es[k]
		}
	}
	for i, r := range reqs {
		outcome := "ok"
		switch err := errs[i]; {
		case injected[i]:
			outcome = "injected"
		case errors.Is(err, effector.ErrNotOwner):
			outcome = "not-owner"
		case err != nil:
			outcome = "error"
		}
		s.completes.line(fmt.Sprintf("%s %d %s", r.IntentID, os.Getpid(), outcome))
	}
	for i, r := range reqs {
		if errs[i] == nil {
			s.k.at(AfterComplete, r.IntentID)
		}
	}
}

// appendLog appends fsynced lines to a file shared by processes; a nil
// *appendLog discards them.
type appendLog struct {
	mu sync.Mutex
	f  *os.File
}

func openLog(path string) (*appendLog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return &appendLog{f: f}, nil
}

// line writes s and a newline in one write (O_APPEND keeps concurrent
// writers' lines whole) and fsyncs, so a line survives this process's SIGKILL
// right after.
func (l *appendLog) line(s string) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.WriteString(s + "\n"); err != nil {
		return err
	}
	return l.f.Sync()
}

// downstream is the fake downstream service.
type downstream struct {
	log    *appendLog
	dedup  bool
	marker string // directory of per-key markers when dedup
}

func openDownstream(path string, dedup bool) (*downstream, error) {
	l, err := openLog(path)
	if err != nil {
		return nil, err
	}
	d := &downstream{log: l, dedup: dedup, marker: path + ".keys"}
	if dedup {
		if err := os.MkdirAll(d.marker, 0o755); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// call applies the effect of key (unless the downstream deduplicates and has
// applied it already) and records the call; it reports whether it applied.
func (d *downstream) call(key string) (bool, error) {
	applied := true
	if d.dedup {
		f, err := os.OpenFile(filepath.Join(d.marker, key), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		switch {
		case errors.Is(err, os.ErrExist):
			applied = false
		case err != nil:
			return false, err
		default:
			f.Close()
		}
	}
	what := "applied"
	if !applied {
		what = "duplicate"
	}
	return applied, d.log.line(fmt.Sprintf("%s %d %s", key, os.Getpid(), what))
}

type applyArgs struct {
	Key string `json:"key"`
}

type applyResult struct {
	Key     string `json:"key"`
	Applied bool   `json:"applied"` // false: the downstream had applied it already
	PID     int    `json:"pid"`     // which process executed it
}

func applyTable(ds *downstream, k *killer, stopFor, poison string, delay time.Duration) (*registry.Registry, error) {
	spec := &toolreg.Spec{
		Name: "apply", Description: "Apply an effect downstream.", SideEffect: true,
		Params: []*toolreg.Param{{Name: "key", Schema: toolreg.Schema{Type: toolreg.TypeString}}},
	}
	b := bindings.New([]*toolreg.Spec{spec})
	bindings.Effect(b, "apply", func(ctx context.Context, a applyArgs) (applyResult, error) {
		info, ok := effector.IntentFrom(ctx)
		if !ok {
			return applyResult{}, errors.New("apply: no intent in context")
		}
		if info.ID == stopFor {
			// Before any I/O, so that the tool's timeout cannot pass first
			// however loaded the machine: the process stops holding only its
			// claim, and on waking makes its downstream call late. The stop
			// reaches the process's threads asynchronously, so wait for the
			// SIGCONT that ends it before going on.
			cont := make(chan os.Signal, 1)
			signal.Notify(cont, syscall.SIGCONT)
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			<-cont
			signal.Stop(cont)
		}
		if info.ID == poison {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
		applied, err := ds.call(info.ID)
		if err != nil {
			return applyResult{}, err
		}
		k.at(InTool, info.ID)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return applyResult{}, context.Cause(ctx)
			}
		}
		return applyResult{Key: a.Key, Applied: applied, PID: os.Getpid()}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		return nil, err
	}
	return bound.Effector, nil
}
