package remote

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/internal/genai"
	"github.com/beam-agents/toolreg/internal/toolbind"
)

// MetricWithdrawals counts remote tools taken out of the offered set, by
// server, tool and reason: "drift" (for good, until re-pinned) or
// "unavailable" (until the server answers again and is checked).
const MetricWithdrawals = "toolreg.remote.withdrawals"

// Set is the connections to the MCP servers that a service's manifests pin
// tools from, checked against the manifests. Bind binds its tools; Close
// ends the connections. A Set is safe for concurrent use.
//
// While it runs, a Set watches each server: on tools/list_changed it
// suspends the server's tools at once, lists them again, and withdraws for
// good each tool that no longer matches its manifest (logged, and counted in
// MetricWithdrawals), offering the others again; a server that closes its
// connection (a stdio server that exits, a lost HTTP session) has its tools
// suspended until it is reconnected (a stdio server started again) and its
// tools listed and checked again.
type Set struct {
	opts    options
	servers []*server
	tools   []*pinned

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// server is one MCP server and its pinned tools.
type server struct {
	name  string
	cfg   Server
	set   *Set
	tools []*pinned

	client   *mcp.Client
	stderr   tail
	tooLarge atomic.Bool
	wake     chan struct{} // re-list, or reconnect; buffered 1

	mu   sync.Mutex
	sess *mcp.ClientSession
	gen  int
	// changes counts the suspensions of the server's tools (an announced
	// change, a lost connection): a check of a list taken before one must
	// not offer them again.
	changes int
}

// pinned is one pinned remote tool.
type pinned struct {
	spec *toolreg.Spec
	srv  *server
	gate toolbind.Gate
}

// ServerError is a server Connect could not connect to or list, or a
// connection it lost: its tools could not be checked.
type ServerError struct {
	Server string
	Err    error
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("remote: server %q: %v", e.Server, e.Err)
}

func (e *ServerError) Unwrap() error { return e.Err }

// Connect connects to every MCP server the remote tools of specs name
// (Spec.Remote), with the MCP Go SDK's client, lists each server's tools and
// checks every pinned tool against what its server serves: its description,
// params (the input schema), returns (the output schema), annotations and
// title must be what the manifest pins.
//
// It refuses to start with every problem at once: a *DriftError listing each
// drift (the manifest's file:line, the field, the pinned and the served value,
// and the fix: re-pin and review), a *ServerError for each server it could not
// reach or list in time (WithConnectTimeout), and a
// *toolreg.ToolDefinitionError for each manifest naming a server servers does
// not configure, joined (errors.Join; errors.As finds each). It then closes
// every connection it made.
//
// A tool a server serves that no manifest pins is never offered: it is
// logged, once, with the way to pin it. Bind the Set's tools with its Bind
// before bindings.Binder.Bind.
func Connect(ctx context.Context, specs []*toolreg.Spec, servers Servers, opts ...Option) (*Set, error) {
	s := &Set{opts: defaults()}
	for _, o := range opts {
		o(&s.opts)
	}
	byName := map[string]*server{}
	var defs []toolreg.Problem
	for _, spec := range specs {
		if spec == nil || spec.Remote == nil {
			continue
		}
		if p, bad := servers.problem(spec); bad {
			defs = append(defs, p)
			continue
		}
		name := spec.Remote.Server
		sv, ok := byName[name]
		if !ok {
			sv = &server{name: name, cfg: servers[name], set: s, wake: make(chan struct{}, 1)}
			sv.client = mcp.NewClient(&mcp.Implementation{Name: "toolreg", Version: "remote"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { sv.changed() },
				Logger:                 s.opts.logger,
			})
			byName[name] = sv
			s.servers = append(s.servers, sv)
		}
		p := &pinned{spec: spec, srv: sv}
		sv.tools = append(sv.tools, p)
		s.tools = append(s.tools, p)
	}
	var errs []error
	if len(defs) > 0 {
		errs = append(errs, &toolreg.ToolDefinitionError{Problems: defs})
	}
	// Each server is connected, listed and checked at once, on its own.
	results := make([]struct {
		drifts []Drift
		err    error
	}, len(s.servers))
	var wg sync.WaitGroup
	for i, sv := range s.servers {
		wg.Go(func() {
			tools, err := sv.connect(ctx)
			if err != nil {
				results[i].err = &ServerError{Server: sv.name, Err: err}
				return
			}
			results[i].drifts = sv.check(tools)
			sv.logUnpinned(tools)
		})
	}
	wg.Wait()
	var drifts []Drift
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
		}
		drifts = append(drifts, r.drifts...)
	}
	if len(drifts) > 0 {
		sort.SliceStable(drifts, func(i, j int) bool {
			a, b := drifts[i], drifts[j]
			if a.Pos.File != b.Pos.File {
				return a.Pos.File < b.Pos.File
			}
			if a.Pos.Line != b.Pos.Line {
				return a.Pos.Line < b.Pos.Line
			}
			return a.Field < b.Field
		})
		errs = append(errs, &DriftError{Drifts: drifts})
	}
	if len(errs) > 0 {
		for _, sv := range s.servers {
			sv.disconnect()
		}
		return nil, errors.Join(errs...)
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, sv := range s.servers {
		s.wg.Go(sv.watch)
	}
	return s, nil
}

// Bind binds every remote tool of the Set to b: a read-only one to run
// inline (its arguments checked against the manifest before anything is
// sent), a side-effecting one for the effector only (bindings.Bound.Effector
// holds its call; the pipeline's table holds its contract). Call it before
// b.Bind, on a Binder made from the specs given to Connect.
func (s *Set) Bind(b *bindings.Binder) {
	for _, p := range s.tools {
		toolbind.BindRemote(b, &toolbind.Remote{Name: p.spec.Name, Effect: p.spec.SideEffect, Call: p.call, Gate: &p.gate})
	}
}

// Close ends every connection (a stdio server's stdin is closed, and the
// server killed if it does not exit within a second) and stops watching.
// Calls in flight end at once with a sent *CallError (an effect's says
// "effect unknown"); calls after Close fail with a *CallError, nothing sent.
func (s *Set) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	for _, sv := range s.servers {
		sv.disconnect()
	}
	s.wg.Wait()
	return nil
}

// connect makes a new connection to sv and lists its tools; on success the
// connection is sv's.
func (sv *server) connect(ctx context.Context) (map[string]*mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, sv.set.opts.connectTimeout)
	defer cancel()
	sv.tooLarge.Store(false)
	t, err := sv.transport()
	if err != nil {
		return nil, err
	}
	sess, err := sv.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, sv.explain("connecting", ctx, err)
	}
	tools, err := sv.list(ctx, sess)
	if err != nil {
		sess.Close()
		return nil, err
	}
	sv.mu.Lock()
	sv.sess = sess
	sv.gen++
	gen := sv.gen
	sv.mu.Unlock()
	go func() {
		_ = sess.Wait()
		sv.lost(gen)
	}()
	return tools, nil
}

// list lists every page of sess's tools, within the tool limit. Pages are
// bounded too: a server can answer empty pages with a next cursor for ever,
// which the tool limit never sees.
func (sv *server) list(ctx context.Context, sess *mcp.ClientSession) (map[string]*mcp.Tool, error) {
	tools := map[string]*mcp.Tool{}
	maxPages := sv.set.opts.maxTools + 10
	cursors := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for pages := 1; ; pages++ {
		res, err := sess.ListTools(ctx, params)
		if err != nil {
			return nil, sv.explain("listing its tools", ctx, err)
		}
		for _, t := range res.Tools {
			if len(tools) == sv.set.opts.maxTools {
				return nil, fmt.Errorf("it lists more than %d tools (remote.WithMaxTools): a broken or hostile server", sv.set.opts.maxTools)
			}
			if _, dup := tools[t.Name]; dup {
				return nil, fmt.Errorf("it lists tool %q twice: which one would be pinned?", t.Name)
			}
			tools[t.Name] = t
		}
		switch next := res.NextCursor; {
		case next == "":
			return tools, nil
		case cursors[next]:
			return nil, fmt.Errorf("its tools/list gave cursor %q twice, which would page for ever: a broken or hostile server", cut(next, 64))
		case pages == maxPages:
			return nil, fmt.Errorf("its tools/list ran past %d pages (remote.WithMaxTools, plus 10): a broken or hostile server", maxPages)
		default:
			cursors[next] = true
			params = &mcp.ListToolsParams{Cursor: next}
		}
	}
}

// explain words an error of the SDK's client: the size limit, the timeout,
// a stdio server's last words.
func (sv *server) explain(doing string, ctx context.Context, err error) error {
	if sv.tooLarge.Load() {
		return &MessageTooLargeError{Server: sv.name, Limit: sv.set.opts.maxMessage}
	}
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("no answer within %v (remote.WithConnectTimeout): %w", sv.set.opts.connectTimeout, err)
	}
	msg := fmt.Errorf("%s: %w", doing, err)
	if e := sv.stderr.String(); e != "" {
		msg = fmt.Errorf("%w; its stderr ends: %s", msg, cut(e, 512))
	}
	return msg
}

// check compares each pinned tool with what sv serves.
func (sv *server) check(tools map[string]*mcp.Tool) []Drift {
	var ds []Drift
	for _, p := range sv.tools {
		ds = append(ds, p.check(tools)...)
	}
	return ds
}

func (p *pinned) check(tools map[string]*mcp.Tool) []Drift {
	t, ok := tools[p.spec.Remote.Tool]
	if !ok {
		return []Drift{drift(p.spec, "", "", "")}
	}
	s, refusals, _ := fromMCP(t)
	if len(refusals) > 0 {
		rs := make([]string, len(refusals))
		for i, r := range refusals {
			rs[i] = r.String()
		}
		return []Drift{drift(p.spec, "", "", cut(strings.Join(rs, "; "), 512))}
	}
	return compare(p.spec, s)
}

// logUnpinned says which served tools no manifest pins: they are not offered.
func (sv *server) logUnpinned(tools map[string]*mcp.Tool) {
	pinned := map[string]bool{}
	for _, p := range sv.tools {
		pinned[p.spec.Remote.Tool] = true
	}
	var extra []string
	for n := range tools {
		if !pinned[n] {
			extra = append(extra, n)
		}
	}
	if len(extra) == 0 {
		return
	}
	sort.Strings(extra)
	sv.set.opts.logger.Info("remote: the server serves tools no manifest pins; they are not offered (toolreg pin -tools NAME,... adds them for review)",
		"server", sv.name, "count", len(extra), "tools", cut(strings.Join(extra, ","), 512))
}

// session returns sv's connection and its generation; nil when there is none.
func (sv *server) session() (*mcp.ClientSession, int) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.sess, sv.gen
}

func (sv *server) disconnect() {
	sv.mu.Lock()
	sess := sv.sess
	sv.sess = nil
	sv.gen++
	sv.mu.Unlock()
	if sess != nil {
		_ = sess.Close()
	}
}

// changed is the tools/list_changed handler: the server's tools are
// suspended at once, so that none is called between the change and its
// check, and the watcher lists them again.
func (sv *server) changed() {
	sv.set.opts.logger.Info("remote: a server announced a change of its tools; they are suspended until checked", "server", sv.name)
	sv.mu.Lock()
	sv.changes++
	for _, p := range sv.tools {
		p.gate.Suspend(fmt.Sprintf("server %q announced a change of its tools, not yet checked", sv.name))
	}
	sv.mu.Unlock()
	sv.poke()
}

// changeCount returns how many times sv's tools have been suspended.
func (sv *server) changeCount() int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.changes
}

func (sv *server) poke() {
	select {
	case sv.wake <- struct{}{}:
	default:
	}
}

// lost is called when connection gen ends.
func (sv *server) lost(gen int) {
	sv.mu.Lock()
	if sv.gen != gen {
		sv.mu.Unlock()
		return // closed on purpose, or already replaced
	}
	sv.sess = nil
	sv.mu.Unlock()
	reason := fmt.Sprintf("server %q closed the connection", sv.name)
	if e := sv.stderr.String(); e != "" {
		reason += "; its stderr ends: " + cut(e, 256)
	}
	sv.set.opts.logger.Warn("remote: lost a server; its tools are suspended until it is reconnected and checked", "server", sv.name, "reason", reason)
	sv.suspend(reason)
	sv.poke()
}

func (sv *server) suspend(reason string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.changes++
	for _, p := range sv.tools {
		if _, tmp, out := p.gate.Withdrawn(); !out || tmp {
			p.gate.Suspend(reason)
			sv.set.count(sv.name, p.spec.Name, "unavailable")
		}
	}
}

// watch re-lists sv when it announces a change, and reconnects it when its
// connection ends, until the Set is closed.
func (sv *server) watch() {
	ctx := sv.set.ctx
	wait := sv.set.opts.retryMin
	var tick <-chan time.Time
	if d := sv.set.opts.recheck; d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-sv.wake:
		case <-tick:
		}
		for !sv.refresh(ctx) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, sv.set.opts.retryMax)
		}
		wait = sv.set.opts.retryMin
	}
}

// refresh lists sv's tools again, reconnecting first if its connection is
// gone, and checks each pinned tool: a drifted one is withdrawn for good, a
// matching one offered again. It reports whether it could check.
func (sv *server) refresh(ctx context.Context) bool {
	listed := sv.changeCount() // the list below is taken after these
	var tools map[string]*mcp.Tool
	var err error
	if sess, _ := sv.session(); sess != nil {
		lctx, cancel := context.WithTimeout(ctx, sv.set.opts.connectTimeout)
		tools, err = sv.list(lctx, sess)
		cancel()
	} else {
		tools, err = sv.connect(ctx)
		if err == nil {
			sv.set.opts.logger.Info("remote: reconnected to a server; checking its tools", "server", sv.name)
		}
	}
	if ctx.Err() != nil {
		return true
	}
	if err != nil {
		sv.set.opts.logger.Warn("remote: cannot check a server's tools; they stay suspended, and it is tried again", "server", sv.name, "error", err.Error())
		sv.suspend(fmt.Sprintf("server %q cannot be checked: %s", sv.name, cut(err.Error(), 256)))
		return false
	}
	for _, p := range sv.tools {
		ds := p.check(tools)
		if len(ds) == 0 {
			sv.restore(p, listed)
			continue
		}
		if _, tmp, out := p.gate.Withdrawn(); out && !tmp {
			continue // withdrawn already
		}
		why := make([]string, len(ds))
		for i, d := range ds {
			why[i] = d.String()
		}
		reason := cut(strings.Join(why, "; "), 1024)
		p.gate.Withdraw(reason)
		sv.set.opts.logger.Warn("remote: a tool's server no longer serves what its manifest pins; the tool is withdrawn until it is re-pinned, reviewed and the service restarted",
			"server", sv.name, "tool", p.spec.Name, "manifest", p.spec.Pos.String(), "drift", reason)
		sv.set.count(sv.name, p.spec.Name, "drift")
	}
	return true
}

// restore offers p again, unless sv's tools were suspended after the list
// p was checked against was asked for: a change announced, or the
// connection lost, while it was under way. The next refresh, which the
// suspension asked for, checks p again.
func (sv *server) restore(p *pinned, listed int) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.changes == listed {
		p.gate.Restore()
	}
}

// count adds one to MetricWithdrawals.
func (s *Set) count(server, tool, reason string) {
	mp := s.opts.meter
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	c, err := mp.Meter(genai.Scope).Int64Counter(MetricWithdrawals, metric.WithDescription("Remote tools taken out of the offered set, by server, tool and reason (drift: until re-pinned; unavailable: until the server is checked again)."))
	if err != nil {
		return
	}
	c.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("toolreg.remote.server", server),
		attribute.String("gen_ai.tool.name", tool),
		attribute.String("toolreg.remote.reason", reason)))
}
