//go:build !toolreg_notelemetry

package effector_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/genai"
	"github.com/beam-agents/toolreg/runner"
)

// TestTheEffectorsSpanCarriesTheModelsToolCallID: gen_ai.tool.call.id is
// the id of the model's tool call the intent carries (its tool_call_id),
// not the intent id, which has an attribute of its own.
func TestTheEffectorsSpanCarriesTheModelsToolCallID(t *testing.T) {
	rig := newTelemetryRig(t, effector.NewMemoryStore())
	in := readFixture(t, "tool_intent_traced.bin")
	in.ToolCallID = "call_mszuSIzqtI65i1wAUOE8w5H4"
	if _, err := rig.e.Process(testCtx(t), in); err != nil {
		t.Fatal(err)
	}
	a := attrsOf(spansByName(rig.exp.GetSpans())["execute_tool http.post"].Attributes)
	if a["gen_ai.tool.call.id"] != in.ToolCallID || a["toolreg.intent.id"] != in.ID {
		t.Errorf("gen_ai.tool.call.id %q, toolreg.intent.id %q; want the model's call id %q and the intent id %q",
			a["gen_ai.tool.call.id"], a["toolreg.intent.id"], in.ToolCallID, in.ID)
	}
	if a["gen_ai.tool.description"] != "POST a body." {
		t.Errorf("gen_ai.tool.description %q, want the manifest's", a["gen_ai.tool.description"])
	}
}

// failingClaims fails every Claim, as a store that is down does.
type failingClaims struct{ effector.DedupStore }

// ClaimBatch fails every item as Claim does (batchforms_test.go's
// claimEach), since Serve claims in batches.
func (s failingClaims) ClaimBatch(ctx context.Context, reqs []effector.ClaimRequest, out []effector.ClaimOutcome) {
	claimEach(ctx, s.Claim, reqs, out)
}

func (failingClaims) Claim(context.Context, string, effector.Call, time.Duration) (effector.Claim, error) {
	return effector.Claim{}, errors.New("dial tcp 10.0.0.7:5432: connect: connection refused")
}

// TestEachEffectorFailureHasItsDocumentedErrorType: every way Process can
// end without an OK result names its error.type from the set runner and
// effector share (genai.ErrorTypes), on the execute_tool span and in the
// metrics (executions by error.type; rejections by toolreg.reason), never
// a Go type name; the execute phase's span names what the function did.
func TestEachEffectorFailureHasItsDocumentedErrorType(t *testing.T) {
	type result struct {
		res intent.Result
		err error
	}
	tests := []struct {
		name     string
		process  func(t *testing.T, e *effector.Effector, tl *tools) result
		store    func() effector.DedupStore
		want     string // the execute_tool span's error.type
		wantExec string // the effector.execute span's, "" when the function did not run
	}{
		{name: "the function returns an error", want: genai.ErrorTool, wantExec: genai.ErrorTool,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				res, err := e.Process(testCtx(t), intentFor("fail", `{}`, 1))
				return result{res, err}
			}},
		{name: "the function panics", want: genai.ErrorToolPanic, wantExec: genai.ErrorToolPanic,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				res, err := e.Process(testCtx(t), intentFor("boom", `{}`, 2))
				return result{res, err}
			}},
		{name: "the function honours its timeout", want: genai.ErrorTimeout, wantExec: genai.ErrorTimeout,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				res, err := e.Process(testCtx(t), intentFor("patient", `{}`, 3))
				return result{res, err}
			}},
		{name: "the function ignores its timeout", want: genai.ErrorTimeout,
			process: func(t *testing.T, e *effector.Effector, tl *tools) result {
				go func() { time.Sleep(150 * time.Millisecond); close(tl.release) }()
				res, err := e.Process(testCtx(t), intentFor("stuck", `{}`, 4))
				return result{res, err}
			}},
		{name: "the result is not JSON", want: genai.ErrorResultRefused,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				res, err := e.Process(testCtx(t), intentFor("nan", `{}`, 5))
				return result{res, err}
			}},
		{name: "an unknown tool", want: genai.ErrorRejected,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				res, err := e.Process(testCtx(t), intentFor("no_such_tool", `{}`, 6))
				return result{res, err}
			}},
		{name: "an expired intent", want: genai.ErrorExpired,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				in := intentFor("fail", `{}`, 7)
				in.ExpiresAtMs = in.CreatedAtMs
				res, err := e.Process(testCtx(t), in)
				return result{res, err}
			}},
		{name: "an intent with no id", want: genai.ErrorMalformedIntent,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				in := intentFor("fail", `{}`, 8)
				in.ID = ""
				res, err := e.Process(testCtx(t), in)
				return result{res, err}
			}},
		{name: "an intent whose id is another position's", want: genai.ErrorIntentID,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				in := intentFor("fail", `{}`, 9)
				in.ID = intent.IntentID(in.EntityKey, in.Seq, 99)
				res, err := e.Process(testCtx(t), in)
				return result{res, err}
			}},
		{name: "a replay that asks for something else", want: genai.ErrorNonDeterministic,
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				if _, err := e.Process(testCtx(t), intentFor("notify", `{"intent":"a"}`, 10)); err != nil {
					t.Fatal(err)
				}
				res, err := e.Process(testCtx(t), intentFor("notify", `{"intent":"b"}`, 10))
				return result{res, err}
			}},
		{name: "the store is down", want: genai.ErrorStore, store: func() effector.DedupStore { return failingClaims{effector.NewMemoryStore()} },
			process: func(t *testing.T, e *effector.Effector, _ *tools) result {
				res, err := e.Process(testCtx(t), intentFor("fail", `{}`, 11))
				return result{res, err}
			}},
		{name: "the caller leaves while the function runs", want: genai.ErrorDetached,
			process: func(t *testing.T, e *effector.Effector, tl *tools) result {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
				defer cancel()
				res, err := e.Process(ctx, intentFor("stuck", `{}`, 12))
				close(tl.release)
				return result{res, err}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			reader := sdkmetric.NewManualReader()
			tl := newTools(t)
			var store effector.DedupStore = effector.NewMemoryStore()
			if tt.store != nil {
				store = tt.store()
			}
			e := newEffector(t, tl, store,
				effector.WithToolTimeout("patient", 30*time.Millisecond), effector.WithToolTimeout("stuck", 30*time.Millisecond),
				effector.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))),
				effector.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
			r := tt.process(t, e, tl)
			if r.err == nil && r.res.Status == intent.StatusOK {
				t.Fatalf("Process succeeded; the case is meant to fail")
			}
			var root, exec tracetest.SpanStub
			for _, s := range exp.GetSpans() {
				switch {
				case s.Name == "effector.execute":
					exec = s
				case len(s.Name) > len("execute_tool") && s.Name[:len("execute_tool")] == "execute_tool":
					root = s // the last Process's
				}
			}
			a := attrsOf(root.Attributes)
			if got := a["error.type"]; got != tt.want || root.Status.Code != codes.Error {
				t.Errorf("execute_tool span: error.type %q, status %v; want %q, Error", got, root.Status.Code, tt.want)
			}
			if tt.wantExec != "" {
				if got := attrsOf(exec.Attributes)["error.type"]; got != tt.wantExec {
					t.Errorf("effector.execute span: error.type %q, want %q", got, tt.wantExec)
				}
			}
			m := collect(t, reader)
			if got := counter(m, effector.MetricExecutions, attribute.String("error.type", tt.want)); got != 1 {
				t.Errorf("%s{error.type=%s} = %d, want 1", effector.MetricExecutions, tt.want, got)
			}
			switch a["toolreg.status"] {
			case "refused", "rejected", "expired":
				if got := counter(m, effector.MetricRejections, attribute.String("toolreg.reason", tt.want)); got != 1 {
					t.Errorf("%s{toolreg.reason=%s} = %d, want 1", effector.MetricRejections, tt.want, got)
				}
			}
			known := false
			for _, v := range genai.ErrorTypes {
				known = known || v == a["error.type"]
			}
			if !known {
				t.Errorf("error.type %q is not one of the documented values %v", a["error.type"], genai.ErrorTypes)
			}
		})
	}
}

// TestTheRunnerAndTheEffectorNameTheSameFailureAlike: the same function
// failing the same way has the same error.type whether it ran inline
// (runner.Run, a read-only tool) or from an intent (Process, a
// side-effecting tool): the issue saw "*errors.errorString" in one and
// "error" in the other.
func TestTheRunnerAndTheEffectorNameTheSameFailureAlike(t *testing.T) {
	type out struct {
		Total int `json:"total"`
	}
	cases := []struct {
		name string
		fn   func(ctx context.Context, _ noArgs) (out, error)
		want string
	}{
		{"an error of its own", func(context.Context, noArgs) (out, error) { return out{}, errors.New("upstream said no") }, genai.ErrorTool},
		{"a panic", func(context.Context, noArgs) (out, error) { panic("nil map") }, genai.ErrorToolPanic},
		{"its timeout", func(ctx context.Context, _ noArgs) (out, error) { <-ctx.Done(); return out{}, ctx.Err() }, genai.ErrorTimeout},
		{"a result off its contract", func(context.Context, noArgs) (out, error) { return out{Total: 0}, nil }, genai.ErrorResultRefused},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			returns := &toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
				{Name: "total", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: json.Number("1")}}}}
			b := bindings.New([]*toolreg.Spec{
				{Name: "inline", Description: "d", Returns: returns},
				{Name: "effect", Description: "d", SideEffect: true, Returns: returns},
			})
			bindings.ReadOnly(b, "inline", c.fn)
			bindings.Effect(b, "effect", c.fn)
			bound, err := b.Bind()
			if err != nil {
				t.Fatal(err)
			}
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))

			inline, _ := bound.Pipeline.Get("inline")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			if _, err := runner.New(runner.WithTracerProvider(tp)).Run(ctx, inline, json.RawMessage(`{}`)); err == nil {
				t.Fatal("runner.Run succeeded")
			}
			e, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(fixedClock), effector.WithLogger(quietLogger()),
				effector.WithToolTimeout("effect", 30*time.Millisecond), effector.WithTracerProvider(tp))
			if err != nil {
				t.Fatal(err)
			}
			if res, err := e.Process(testCtx(t), intentFor("effect", `{}`, uint32(i))); err != nil || res.Status != intent.StatusError {
				t.Fatalf("Process = %s, %v; want ERROR", res.Status, err)
			}
			got := map[string]string{}
			for _, s := range exp.GetSpans() {
				got[s.Name] = attrsOf(s.Attributes)["error.type"]
			}
			if got["execute_tool inline"] != c.want || got["execute_tool effect"] != c.want {
				t.Errorf("error.type inline %q, from an intent %q; want %q in both", got["execute_tool inline"], got["execute_tool effect"], c.want)
			}
		})
	}
}
