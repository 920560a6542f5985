package effector_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/toolbind"
	"github.com/beam-agents/toolreg/registry"
)

// fixtureDir holds the bytes the Python beam-agents runtime wrote; see its README.
const fixtureDir = "../intent/testdata/beam-agents-v1"

func readFixture(t *testing.T, name string) *intent.Intent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	in := new(intent.Intent)
	if err := in.UnmarshalBinary(data); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return in
}

type postArgs struct {
	URL  string         `json:"url"`
	Body map[string]any `json:"body"`
}

// httpPostTable holds "http.post", the tool the fixtures name. Its name has a
// dot, which manifests refuse, so it is bound by hand.
func httpPostTable(t *testing.T, calls *atomic.Int32) *registry.Registry {
	t.Helper()
	fn := func(ctx context.Context, a postArgs) (string, error) {
		calls.Add(1)
		return "posted to " + a.URL, nil
	}
	decode := func(args json.RawMessage) (any, error) {
		var a postArgs
		err := json.Unmarshal(args, &a)
		return a, err
	}
	tool := toolbind.Attach(&toolreg.Spec{Name: "http.post", Description: "POST a body.", SideEffect: true}, &toolbind.Binding{
		Func:   fn,
		Decode: decode,
		Call: func(ctx context.Context, args json.RawMessage) (any, error) {
			a, err := decode(args)
			if err != nil {
				return nil, err
			}
			return fn(ctx, a.(postArgs))
		},
	}).(*toolreg.Tool)
	r := registry.New()
	if err := r.Register(tool); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTheEffectorProcessesBeamAgentsIntents(t *testing.T) {
	t.Parallel()
	goldenKey := make([]byte, 32)
	for i := range goldenKey {
		goldenKey[i] = byte(i)
	}
	keys := map[string][]byte{"golden-k1": goldenKey}
	fixtureNow := func() time.Time { return time.UnixMilli(1700000000000) } // T0: the fixtures are fresh

	tamper := func(in *intent.Intent) { in.ArgsJSON = []byte(`{"url":"https://attacker.test"}`) }
	tests := []struct {
		name    string
		file    string
		mode    effector.VerifyMode
		change  func(*intent.Intent)
		refuse  error // nil: it executes
		payload string
	}{
		{"the signed intent verifies with the golden key and executes", "tool_intent_signed.bin", effector.VerifyRequire, nil, nil, `"posted to https://example.test"`},
		{"the intent with a future field verifies and executes", "tool_intent_future_field.bin", effector.VerifyRequire, nil, nil, `"posted to https://example.test"`},
		{"a tampered copy of the signed intent is refused", "tool_intent_signed.bin", effector.VerifyRequire, tamper, intent.ErrBadSignature, ""},
		{"the unsigned intent is refused when signatures are required", "tool_intent.bin", effector.VerifyRequire, nil, intent.ErrUnsigned, ""},
		{"the unsigned intent executes in permissive mode", "tool_intent.bin", effector.VerifyPermissive, nil, nil, `"posted to https://example.test"`},
		{"the traced intent executes with verification off", "tool_intent_traced.bin", effector.VerifyOff, nil, nil, `"posted to https://example.test"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			store := &countingStore{DedupStore: effector.NewMemoryStore()}
			// The fixtures' intent ids are fixed strings, not derived ids.
			e, err := effector.New(httpPostTable(t, &calls), store, effector.WithUnderivedIDs(),
				effector.WithVerify(tt.mode, keys), effector.WithClock(fixtureNow), effector.WithLogger(quietLogger()))
			if err != nil {
				t.Fatal(err)
			}
			in := readFixture(t, tt.file)
			if tt.change != nil {
				tt.change(in)
			}
			res, err := e.Process(testCtx(t), in)
			if tt.refuse != nil {
				if !errors.Is(err, tt.refuse) || store.touched() != 0 || calls.Load() != 0 {
					t.Fatalf("Process error = %v (store calls %d, tool calls %d), want %v refused before the store", err, store.touched(), calls.Load(), tt.refuse)
				}
				return
			}
			if err != nil || res.Status != intent.StatusOK || string(res.Payload) != tt.payload {
				t.Fatalf("Process = %s %q %q, %v; want OK %s", res.Status, res.Payload, res.ErrorMessage, err, tt.payload)
			}
			if res.IntentID != in.ID || string(res.EntityKey) != "entity-1" || res.Seq != 7 || res.CompletedAtMs != 1700000000000 {
				t.Errorf("result does not answer the fixture's intent: %+v", res)
			}
			if calls.Load() != 1 {
				t.Errorf("the tool ran %d times, want 1", calls.Load())
			}
		})
	}
	t.Run("a fixture's fixed, underived id is refused by default", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		e, err := effector.New(httpPostTable(t, &calls), effector.NewMemoryStore(), effector.WithClock(fixtureNow), effector.WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		var ie *effector.IntentIDError
		if _, err := e.Process(testCtx(t), readFixture(t, "tool_intent.bin")); !errors.As(err, &ie) || calls.Load() != 0 {
			t.Fatalf("Process = %v (tool ran %d times), want an *IntentIDError and no run", err, calls.Load())
		}
	})
	t.Run("the approval intent goes to the approval sink", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		var asked []string
		e, err := effector.New(httpPostTable(t, &calls), effector.NewMemoryStore(), effector.WithClock(fixtureNow), effector.WithLogger(quietLogger()),
			effector.WithUnderivedIDs(), effector.WithApproval(func(_ context.Context, in *intent.Intent) error {
				asked = append(asked, in.ID+" "+string(in.ArgsJSON))
				return nil
			}))
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Process(testCtx(t), readFixture(t, "tool_intent_approval.bin"))
		if err != nil || res.Status != intent.StatusOK {
			t.Fatalf("Process = %s, %v; want OK", res.Status, err)
		}
		want := `aaaaaaaa-bbbb-5ccc-8ddd-eeeeeeeeeeee {"amount":9000,"reason":"refund"}`
		if len(asked) != 1 || asked[0] != want || calls.Load() != 0 {
			t.Errorf("approval sink got %q (tool ran %d times), want [%q] and no execution", asked, calls.Load(), want)
		}
	})
}
