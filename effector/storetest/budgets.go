package storetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

// RunBudgets runs the conformance suite of effector.BudgetStore against
// stores made by newStore, as Run does for the dedup store: a fresh store
// (or one where no budget key the suite uses exists) for each subtest,
// measuring time with the real clock; the suite sleeps a short window out.
func RunBudgets(t *testing.T, newStore func(t *testing.T) effector.BudgetStore) {
	t.Helper()
	runBudgets(t, func(t *testing.T) *budgetEnv {
		return &budgetEnv{s: newStore(t), pass: time.Sleep}
	})
}

// RunBudgetsWithClock is RunBudgets for stores that measure time with now,
// which the suite moves forward where RunBudgets sleeps.
func RunBudgetsWithClock(t *testing.T, newStore func(t *testing.T, now func() time.Time) effector.BudgetStore) {
	t.Helper()
	runBudgets(t, func(t *testing.T) *budgetEnv {
		c := &clock{}
		c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
		return &budgetEnv{s: newStore(t, c.now), pass: c.advance, now: c.now}
	})
}

type budgetEnv struct {
	s    effector.BudgetStore
	pass func(time.Duration)
	now  func() time.Time // the fake clock; nil for the real one
}

func runBudgets(t *testing.T, newEnv func(t *testing.T) *budgetEnv) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, e *budgetEnv, key string)
	}{
		{"a budget admits up to its limit and refuses the next, saying when it frees", testBudgetLimit},
		{"an intent already counted is not counted again: a redelivery, a reclaim, a replay", testBudgetCountsOnce},
		{"an intent is counted against all its budgets or none", testBudgetAllOrNone},
		{"a use stops counting when its window ends", testBudgetWindow},
		{"nothing is counted for an intent that is done, in flight or another call's", testBudgetOnlyClaimed},
		{"budgets with other keys count apart", testBudgetKeysApart},
		{"concurrent claims of distinct intents never exceed the budget", testBudgetConcurrent},
		{"budget usage lists each key in use with its count and limit", testBudgetUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key := "storetest-" + t.Name()
			tt.run(t, newEnv(t), key)
		})
	}
}

func use(key string, limit int, window time.Duration) effector.BudgetUse {
	group, _, _ := strings.Cut(key, "/")
	return effector.BudgetUse{Key: key, Group: group, Limit: limit, Window: window}
}

func claimAdmit(t *testing.T, s effector.BudgetStore, id string, uses ...effector.BudgetUse) (effector.Claim, effector.Admission) {
	t.Helper()
	c, a, err := s.ClaimAdmit(context.Background(), id, callA, long, uses)
	if err != nil {
		t.Fatalf("ClaimAdmit(%q): %v", id, err)
	}
	return c, a
}

func wantAdmitted(t *testing.T, s effector.BudgetStore, id string, uses ...effector.BudgetUse) effector.Claim {
	t.Helper()
	c, a := claimAdmit(t, s, id, uses...)
	if c.State != effector.Claimed || a.Refused != -1 {
		t.Fatalf("ClaimAdmit(%q) = %s, refused %d; want claimed and admitted", id, c.State, a.Refused)
	}
	return c
}

func wantRefused(t *testing.T, s effector.BudgetStore, id string, refused int, uses ...effector.BudgetUse) effector.Admission {
	t.Helper()
	c, a := claimAdmit(t, s, id, uses...)
	if c.State != effector.Claimed || a.Refused != refused || a.FreesAt.IsZero() {
		t.Fatalf("ClaimAdmit(%q) = %s, refused %d (frees at %v); want claimed, refused by budget %d with a time it frees", id, c.State, a.Refused, a.FreesAt, refused)
	}
	return a
}

// usage returns the usage of key, and whether the store lists it.
func usage(t *testing.T, s effector.BudgetStore, key string) (effector.BudgetUsage, bool) {
	t.Helper()
	var found effector.BudgetUsage
	ok := false
	err := s.BudgetUsage(context.Background(), func(u effector.BudgetUsage) error {
		if u.Key == key {
			found, ok = u, true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("BudgetUsage: %v", err)
	}
	return found, ok
}

func wantUsed(t *testing.T, s effector.BudgetStore, key string, n int) {
	t.Helper()
	u, ok := usage(t, s, key)
	if n == 0 && !ok {
		return
	}
	if !ok || u.Used != n {
		t.Fatalf("usage of %q = %+v (listed %v), want %d used", key, u, ok, n)
	}
}

func testBudgetLimit(t *testing.T, e *budgetEnv, key string) {
	b := use(key, 3, time.Hour)
	var start time.Time
	if e.now != nil {
		start = e.now()
	} else {
		start = time.Now()
	}
	for i := range 3 {
		wantAdmitted(t, e.s, fmt.Sprintf("%s-%d", key, i), b)
		if i == 0 {
			e.pass(time.Millisecond)
		}
	}
	a := wantRefused(t, e.s, key+"-3", 0, b)
	// It frees when the first use, admitted at start, leaves its window.
	if want := start.Add(time.Hour); a.FreesAt.Before(want.Add(-5*time.Second)) || a.FreesAt.After(want.Add(5*time.Second)) {
		t.Fatalf("the budget frees at %v, want about %v: when the first use leaves its window", a.FreesAt, want)
	}
	if e.now != nil && !a.FreesAt.Equal(start.Add(time.Hour)) {
		t.Fatalf("with the store's clock the budget frees at %v, want exactly %v", a.FreesAt, start.Add(time.Hour))
	}
	wantUsed(t, e.s, key, 3)
}

func testBudgetCountsOnce(t *testing.T, e *budgetEnv, key string) {
	b := use(key, 2, time.Hour)
	id := key + "-a"
	c := wantAdmitted(t, e.s, id, b)
	// Released (nothing ran), then delivered again: counted once.
	if err := e.s.Release(context.Background(), id, c.Token); err != nil {
		t.Fatal(err)
	}
	wantAdmitted(t, e.s, id, b)
	wantUsed(t, e.s, key, 1)
	// Its owner died: the claim lapses, and the reclaim is not counted again.
	lapse := key + "-b"
	if _, _, err := e.s.ClaimAdmit(context.Background(), lapse, callA, short, []effector.BudgetUse{b}); err != nil {
		t.Fatal(err)
	}
	e.pass(wait)
	c = wantAdmitted(t, e.s, lapse, b)
	if !c.Reclaimed {
		t.Fatalf("the claim after the lapse is not reclaimed")
	}
	wantUsed(t, e.s, key, 2)
	// The budget is full, and the intents it counts are still admitted.
	wantRefused(t, e.s, key+"-c", 0, b)
	if err := e.s.Release(context.Background(), lapse, c.Token); err != nil {
		t.Fatal(err)
	}
	wantAdmitted(t, e.s, lapse, b)
	wantUsed(t, e.s, key, 2)
}

func testBudgetAllOrNone(t *testing.T, e *budgetEnv, key string) {
	roomy, full := use(key+"/roomy", 5, time.Hour), use(key+"/full", 1, time.Hour)
	wantAdmitted(t, e.s, key+"-a", full)
	wantRefused(t, e.s, key+"-b", 1, roomy, full)
	wantUsed(t, e.s, roomy.Key, 0)
	wantAdmitted(t, e.s, key+"-c", roomy)
	wantUsed(t, e.s, roomy.Key, 1)
}

func testBudgetWindow(t *testing.T, e *budgetEnv, key string) {
	// A window long enough that the refusal right after the admission
	// falls inside it on a loaded machine (40 ms did not, once, under
	// -race with other suites running).
	const window = 500 * time.Millisecond
	b := use(key, 1, window)
	wantAdmitted(t, e.s, key+"-a", b)
	wantRefused(t, e.s, key+"-b", 0, b)
	e.pass(window + wait)
	wantAdmitted(t, e.s, key+"-c", b)
	wantUsed(t, e.s, key, 1)
}

func testBudgetOnlyClaimed(t *testing.T, e *budgetEnv, key string) {
	b := use(key, 5, time.Hour)
	ctx := context.Background()
	done := key + "-done"
	tok := MustClaim(t, e.s, done, long)
	mustComplete(t, e.s, done, tok, result)
	if c, a := claimAdmit(t, e.s, done, b); c.State != effector.Done || a.Refused != -1 {
		t.Fatalf("ClaimAdmit of a done intent = %s, refused %d", c.State, a.Refused)
	}
	inFlight := key + "-in-flight"
	MustClaim(t, e.s, inFlight, long)
	if c, _ := claimAdmit(t, e.s, inFlight, b); c.State != effector.InFlight {
		t.Fatalf("ClaimAdmit of an intent in flight = %s", c.State)
	}
	other := key + "-other"
	MustClaim(t, e.s, other, long)
	if c, _, err := e.s.ClaimAdmit(ctx, other, callB, long, []effector.BudgetUse{b}); err != nil || c.State != effector.Mismatch {
		t.Fatalf("ClaimAdmit by another call = %s, %v", c.State, err)
	}
	wantUsed(t, e.s, key, 0)

	// An intent counted, then done: asked for again under its budget and a
	// new one, it is neither counted under the new one nor taken off the
	// old one.
	old, fresh := use(key+"/old", 5, time.Hour), use(key+"/new", 5, time.Hour)
	ran := key + "-ran"
	c := wantAdmitted(t, e.s, ran, old)
	mustComplete(t, e.s, ran, c.Token, result)
	if c, _ := claimAdmit(t, e.s, ran, old, fresh); c.State != effector.Done {
		t.Fatalf("ClaimAdmit of a done intent = %s", c.State)
	}
	wantUsed(t, e.s, old.Key, 1)
	wantUsed(t, e.s, fresh.Key, 0)
}

func testBudgetKeysApart(t *testing.T, e *budgetEnv, key string) {
	a, b := use(key+"/a", 1, time.Hour), use(key+"/b", 1, time.Hour)
	wantAdmitted(t, e.s, key+"-1", a)
	wantAdmitted(t, e.s, key+"-2", b)
	wantRefused(t, e.s, key+"-3", 0, a)
}

func testBudgetConcurrent(t *testing.T, e *budgetEnv, key string) {
	const limit, workers, rounds = 3, 16, 10
	got, err := BudgetRace(context.Background(), e.s, key, limit, workers, rounds, key)
	if err != nil {
		t.Fatal(err)
	}
	for r, n := range got {
		if n != limit {
			t.Fatalf("round %d: %d workers at once admitted %d intents against a budget of %d (every round: %v)", r, workers, n, limit, got)
		}
	}
	wantUsed(t, e.s, fmt.Sprintf("%s-%d", key, 0), limit)
}

func testBudgetUsage(t *testing.T, e *budgetEnv, key string) {
	b := use(key, 4, time.Hour)
	wantAdmitted(t, e.s, key+"-1", b)
	e.pass(time.Millisecond)
	wantAdmitted(t, e.s, key+"-2", b)
	u, ok := usage(t, e.s, key)
	if !ok || u.Used != 2 || u.Limit != 4 || u.FreesAt.IsZero() || u.Until.Before(u.FreesAt) {
		t.Fatalf("usage = %+v (listed %v), want 2 used of 4, freeing before it ends", u, ok)
	}
	stop := fmt.Errorf("stop")
	n := 0
	if err := e.s.BudgetUsage(context.Background(), func(effector.BudgetUsage) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("BudgetUsage went on after fn's error: %d calls, %v", n, err)
	}
}

// BudgetRace races workers goroutines on rounds budgets of limit, one
// after the other (keys key-0, key-1, ...): in each round every worker,
// released at once, claims and admits an intent of its own against the
// round's budget. It returns how many each round admitted: run it in
// several processes on one store, and each round's sum must be limit.
// prefix makes the intent ids of one caller its own.
func BudgetRace(ctx context.Context, s effector.BudgetStore, key string, limit, workers, rounds int, prefix string) ([]int, error) {
	out := make([]int, rounds)
	for r := range rounds {
		b := use(fmt.Sprintf("%s-%d", key, r), limit, time.Hour)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		start := make(chan struct{})
		for w := range workers {
			wg.Go(func() {
				<-start
				c, a, err := s.ClaimAdmit(ctx, fmt.Sprintf("%s-%d-%d", prefix, r, w), callA, long, []effector.BudgetUse{b})
				if err != nil {
					errs <- err
					return
				}
				if c.State == effector.Claimed && a.Refused == -1 {
					admitted.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return out, err
		}
		out[r] = int(admitted.Load())
	}
	return out, nil
}

// Budget races across processes. A store's test binary, run as a race
// process (its TestMain sees the variable it set), calls
// BudgetRaceProcess; the test runs them with RunBudgetRaceProcesses.
const (
	RaceKey     = "race per_entity"
	RaceLimit   = 3
	RaceWorkers = 16
	RaceRounds  = 10
)

// RaceBudget is the budget of round r of the race processes.
func RaceBudget(r int) effector.BudgetUse {
	return use(fmt.Sprintf("%s-%d", RaceKey, r), RaceLimit, time.Hour)
}

// BudgetRaceProcess races on s as one of the processes of
// RunBudgetRaceProcesses and prints each round's admitted count; it returns
// the process's exit status.
func BudgetRaceProcess(s effector.BudgetStore) int {
	got, err := BudgetRace(context.Background(), s, RaceKey, RaceLimit, RaceWorkers, RaceRounds, fmt.Sprintf("pid-%d", os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	parts := make([]string, len(got))
	for i, n := range got {
		parts[i] = strconv.Itoa(n)
	}
	fmt.Println(strings.Join(parts, ","))
	return 0
}

// RunBudgetRaceProcesses runs n processes (command makes each, with the
// environment that makes it a race process), all at once on one store, and
// fails t unless each round's admissions across them sum to its limit.
func RunBudgetRaceProcesses(t *testing.T, n int, command func(ctx context.Context) *exec.Cmd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p := range n {
		wg.Go(func() {
			cmd := command(ctx)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			outs[p] = strings.TrimSpace(string(out))
			if err != nil {
				errs[p] = fmt.Errorf("%w: %s", err, stderr.String())
			}
		})
	}
	wg.Wait()
	sums := make([]int, RaceRounds)
	for p, out := range outs {
		if errs[p] != nil {
			t.Fatalf("race process %d: %v", p, errs[p])
		}
		parts := strings.Split(out, ",")
		if len(parts) != RaceRounds {
			t.Fatalf("race process %d printed %q", p, out)
		}
		for r, s := range parts {
			k, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("race process %d printed %q", p, out)
			}
			sums[r] += k
		}
	}
	for r, sum := range sums {
		if sum != RaceLimit {
			t.Fatalf("round %d: %d processes of %d workers admitted %d intents against a budget of %d (the processes printed %q)", r, n, RaceWorkers, sum, RaceLimit, outs)
		}
	}
}
