package test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/registry"
	"github.com/beam-agents/toolreg/runner"
)

type LookupArgs struct {
	CustomerID string `json:"customer_id"`
	Limit      int    `json:"limit"`
}

type Customer struct {
	ID    string
	Limit int
}

type ChargeArgs struct {
	CustomerID string `json:"customer_id"`
	Cents      int    `json:"cents"`
}

// world is the fixture of the scenarios: lookup_customer (read-only) and
// charge (side-effecting) bound to functions that count their calls; charge
// also records its "external writes".
type world struct {
	bound   *bindings.Bound
	lookups atomic.Int64
	charges atomic.Int64
	writes  []string

	lookupFn func(context.Context, LookupArgs) (Customer, error)
	chargeFn func(context.Context, ChargeArgs) (string, error)
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{}
	w.lookupFn = func(_ context.Context, a LookupArgs) (Customer, error) {
		w.lookups.Add(1)
		return Customer{ID: a.CustomerID, Limit: a.Limit}, nil
	}
	w.chargeFn = func(_ context.Context, a ChargeArgs) (string, error) {
		w.charges.Add(1)
		w.writes = append(w.writes, a.CustomerID)
		return "charged " + a.CustomerID, nil
	}
	b := bindings.New(loadSpecs(t, manifests))
	bindings.ReadOnly(b, "lookup_customer", w.lookupFn)
	bindings.Effect(b, "charge", w.chargeFn)
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	w.bound = bound
	return w
}

func (w *world) pipeline(t *testing.T, name string) *toolreg.Tool {
	t.Helper()
	tool, err := w.bound.Pipeline.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func (w *world) effector(t *testing.T, name string) *toolreg.Tool {
	t.Helper()
	tool, err := w.bound.Effector.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// noCalls fails the test if a function of w ran.
func (w *world) noCalls(t *testing.T) {
	t.Helper()
	if l, c := w.lookups.Load(), w.charges.Load(); l != 0 || c != 0 {
		t.Errorf("functions ran: lookup_customer %d times, charge %d times; want never", l, c)
	}
	if len(w.writes) != 0 {
		t.Errorf("external writes happened: %q", w.writes)
	}
}

const validLookup = `{"customer_id":"c-42","limit":3}`
const validCharge = `{"customer_id":"c-42","cents":500}`

// Scenario: Bare decorator derives name and description from the function.
// Go: a manifest (loader.LoadFS) with a name and description and no side_effect key, bound with bindings.ReadOnly, gives a Tool with that name and description and SideEffect() == false.
func TestBareDecoratorDerivesNameAndDescriptionFromTheFunction(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tool := w.pipeline(t, "lookup_customer")
	if tool.Name() != "lookup_customer" || tool.Description() != "Look up a customer by id." || tool.SideEffect() {
		t.Errorf("tool = (%q, %q, side_effect %v), want (lookup_customer, the manifest's description, false)", tool.Name(), tool.Description(), tool.SideEffect())
	}
	if !tool.Bound() {
		t.Errorf("lookup_customer has no function in the pipeline's table")
	}
	w.noCalls(t)
}

// Scenario: Parameterized decorator overrides name and declares a side effect.
// Go: a manifest `name: charge, side_effect: true` bound with bindings.Effect to a function of another name (chargeCard) gives a Tool named charge with SideEffect() == true.
func TestParameterizedDecoratorOverridesNameAndDeclaresASideEffect(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	chargeCard := func(context.Context, ChargeArgs) (string, error) { calls.Add(1); return "", nil }
	b := bindings.New(loadSpecs(t, manifests), bindings.EffectorOnly())
	bindings.Effect(b, "charge", chargeCard)
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []*registry.Registry{bound.Pipeline, bound.Effector} {
		tool, err := table.Get("charge")
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name() != "charge" || !tool.SideEffect() {
			t.Errorf("tool = (%q, side_effect %v), want (charge, true)", tool.Name(), tool.SideEffect())
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("chargeCard ran %d times while binding, want never", n)
	}
}

// Scenario: Schema reflects parameter types and required-ness.
// Go: for params customer_id (string) and limit (integer, default 10), Tool.Schema()'s parameters give them those types, required == ["customer_id"], and limit's default 10.
func TestSchemaReflectsParameterTypesAndRequiredness(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var got struct {
		Name       string `json:"name"`
		Parameters struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Type    string `json:"type"`
				Default *int   `json:"default"`
			} `json:"properties"`
			Required             []string `json:"required"`
			AdditionalProperties *bool    `json:"additionalProperties"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(w.pipeline(t, "lookup_customer").Schema(), &got); err != nil {
		t.Fatal(err)
	}
	p := got.Parameters
	if p.Type != "object" || p.Properties["customer_id"].Type != "string" || p.Properties["limit"].Type != "integer" {
		t.Errorf("parameter types = %+v, want customer_id string and limit integer", p)
	}
	if diff := cmp.Diff([]string{"customer_id"}, p.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	if d := p.Properties["limit"].Default; d == nil || *d != 10 {
		t.Errorf("limit's default = %v, want 10", d)
	}
	if p.Properties["customer_id"].Default != nil {
		t.Errorf("customer_id has a default; it is required")
	}
	if p.AdditionalProperties == nil || *p.AdditionalProperties {
		t.Errorf("additionalProperties = %v, want false", p.AdditionalProperties)
	}
	w.noCalls(t)
}

// Scenario: Missing type annotations are rejected at decoration time.
// Go: a manifest param without a type (loader.LoadFS) and a Go field of untyped type any (Bind) are both refused at startup with a *toolreg.ToolDefinitionError naming the param or field and its line.
func TestMissingTypeAnnotationsAreRejectedAtDecorationTime(t *testing.T) {
	t.Parallel()
	t.Run("a manifest param without a type is refused", func(t *testing.T) {
		t.Parallel()
		err := loadErr(t, untypedManifest)
		var de *toolreg.ToolDefinitionError
		if !errors.As(err, &de) {
			t.Fatalf("loading error = %v, want a *toolreg.ToolDefinitionError", err)
		}
		if !strings.Contains(err.Error(), "manifests/tools.yaml:6") || !strings.Contains(err.Error(), "params.limit: missing type") {
			t.Errorf("error = %q, want it to name the param limit, its line and its missing type", err)
		}
	})
	t.Run("an untyped Go field is refused", func(t *testing.T) {
		t.Parallel()
		type Untyped struct {
			CustomerID string `json:"customer_id"`
			Limit      any    `json:"limit"`
		}
		var calls atomic.Int64
		b := bindings.New(loadSpecs(t, manifests), bindings.PipelineOnly())
		bindings.ReadOnly(b, "lookup_customer", func(context.Context, Untyped) (string, error) { calls.Add(1); return "", nil })
		bound, err := b.Bind()
		var de *toolreg.ToolDefinitionError
		if !errors.As(err, &de) || bound != nil {
			t.Fatalf("Bind() = %v, %v; want a *toolreg.ToolDefinitionError", bound, err)
		}
		if !strings.Contains(err.Error(), "manifests/tools.yaml:7:3: lookup_customer: params.limit: field test.Untyped.Limit is untyped") {
			t.Errorf("error = %q, want it to name the field Limit and the param limit", err)
		}
		if calls.Load() != 0 {
			t.Errorf("the function ran")
		}
	})
}

// Scenario: A registered tool is resolvable and appears in tools_schema.
// Go: after Bind, Bound.Pipeline.Get("lookup_customer") returns that *Tool and Bound.Pipeline.ToolsSchema() holds its Schema().
func TestARegisteredToolIsResolvableAndAppearsInToolsSchema(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tool, err := w.bound.Pipeline.Get("lookup_customer")
	if err != nil {
		t.Fatal(err)
	}
	if tool != w.bound.Pipeline.Tools()[0] {
		t.Errorf("Get returned another *Tool than the one registered")
	}
	if !slices.ContainsFunc(w.bound.Pipeline.ToolsSchema(), func(s json.RawMessage) bool { return string(s) == string(tool.Schema()) }) {
		t.Errorf("ToolsSchema() does not hold lookup_customer's schema %s", tool.Schema())
	}
	w.noCalls(t)
}

// Scenario: Duplicate registration is rejected.
// Go: registering a second *Tool named lookup_customer gives a *toolreg.DuplicateToolError naming it; two manifests of one name stop Bind.
func TestDuplicateRegistrationIsRejected(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	err := w.bound.Pipeline.Register(w.pipeline(t, "lookup_customer"))
	var de *toolreg.DuplicateToolError
	if !errors.As(err, &de) || de.Name != "lookup_customer" || !strings.Contains(err.Error(), `"lookup_customer"`) {
		t.Errorf("Register(duplicate) error = %v, want a *toolreg.DuplicateToolError naming lookup_customer", err)
	}

	b := bindings.New(append(loadSpecs(t, manifests), loadSpecs(t, manifests)...))
	bindings.ReadOnly(b, "lookup_customer", w.lookupFn)
	bindings.Effect(b, "charge", w.chargeFn)
	if _, err := b.Bind(); err == nil || !strings.Contains(err.Error(), `tool "lookup_customer" is declared twice`) {
		t.Errorf("Bind(two manifests of one name) error = %v, want it to name lookup_customer", err)
	}
	w.noCalls(t)
}

// Scenario: Resolving an unknown tool raises.
// Go: Registry.Get("does_not_exist") returns a *toolreg.ToolNotFoundError whose Name is "does_not_exist".
func TestResolvingAnUnknownToolRaises(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tool, err := w.bound.Pipeline.Get("does_not_exist")
	var nf *toolreg.ToolNotFoundError
	if !errors.As(err, &nf) || nf.Name != "does_not_exist" || tool != nil {
		t.Errorf("Get() = %v, %v; want a *toolreg.ToolNotFoundError naming does_not_exist", tool, err)
	}
	if !strings.Contains(err.Error(), `"does_not_exist"`) {
		t.Errorf("error %q does not name the tool", err)
	}
}

// Scenario: Valid arguments are validated and a sync tool runs.
// Go: runner.Run on lookup_customer with {"customer_id":"c-42","limit":"3"} validates and coerces ("3" -> 3), invokes the function once with those values, and returns its Customer.
func TestValidArgumentsAreValidatedAndASyncToolRuns(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	res, err := runner.New().Run(context.Background(), w.pipeline(t, "lookup_customer"), json.RawMessage(`{"customer_id":"c-42","limit":"3"}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Customer{ID: "c-42", Limit: 3}, res); diff != "" {
		t.Errorf("Run() result (-want +got):\n%s", diff)
	}
	if n := w.lookups.Load(); n != 1 {
		t.Errorf("lookup_customer ran %d times, want once", n)
	}
}

// Scenario: Invalid arguments are rejected before the callable runs.
// Go: runner.Run with a missing required param or a wrong type returns a *toolreg.ToolArgumentError naming the path, and the function's counter stays 0.
func TestInvalidArgumentsAreRejectedBeforeTheCallableRuns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, args, path string }{
		{"a missing required field", `{"limit":3}`, "/customer_id"},
		{"a wrong type", `{"customer_id":"c-42","limit":"three"}`, "/limit"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			_, err := runner.New().Run(context.Background(), w.pipeline(t, "lookup_customer"), json.RawMessage(tt.args))
			var ae *toolreg.ToolArgumentError
			if !errors.As(err, &ae) || len(ae.Problems) != 1 || ae.Problems[0].Path != tt.path {
				t.Errorf("Run() error = %v, want a *toolreg.ToolArgumentError at %s", err, tt.path)
			}
			w.noCalls(t)
		})
	}
}

// Scenario: An async tool is awaited and its result returned.
// Go: a tool whose work finishes in another goroutine (waited on with ctx) gives runner.Run its actual result, not a channel or future; RunAll runs several such calls concurrently, outcomes in call order.
func TestAnAsyncToolIsAwaitedAndItsResultReturned(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	b := bindings.New(loadSpecs(t, manifests), bindings.PipelineOnly())
	bindings.ReadOnly(b, "lookup_customer", func(ctx context.Context, a LookupArgs) (Customer, error) {
		calls.Add(1)
		done := make(chan Customer, 1)
		go func() { done <- Customer{ID: a.CustomerID, Limit: a.Limit} }()
		select {
		case c := <-done:
			return c, nil
		case <-ctx.Done():
			return Customer{}, ctx.Err()
		}
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := bound.Pipeline.Get("lookup_customer")
	r := runner.New()
	res, err := r.Run(context.Background(), tool, json.RawMessage(`{"customer_id":"c-1"}`))
	if err != nil || res != (Customer{ID: "c-1", Limit: 10}) {
		t.Errorf("Run() = %#v, %v; want the awaited Customer{c-1, 10}", res, err)
	}
	out := r.RunAll(context.Background(), []runner.Call{
		{Tool: tool, Args: json.RawMessage(`{"customer_id":"c-2"}`)},
		{Tool: tool, Args: json.RawMessage(`{"customer_id":"c-3","limit":1}`)},
	})
	want := []runner.Outcome{{Result: Customer{ID: "c-2", Limit: 10}}, {Result: Customer{ID: "c-3", Limit: 1}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("RunAll() (-want +got):\n%s", diff)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the tool ran %d times, want 3", n)
	}
}

// Scenario: ToolRunner refuses a side-effecting tool.
// Go: runner.Run on charge returns a *toolreg.SideEffectToolError whose Name is "charge", and charge's counter stays 0.
func TestToolRunnerRefusesASideEffectingTool(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// Both tables' charge: the pipeline's contract, and the effector's bound tool.
	for _, tool := range []*toolreg.Tool{w.pipeline(t, "charge"), w.effector(t, "charge")} {
		_, err := runner.New().Run(context.Background(), tool, json.RawMessage(validCharge))
		var se *toolreg.SideEffectToolError
		if !errors.As(err, &se) || se.Name != "charge" || !strings.Contains(err.Error(), `"charge"`) {
			t.Errorf("Run(charge) error = %v, want a *toolreg.SideEffectToolError naming charge", err)
		}
	}
	w.noCalls(t)
}

// Scenario: Calling a side-effecting tool directly raises.
// Go: Tool.Call on charge returns a *toolreg.SideEffectToolError and no external write occurs (the writes log stays empty).
func TestCallingASideEffectingToolDirectlyRaises(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, tool := range []*toolreg.Tool{w.pipeline(t, "charge"), w.effector(t, "charge")} {
		_, err := tool.Call(context.Background(), json.RawMessage(validCharge))
		var se *toolreg.SideEffectToolError
		if !errors.As(err, &se) || se.Name != "charge" {
			t.Errorf("Call() error = %v, want a *toolreg.SideEffectToolError naming charge", err)
		}
	}
	w.noCalls(t)
}

// Scenario: The effector's runner is the one sanctioned executor.
// Go: effector.ToolRunner.Run on the effector's charge invokes it once and returns its result, where runner.Run and Tool.Call on the same *Tool refuse with *toolreg.SideEffectToolError.
func TestTheEffectorsRunnerIsTheOneSanctionedExecutor(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	charge := w.effector(t, "charge")
	ctx := context.Background()
	var se *toolreg.SideEffectToolError
	if _, err := runner.New().Run(ctx, charge, json.RawMessage(validCharge)); !errors.As(err, &se) {
		t.Errorf("runner.Run(charge) error = %v, want a *toolreg.SideEffectToolError", err)
	}
	if _, err := charge.Call(ctx, json.RawMessage(validCharge)); !errors.As(err, &se) {
		t.Errorf("Tool.Call(charge) error = %v, want a *toolreg.SideEffectToolError", err)
	}
	if n := w.charges.Load(); n != 0 {
		t.Fatalf("charge ran %d times before the effector ran it", n)
	}
	res, err := effector.NewToolRunner().Run(ctx, charge, json.RawMessage(validCharge))
	if err != nil || res != "charged c-42" {
		t.Errorf("effector Run(charge) = %v, %v; want the function's result", res, err)
	}
	if n := w.charges.Load(); n != 1 {
		t.Errorf("charge ran %d times, want once", n)
	}
	if diff := cmp.Diff([]string{"c-42"}, w.writes); diff != "" {
		t.Errorf("external writes (-want +got):\n%s", diff)
	}
}

// Scenario: The sanctioned executor refuses read-only tools.
// Go: effector.ToolRunner.Run on lookup_customer returns a *toolreg.ReadOnlyToolError, and lookup_customer's counter stays 0.
func TestTheSanctionedExecutorRefusesReadOnlyTools(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	_, err := effector.NewToolRunner().Run(context.Background(), w.pipeline(t, "lookup_customer"), json.RawMessage(validLookup))
	var re *toolreg.ReadOnlyToolError
	if !errors.As(err, &re) || re.Name != "lookup_customer" {
		t.Errorf("Run() error = %v, want a *toolreg.ReadOnlyToolError naming lookup_customer", err)
	}
	w.noCalls(t)
}

// Scenario: unwrap returns the original callable.
// Go: Tool.Unwrap() on the effector's charge returns the very func value bound (same code pointer), and calling it runs charge with no side-effect check.
func TestUnwrapReturnsTheOriginalCallable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	fn, ok := w.effector(t, "charge").Unwrap().(func(context.Context, ChargeArgs) (string, error))
	if !ok {
		t.Fatalf("Unwrap() = %T, want func(context.Context, ChargeArgs) (string, error)", w.effector(t, "charge").Unwrap())
	}
	if reflect.ValueOf(fn).Pointer() != reflect.ValueOf(w.chargeFn).Pointer() {
		t.Errorf("Unwrap() is not the bound function itself")
	}
	res, err := fn(context.Background(), ChargeArgs{CustomerID: "c-7", Cents: 1})
	if err != nil || res != "charged c-7" || w.charges.Load() != 1 {
		t.Errorf("calling the unwrapped function = %q, %v (ran %d times); want it to run charge once, unchecked", res, err, w.charges.Load())
	}
}

// Scenario: unwrap is available for side-effecting and read-only tools alike.
// Go: Tool.Unwrap() returns the bound function of the effector's charge and of the pipeline's lookup_customer alike; only the runners decide who may run what.
func TestUnwrapIsAvailableForSideEffectingAndReadOnlyToolsAlike(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, c := range []struct {
		tool *toolreg.Tool
		fn   any
	}{
		{w.effector(t, "charge"), w.chargeFn},
		{w.pipeline(t, "lookup_customer"), w.lookupFn},
	} {
		got := c.tool.Unwrap()
		if got == nil || reflect.TypeOf(got) != reflect.TypeOf(c.fn) || reflect.ValueOf(got).Pointer() != reflect.ValueOf(c.fn).Pointer() {
			t.Errorf("%s: Unwrap() = %T, want its bound function", c.tool.Name(), got)
		}
	}
	// The pipeline's table holds charge's contract only: nothing to unwrap there.
	if fn := w.pipeline(t, "charge").Unwrap(); fn != nil {
		t.Errorf("the pipeline's charge unwraps to %T, want nil", fn)
	}
	w.noCalls(t)
}
