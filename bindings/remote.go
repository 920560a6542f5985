package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/canonjson"
	"github.com/beam-agents/toolreg/internal/argcheck"
	"github.com/beam-agents/toolreg/internal/toolbind"
)

// WithoutRemote lets a Binder bind without the remote tools' servers: a
// manifest that pins a remote tool (remote:) needs no binding, and its
// contract goes in the tables with no function. For tests and offline checks
// of the local bindings, such as package bindingstest; a service binds its
// remote tools with remote.Connect and the Set's Bind, which checks them
// against their servers first.
//
// The default is that every remote tool the process runs needs that binding.
func WithoutRemote() Option { return func(b *Binder) { b.withoutRemote = true } }

func init() {
	toolbind.BindRemote = func(binder any, r *toolbind.Remote) {
		b := binder.(*Binder)
		b.bindings = append(b.bindings, newRemoteBinding(r))
	}
}

// newRemoteBinding is the binding package remote makes for one pinned tool:
// its arguments are checked and normalized against the manifest (the same
// checker every path uses) and sent as canonical JSON; the function is the
// call to the server.
func newRemoteBinding(r *toolbind.Remote) *binding {
	bd := &binding{
		name:   r.Name,
		effect: r.Effect,
		remote: r,
		nilFn:  r.Call == nil,
	}
	bd.build = func(spec *toolreg.Spec) (*toolbind.Binding, error) {
		// The checker is compiled on the tool's first call, not here: a
		// service that pins a hundred tools of a server starts in the time
		// it takes to list and check them (BenchmarkStartup100), and calls
		// few of them. Bind has validated spec (Spec.Validate checks its
		// patterns), so the compilation has nothing left to refuse.
		var once sync.Once
		var c *argcheck.Checker
		var cerr error
		checker := func() (*argcheck.Checker, error) {
			once.Do(func() { c, cerr = argcheck.Compile(argsSchema(spec), spec.Strict) })
			return c, cerr
		}
		decode := func(raw json.RawMessage) (json.RawMessage, error) {
			c, err := checker()
			if err != nil {
				return nil, fmt.Errorf("bindings: tool %q: its params do not compile: %w", spec.Name, err)
			}
			if out, ok := c.Canonical(raw); ok {
				return out, nil
			}
			m, err := c.Check(raw)
			if err != nil {
				return nil, toolbind.ArgumentError(spec.Name, err)
			}
			return canonjson.Marshal(m)
		}
		call := r.Call
		return &toolbind.Binding{
			Func: call,
			Gate: r.Gate,
			Decode: func(raw json.RawMessage) (any, error) {
				a, err := decode(raw)
				if err != nil {
					return nil, err
				}
				return a, nil
			},
			Call: func(ctx context.Context, raw json.RawMessage) (any, error) {
				a, err := decode(raw)
				if err != nil {
					return nil, err
				}
				res, err := call(ctx, a)
				if err != nil {
					return nil, err
				}
				return res, nil
			},
		}, nil
	}
	return bd
}

// checkRemote adds the problems of a remote binding bd, or of a local
// binding of a remote manifest, against spec, and reports whether there
// were none.
func (b *Binder) checkRemote(ps *problems, bd *binding, spec *toolreg.Spec) bool {
	n := len(*ps)
	switch {
	case bd.remote == nil:
		ps.add(bd.at, spec.Name, "", "%s binds a Go function to %q, which its manifest pins from MCP server %q (remote:): a remote tool is bound by the Set remote.Connect returns (Set.Bind), after its server is checked against the manifest; remove this binding, or remove remote: from the manifest if the tool is yours",
			bd.kind(), spec.Name, spec.Remote.Server)
	case spec.Remote == nil:
		ps.add(spec.Pos, spec.Name, "remote", "a remote binding names %q, whose manifest pins no remote tool: bind it with bindings.ReadOnly or bindings.Effect", spec.Name)
	case bd.effect != spec.SideEffect:
		ps.add(spec.Pos, spec.Name, "side_effect", "the remote binding of %q says side_effect: %v, the manifest %v: bind the manifest that was connected", spec.Name, bd.effect, spec.SideEffect)
	case bd.nilFn:
		ps.add(spec.Pos, spec.Name, "", "the remote binding of %q has no call", spec.Name)
	}
	return len(*ps) == n
}
