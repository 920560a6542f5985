package bindings_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
)

func pos(line int) toolreg.Pos { return toolreg.Pos{File: "tools.yaml", Line: line, Col: 3} }

func ptr[T any](v T) *T { return &v }

// lookupSpec is lookup_customer(customer_id string, limit integer = 10),
// declared at tools.yaml:1.
func lookupSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "lookup_customer", Description: "Look up a customer by id.", Pos: pos(1),
		Params: []*toolreg.Param{
			{Name: "customer_id", Schema: toolreg.Schema{Type: toolreg.TypeString}, Pos: pos(4)},
			{Name: "limit", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Default: json.Number("10"), HasDefault: true}, Pos: pos(7)},
		},
	}
}

// chargeSpec is the side-effecting charge(amount integer), at tools.yaml:20.
func chargeSpec() *toolreg.Spec {
	return &toolreg.Spec{
		Name: "charge", Description: "Charge a customer.", SideEffect: true, Pos: pos(20),
		Params: []*toolreg.Param{
			{Name: "amount", Schema: toolreg.Schema{Type: toolreg.TypeInteger}, Pos: pos(24)},
		},
	}
}

// specWith is tool "t" at tools.yaml:30 with the one param p at tools.yaml:33.
func specWith(p *toolreg.Param) *toolreg.Spec {
	p.Pos = pos(33)
	return &toolreg.Spec{Name: "t", Description: "A tool.", Pos: pos(30), Params: []*toolreg.Param{p}}
}

type LookupArgs struct {
	CustomerID string `json:"customer_id"`
	Limit      int    `json:"limit"`
}

type ChargeArgs struct {
	Amount int `json:"amount"`
}

func lookup(ctx context.Context, a LookupArgs) (string, error) { return a.CustomerID, nil }
func charge(ctx context.Context, a ChargeArgs) (int, error)    { return a.Amount, nil }

// bindOne binds fn read-only to tool "t" of specWith(p) and returns Bind's error.
func bindOne[A, R any](p *toolreg.Param, fn func(context.Context, A) (R, error)) func() error {
	return func() error {
		b := bindings.New([]*toolreg.Spec{specWith(p)})
		bindings.ReadOnly(b, "t", fn)
		_, err := b.Bind()
		return err
	}
}

func str() toolreg.Schema  { return toolreg.Schema{Type: toolreg.TypeString} }
func intg() toolreg.Schema { return toolreg.Schema{Type: toolreg.TypeInteger} }

type (
	IntArg struct {
		V int `json:"v"`
	}
	StringArg struct {
		V string `json:"v"`
	}
	FloatArg struct {
		V float64 `json:"v"`
	}
	BoolArg struct {
		V bool `json:"v"`
	}
	PtrIntArg struct {
		V *int `json:"v"`
	}
	AnyArg struct {
		V any `json:"v"`
	}
	SliceIntArg struct {
		V []int `json:"v"`
	}
	MapIntArg struct {
		V map[string]int `json:"v"`
	}
	UintArg struct {
		V uint `json:"v"`
	}
	Int8Arg struct {
		V int8 `json:"v"`
	}
	ArrayArg struct {
		V [2]string `json:"v"`
	}
	Address struct {
		Street string `json:"street"`
		Zip    int    `json:"zip"`
	}
	AddressArg struct {
		V Address `json:"v"`
	}
	ExtraFieldArg struct {
		V     string `json:"v"`
		Extra string `json:"extra"`
	}
	NoFieldArg   struct{}
	StringOptArg struct {
		V int `json:"v,omitempty,string"`
	}
	EmbeddedArg struct {
		Address
	}
)

func TestBindRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		bind func() error
		// want are substrings one single problem must contain: typically the
		// field, the manifest position and the fix.
		want []string
	}{
		{
			name: "a binding that names no manifest",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{lookupSpec()})
				bindings.ReadOnly(b, "lookup_customer", lookup)
				bindings.ReadOnly(b, "lookup_custmer", lookup)
				_, err := b.Bind()
				return err
			},
			want: []string{"bindings/binder_test.go:", `no tool "lookup_custmer" is declared`, `did you mean "lookup_customer"`, "add its manifest or fix the name"},
		},
		{
			name: "two bindings for one name",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{lookupSpec()})
				bindings.ReadOnly(b, "lookup_customer", lookup)
				bindings.ReadOnly(b, "lookup_customer", lookup)
				_, err := b.Bind()
				return err
			},
			want: []string{"bindings/binder_test.go:", `tool "lookup_customer" is bound twice`, "keep one binding"},
		},
		{
			name: "a manifest with no binding",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{lookupSpec(), chargeSpec()})
				bindings.ReadOnly(b, "lookup_customer", lookup)
				_, err := b.Bind()
				return err
			},
			want: []string{"tools.yaml:20:3", `"charge" has no binding`, `call bindings.Effect(b, "charge", fn)`},
		},
		{
			name: "ReadOnly for a side-effecting manifest",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{chargeSpec()})
				bindings.ReadOnly(b, "charge", charge)
				_, err := b.Bind()
				return err
			},
			want: []string{"tools.yaml:20:3", "side_effect: true but bindings.ReadOnly binds it", "bind it with bindings.Effect"},
		},
		{
			name: "Effect for a read-only manifest",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{lookupSpec()})
				bindings.Effect(b, "lookup_customer", lookup)
				_, err := b.Bind()
				return err
			},
			want: []string{"tools.yaml:1:3", "side_effect: false) but bindings.Effect binds it", "bind it with bindings.ReadOnly"},
		},
		{
			name: "an Effect binding in a pipeline-only process",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{lookupSpec(), chargeSpec()}, bindings.PipelineOnly())
				bindings.ReadOnly(b, "lookup_customer", lookup)
				bindings.Effect(b, "charge", charge)
				_, err := b.Bind()
				return err
			},
			want: []string{"bindings/binder_test.go:", "pipeline-only process", `bind "charge" in the effector process`},
		},
		{
			name: "a ReadOnly binding in an effector-only process",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{lookupSpec(), chargeSpec()}, bindings.EffectorOnly())
				bindings.ReadOnly(b, "lookup_customer", lookup)
				bindings.Effect(b, "charge", charge)
				_, err := b.Bind()
				return err
			},
			want: []string{"bindings/binder_test.go:", "effector-only process", `bind "lookup_customer" in the pipeline process`},
		},
		{
			name: "an argument type that is not a struct",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{chargeSpec()})
				bindings.Effect(b, "charge", func(context.Context, int) (int, error) { return 0, nil })
				_, err := b.Bind()
				return err
			},
			want: []string{"tools.yaml:20:3", "argument type int is not a struct", "use a struct whose exported fields are the manifest's params"},
		},
		{
			name: "a pointer to the argument struct",
			bind: func() error {
				b := bindings.New([]*toolreg.Spec{chargeSpec()})
				bindings.Effect(b, "charge", func(context.Context, *ChargeArgs) (int, error) { return 0, nil })
				_, err := b.Bind()
				return err
			},
			want: []string{"tools.yaml:20:3", "*bindings_test.ChargeArgs is not a struct", "take the struct bindings_test.ChargeArgs itself"},
		},
		{
			name: "a param with no field of its json name",
			bind: bindOne(&toolreg.Param{Name: "customer_id", Schema: str()}, func(context.Context, NoFieldArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", `param "customer_id" has no field in bindings_test.NoFieldArg`, "add CustomerID string `json:\"customer_id\"`"},
		},
		{
			// The field toolreg gen would write for it: OrderIDs, not OrderIds.
			name: "a param with no field suggests gen's field name",
			bind: bindOne(&toolreg.Param{Name: "order_ids", Schema: str()}, func(context.Context, NoFieldArg) (int, error) { return 0, nil }),
			want: []string{`param "order_ids" has no field in bindings_test.NoFieldArg`, "add OrderIDs string `json:\"order_ids\"`"},
		},
		{
			// As gen writes send_sms's callback_url (gen/testdata/manifests/send_sms.yaml).
			name: "a param with no field suggests gen's initialisms",
			bind: bindOne(&toolreg.Param{Name: "callback_url", Schema: str()}, func(context.Context, NoFieldArg) (int, error) { return 0, nil }),
			want: []string{`param "callback_url" has no field in bindings_test.NoFieldArg`, "add CallbackURL string `json:\"callback_url\"`"},
		},
		{
			name: "an exported field that is no param",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: str()}, func(context.Context, ExtraFieldArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:30:3", "field bindings_test.ExtraFieldArg.Extra (json \"extra\") is no param", `declare param "extra" in the manifest, or remove the field`},
		},
		{
			name: "a string param bound to an int field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: str()}, func(context.Context, IntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.IntArg.V has type int, which cannot hold the manifest's string values", "use string"},
		},
		{
			name: "an integer param bound to a string field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, StringArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.StringArg.V has type string, which cannot hold the manifest's integer values", "use int"},
		},
		{
			name: "an integer param bound to a float field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, FloatArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.FloatArg.V has type float64, which cannot hold the manifest's integer values", "use int"},
		},
		{
			name: "an integer param without minimum bound to a uint field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, UintArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.UintArg.V has unsigned type uint", "add minimum: 0 to the param, or use int64"},
		},
		{
			name: "an integer param wider than its int8 field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: json.Number("0"), Maximum: json.Number("1000")}}, func(context.Context, Int8Arg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.Int8Arg.V has type int8, which holds -128..127, but the manifest allows 0..1000", "give the param minimum and maximum inside that range, or use int64"},
		},
		{
			name: "a number param bound to an int field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeNumber}}, func(context.Context, IntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.IntArg.V has type int, which cannot hold the manifest's number values", "use float64"},
		},
		{
			name: "a boolean param bound to a string field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeBoolean}}, func(context.Context, StringArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.StringArg.V has type string, which cannot hold the manifest's boolean values", "use bool"},
		},
		{
			name: "an array param bound to a non-slice field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString}}}, func(context.Context, ArrayArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.ArrayArg.V has type [2]string, which cannot hold the manifest's array of string values", "use []string"},
		},
		{
			name: "an array of strings bound to a slice of ints",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString}}}, func(context.Context, SliceIntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "params.v.items", "field bindings_test.SliceIntArg.V[] has type int, which cannot hold the manifest's string values", "use string"},
		},
		{
			name: "an array param without items",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeArray}}, func(context.Context, SliceIntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.SliceIntArg.V's element type cannot be checked", "declare items (with a type) in the manifest"},
		},
		{
			name: "an object param whose struct field disagrees with a property",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
				{Name: "street", Schema: str(), Pos: pos(35)},
				{Name: "zip", Schema: str(), Pos: pos(36)},
			}}}, func(context.Context, AddressArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:36:3", "params.v.properties.zip", "field bindings_test.AddressArg.V.Zip has type int, which cannot hold the manifest's string values", "use string"},
		},
		{
			name: "an object param missing a property's field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
				{Name: "street", Schema: str(), Pos: pos(35)},
				{Name: "zip", Schema: intg(), Pos: pos(36)},
				{Name: "city", Schema: str(), Pos: pos(37)},
			}}}, func(context.Context, AddressArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:37:3", `param "city" has no field in bindings_test.AddressArg.V`, "add City string `json:\"city\"`"},
		},
		{
			name: "an object param with properties bound to a map",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
				{Name: "zip", Schema: intg(), Pos: pos(36)},
			}}}, func(context.Context, MapIntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.MapIntArg.V has type map[string]int, which cannot hold the manifest's object values", "use a struct with one field per property"},
		},
		{
			name: "an object with additionalProperties bound to a map of the wrong values",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeObject, AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeString}}}, func(context.Context, MapIntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "params.v.additionalProperties", "field bindings_test.MapIntArg.V[key] has type int, which cannot hold the manifest's string values", "use string"},
		},
		{
			name: "an object with additionalProperties bound to a struct",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeObject, AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeInteger}}}, func(context.Context, AddressArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.AddressArg.V has type bindings_test.Address, which cannot hold the manifest's object of integer values", "use map[string]int"},
		},
		{
			name: "a required param bound to a pointer",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, PtrIntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.PtrIntArg.V is a pointer (*int) but the param is always present", "use int"},
		},
		{
			name: "a defaulted param bound to a pointer",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Default: json.Number("3"), HasDefault: true}}, func(context.Context, PtrIntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.PtrIntArg.V is a pointer (*int) but the param is always present (required, or has a default)", "use int"},
		},
		{
			name: "an optional param without default bound to a non-pointer",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg(), Optional: true}, func(context.Context, IntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.IntArg.V (int) cannot tell an absent optional param from a zero one", "use the pointer *int, or give the param a default"},
		},
		{
			name: "a field with the json option string",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, StringOptArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:30:3", `field bindings_test.StringOptArg.V has the json option "string"`, "remove it"},
		},
		{
			name: "an embedded struct",
			bind: bindOne(&toolreg.Param{Name: "street", Schema: str()}, func(context.Context, EmbeddedArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:30:3", "field bindings_test.EmbeddedArg.Address is embedded", "give it a name and a json tag"},
		},
		{
			name: "an untyped field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, AnyArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "field bindings_test.AnyArg.V is untyped (interface {}) but the manifest declares type integer", "give it a concrete type, such as int"},
		},
		{
			name: "a channel result",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, IntArg) (chan int, error) { return nil, nil }),
			want: []string{"tools.yaml:30:3", "result type chan int of func(context.Context, bindings_test.IntArg) (chan int, error) cannot be encoded as JSON: R is a channel", "return a type encoding/json can encode"},
		},
		{
			name: "a func result",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, IntArg) (func(), error) { return nil, nil }),
			want: []string{"tools.yaml:30:3", "cannot be encoded as JSON: R is a func", "return a type encoding/json can encode"},
		},
		{
			name: "a result with a complex field",
			bind: bindOne(&toolreg.Param{Name: "v", Schema: intg()}, func(context.Context, IntArg) (struct{ Z []complex128 }, error) {
				return struct{ Z []complex128 }{}, nil
			}),
			want: []string{"tools.yaml:30:3", "cannot be encoded as JSON: R.Z[] is a complex number", "return a type encoding/json can encode"},
		},
		{
			name: "a manifest param without a type",
			bind: bindOne(&toolreg.Param{Name: "v"}, func(context.Context, IntArg) (int, error) { return 0, nil }),
			want: []string{"tools.yaml:33:3", "params.v", "missing type: set type to one of string"},
		},
		{
			name: "two manifests with one name",
			bind: func() error {
				second := lookupSpec()
				second.Pos = pos(40)
				b := bindings.New([]*toolreg.Spec{lookupSpec(), second})
				bindings.ReadOnly(b, "lookup_customer", lookup)
				_, err := b.Bind()
				return err
			},
			want: []string{"tools.yaml:40:3", `tool "lookup_customer" is declared twice; first at tools.yaml:1:3`, "rename one or remove it"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			t.Parallel()
			err := tt.bind()
			var de *toolreg.ToolDefinitionError
			if !errors.As(err, &de) {
				t.Fatalf("Bind() error = %v, want a *toolreg.ToolDefinitionError", err)
			}
			if !errors.Is(err, toolreg.ErrTool) {
				t.Errorf("errors.Is(err, toolreg.ErrTool) = false")
			}
			for _, p := range de.Problems {
				if containsAll(p.String(), tt.want) {
					if !strings.Contains(err.Error(), p.String()) {
						t.Errorf("Error() does not include the problem %q:\n%s", p, err)
					}
					return
				}
			}
			t.Errorf("no problem contains all of %q; problems:\n%s", tt.want, err)
		})
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

type BadArgs struct {
	CustomerID *string `json:"customer_id"` // required: must not be a pointer
	Limit      any     `json:"limit"`       // untyped
	Extra      bool    `json:"extra"`       // no such param
}

func TestBindReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	b := bindings.New([]*toolreg.Spec{lookupSpec(), chargeSpec(), specWith(&toolreg.Param{Name: "v", Schema: intg()})})
	bindings.ReadOnly(b, "lookup_customer", func(context.Context, BadArgs) (chan int, error) { return nil, nil })
	bindings.ReadOnly(b, "charge", charge)       // kind mismatch
	bindings.ReadOnly(b, "no_such_tool", lookup) // names no manifest
	// "t" is left unbound.
	_, err := b.Bind()
	var de *toolreg.ToolDefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("Bind() error = %v, want a *toolreg.ToolDefinitionError", err)
	}
	var got []string
	for _, p := range de.Problems {
		got = append(got, p.Pos.String()+" "+p.Path)
	}
	want := []string{
		"tools.yaml:4:3 params.customer_id", // pointer for a required param
		"tools.yaml:7:3 params.limit",       // untyped
		"tools.yaml:1:3 params",             // Extra is no param
		"tools.yaml:1:3 ",                   // chan result
		"tools.yaml:20:3 side_effect",       // ReadOnly for side_effect: true
		de.Problems[5].Pos.String() + " ",   // no_such_tool, at its Go call
		"tools.yaml:30:3 ",                  // t has no binding
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s\nerror:\n%s", diff, err)
	}
	// Module-relative, as go vet prints it: a base name alone is ambiguous in
	// a module with many main.go files.
	if f := de.Problems[5].Pos.File; f != "bindings/binder_test.go" {
		t.Errorf("the unknown binding's problem is at %q, want its Go call in bindings/binder_test.go", f)
	}
	if !strings.HasPrefix(err.Error(), "toolreg: 7 problems:") {
		t.Errorf("Error() = %q, want it to start with the count", err)
	}
}

type AllTypes struct {
	S     string             `json:"s"`
	Email Email              `json:"email"`
	I     int64              `json:"i"`
	U     uint32             `json:"u"`
	N     float32            `json:"n"`
	B     bool               `json:"b"`
	Tags  []string           `json:"tags"`
	Addr  Address            `json:"addr"`
	Score map[string]float64 `json:"score"`
	Note  *string            `json:"note"`
	Skip  int                `json:"-"`
	priv  int
}

type Email string

func TestBindAcceptsEveryFittingType(t *testing.T) {
	t.Parallel()
	spec := &toolreg.Spec{Name: "all", Description: "Every type.", Pos: pos(50), Params: []*toolreg.Param{
		{Name: "s", Schema: str()},
		{Name: "email", Schema: toolreg.Schema{Type: toolreg.TypeString, Format: "email"}},
		{Name: "i", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Default: json.Number("1"), HasDefault: true}},
		{Name: "u", Schema: toolreg.Schema{Type: toolreg.TypeInteger, Minimum: json.Number("0"), Maximum: json.Number("100")}},
		{Name: "n", Schema: toolreg.Schema{Type: toolreg.TypeNumber}},
		{Name: "b", Schema: toolreg.Schema{Type: toolreg.TypeBoolean}},
		{Name: "tags", Schema: toolreg.Schema{Type: toolreg.TypeArray, Items: &toolreg.Schema{Type: toolreg.TypeString}}},
		{Name: "addr", Schema: toolreg.Schema{Type: toolreg.TypeObject, Properties: []*toolreg.Param{
			{Name: "street", Schema: str()}, {Name: "zip", Schema: intg()},
		}}},
		{Name: "score", Schema: toolreg.Schema{Type: toolreg.TypeObject, AdditionalProperties: &toolreg.Schema{Type: toolreg.TypeNumber}}},
		{Name: "note", Schema: str(), Optional: true},
	}}
	var got AllTypes
	b := bindings.New([]*toolreg.Spec{spec})
	bindings.ReadOnly(b, "all", func(_ context.Context, a AllTypes) (map[string]any, error) {
		got = a
		return map[string]any{"ok": true}, a.unused()
	})
	bound, err := b.Bind()
	if err != nil {
		t.Fatalf("Bind() = %v, want nil", err)
	}
	// What Bind accepted, the bound tool decodes.
	tool, _ := bound.Pipeline.Get("all")
	res, err := tool.Call(context.Background(), json.RawMessage(`{"s":"x","email":"a@b.c","u":"7","n":2.5,"b":"yes",`+
		`"tags":["t"],"addr":{"street":"Main","zip":12345},"score":{"a":1,"b":0.5},"note":"n"}`))
	if err != nil {
		t.Fatalf("Call() = %v", err)
	}
	want := AllTypes{S: "x", Email: "a@b.c", I: 1, U: 7, N: 2.5, B: true, Tags: []string{"t"},
		Addr: Address{Street: "Main", Zip: 12345}, Score: map[string]float64{"a": 1, "b": 0.5}, Note: ptr("n")}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(AllTypes{})); diff != "" {
		t.Errorf("the function got (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"ok": true}, res); diff != "" {
		t.Errorf("Call() result (-want +got):\n%s", diff)
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"s":"x","email":"a@b.c","n":1,"b":true,"tags":[],"addr":{"street":"s","zip":1},"score":{}}`)); err == nil {
		t.Errorf("Call() without the required u succeeded")
	}
	got.Note = ptr("stale")
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"s":"x","email":"a@b.c","u":0,"n":1,"b":true,"tags":[],"addr":{"street":"s","zip":1},"score":{}}`)); err != nil {
		t.Fatalf("Call() = %v", err)
	}
	if got.Note != nil {
		t.Errorf("an absent optional param decoded to %q, want a nil pointer", *got.Note)
	}
}

func (a AllTypes) unused() error { _ = a.priv; return nil }

func TestBindSplitsTheTables(t *testing.T) {
	t.Parallel()
	b := bindings.New([]*toolreg.Spec{lookupSpec(), chargeSpec()})
	bindings.ReadOnly(b, "lookup_customer", lookup)
	bindings.Effect(b, "charge", charge)
	bound, err := b.Bind()
	if err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff([]string{"lookup_customer", "charge"}, names(bound.Pipeline.Tools())); diff != "" {
		t.Errorf("Pipeline tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"charge"}, names(bound.Effector.Tools())); diff != "" {
		t.Errorf("Effector tools (-want +got):\n%s", diff)
	}
	pc, _ := bound.Pipeline.Get("charge")
	if pc.Bound() || pc.Unwrap() != nil {
		t.Errorf("the pipeline's charge holds a function; it must hold the contract only")
	}
	if !pc.SideEffect() || string(pc.Schema()) == "" {
		t.Errorf("the pipeline's charge lost its contract: side_effect=%v schema=%s", pc.SideEffect(), pc.Schema())
	}
	pl, _ := bound.Pipeline.Get("lookup_customer")
	if !pl.Bound() {
		t.Errorf("the pipeline's lookup_customer has no function")
	}
	ec, _ := bound.Effector.Get("charge")
	if _, ok := ec.Unwrap().(func(context.Context, ChargeArgs) (int, error)); !ok {
		t.Errorf("the effector's charge Unwrap() = %T, want the bound function", ec.Unwrap())
	}
	if _, err := bound.Effector.Get("lookup_customer"); err == nil {
		t.Errorf("the effector holds the read-only lookup_customer")
	}
}

func TestBindOneSide(t *testing.T) {
	t.Parallel()
	t.Run("a pipeline-only binder needs no effect bindings", func(t *testing.T) {
		t.Parallel()
		b := bindings.New([]*toolreg.Spec{lookupSpec(), chargeSpec()}, bindings.PipelineOnly())
		bindings.ReadOnly(b, "lookup_customer", lookup)
		bound, err := b.Bind()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"lookup_customer", "charge"}, names(bound.Pipeline.Tools())); diff != "" {
			t.Errorf("Pipeline tools (-want +got):\n%s", diff)
		}
		if n := bound.Effector.Len(); n != 0 {
			t.Errorf("Effector holds %d tools, want none", n)
		}
	})
	t.Run("an effector-only binder needs no read-only bindings", func(t *testing.T) {
		t.Parallel()
		b := bindings.New([]*toolreg.Spec{lookupSpec(), chargeSpec()}, bindings.EffectorOnly())
		bindings.Effect(b, "charge", charge)
		bound, err := b.Bind()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"charge"}, names(bound.Effector.Tools())); diff != "" {
			t.Errorf("Effector tools (-want +got):\n%s", diff)
		}
		for _, tool := range bound.Pipeline.Tools() {
			if tool.Bound() {
				t.Errorf("the effector-only Pipeline holds the function of %q", tool.Name())
			}
		}
	})
}

func names(ts []*toolreg.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}
