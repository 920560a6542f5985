package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/loader"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got with testdata/name, or writes it there with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

// A store at a fixed clock, with records of ids and tools of every length
// in every state: a derived intent id, short ones, a long tool name.
func seedMixed(t *testing.T) effector.Inspector {
	t.Helper()
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "effects.db"), sqlitestore.WithSweepInterval(0), sqlitestore.WithClock(func() time.Time { return now }))
	// Every claim is made at now, then the clock moves on a minute: the
	// one-second lease has lapsed, the hour's has not.
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	claim := func(id, tool string, lease time.Duration) effector.Claim {
		c, err := s.Claim(ctx, id, effector.NewCall(tool, []byte(`{}`)), lease)
		if err != nil || c.State != effector.Claimed {
			t.Fatalf("claim %s: %v %v", id, c.State, err)
		}
		return c
	}
	id := intent.IntentID([]byte("ticket-4711"), 1, 0)
	c := claim(id, "refund_order", time.Minute)
	if err := s.Complete(ctx, id, c.Token, []byte{0x0a, 0x01, 'x'}, time.Hour); err != nil {
		t.Fatal(err)
	}
	claim("a", "send_email", time.Hour)
	claim("lapsed-1", "notify_the_customer_by_registered_letter_and_sms", time.Second)
	now = now.Add(time.Minute)
	return s
}

// The table's columns line up with its rows: each column starts where its
// heading does, on every row, whatever the lengths of the ids and tools.
func TestListColumnsLineUpWithTheirRows(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := listIntents(context.Background(), &env{stdout: &out, stderr: &bytes.Buffer{}}, seedMixed(t), "", "", false, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	heading := lines[0]
	var starts []int
	for i := range heading {
		if heading[i] != ' ' && (i == 0 || heading[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	for _, row := range lines[1:] {
		for _, at := range starts[1:] {
			if at >= len(row) || row[at] == ' ' || row[at-1] != ' ' {
				t.Errorf("a column of this row does not start under its heading at %d:\n%s\n%s", at, heading, row)
				break
			}
		}
	}
	golden(t, "intents_list.golden", out.String())
}

// show prints the stored result decoded: its entity key as text, a JSON
// payload as JSON, a payload that is text but not JSON as text, and one
// that is neither as base64, so every payload stays readable.
func TestShowDecodesTheResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "effects.db"), sqlitestore.WithSweepInterval(0), sqlitestore.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out bytes.Buffer
	for i, payload := range []string{`{"amount":49.9,"refund_id":"re_001"}`, "refunded by hand", "\xff\x00\x01"} {
		key := []byte("ticket-4711")
		id := intent.IntentID(key, int64(i+1), 0)
		c, err := s.Claim(ctx, id, effector.NewCall("refund_order", []byte(`{}`)), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		res := intent.Result{IntentID: id, EntityKey: key, Seq: int64(i + 1), Status: intent.StatusOK, Payload: []byte(payload), CompletedAtMs: now.UnixMilli()}
		b, err := res.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, id, c.Token, b, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := showIntent(ctx, &env{stdout: &out, stderr: &bytes.Buffer{}}, s, id); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out.String(), `"payload": {
      "amount": 49.9,
      "refund_id": "re_001"
    }`) {
		t.Errorf("the JSON payload is not shown as JSON:\n%s", out.String())
	}
	golden(t, "intents_show.golden", out.String())
}

// resolve records the outcome of an intent whose effect is unknown; the
// effector then answers the intent's next delivery with it, and that result
// carries the intent's entity key and seq, as every result does, though the
// store (and so resolve) keeps no intent to read them from.
func TestAResolvedIntentIsAnsweredWithItsEntityKeyAndSeq(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "effects.db")
	store, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	specs, err := loader.LoadFS(fstest.MapFS{"m.yaml": {Data: []byte("name: refund\ndescription: Refund an order.\nside_effect: true\nparams:\n  order_id: {type: string}\n")}}, "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	b := bindings.New(specs)
	bindings.Effect(b, "refund", func(context.Context, struct {
		OrderID string `json:"order_id"`
	}) (map[string]string, error) {
		runs++
		return map[string]string{"refund_id": "re_auto"}, nil
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	eff, err := effector.New(bound.Effector, store)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("ticket-4711")
	now := time.Now()
	in := &intent.Intent{ID: intent.IntentID(key, 7, 0), EntityKey: key, Seq: 7, ToolName: "refund", ArgsJSON: []byte(`{"order_id":"o-1"}`),
		CreatedAtMs: now.UnixMilli(), ExpiresAtMs: now.Add(time.Hour).UnixMilli(), Kind: intent.KindTool}
	// An owner claimed it and vanished: its lease lapsed, the effect unknown.
	if _, err := store.Claim(ctx, in.ID, effector.CallOf(in), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)

	var stdout, stderr bytes.Buffer
	if code := Main([]string{"intents", "resolve", "-ok", `{"refund_id":"re_by_hand"}`, path, in.ID}, &stdout, &stderr); code != 0 {
		t.Fatalf("resolve exited %d: %s", code, stderr.String())
	}
	res, err := eff.Process(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 0 || res.Status != intent.StatusOK || string(res.Payload) != `{"refund_id":"re_by_hand"}` {
		t.Fatalf("the redelivery: %d runs, %s %s; want the resolved result and no run", runs, res.Status, res.Payload)
	}
	if !bytes.Equal(res.EntityKey, key) || res.Seq != 7 || res.IntentID != in.ID {
		t.Errorf("the redelivery's result has intent %q, entity key %q and seq %d; want %q, %q and 7, as every result carries them", res.IntentID, res.EntityKey, res.Seq, in.ID, key)
	}
	// Every later delivery gets the same bytes.
	again, err := eff.Process(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := res.MarshalBinary()
	b2, _ := again.MarshalBinary()
	if !bytes.Equal(b1, b2) {
		t.Errorf("two deliveries got different results:\n%x\n%x", b1, b2)
	}
}

// noDeadline is an Inspector of one unknown record whose store keeps no
// deadline, as Redis's does once a lease lapsed.
type noDeadline struct{ effector.Inspector }

func (noDeadline) Records(_ context.Context, fn func(effector.Record) error) error {
	return fn(effector.Record{ID: "lapsed-2", Tool: "send_email", State: effector.RecordUnknown, Attempts: 1})
}

func (n noDeadline) Record(ctx context.Context, id string) (effector.Record, bool, error) {
	var r effector.Record
	err := n.Records(ctx, func(rec effector.Record) error { r = rec; return nil })
	return r, r.ID == id, err
}

// A deadline the store does not keep is shown as none, in the table (-),
// in list -json and in show (no "deadline" field), never as the year 1.
func TestADeadlineTheStoreDoesNotKeepIsShownAsNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, asJSON := range []bool{false, true} {
		var out bytes.Buffer
		if err := listIntents(ctx, &env{stdout: &out, stderr: &bytes.Buffer{}}, noDeadline{}, "", "", asJSON, false); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "0001-01-01") || !asJSON && !strings.Contains(out.String(), "  -  ") || asJSON && strings.Contains(out.String(), `"deadline"`) {
			t.Errorf("list (json %t) printed:\n%s", asJSON, out.String())
		}
	}
	var out bytes.Buffer
	if err := showIntent(ctx, &env{stdout: &out, stderr: &bytes.Buffer{}}, noDeadline{}, "lapsed-2"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "0001-01-01") || strings.Contains(out.String(), `"deadline"`) {
		t.Errorf("show printed:\n%s", out.String())
	}
}
