package effector_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/effectortest"
)

// batchSource is a BatchSource over a fixed list of deliveries: it hands
// out all it has left (up to max) in one ReceiveBatch, then io.EOF, and
// records the acknowledgements, and the batch sizes it handed out.
type batchSource struct {
	mu      sync.Mutex
	ds      []effector.Delivery
	batches []int
	acked   map[string]int
	ackErr  func() error // fails an ack when it returns an error
}

func newBatchSource(ins []*intent.Intent) *batchSource {
	s := &batchSource{acked: map[string]int{}}
	for i, in := range ins {
		s.add(effector.Delivery{Intent: in, Pos: "batch:" + string(rune('a'+i%26))})
	}
	return s
}

func (s *batchSource) add(d effector.Delivery) {
	id := ""
	if d.Intent != nil {
		id = d.Intent.ID
	}
	d.Ack = func(context.Context) error {
		if s.ackErr != nil {
			if err := s.ackErr(); err != nil {
				return err
			}
		}
		s.mu.Lock()
		s.acked[id]++
		s.mu.Unlock()
		return nil
	}
	s.ds = append(s.ds, d)
}

func (s *batchSource) Receive(ctx context.Context) (effector.Delivery, error) {
	ds, err := s.ReceiveBatch(ctx, 1, nil)
	if len(ds) == 0 {
		return effector.Delivery{}, err
	}
	return ds[0], nil
}

func (s *batchSource) ReceiveBatch(ctx context.Context, max int, buf []effector.Delivery) ([]effector.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return buf, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ds) == 0 {
		return buf, io.EOF
	}
	n := min(max, len(s.ds))
	buf = append(buf, s.ds[:n]...)
	s.ds = s.ds[n:]
	s.batches = append(s.batches, n)
	return buf, nil
}

func (s *batchSource) ackedOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked[id]
}

// resultSink collects the results published, by intent id.
type resultSink struct {
	mu      sync.Mutex
	byID    map[string][]intent.Result
	order   []string
	publish func(intent.Result) error // runs before the result is kept; an error fails the publish
}

func newResultSink() *resultSink { return &resultSink{byID: map[string][]intent.Result{}} }

func (s *resultSink) Publish(_ context.Context, res intent.Result) error {
	if s.publish != nil {
		if err := s.publish(res); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[res.IntentID] = append(s.byID[res.IntentID], res)
	s.order = append(s.order, res.IntentID)
	return nil
}

func (s *resultSink) of(id string) []intent.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

func (s *resultSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.order)
}

func intents(entity string, n int) []*intent.Intent {
	var ins []*intent.Intent
	for i := range n {
		ins = append(ins, effectortest.Intent(entity, int64(i+1), 0))
	}
	return ins
}

// batchStore counts the batch and single calls that reach the store it
// wraps, and runs hooks around CompleteBatch.
type batchStore struct {
	effector.DedupStore
	claimBatches, claimItems, claims atomic.Int32
	completeBatches, completeItems   atomic.Int32
	releaseErrs                      atomic.Int32
	beforeComplete                   func(n int) error // fails the whole batch when it returns an error
}

func (s *batchStore) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	s.claims.Add(1)
	return s.DedupStore.Claim(ctx, id, call, lease)
}

func (s *batchStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	s.claimBatches.Add(1)
	s.claimItems.Add(int32(len(reqs)))
	s.DedupStore.ClaimBatch(ctx, reqs, out)
}

func (s *batchStore) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	if s.beforeComplete != nil {
		if err := s.beforeComplete(len(reqs)); err != nil {
			for i := range errs {
				errs[i] = err
			}
			return
		}
	}
	s.completeBatches.Add(1)
	s.completeItems.Add(int32(len(reqs)))
	s.DedupStore.CompleteBatch(ctx, reqs, errs)
}

func (s *batchStore) ReleaseBatch(ctx context.Context, reqs []effector.Release, errs []error) {
	s.DedupStore.ReleaseBatch(ctx, reqs, errs)
	for _, err := range errs {
		if err != nil {
			s.releaseErrs.Add(1)
		}
	}
}

// TestServeClaimsABatchInOneCallAndPublishesOnlyWhatIsDurable: Serve claims
// the 50 intents a BatchSource hands it in one ClaimBatch, with no single
// Claim; it writes the completions waiting in one CompleteBatch (all 49
// that the workers finished while the first was being written); and
// while those completions are not durable, nothing is published nor
// acknowledged.
func TestServeClaimsABatchInOneCallAndPublishesOnlyWhatIsDurable(t *testing.T) {
	t.Parallel()
	const n = 50
	mem := effector.NewMemoryStore()
	store := &batchStore{DedupStore: mem}
	e, calls := effectortest.Effector(t, store)
	src := newBatchSource(intents("batch", n))
	sink := newResultSink()
	var firstHeld atomic.Bool
	var seenAtHold struct{ published, acked int }
	store.beforeComplete = func(int) error {
		if firstHeld.CompareAndSwap(false, true) {
			// Hold the first write until every tool has run: the other
			// completions queue up behind it.
			for calls.Total() < n {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // the last worker hands its result on
			seenAtHold.published = sink.count()
			for _, in := range intents("batch", n) {
				seenAtHold.acked += src.ackedOf(in.ID)
			}
		}
		return nil
	}
	if err := effector.Serve(testCtx(t), src, sink, e, effector.WithWorkers(8), effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if seenAtHold.published != 0 || seenAtHold.acked != 0 {
		t.Errorf("while the completions were not durable, %d results were published and %d deliveries acknowledged; want none", seenAtHold.published, seenAtHold.acked)
	}
	if got := store.claimBatches.Load(); got != 1 || store.claimItems.Load() != n || store.claims.Load() != 0 {
		t.Errorf("Serve made %d ClaimBatch calls of %d items and %d single Claims; want one batch of %d and none", got, store.claimItems.Load(), store.claims.Load(), n)
	}
	// 2: the first, and the 49 that waited for it; 3 if the last worker
	// had not handed its result on by the end of the hold.
	if got := store.completeBatches.Load(); got > 3 || store.completeItems.Load() != n {
		t.Errorf("Serve made %d CompleteBatch calls of %d items; want at most 3: the first, and the completions that waited for it", got, store.completeItems.Load())
	}
	for _, in := range intents("batch", n) {
		if rs := sink.of(in.ID); len(rs) != 1 || rs[0].Status != intent.StatusOK || calls.Of(in.ID) != 1 || src.ackedOf(in.ID) != 1 {
			t.Fatalf("intent %s: %d results, ran %d times, acked %d times; want one OK result, run once, acked once", in.ID, len(rs), calls.Of(in.ID), src.ackedOf(in.ID))
		}
	}
}

// TestServeCountsABudgetWithinABatch: six charges of one customer, whose
// budget allows three, arrive in one batch. Each budgeted intent is claimed
// alone, through ClaimAdmit, which counts it: three run and three are
// REJECTED for the budget. Claimed in the batch, uncounted, all six would run.
func TestServeCountsABudgetWithinABatch(t *testing.T) {
	t.Parallel()
	r := newBudgetRig(t)
	var ins []*intent.Intent
	for seq := range int64(6) {
		ins = append(ins, r.stage(t, payer, seq+1, "charge", 10))
	}
	src := newBatchSource(ins)
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), src, sink, r.e, effector.WithWorkers(4), effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if len(src.batches) != 1 || src.batches[0] != 6 {
		t.Fatalf("the source handed out batches %v, want one of 6", src.batches)
	}
	if n := r.charges.Load(); n != 3 {
		t.Errorf("%d charges ran, want 3: the budget allows three per customer", n)
	}
	ok, over := 0, 0
	for _, in := range ins {
		rs := sink.of(in.ID)
		if len(rs) != 1 {
			t.Fatalf("intent %s has %d results, want 1", in.ID, len(rs))
		}
		switch {
		case rs[0].Status == intent.StatusOK:
			ok++
		case rs[0].Status == intent.StatusRejected && strings.Contains(rs[0].ErrorMessage, "budget"):
			over++
		default:
			t.Errorf("intent %s: %s %q, want OK or REJECTED for the budget", in.ID, rs[0].Status, rs[0].ErrorMessage)
		}
	}
	if ok != 3 || over != 3 || r.used(t, "per_entity") != 3 {
		t.Errorf("%d OK, %d over the budget, %d counted; want 3, 3, 3", ok, over, r.used(t, "per_entity"))
	}
}

// poisonStore refuses every claim of one intent id, in a batch and alone,
// as a store does a row it cannot take.
type poisonStore struct {
	effector.DedupStore
	poison string
}

func (s *poisonStore) Claim(ctx context.Context, id string, call effector.Call, lease time.Duration) (effector.Claim, error) {
	if id == s.poison {
		return effector.Claim{}, errors.New("row refused")
	}
	return s.DedupStore.Claim(ctx, id, call, lease)
}

func (s *poisonStore) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	var rest []effector.ClaimRequest
	var at []int
	for i, r := range reqs {
		if r.IntentID == s.poison {
			out[i] = effector.ClaimOutcome{Err: errors.New("row refused")}
			continue
		}
		rest, at = append(rest, r), append(at, i)
	}
	outs := make([]effector.ClaimOutcome, len(rest))
	s.DedupStore.ClaimBatch(ctx, rest, outs)
	for k, i := range at {
		out[i] = outs[k]
	}
}

// TestServeFailsAPoisonIntentOfABatchAlone: in one batch, an intent the
// store refuses on every delivery (delivered past WithMaxAttempts), an
// intent with no id, and one carrying another's id. Each fails alone: the
// first is given up (ERROR, dead-lettered), the others refused
// (dead-lettered); the rest of the batch runs once each and is answered.
func TestServeFailsAPoisonIntentOfABatchAlone(t *testing.T) {
	t.Parallel()
	ins := intents("poison", 8)
	mem := effector.NewMemoryStore()
	store := &poisonStore{DedupStore: mem, poison: ins[2].ID}
	var dead atomic.Int32
	e, calls := effectortest.Effector(t, store, effector.WithMaxAttempts(3),
		effector.WithDeadLetter(func(context.Context, *intent.Intent, error) error { dead.Add(1); return nil }))
	noID := *ins[4]
	noID.ID = ""
	wrongID := *ins[6]
	wrongID.ID = ins[7].ID
	src := &batchSource{acked: map[string]int{}}
	for i, in := range ins {
		d := effector.Delivery{Intent: in, Pos: "p"}
		switch i {
		case 2:
			d.Deliveries = 4
		case 4:
			d.Intent = &noID
		case 6:
			d.Intent = &wrongID
		}
		src.add(d)
	}
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), src, sink, e, effector.WithWorkers(3), effector.WithServeLogger(quietLogger()),
		effector.WithRetryBackoff(time.Millisecond, 5*time.Millisecond)); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if rs := sink.of(ins[2].ID); len(rs) != 1 || rs[0].Status != intent.StatusError || src.ackedOf(ins[2].ID) != 1 {
		t.Errorf("the intent the store refuses: %v, acked %d; want one ERROR result (given up), acked", rs, src.ackedOf(ins[2].ID))
	}
	if src.ackedOf("") != 1 || dead.Load() != 3 {
		t.Errorf("the intent with no id was acked %d times, %d dead letters; want acked once, and it, the one carrying another's id and the given-up one dead-lettered", src.ackedOf(""), dead.Load())
	}
	for _, i := range []int{0, 1, 3, 5, 7} {
		in := ins[i]
		if calls.Of(in.ID) != 1 {
			t.Errorf("intent %d ran %d times, want once", i, calls.Of(in.ID))
		}
		if rs := sink.of(in.ID); len(rs) != 1 || rs[0].Status != intent.StatusOK {
			t.Errorf("intent %d: results %v, want one OK", i, rs)
		}
	}
	if calls.Of(ins[6].ID) != 0 || calls.Of(ins[4].ID) != 0 || calls.Of(ins[2].ID) != 0 {
		t.Errorf("a failing intent ran")
	}
}

// TestServeKeepsTheLeaseOfAnIntentWaitingBehindSlowTools: one worker, five
// intents in one batch, each tool taking 600ms with a lease of 2s: the last
// waits 2.4s for the worker, past its claim's first lease. Serve renews the
// leases of the waiting intents (the lease counts from before the batch's
// claim), so none lapses: each runs once, none is reclaimed (no result says
// "effect unknown"), and every release of a renewal succeeds.
func TestServeKeepsTheLeaseOfAnIntentWaitingBehindSlowTools(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	store := &batchStore{DedupStore: mem}
	e, calls := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{
		func(context.Context) error { time.Sleep(600 * time.Millisecond); return nil },
	}, effector.WithLease(2*time.Second), effector.WithTimeout(800*time.Millisecond), effector.WithStoreTimeout(200*time.Millisecond))
	ins := intents("slow", 5)
	src := newBatchSource(ins)
	sink := newResultSink()
	if err := effector.Serve(testCtx(t), src, sink, e, effector.WithWorkers(1), effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for i, in := range ins {
		rs := sink.of(in.ID)
		if len(rs) != 1 || rs[0].Status != intent.StatusOK || rs[0].ErrorMessage != "" || calls.Of(in.ID) != 1 {
			t.Errorf("intent %d: results %v, ran %d times; want one OK result with no note, run once", i, rs, calls.Of(in.ID))
		}
	}
	if n := store.releaseErrs.Load(); n != 0 {
		t.Errorf("%d releases of renewals failed: a lease had lapsed", n)
	}
	if n := store.claimBatches.Load(); n < 2 {
		t.Errorf("%d ClaimBatch calls: the waiting intents' leases were never renewed", n)
	}
}

// TestServeStartsNoToolsWhileTheStoreCannotComplete: while every
// completion fails, nothing is published, and the workers start no more tools than those already
// started when the first failure came back (one more per worker, for a
// worker past its check); once the store recovers, every intent runs once
// and is answered.
func TestServeStartsNoToolsWhileTheStoreCannotComplete(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	store := &batchStore{DedupStore: mem}
	e, calls := effectortest.EffectorWithHooks(t, store, []func(context.Context) error{
		func(context.Context) error { time.Sleep(30 * time.Millisecond); return nil },
	}, effector.WithLease(10*time.Second), effector.WithTimeout(time.Second))
	var down atomic.Bool
	down.Store(true)
	atFirst := atomic.Int32{}
	atFirst.Store(-1)
	store.beforeComplete = func(int) error {
		if down.Load() {
			atFirst.CompareAndSwap(-1, int32(calls.Total()))
			return errors.New("disk I/O error")
		}
		return nil
	}
	const workers = 2
	ins := intents("down", 20)
	src := newBatchSource(ins)
	sink := newResultSink()
	served := make(chan error, 1)
	go func() {
		served <- effector.Serve(testCtx(t), src, sink, e, effector.WithWorkers(workers), effector.WithServeLogger(quietLogger()),
			effector.WithRetryBackoff(5*time.Millisecond, 20*time.Millisecond))
	}()
	for atFirst.Load() < 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	ran, published := calls.Total(), sink.count()
	down.Store(false)
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if published != 0 {
		t.Errorf("%d results were published while no completion was durable", published)
	}
	if limit := int(atFirst.Load()) + 2*workers; ran > limit {
		t.Errorf("%d tools ran while the store failed (%d when it first failed); want at most %d", ran, atFirst.Load(), limit)
	}
	for i, in := range ins {
		if rs := sink.of(in.ID); len(rs) != 1 || rs[0].Status != intent.StatusOK || calls.Of(in.ID) != 1 {
			t.Errorf("intent %d: %d results, ran %d times; want one OK result, run once", i, len(rs), calls.Of(in.ID))
		}
	}
}

// TestServePublishesInOrderBehindACompletionTheStoreRefuses: with one
// worker, results are published in the order the intents arrived, even
// when the store refuses the first completion a few times; and the later
// completions are written meanwhile (they are not held behind it, where
// their leases would run out).
func TestServePublishesInOrderBehindACompletionTheStoreRefuses(t *testing.T) {
	t.Parallel()
	mem := effector.NewMemoryStore()
	ins := intents("order", 6)
	refusals := atomic.Int32{}
	store := &refusingStore{DedupStore: mem, refuse: ins[0].ID, times: 3, refused: &refusals}
	e, calls := effectortest.Effector(t, store)
	var held atomic.Bool
	store.hold = func() {
		if held.CompareAndSwap(false, true) {
			for calls.Total() < len(ins) { // the others wait behind the first
				time.Sleep(time.Millisecond)
			}
		}
	}
	src := newBatchSource(ins)
	sink := newResultSink()
	var laterDurable atomic.Bool
	sink.publish = func(res intent.Result) error {
		if res.IntentID == ins[0].ID {
			laterDurable.Store(store.completed.Load() > 1)
		}
		return nil
	}
	if err := effector.Serve(testCtx(t), src, sink, e, effector.WithServeLogger(quietLogger())); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for i, in := range ins {
		if i >= len(sink.order) || sink.order[i] != in.ID {
			t.Fatalf("published %v, want the arrival order", sink.order)
		}
	}
	if refusals.Load() != 3 {
		t.Errorf("the store refused the first completion %d times, want 3", refusals.Load())
	}
	if !laterDurable.Load() {
		t.Errorf("no later completion was written while the first was refused")
	}
}

// refusingStore fails the completion of one intent id, times times.
type refusingStore struct {
	effector.DedupStore
	refuse    string
	times     int32
	refused   *atomic.Int32
	completed atomic.Int32
	hold      func()
}

func (s *refusingStore) CompleteBatch(ctx context.Context, reqs []effector.Completion, errs []error) {
	if s.hold != nil {
		s.hold()
	}
	var rest []effector.Completion
	var at []int
	for i, r := range reqs {
		if r.IntentID == s.refuse && s.refused.Load() < s.times {
			s.refused.Add(1)
			errs[i] = errors.New("row locked")
			continue
		}
		rest, at = append(rest, r), append(at, i)
	}
	es := make([]error, len(rest))
	s.DedupStore.CompleteBatch(ctx, rest, es)
	for k, i := range at {
		errs[i] = es[k]
		if es[k] == nil {
			s.completed.Add(1)
		}
	}
}

// batchCompleteFailing fails every CompleteBatch, and lets single
// Completes through: the batch path never records, Process's way does.
type batchCompleteFailing struct{ effector.DedupStore }

func (s batchCompleteFailing) CompleteBatch(_ context.Context, reqs []effector.Completion, errs []error) {
	for i := range reqs {
		errs[i] = errors.New("disk I/O error")
	}
}

// TestServeGoesOnOnceFailedCompletionsAreGivenUp: every batched completion
// fails until its lease ends; each intent is then given up to Process's
// way, which records it. The workers, held back while the completions
// failed, go on once none is left to retry: every intent is answered
// (before, they waited forever for a completion to succeed).
func TestServeGoesOnOnceFailedCompletionsAreGivenUp(t *testing.T) {
	t.Parallel()
	e, calls := effectortest.EffectorWithHooks(t, batchCompleteFailing{effector.NewMemoryStore()}, []func(context.Context) error{
		func(context.Context) error { time.Sleep(20 * time.Millisecond); return nil }, // the first completion fails before the next tool starts
	}, effector.WithLease(300*time.Millisecond), effector.WithTimeout(100*time.Millisecond), effector.WithBackoff(10*time.Millisecond, 50*time.Millisecond))
	ins := intents("given-up", 4)
	src := newBatchSource(ins)
	sink := newResultSink()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := effector.Serve(ctx, src, sink, e, effector.WithServeLogger(quietLogger()), effector.WithRetryBackoff(10*time.Millisecond, 50*time.Millisecond)); err != nil {
		t.Fatalf("Serve = %v, want every intent answered", err)
	}
	for i, in := range ins {
		if rs := sink.of(in.ID); len(rs) != 1 || src.ackedOf(in.ID) != 1 || calls.Of(in.ID) < 1 {
			t.Errorf("intent %d: %d results, acked %d times, ran %d times; want answered once", i, len(rs), src.ackedOf(in.ID), calls.Of(in.ID))
		}
	}
}
