package bindings

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/modpath"
	"github.com/beam-agents/toolreg/internal/par"
	"github.com/beam-agents/toolreg/internal/toolbind"
	"github.com/beam-agents/toolreg/registry"
)

// Side says which tools a process runs.
type side int

const (
	bothSides side = iota
	pipelineSide
	effectorSide
)

// Option configures a Binder.
type Option func(*Binder)

// PipelineOnly declares a process that runs the pipeline only (a worker that
// runs read-only tools inline and stages intents for the others): only
// read-only manifests need bindings, and an Effect binding is refused so that
// no side-effecting function is linked into the pipeline. Bound.Effector is
// then empty.
//
// The default, with neither PipelineOnly nor EffectorOnly, is a process that
// runs both sides: every manifest needs a binding.
func PipelineOnly() Option { return func(b *Binder) { b.side = pipelineSide } }

// EffectorOnly declares a process that runs the effector only: only
// side-effecting manifests need bindings, and a ReadOnly binding is refused.
// Bound.Pipeline then holds every tool's contract and no function.
//
// The default, with neither PipelineOnly nor EffectorOnly, is a process that
// runs both sides: every manifest needs a binding.
func EffectorOnly() Option { return func(b *Binder) { b.side = effectorSide } }

// Binder collects bindings of Go functions to manifests; Bind checks them all
// and builds the tables. A Binder is used by one goroutine, at startup.
type Binder struct {
	specs         []*toolreg.Spec
	side          side
	bindings      []*binding
	withoutRemote bool // WithoutRemote; remote.go
}

// binding is one ReadOnly or Effect call, its type parameters captured in
// closures.
type binding struct {
	name   string
	effect bool
	at     toolreg.Pos // the ReadOnly or Effect call in Go source
	nilFn  bool
	fnType reflect.Type
	argT   reflect.Type
	resT   reflect.Type
	// remote is set for the binding of a remote tool (remote.go).
	remote *toolbind.Remote
	// build makes the toolbind.Binding once the types are known to agree with spec.
	build func(spec *toolreg.Spec) (*toolbind.Binding, error)
}

// New returns a Binder for the tools specs declares. specs are typically
// loaded with package loader; a Spec built in Go is validated by Bind.
func New(specs []*toolreg.Spec, opts ...Option) *Binder {
	b := &Binder{specs: specs}
	for _, o := range opts {
		o(b)
	}
	return b
}

// ReadOnly binds fn to the read-only tool called name. The tool runs inline,
// through runner.Runner or Tool.Call, after its arguments are validated and
// decoded into A. Bind refuses it if the manifest says side_effect: true.
func ReadOnly[A, R any](b *Binder, name string, fn func(context.Context, A) (R, error)) {
	b.bindings = append(b.bindings, newBinding(name, false, fn))
}

// Effect binds fn to the side-effecting tool called name. Its function is
// held by Bound.Effector only and runs only through the effector's
// ToolRunner. Bind refuses it if the manifest does not say side_effect: true.
func Effect[A, R any](b *Binder, name string, fn func(context.Context, A) (R, error)) {
	b.bindings = append(b.bindings, newBinding(name, true, fn))
}

func newBinding[A, R any](name string, effect bool, fn func(context.Context, A) (R, error)) *binding {
	bd := &binding{
		name:   name,
		effect: effect,
		at:     callerPos(3),
		nilFn:  fn == nil,
		fnType: reflect.TypeOf(fn),
		argT:   reflect.TypeFor[A](),
		resT:   reflect.TypeFor[R](),
	}
	bd.build = func(spec *toolreg.Spec) (*toolbind.Binding, error) {
		d, err := compileDecoder[A](spec)
		if err != nil {
			return nil, err
		}
		decode := d.decode
		return &toolbind.Binding{
			Func: fn,
			Args: d.check,
			Decode: func(args json.RawMessage) (any, error) {
				a, err := decode(args)
				if err != nil {
					return nil, err
				}
				return a, nil
			},
			Call: func(ctx context.Context, args json.RawMessage) (any, error) {
				a, err := decode(args)
				if err != nil {
					return nil, err
				}
				r, err := fn(ctx, a)
				if err != nil {
					return nil, err
				}
				return r, nil
			},
		}, nil
	}
	return bd
}

// callerPos returns the Go source position skip frames up, for messages that
// point at a binding rather than a manifest.
func callerPos(skip int) toolreg.Pos {
	_, file, line, ok := runtime.Caller(skip)
	if !ok {
		return toolreg.Pos{}
	}
	return toolreg.Pos{File: modpath.Rel(file), Line: line}
}

func (bd *binding) kind() string {
	if bd.remote != nil {
		return "the remote binding"
	}
	if bd.effect {
		return "bindings.Effect"
	}
	return "bindings.ReadOnly"
}

// Bound is the two tables a Binder builds.
type Bound struct {
	// Pipeline holds every tool's contract, with the functions of read-only
	// tools only. Side-effecting tools are in it as contracts, so the model is
	// shown them and Act can check their arguments, but their functions are not.
	Pipeline *registry.Registry
	// Effector holds the side-effecting tools with their functions, and
	// nothing else; it knows the names of the read-only tools only to refuse
	// them as such (registry.Registry.MarkInline).
	Effector *registry.Registry
}

// Bind checks every binding against its manifest and builds the two tables.
// It refuses to start with one *toolreg.ToolDefinitionError listing every
// problem found; see the package doc for the rules.
func (b *Binder) Bind() (*Bound, error) {
	var ps problems

	// The manifests themselves: valid, and one per name.
	byName := make(map[string]*toolreg.Spec, len(b.specs))
	for _, s := range b.specs {
		if s == nil {
			ps.add(toolreg.Pos{}, "", "", "a nil *toolreg.Spec was passed to bindings.New: pass loaded specs only")
			continue
		}
		if err := s.Validate(); err != nil {
			ps.addErr(err)
		}
		if first, ok := byName[s.Name]; ok {
			ps.add(s.Pos, s.Name, "name", "tool %q is declared twice; first at %s: rename one or remove it", s.Name, first.Pos)
			continue
		}
		byName[s.Name] = s
	}

	// Each binding's name first, in order; then each binding matched to its
	// manifest is checked and built on every core (compiling its decoder
	// is most of Bind's time at 10,000 tools), its problems kept apart and
	// then added in binding order, as one pass in order adds them.
	type job struct {
		spec *toolreg.Spec // nil: the binding is refused by name
		ps   problems
		tb   *toolbind.Binding
	}
	jobs := make([]job, len(b.bindings))
	bound := make(map[string]*binding, len(b.bindings))
	for i, bd := range b.bindings {
		spec, ok := byName[bd.name]
		if !ok {
			jobs[i].ps.add(bd.at, bd.name, "", "%s names no manifest: no tool %q is declared%s; add its manifest or fix the name",
				bd.kind(), bd.name, didYouMean(bd.name, b.specs))
			continue
		}
		if first, ok := bound[bd.name]; ok {
			jobs[i].ps.add(bd.at, bd.name, "", "tool %q is bound twice; first by %s at %s: keep one binding",
				bd.name, first.kind(), first.at)
			continue
		}
		bound[bd.name] = bd
		jobs[i].spec = spec
	}
	par.Do(len(jobs), func(i int) {
		j, bd := &jobs[i], b.bindings[i]
		if j.spec == nil {
			return
		}
		if bd.remote != nil || j.spec.Remote != nil {
			if !b.checkRemote(&j.ps, bd, j.spec) || b.otherSide(bd) {
				return
			}
		} else if !b.checkBinding(&j.ps, bd, j.spec) {
			return
		}
		tb, err := bd.build(j.spec)
		if err != nil {
			j.ps.addErrAt(err, j.spec)
			return
		}
		j.tb = tb
	})
	built := make(map[string]*toolbind.Binding, len(b.bindings))
	for i := range jobs {
		ps = append(ps, jobs[i].ps...)
		if jobs[i].tb != nil {
			built[b.bindings[i].name] = jobs[i].tb
		}
	}

	for _, s := range b.specs {
		if s == nil || byName[s.Name] != s || bound[s.Name] != nil {
			continue
		}
		if s.Remote != nil {
			if !b.withoutRemote && b.runs(s.SideEffect) {
				ps.add(s.Pos, s.Name, "remote", "remote tool %q (MCP server %q) has no binding: connect with remote.Connect and call the Set's Bind(b) before Bind, or use bindings.WithoutRemote() in a test that checks the local bindings only", s.Name, s.Remote.Server)
			}
			continue
		}
		switch {
		case s.SideEffect && b.side != pipelineSide:
			ps.add(s.Pos, s.Name, "", "side-effecting tool %q has no binding: call bindings.Effect(b, %q, fn) before Bind, or use bindings.PipelineOnly() in a process that does not run the effector", s.Name, s.Name)
		case !s.SideEffect && b.side != effectorSide:
			ps.add(s.Pos, s.Name, "", "read-only tool %q has no binding: call bindings.ReadOnly(b, %q, fn) before Bind, or use bindings.EffectorOnly() in a process that does not run the pipeline", s.Name, s.Name)
		}
	}
	if len(ps) > 0 {
		return nil, &toolreg.ToolDefinitionError{Problems: ps}
	}

	out := &Bound{Pipeline: registry.New(), Effector: registry.New()}
	remotes := make(map[string]*toolbind.Remote)
	for _, bd := range b.bindings {
		if bd.remote != nil && bound[bd.name] == bd {
			remotes[bd.name] = bd.remote
		}
	}
	for _, s := range b.specs {
		if byName[s.Name] != s {
			continue
		}
		tb := built[s.Name]
		if s.SideEffect {
			// The pipeline gets the contract only: invariant 1. A remote
			// tool's contract reads the gate its binding carries, so that
			// both tables withdraw it together.
			if rb := remotes[s.Name]; rb != nil {
				mustRegister(out.Pipeline, toolbind.Contract(s, rb.Gate).(*toolreg.Tool))
			} else {
				mustRegister(out.Pipeline, toolreg.NewTool(s))
			}
			if tb != nil {
				mustRegister(out.Effector, toolbind.Attach(s, tb).(*toolreg.Tool))
			}
			continue
		}
		switch rb := remotes[s.Name]; {
		case tb != nil:
			mustRegister(out.Pipeline, toolbind.Attach(s, tb).(*toolreg.Tool))
		case rb != nil:
			mustRegister(out.Pipeline, toolbind.Contract(s, rb.Gate).(*toolreg.Tool))
		default:
			mustRegister(out.Pipeline, toolreg.NewTool(s))
		}
		// So that an intent naming it is refused as read-only, not unknown.
		out.Effector.MarkInline(s.Name)
	}
	return out, nil
}

// runs reports whether this process runs the tools of that side.
func (b *Binder) runs(sideEffect bool) bool {
	if sideEffect {
		return b.side != pipelineSide
	}
	return b.side != effectorSide
}

// otherSide reports whether bd is a remote binding of a tool this process
// does not run: it is checked, but its call is attached to no table (a
// pipeline-only process holds no side-effecting remote call either).
func (b *Binder) otherSide(bd *binding) bool {
	return bd.remote != nil && !b.runs(bd.effect)
}

// mustRegister registers t in a table Bind has already made duplicate-free.
func mustRegister(r *registry.Registry, t *toolreg.Tool) {
	if err := r.Register(t); err != nil {
		panic("bindings: " + err.Error()) // unreachable: names were deduplicated above
	}
}

// checkBinding adds every problem of bd against spec and reports whether
// there were none.
func (b *Binder) checkBinding(ps *problems, bd *binding, spec *toolreg.Spec) bool {
	n := len(*ps)
	switch {
	case bd.effect && b.side == pipelineSide:
		ps.add(bd.at, spec.Name, "", "%s in a pipeline-only process: a pipeline worker must not hold side-effecting functions; bind %q in the effector process, or drop bindings.PipelineOnly()", bd.kind(), spec.Name)
	case !bd.effect && b.side == effectorSide:
		ps.add(bd.at, spec.Name, "", "%s in an effector-only process: the effector runs side-effecting tools only; bind %q in the pipeline process, or drop bindings.EffectorOnly()", bd.kind(), spec.Name)
	}
	switch {
	case spec.SideEffect && !bd.effect:
		ps.add(spec.Pos, spec.Name, "side_effect", "the manifest declares side_effect: true but %s binds it (at %s): bind it with bindings.Effect so it runs only through the effector, or set side_effect: false if it changes nothing", bd.kind(), bd.at)
	case !spec.SideEffect && bd.effect:
		ps.add(spec.Pos, spec.Name, "side_effect", "the manifest declares a read-only tool (side_effect: false) but %s binds it (at %s): bind it with bindings.ReadOnly, or set side_effect: true if it changes the world", bd.kind(), bd.at)
	}
	if bd.nilFn {
		ps.add(bd.at, spec.Name, "", "%s was given a nil function: pass the tool's function", bd.kind())
	}
	c := &checker{ps: ps, tool: spec.Name, toolPos: spec.Pos}
	c.checkArgs(bd.argT, spec)
	c.checkResult(bd.resT, bd.fnType)
	c.checkResultType(bd.resT, spec)
	return len(*ps) == n
}

// problems accumulates the findings of one Bind.
type problems []toolreg.Problem

func (ps *problems) add(pos toolreg.Pos, tool, path, format string, args ...any) {
	*ps = append(*ps, toolreg.Problem{Pos: pos, Tool: tool, Path: path, Message: fmt.Sprintf(format, args...)})
}

// addErr adds err's problems if it is a *toolreg.ToolDefinitionError, or err
// itself as one problem.
func (ps *problems) addErr(err error) { ps.addErrAt(err, nil) }

func (ps *problems) addErrAt(err error, spec *toolreg.Spec) {
	if de, ok := err.(*toolreg.ToolDefinitionError); ok {
		*ps = append(*ps, de.Problems...)
		return
	}
	var pos toolreg.Pos
	var name string
	if spec != nil {
		pos, name = spec.Pos, spec.Name
	}
	ps.add(pos, name, "", "%v", err)
}
