package natsstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/storetest"
)

var call = storetest.Call

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// An id long enough that an escaped key would push the subject past the
// server's 4 KiB protocol line (the server would close the connection,
// failing every later call of every intent on it) is claimed, completed
// and read back, and the store keeps working; an id over MaxIDBytes is
// refused with an error naming the limit, and the store keeps working.
func TestLongIDsDoNotBreakTheConnection(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	ctx := ctxT(t)
	long := strings.Repeat("x", 8<<10)
	tok := storetest.MustClaim(t, s, long, time.Minute)
	if err := s.Complete(ctx, long, tok, []byte("r"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if c := storetest.WantState(t, s, long, effector.Done); string(c.Result) != "r" {
		t.Fatalf("result %q", c.Result)
	}
	_, err := s.Claim(ctx, strings.Repeat("y", natsstore.MaxIDBytes+1), call, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "longer than the 16384") {
		t.Fatalf("claim of an id over MaxIDBytes: %v, want a refusal naming the limit", err)
	}
	storetest.MustClaim(t, s, "after-the-long-ids", time.Minute)
}

// Ids that differ only in white space, case or in bytes that are not UTF-8
// are different intents: each is claimed on its own.
func TestIDsDifferingInWhiteSpaceAreDifferentIntents(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	for _, id := range []string{"a b", "a  b", "a\tb", "a b ", " a b", "a\nb", "A B", "a\xffb", "a.b", "a>b", "a*b", ""} {
		storetest.MustClaim(t, s, "ws-"+id, time.Minute)
	}
}

// A value this store did not write, under an intent's key, is reported as
// such, never read as a claim or a result.
func TestAForeignValueIsRefused(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	ctx := ctxT(t)
	js, err := jetstream.New(cluster.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, s.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, keyOf("foreign"), []byte("hello")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Claim(ctx, "foreign", call, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "did not write") {
		t.Fatalf("claim over a foreign value: %v, want a refusal", err)
	}
}

// keyOf is the record key of id, as the package doc gives it.
func keyOf(id string) string {
	d := sha256.Sum256([]byte(id))
	return "i." + hex.EncodeToString(d[:])
}

// A result over the server's max_payload is written in parts and read back
// byte for byte. If a part is gone while the result should live, a claim
// fails with an error saying so, never answers Done with other bytes; once
// the result's time-to-live ends, the id is free again without its parts.
func TestResultsInPartsAndMissingParts(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	ctx := ctxT(t)
	big := bytes.Repeat([]byte{0, 0xff, '\n', 'x'}, 700<<10) // 2.8 MB: three parts
	js, err := jetstream.New(cluster.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_"+s.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	// completeAndCut completes id with big for ttl, reads it back, and
	// purges the second of its parts.
	completeAndCut := func(id string, ttl time.Duration) time.Time {
		tok := storetest.MustClaim(t, s, id, time.Minute)
		completed := time.Now()
		if err := s.Complete(ctx, id, tok, big, ttl); err != nil {
			t.Fatal(err)
		}
		if c := storetest.WantState(t, s, id, effector.Done); !bytes.Equal(c.Result, big) {
			t.Fatalf("result of %d bytes read back as %d bytes, not byte for byte", len(big), len(c.Result))
		}
		part := "$KV." + s.Bucket() + ".p." + keyOf(id)[2:] + "." + tok + ".1"
		if err := st.Purge(ctx, jetstream.WithPurgeSubject(part)); err != nil {
			t.Fatal(err)
		}
		return completed
	}

	completeAndCut("big-live", time.Hour)
	_, err = s.Claim(ctx, "big-live", call, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "part 2 of 3") {
		t.Fatalf("claim of a live result missing a part: %v, want an error naming the part", err)
	}

	const ttl = 2 * time.Second
	completed := completeAndCut("big-expiring", ttl)
	time.Sleep(time.Until(completed.Add(ttl + 100*time.Millisecond)))
	if c, err := s.Claim(ctx, "big-expiring", call, time.Minute); err != nil || c.State != effector.Claimed || c.Reclaimed {
		t.Fatalf("claim after a result missing a part expired = %+v, %v; want Claimed, not reclaimed", c, err)
	}
}

// The inspector's view: a claim in flight, a lapsed one (unknown), a done
// one; Resolve answers only the unknown one; Records lists each once and
// leaves no consumer on the server.
func TestInspector(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	ctx := ctxT(t)
	storetest.MustClaim(t, s, "flight", time.Minute)
	storetest.MustClaim(t, s, "lapsed", 50*time.Millisecond)
	tok := storetest.MustClaim(t, s, "done", time.Minute)
	if err := s.Complete(ctx, "done", tok, []byte("ok"), time.Hour); err != nil {
		t.Fatal(err)
	}
	rel := storetest.MustClaim(t, s, "released", time.Minute)
	if err := s.Release(ctx, "released", rel); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)

	want := map[string]effector.RecordState{"flight": effector.RecordInFlight, "lapsed": effector.RecordUnknown, "done": effector.RecordDone}
	got := map[string]effector.RecordState{}
	for range 3 { // more than once: no listing may leave anything behind
		clear(got)
		err := s.Records(ctx, func(r effector.Record) error {
			if _, dup := got[r.ID]; dup {
				t.Errorf("record %q listed twice", r.ID)
			}
			got[r.ID] = r.State
			if r.Tool != call.Tool {
				t.Errorf("record %q: tool %q, want %q", r.ID, r.Tool, call.Tool)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("Records listed %v, want %v", got, want)
	}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("record %q: %v, want %v", id, got[id], st)
		}
	}
	js, err := jetstream.New(cluster.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_"+s.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	// A listing reads through the stream's leader and makes no consumer,
	// which would count against the server's limit.
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Errorf("%d consumers left on the bucket's stream after Records, want 0", info.State.Consumers)
	}

	if r, ok, err := s.Record(ctx, "done"); err != nil || !ok || string(r.Result) != "ok" || r.State != effector.RecordDone {
		t.Fatalf("Record(done) = %+v, %v, %v", r, ok, err)
	}
	if _, ok, err := s.Record(ctx, "never"); err != nil || ok {
		t.Fatalf("Record of an unknown id: ok %v, %v", ok, err)
	}
	for _, id := range []string{"flight", "done", "never", "released"} {
		if err := s.Resolve(ctx, id, []byte("resolved"), time.Hour); !errors.Is(err, effector.ErrNotResolvable) {
			t.Errorf("Resolve(%s): %v, want ErrNotResolvable", id, err)
		}
	}
	if err := s.Resolve(ctx, "lapsed", []byte("resolved"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if c := storetest.WantState(t, s, "lapsed", effector.Done); string(c.Result) != "resolved" {
		t.Fatalf("the resolved intent's result: %q", c.Result)
	}
}

// Bad names and durations are refused with errors that say what to do.
func TestRefusals(t *testing.T) {
	t.Parallel()
	js, err := jetstream.New(cluster.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "a.b", "a b", "a>", "a*", strings.Repeat("b", 65)} {
		if _, err := natsstore.Open(ctxT(t), js, name); err == nil || !strings.HasPrefix(err.Error(), "natsstore: ") {
			t.Errorf("Open(%q): %v, want a refusal", name, err)
		}
	}
	s := open(t, cluster)
	if _, err := s.Claim(ctxT(t), "x", call, 0); err == nil {
		t.Error("a claim with a lease of 0 succeeded")
	}
	tok := storetest.MustClaim(t, s, "x", time.Minute)
	if err := s.Complete(ctxT(t), "x", tok, nil, -time.Second); err == nil || errors.Is(err, effector.ErrNotOwner) {
		t.Errorf("a completion with a negative ttl: %v, want an error of its own", err)
	}
}

// A budget group's key lives as long as its longest-lived use: an
// admission under a short window, after one under a long window of the
// same group, must not let the key, and the long window's use with it,
// expire at the short window's end.
func TestAShortWindowDoesNotEraseALongOnesUses(t *testing.T) {
	t.Parallel()
	s := open(t, cluster)
	ctx := ctxT(t)
	long := effector.BudgetUse{Key: "g long", Group: "g", Limit: 1, Window: time.Hour}
	short := effector.BudgetUse{Key: "g short", Group: "g", Limit: 5, Window: time.Second}
	admit := func(id string, u effector.BudgetUse) effector.Admission {
		t.Helper()
		c, a, err := s.ClaimAdmit(ctx, id, call, time.Hour, []effector.BudgetUse{u})
		if err != nil || c.State != effector.Claimed {
			t.Fatalf("ClaimAdmit(%s) = %v, %v", id, c.State, err)
		}
		return a
	}
	if a := admit("long-1", long); a.Refused != -1 {
		t.Fatalf("the first use of the long window was refused")
	}
	if a := admit("short-1", short); a.Refused != -1 {
		t.Fatalf("the first use of the short window was refused")
	}
	// Past the short window and the server's whole-second TTL after it.
	time.Sleep(2500 * time.Millisecond)
	if a := admit("long-2", long); a.Refused != 0 {
		t.Fatalf("the long window's second use was admitted after the short window ended: its first use was lost")
	}
}

// The revision fences a completion when the clocks do not: a host whose
// clock runs an hour ahead sees a claim lapsed that its owner holds, and
// takes it over. The owner, its lease live by its own clock, completes at
// the revision it claimed at: refused, and the record is the next owner's.
// So is a release, and so are both in a batch, beside an item the owner
// still holds, which lands.
func TestTheRevisionFencesWhenClocksDisagree(t *testing.T) {
	t.Parallel()
	a := open(t, cluster)
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	b, err := natsstore.Open(ctxT(t), jsOf(t, cluster), a.Bucket(), natsstore.WithClock(ahead))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for _, op := range []string{"complete", "release", "complete batch", "release batch"} {
		id := "skewed-" + op
		stale := storetest.MustClaim(t, a, id, time.Minute)
		c, err := b.Claim(ctx, id, call, time.Minute)
		if err != nil || c.State != effector.Claimed || !c.Reclaimed {
			t.Fatalf("%s: the claim by the host ahead = %+v, %v; want it to take the claim over", op, c, err)
		}
		held := id + "-held"
		heldTok := storetest.MustClaim(t, a, held, time.Minute)
		errs := make([]error, 2)
		switch op {
		case "complete":
			err = a.Complete(ctx, id, stale, []byte("stale"), time.Hour)
		case "release":
			err = a.Release(ctx, id, stale)
		case "complete batch":
			a.CompleteBatch(ctx, []effector.Completion{
				{IntentID: held, Token: heldTok, Result: []byte("held"), TTL: time.Hour},
				{IntentID: id, Token: stale, Result: []byte("stale"), TTL: time.Hour},
			}, errs)
			err = errs[1]
			if errs[0] != nil {
				t.Fatalf("%s: the item the owner still holds: %v", op, errs[0])
			}
			if got := storetest.WantState(t, a, held, effector.Done); string(got.Result) != "held" {
				t.Fatalf("%s: result %q, want %q", op, got.Result, "held")
			}
		case "release batch":
			a.ReleaseBatch(ctx, []effector.Release{{IntentID: held, Token: heldTok}, {IntentID: id, Token: stale}}, errs)
			err = errs[1]
			if errs[0] != nil {
				t.Fatalf("%s: the item the owner still holds: %v", op, errs[0])
			}
			storetest.WantState(t, a, held, effector.Claimed)
		}
		if !errors.Is(err, effector.ErrNotOwner) {
			t.Fatalf("%s by the owner whose claim was taken over: %v, want ErrNotOwner", op, err)
		}
		if err := b.Complete(ctx, id, c.Token, []byte("current"), 2*time.Hour); err != nil {
			t.Fatal(err)
		}
		if got := storetest.WantState(t, a, id, effector.Done); string(got.Result) != "current" {
			t.Fatalf("%s: result %q, want the next owner's", op, got.Result)
		}
	}
}

// A bucket made by other tools (nats kv add, nats.go's CreateKeyValue) is
// turned into what the store needs; one whose TTL would remove records
// early is refused with an error saying why.
func TestOpenOnBucketsMadeElsewhere(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	js := jsOf(t, cluster)
	// Names of this run's own: -count runs share the cluster.
	n := buckets.Add(1)
	made, withTTL, never := fmt.Sprintf("made-elsewhere-%d", n), fmt.Sprintf("with-ttl-%d", n), fmt.Sprintf("never-made-%d", n)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: made, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	s, err := natsstore.Open(ctx, js, made)
	if err != nil {
		t.Fatal(err)
	}
	tok := storetest.MustClaim(t, s, "x", time.Minute)
	if err := s.Complete(ctx, "x", tok, []byte("r"), time.Hour); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_"+made)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := st.CachedInfo().Config; cfg.AllowDirect || !cfg.AllowMsgTTL {
		t.Fatalf("the bucket's stream after Open: AllowDirect %v, AllowMsgTTL %v; want false, true", cfg.AllowDirect, cfg.AllowMsgTTL)
	}

	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: withTTL, Replicas: 3, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := natsstore.Open(ctx, js, withTTL); err == nil || !strings.Contains(err.Error(), "use a bucket made without a TTL") {
		t.Fatalf("Open of a bucket with a TTL: %v, want a refusal", err)
	}
	if _, err := natsstore.Open(ctx, js, never, natsstore.WithExisting()); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("there is no bucket %q", never)) {
		t.Fatalf("Open WithExisting of a missing bucket: %v", err)
	}
}
