package faulttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/effector/redisstore"
	"github.com/beam-agents/toolreg/effector/redisstream"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/pgtest"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// The kill points effectord implements (see its doc).
const (
	afterClaim              = "after-claim"
	inTool                  = "in-tool"
	afterToolBeforeComplete = "after-tool-before-complete"
	afterComplete           = "after-complete"
)

// A lease well above what a loaded machine can stall a process for, so that
// every duplicate execution a test counts comes from a fault it caused; the
// tool timeout plus the store timeout (effectord's default: what the lease
// leaves, 1.4s, room for a slow fsync) stays below it, as effector.New demands.
var leaseArgs = []string{"-lease", "2s", "-timeout", "500ms"}

// storeFor names the store of a scenario for effectord's -store flag: for
// "postgres" a fresh database of its own on pg (a postgres:// URL; effectord
// migrates it), for "nats" a fresh bucket on the shared JetStream cluster (a
// nats:// URL), else storeArg's.
func storeFor(t *testing.T, kind, dir string, srv *redistest.Server, pg *pgtest.Server) string {
	t.Helper()
	switch kind {
	case "postgres":
		_, url := pg.NewDatabase(t)
		return url
	case "nats":
		return natsStore()
	}
	return storeArg(kind, dir, srv)
}

// storeArg names the store of a scenario for effectord's -store flag.
func storeArg(kind, dir string, srv *redistest.Server) string {
	if kind == "sqlite" {
		return "sqlite:" + filepath.Join(dir, "dedup.db")
	}
	return "redis:" + srv.Addr
}

// TestKillPoints SIGKILLs an effector at each named point, restarts it until
// the intents file is answered, and checks that no intent is lost, that every
// intent's published results are one result, and which duplicate executions
// the crash window allows.
//
// The downstream deduplicates on the idempotency key and logs every call, so
// one run shows both what a deduplicating downstream applied (at most once)
// and what a non-deduplicating one would have applied (every call). Each
// effector runs one worker, so a kill interrupts exactly the intent the kill
// log names, and every duplicate can be traced to the kill that allowed it.
func TestKillPoints(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	pg := pgtest.Start(t)
	const (
		entries  = 60 // with some redeliveries among them
		unique   = 50
		maxKills = 4
	)
	for _, kind := range []string{"sqlite", "redis", "postgres", "nats"} {
		for i, point := range []string{afterClaim, inTool, afterToolBeforeComplete, afterComplete} {
			scenario := fmt.Sprintf("kill %s (%s)", point, kind)
			t.Run(fmt.Sprintf("a SIGKILL %s on %s loses no intent", point, kind), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				dir := t.TempDir()
				fs := newFiles(dir, "e")
				ins, ids := stream(kind+"/"+point, entries, unique, rng)
				writeIntents(t, fs.in, ins)
				store := storeFor(t, kind, dir, srv, pg)

				kills := 0
				for {
					args := fs.args(store, append([]string{"-dedup", "-workers", "1", "-key-prefix", scenario + ":"}, leaseArgs...)...)
					if kills < maxKills {
						args = append(args, "-kill-at", point, "-kill-n", strconv.Itoa(1+rng.IntN(8)))
					}
					if !start(t, args...).wait(t) {
						break
					}
					kills++
				}
				if kills == 0 {
					t.Fatalf("no run was killed at %s: the kill point is never reached", point)
				}

				calls := downstreamCalls(t, fs.downstream)
				res := results(t, fs.out)
				killed := map[string]bool{}
				for _, l := range lines(t, fs.kills) {
					f := strings.Fields(l)
					if len(f) != 3 || f[0] != point {
						t.Fatalf("kills.log: %q: want %q <intent id> <pid>", l, point)
					}
					killed[f[1]] = true
				}
				if len(killed) > kills {
					t.Fatalf("kills.log names %d intents, but only %d runs were killed", len(killed), kills)
				}
				r := tally(t, scenario, ids, calls, res)

				// The deduplicating downstream applied every effect at most
				// once, and exactly once where the result says OK (an ERROR
				// result, effect unknown, may stand for no execution at all).
				for _, id := range ids {
					applied := 0
					for _, c := range calls[id] {
						if c.applied {
							applied++
						}
					}
					ok := len(res[id]) > 0 && res[id][0].Status == intent.StatusOK
					if _, err := os.Stat(filepath.Join(fs.downstream+".keys", id)); applied == 0 && err == nil {
						// Its marker is there, its log line is not: a kill (in
						// another goroutine's step) fell between the two writes.
						applied = 1
					}
					if applied > 1 || (ok && applied != 1) {
						t.Errorf("intent %s: the deduplicating downstream applied it %d times; its result is OK: %v", id, applied, ok)
					}
				}
				// Without deduplication downstream, the calls are the
				// executions. Only a kill between a call and its durable
				// Complete may repeat it. With one worker that is still more
				// than the intent the kill hit: Serve hands a result to its
				// completer and starts the next tool (and claims the next
				// intent) before that result is durable.
				killedPID := map[int]bool{}
				for _, l := range lines(t, fs.kills) {
					if f := strings.Fields(l); len(f) == 3 {
						if pid, err := strconv.Atoi(f[2]); err == nil {
							killedPID[pid] = true
						}
					}
				}
				durable := durableCompletions(t, fs.completes)
				wantDuplicatesOnlyInTheWindow(t, calls, res, killedPID, durable)
				// The store tells a reclaim from a fresh claim: every intent a
				// kill left claimed (all points but after-complete) is
				// reclaimed, and no reclaim finds an intent whose completion
				// was durable.
				reclaimed := map[string]string{} // id: the process that reclaimed it
				for _, l := range lines(t, fs.reclaims) {
					f := strings.Fields(l)
					reclaimed[f[0]] = f[1]
				}
				for id := range killed {
					if _, ok := reclaimed[id]; point != afterComplete && !ok {
						t.Errorf("intent %s: a kill %s left its claim to run out, but the store did not report the next claim as reclaimed", id, point)
					}
				}
				for id, pid := range reclaimed {
					for key := range durable {
						if f := strings.Fields(key); f[0] == id && f[1] != pid {
							t.Errorf("intent %s: the store reported a reclaim in process %s, but process %s's completion of it was durable", id, pid, f[1])
						}
					}
				}
				// What the results of the interrupted intents say: one that
				// ran again (its earlier claim ran out, so its effect is
				// unknown) says so.
				ranAgain, unknown := 0, 0
				for id := range killed {
					says := len(res[id]) > 0 && strings.HasPrefix(res[id][0].ErrorMessage, "effect unknown")
					if says {
						unknown++
					}
					if len(calls[id]) > 1 {
						ranAgain++
						if !says {
							t.Errorf("intent %s ran %d times after a kill %s, but its result does not say the effect is unknown: %+v", id, len(calls[id]), point, res[id])
						}
					}
				}
				r.note = fmt.Sprintf("%d kills; store reported %d reclaims", kills, len(reclaimed))
				if point != afterComplete {
					r.note += fmt.Sprintf("; of %d interrupted intents %d ran again and %d results say the effect is unknown", len(killed), ranAgain, unknown)
				}
				report(t, r)
			})
		}
	}
}

// TestPausedOwner stops an effector with SIGSTOP inside its tool, past its
// lease; a second effector claims the intent and completes it; the first,
// continued, makes its downstream call late and must have its late Complete
// refused, and the stored record must stay the second's.
func TestPausedOwner(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	pg := pgtest.Start(t)
	for _, kind := range []string{"sqlite", "redis", "postgres", "nats"} {
		t.Run("on "+kind+" the woken owner's late Complete is refused", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ins, ids := stream("paused/"+kind, 1, 1, nil)
			id := ids[0]
			a, b := newFiles(dir, "a"), newFiles(dir, "b")
			writeIntents(t, a.in, ins)
			writeIntents(t, b.in, ins)
			store := storeFor(t, kind, dir, srv, pg)
			prefix := "paused:" + kind + ":"

			// A lease of 1s leaves the woken owner's Complete a store timeout
			// of 749ms (lease - tool timeout - effector.LeaseMargin): with
			// 300ms it had 49ms, which a Postgres round trip under -race on
			// a loaded machine overran, and the test saw a timeout instead
			// of the refusal it is about.
			pa := start(t, a.args(store, "-key-prefix", prefix, "-lease", "1s", "-timeout", "150ms", "-stop-in-tool", id)...)
			pid := pa.cmd.Process.Pid
			waitFor(t, 30*time.Second, "the first effector to stop itself in the tool", func() bool { return stopped(pid) })
			time.Sleep(2 * time.Second) // twice its lease

			// The new owner's store timeout leaves 1s of its lease for its
			// batch's claim call: by default (what the lease leaves after the
			// tool's timeout and LeaseMargin) a claim slower than LeaseMargin,
			// as a NATS write under load is, left too little lease to start
			// the reclaimed intent, which then waited out its own lease and
			// was reclaimed a second time.
			pb := start(t, b.args(store, "-key-prefix", prefix, "-lease", "5s", "-timeout", "2s", "-store-timeout", "2s")...)
			if pb.wait(t) {
				t.Fatal("the second effector was killed")
			}
			bPID := pb.cmd.Process.Pid
			before := storedResultAt(t, store, prefix, ins[0])

			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if pa.wait(t) {
				t.Fatal("the first effector was killed")
			}
			after := storedResultAt(t, store, prefix, ins[0])

			// Both ran the tool: the downstream saw the new owner's call, then
			// the woken owner's late one, with the same key.
			calls := downstreamCalls(t, a.downstream)
			if len(calls[id]) != 2 || calls[id][0].pid != bPID || calls[id][1].pid != pid {
				t.Fatalf("downstream calls of %s: %+v, want the new owner's (pid %d) then the woken owner's (pid %d); completes: %q", id, calls[id], bPID, pid, lines(t, a.completes))
			}
			// The completes: the new owner's succeeded, the woken one's was refused.
			want := []string{fmt.Sprintf("%s %d ok", id, bPID), fmt.Sprintf("%s %d not-owner", id, pid)}
			if got := lines(t, a.completes); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("completes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// The store told the new owner its claim was a reclaim.
			if got, want := lines(t, a.reclaims), []string{fmt.Sprintf("%s %d", id, bPID)}; strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("reclaims: %q, want %q", got, want)
			}
			// The record stays the new owner's.
			if !sameResult(before, after) {
				t.Fatalf("the stored result changed after the woken owner's Complete:\nbefore %+v\nafter  %+v", before, after)
			}
			if !strings.Contains(string(after.Payload), `"pid":`+strconv.Itoa(bPID)) {
				t.Fatalf("stored result %s is not the new owner's (pid %d)", after.Payload, bPID)
			}
			bRes := results(t, b.out)[id]
			if len(bRes) != 1 || !sameResult(bRes[0], after) {
				t.Fatalf("the new owner published %+v, want the stored result %+v", bRes, after)
			}
			// What the woken owner published, though its Complete was refused.
			aRes := results(t, a.out)[id]
			r := tally(t, "paused owner ("+kind+")", ids, calls, results(t, b.out))
			switch {
			case len(aRes) == 0:
				r.note = "woken owner published nothing"
			case sameResult(aRes[0], after):
				r.note = "woken owner's Complete refused; it published the stored result"
			default:
				t.Errorf("the woken owner published its own %s result %+v, not the stored one %+v: one intent would have two results", aRes[0].Status, aRes[0], after)
			}
			report(t, r)
		})
	}
}

// storedResult reads the intent's terminal record straight from the store.
func storedResult(t *testing.T, kind, dir string, srv *redistest.Server, prefix string, in *intent.Intent) intent.Result {
	t.Helper()
	return storedResultAt(t, storeArg(kind, dir, srv), prefix, in)
}

// storedResultAt reads the intent's terminal record straight from the store
// effectord's -store flag names (prefix is a Redis store's key prefix).
func storedResultAt(t *testing.T, where, prefix string, in *intent.Intent) intent.Result {
	id := in.ID
	t.Helper()
	ctx := context.Background()
	var store effector.DedupStore
	kind, addr, _ := strings.Cut(where, ":")
	switch kind {
	case "sqlite":
		s, err := sqlitestore.Open(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		store = s
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		store = redisstore.New(rdb, redisstore.WithKeyPrefix(prefix))
	case "postgres":
		pool, err := pgxpool.New(ctx, where)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		s, err := pgstore.Open(ctx, pool, pgstore.WithSweepInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		store = s
	case "nats":
		s, closeConn, err := natsstore.OpenURL(ctx, where, natsstore.WithExisting())
		if err != nil {
			t.Fatal(err)
		}
		defer closeConn()
		store = s
	default:
		t.Fatalf("store %q: want sqlite:, redis:, postgres: or nats:", where)
	}
	c, err := store.Claim(ctx, id, effector.CallOf(in), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.State != effector.Done {
		t.Fatalf("intent %s is %s in the store, want done", id, c.State)
	}
	var r intent.Result
	if err := r.UnmarshalBinary(c.Result); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestContention runs four effectors on one store over the same stream of
// 1,000 intents with redeliveries: every intent id executes exactly once.
func TestContention(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	pg := pgtest.Start(t)
	const (
		entries = 1000
		unique  = 750
		procs   = 4
	)
	for _, kind := range []string{"sqlite", "redis", "postgres", "nats"} {
		t.Run(fmt.Sprintf("%d effectors on one %s execute each intent once", procs, kind), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ins, ids := stream("contention/"+kind, entries, unique, rand.New(rand.NewPCG(7, 7)))
			store := storeFor(t, kind, dir, srv, pg)
			var ps []*proc
			var outs []string
			for i := range procs {
				fs := newFiles(dir, "e"+strconv.Itoa(i))
				writeIntents(t, fs.in, ins)
				outs = append(outs, fs.out)
				ps = append(ps, start(t, fs.args(store, "-workers", "4", "-lease", "10s", "-timeout", "5s")...))
			}
			for _, p := range ps {
				if p.wait(t) {
					t.Fatal("an effector was killed")
				}
			}
			calls := downstreamCalls(t, filepath.Join(dir, "downstream.log"))
			r := tally(t, fmt.Sprintf("contention, %d procs (%s)", procs, kind), ids, calls, results(t, outs...))
			wantExecutedOnce(t, ids, calls, "")
			// Each effector answered its whole stream.
			for _, out := range outs {
				got := results(t, out)
				for _, id := range ids {
					if len(got[id]) == 0 {
						t.Errorf("%s: intent %s has no result", filepath.Base(out), id)
					}
				}
			}
			r.note = fmt.Sprintf("%d entries each", entries)
			report(t, r)
		})
	}
}

// TestRedisRestart kills redis-server (durable: appendonly, fsync always) and
// restarts it twice while two effectors work through the same stream: nothing
// is lost or executed twice.
func TestRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, redistest.WithDurability())
	restartMidRun(t, "redis-server", "redis:"+srv.Addr, 3, srv.Restart)
}

// restartMidRun runs two effectors through one stream of 300 entries (250
// intents) on the store at storeArg, restarts its server (what restart
// does) twice mid-run, and reports the row "<server> restarted mid-run":
// nothing may be lost or executed twice.
func restartMidRun(t *testing.T, server, storeArg string, seed uint64, restart func(testing.TB)) {
	const (
		entries = 300
		unique  = 250
		procs   = 2
	)
	dir := t.TempDir()
	ins, ids := stream(server+"-restart", entries, unique, rand.New(rand.NewPCG(seed, seed)))
	var ps []*proc
	var outs []string
	for i := range procs {
		fs := newFiles(dir, "e"+strconv.Itoa(i))
		writeIntents(t, fs.in, ins)
		outs = append(outs, fs.out)
		// 10ms in each tool: the run takes at least 250 x 10ms / 4 workers,
		// about 0.6s, so the restarts land mid-run however fast the machine.
		ps = append(ps, start(t, fs.args(storeArg, "-workers", "2", "-lease", "10s", "-timeout", "5s", "-tool-delay", "10ms")...))
	}
	downstream := filepath.Join(dir, "downstream.log")
	restarts := 0
	for _, at := range []int{unique / 5, unique / 2} {
		waitFor(t, procTimeout, fmt.Sprintf("%d downstream calls", at), func() bool { return len(lines(t, downstream)) >= at })
		if len(lines(t, downstream)) >= unique {
			t.Fatalf("the effectors finished before %s was restarted: the test proves nothing", server)
		}
		restart(t)
		restarts++
	}
	retried := 0
	for _, p := range ps {
		if p.wait(t) {
			t.Fatal("an effector was killed")
		}
		retried += strings.Count(p.stderr.String(), "retrying")
	}
	calls := downstreamCalls(t, downstream)
	r := tally(t, server+" restarted mid-run", ids, calls, results(t, outs...))
	wantExecutedOnce(t, ids, calls, "")
	r.note = fmt.Sprintf("%d restarts, %d effectors, %d retries logged", restarts, procs, retried)
	report(t, r)
}

// TestStreams runs four effectors as consumers of one Redis intents stream
// (package effector/redisstream) of 1,000 entries with redeliveries, on one
// Redis dedup store, and SIGKILLs one of them inside its tool, never to
// return: the others reclaim the entries it left pending (XAUTOCLAIM), every
// intent gets a result, every entry is acknowledged, and only the intent the
// kill interrupted may execute twice. Then SIGTERM stops the rest gracefully.
func TestStreams(t *testing.T) {
	t.Parallel()
	streamsKilled(t, inTool, 1)
}

// TestStreamsKilledAfterCompletion kills a consumer of four (with four
// workers, so that its acknowledgements go in batches) after a completion
// is durable and before its result is published and its batch
// acknowledged: the other consumers reclaim its entries and answer them
// from the store.
func TestStreamsKilledAfterCompletion(t *testing.T) {
	t.Parallel()
	streamsKilled(t, afterComplete, 4)
}

// streamsKilled serves a Redis stream with four consumers, the first of
// which (with workers workers) kills itself at point, and checks that no
// intent is lost and that an intent runs twice only where the kill fell
// between its run and its durable completion.
func streamsKilled(t *testing.T, point string, workers int) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	const (
		entries = 1000
		unique  = 750
		procs   = 4
	)
	ins, ids := stream("streams", entries, unique, rand.New(rand.NewPCG(5, 5)))
	pipe := rdb.Pipeline()
	for _, in := range ins {
		b, err := in.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: "intents", Values: []any{redisstream.IntentField, string(b)}})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	fs := newFiles(dir, "unused")
	var ps []*proc
	for i := range procs {
		args := []string{"-store", "redis:" + srv.Addr, "-stream", srv.Addr, "-consumer", "c" + strconv.Itoa(i),
			"-downstream", fs.downstream, "-kills", fs.kills, "-completes", fs.completes,
			"-lease", "2s", "-timeout", "500ms", "-reclaim-idle", "2500ms"}
		if i == 0 {
			// With one worker, an in-tool kill interrupts the intent it
			// names, and may cut the completions of the intents that worker
			// ran just before it, which Serve's completer had not yet made
			// durable.
			args = append(args, "-workers", strconv.Itoa(workers), "-kill-at", point, "-kill-n", "8")
		} else {
			args = append(args, "-workers", "4")
		}
		ps = append(ps, start(t, args...))
	}
	if !ps[0].wait(t) {
		t.Fatal("the effector to be killed exited by itself")
	}
	pendingCount := func() int64 {
		p, err := rdb.XPending(ctx, "intents", "effectors").Result()
		if err != nil {
			t.Fatal(err)
		}
		return p.Count
	}
	published := func() map[string][]intent.Result {
		rs, err := redisstream.Results(ctx, rdb, "results")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]intent.Result{}
		for _, r := range rs {
			got[r.IntentID] = append(got[r.IntentID], r)
		}
		return got
	}
	waitFor(t, procTimeout, "every intent's result and no entry pending", func() bool {
		return len(published()) == unique && pendingCount() == 0
	})
	for _, p := range ps[1:] {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if p.wait(t) {
			t.Fatal("an effector was killed")
		}
	}

	calls := downstreamCalls(t, fs.downstream)
	r := tally(t, fmt.Sprintf("streams, %d consumers, 1 killed %s (redis)", procs, point), ids, calls, published())
	killed := lines(t, fs.kills)
	if len(killed) != 1 {
		t.Fatalf("kills.log: %q, want one kill", killed)
	}
	// An intent runs once, or twice where the killed consumer ran it and
	// the kill fell before its completion was durable: then another
	// consumer ran it later, as reclaimed, and its result says the effect
	// is unknown.
	killedPID, res := ps[0].cmd.Process.Pid, published()
	for _, id := range ids {
		cs := calls[id]
		switch {
		case len(cs) == 1:
		case len(cs) == 2 && cs[0].pid == killedPID && cs[1].pid != killedPID:
			if rs := res[id]; len(rs) == 0 || !strings.HasPrefix(rs[0].ErrorMessage, "effect unknown") {
				t.Errorf("intent %s ran in the killed consumer and again in another, but its result does not say the effect is unknown: %+v", id, rs)
			}
		default:
			t.Errorf("intent %s executed %d times (%+v), want once, or twice where the killed consumer (pid %d) ran it first", id, len(cs), cs, killedPID)
		}
	}
	r.note = fmt.Sprintf("%d entries; the killed consumer's pending entries reclaimed", entries)
	report(t, r)
}
