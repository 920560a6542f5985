package bindings_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/toolbind"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/runner"
)

// remoteSpec is a pinned remote tool: lookup_customer's params, served by
// MCP server "crm" as "customers.get".
func remoteSpec(name string, effect bool) *toolreg.Spec {
	s := lookupSpec()
	s.Name = name
	s.SideEffect = effect
	s.Remote = &toolreg.Remote{Server: "crm", Tool: "customers.get"}
	return s
}

// fakeRemote is what package remote binds: a call that records what it was
// sent, and a gate.
type fakeRemote struct {
	calls atomic.Int32
	sent  atomic.Value // json.RawMessage
	gate  toolbind.Gate
}

func (f *fakeRemote) bind(b *bindings.Binder, name string, effect bool) {
	toolbind.BindRemote(b, &toolbind.Remote{Name: name, Effect: effect, Gate: &f.gate,
		Call: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			f.calls.Add(1)
			f.sent.Store(args)
			return json.RawMessage(`{"ok":true}`), nil
		}})
}

// A side-effecting remote tool's call is reachable only from the effector:
// the pipeline holds its contract (no function, Call refused before anything
// is sent), the effector's table holds the call, and the effector's
// ToolRunner sends it the arguments checked and normalized (the default
// applied) as canonical JSON.
func TestARemoteEffectIsReachableOnlyFromTheEffector(t *testing.T) {
	t.Parallel()
	var f fakeRemote
	b := bindings.New([]*toolreg.Spec{remoteSpec("crm_update", true)})
	f.bind(b, "crm_update", true)
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	pt, err := bound.Pipeline.Get("crm_update")
	if err != nil {
		t.Fatal(err)
	}
	if pt.Bound() || pt.Unwrap() != nil {
		t.Error("the pipeline's table holds the remote effect's call")
	}
	if _, err := pt.Call(context.Background(), json.RawMessage(`{"customer_id":"c1"}`)); !errors.As(err, new(*toolreg.SideEffectToolError)) {
		t.Errorf("pipeline Call = %v, want a *toolreg.SideEffectToolError", err)
	}
	if _, err := runner.New().Run(context.Background(), pt, json.RawMessage(`{"customer_id":"c1"}`)); !errors.As(err, new(*toolreg.SideEffectToolError)) {
		t.Errorf("runner.Run = %v, want a *toolreg.SideEffectToolError", err)
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("%d calls were sent from the pipeline", n)
	}
	et, err := bound.Effector.Get("crm_update")
	if err != nil {
		t.Fatal(err)
	}
	res, err := effector.NewToolRunner().Run(context.Background(), et, json.RawMessage(`{"customer_id":"c1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.(json.RawMessage)) != `{"ok":true}` {
		t.Errorf("result = %s", res)
	}
	if got := string(f.sent.Load().(json.RawMessage)); got != `{"customer_id":"c1","limit":10}` {
		t.Errorf("sent %s, want the canonical arguments with the default applied", got)
	}
}

// A read-only remote tool runs inline, and its arguments are checked against
// the pinned params before anything is sent.
func TestARemoteReadIsCheckedBeforeItIsSent(t *testing.T) {
	t.Parallel()
	var f fakeRemote
	b := bindings.New([]*toolreg.Spec{remoteSpec("crm_get", false)})
	f.bind(b, "crm_get", false)
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	rt, _ := bound.Pipeline.Get("crm_get")
	_, err = runner.New().Run(context.Background(), rt, json.RawMessage(`{"customer_id":7,"limt":3}`))
	var ae *toolreg.ToolArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("Run = %v, want a *toolreg.ToolArgumentError", err)
	}
	if n := f.calls.Load(); n != 0 {
		t.Fatalf("invalid arguments were sent %d times", n)
	}
	if _, err := runner.New().Run(context.Background(), rt, json.RawMessage(`{"customer_id":"c1","limit":"3"}`)); err != nil {
		t.Fatal(err)
	}
	if got := string(f.sent.Load().(json.RawMessage)); got != `{"customer_id":"c1","limit":3}` {
		t.Errorf("sent %s, want the coerced canonical arguments", got)
	}
	if _, err := bound.Effector.Get("crm_get"); !errors.As(err, new(*toolreg.ReadOnlyToolError)) {
		t.Errorf("effector table Get = %v, want a *toolreg.ReadOnlyToolError", err)
	}
}

func TestRemoteManifestsAreBoundOnlyRemotely(t *testing.T) {
	t.Parallel()
	t.Run("a Go function bound to a remote manifest is refused", func(t *testing.T) {
		t.Parallel()
		b := bindings.New([]*toolreg.Spec{remoteSpec("crm_get", false)})
		bindings.ReadOnly(b, "crm_get", lookup)
		_, err := b.Bind()
		if err == nil || !strings.Contains(err.Error(), `pins from MCP server "crm"`) || !strings.Contains(err.Error(), "Set.Bind") {
			t.Errorf("Bind = %v, want the local binding refused, naming the server and the fix", err)
		}
	})
	t.Run("a remote binding of a local manifest is refused", func(t *testing.T) {
		t.Parallel()
		var f fakeRemote
		b := bindings.New([]*toolreg.Spec{lookupSpec()})
		f.bind(b, "lookup_customer", false)
		_, err := b.Bind()
		if err == nil || !strings.Contains(err.Error(), "pins no remote tool") {
			t.Errorf("Bind = %v, want the remote binding refused", err)
		}
	})
	t.Run("a remote manifest with no binding is refused", func(t *testing.T) {
		t.Parallel()
		_, err := bindings.New([]*toolreg.Spec{remoteSpec("crm_get", false)}).Bind()
		if err == nil || !strings.Contains(err.Error(), "remote.Connect") || !strings.Contains(err.Error(), "tools.yaml:1:3") {
			t.Errorf("Bind = %v, want the unbound remote tool at its manifest, with the fix", err)
		}
	})
	t.Run("WithoutRemote puts its contract in the tables, with no call", func(t *testing.T) {
		t.Parallel()
		bound, err := bindings.New([]*toolreg.Spec{remoteSpec("crm_get", false), remoteSpec("crm_update", true)}, bindings.WithoutRemote()).Bind()
		if err != nil {
			t.Fatal(err)
		}
		rt, err := bound.Pipeline.Get("crm_get")
		if err != nil || rt.Bound() {
			t.Fatalf("Get = %v, %v: want the contract with no call", rt, err)
		}
		if bound.Effector.Len() != 0 {
			t.Errorf("the effector's table holds %d tools", bound.Effector.Len())
		}
	})
	t.Run("a pipeline-only process attaches no remote effect's call", func(t *testing.T) {
		t.Parallel()
		var f fakeRemote
		b := bindings.New([]*toolreg.Spec{remoteSpec("crm_update", true)}, bindings.PipelineOnly())
		f.bind(b, "crm_update", true)
		bound, err := b.Bind()
		if err != nil {
			t.Fatal(err)
		}
		if bound.Effector.Len() != 0 {
			t.Error("a pipeline-only process's effector table holds the remote effect")
		}
		f.gate.Withdraw("drifted")
		if _, err := bound.Pipeline.Get("crm_update"); !errors.As(err, new(*toolreg.ToolWithdrawnError)) {
			t.Errorf("Get = %v: the pipeline's contract does not read the binding's gate", err)
		}
	})
}

// A withdrawn remote tool leaves the offered set: every schema the model is
// shown, search, and lookups, in both tables at once; Call refuses it and
// sends nothing; it stays out.
func TestAWithdrawnRemoteToolIsNotOffered(t *testing.T) {
	t.Parallel()
	var read, effect fakeRemote
	b := bindings.New([]*toolreg.Spec{lookupSpec(), remoteSpec("crm_get", false), remoteSpec("crm_update", true)})
	bindings.ReadOnly(b, "lookup_customer", lookup)
	read.bind(b, "crm_get", false)
	effect.bind(b, "crm_update", true)
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	names := func(reg *registry.Registry) (schema, openai, search []string) {
		for _, s := range reg.ToolsSchema() {
			var v struct{ Name string }
			_ = json.Unmarshal(s, &v)
			schema = append(schema, v.Name)
		}
		ps, err := reg.ProviderSchema("openai")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ps {
			var v struct{ Function struct{ Name string } }
			_ = json.Unmarshal(s, &v)
			openai = append(openai, v.Function.Name)
		}
		for _, m := range reg.Search(registry.Query{Text: "customer"}) {
			search = append(search, m.Tool.Name())
		}
		return
	}
	all := "lookup_customer crm_get crm_update"
	s, o, q := names(bound.Pipeline) // renders and caches every form before the withdrawal
	if strings.Join(s, " ") != all || strings.Join(o, " ") != all || len(q) != 3 {
		t.Fatalf("before: schema %v, openai %v, search %v", s, o, q)
	}
	rt, _ := bound.Pipeline.Get("crm_get")
	read.gate.Withdraw("description: pinned \"a\", served \"b\"")
	effect.gate.Withdraw("tool no longer served")
	s, o, q = names(bound.Pipeline)
	if strings.Join(s, " ") != "lookup_customer" || strings.Join(o, " ") != "lookup_customer" || strings.Join(q, " ") != "lookup_customer" {
		t.Errorf("after: schema %v, openai %v, search %v: want the withdrawn tools left out", s, o, q)
	}
	for _, reg := range []*registry.Registry{bound.Pipeline, bound.Effector} {
		_, err := reg.Get("crm_update")
		var we *toolreg.ToolWithdrawnError
		if !errors.As(err, &we) || !strings.Contains(we.ModelMessage(), "no longer available") {
			t.Errorf("Get(crm_update) = %v, want a *toolreg.ToolWithdrawnError with a model message", err)
		}
	}
	if _, err := rt.Call(context.Background(), json.RawMessage(`{"customer_id":"c1"}`)); !errors.As(err, new(*toolreg.ToolWithdrawnError)) {
		t.Errorf("Call of a withdrawn tool = %v", err)
	}
	if read.calls.Load() != 0 {
		t.Error("a withdrawn tool's call was sent")
	}
	read.gate.Restore() // a withdrawal is for good
	if _, err := bound.Pipeline.Get("crm_get"); !errors.As(err, new(*toolreg.ToolWithdrawnError)) {
		t.Errorf("Restore undid a withdrawal: Get = %v", err)
	}
}
