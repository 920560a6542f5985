package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/toolsearch"
)

// WithToolSearch gives each session a tool set of its own that grows as its
// client's model searches: a session starts with the tools called initial
// plus search_tools (package toolsearch), tools/list shows only those, and a
// tools/call of any other tool is answered with a tool error telling the
// model to search (*toolreg.ToolNotOfferedError's model message); it never
// runs. Each tool search_tools returns joins the session's set, and the
// server sends the session notifications/tools/list_changed, so that its
// client lists the tools again. The tools/listChanged capability is
// advertised to such sessions, and only with this option.
//
// The bound set must hold search_tools, bound with toolsearch.Bind (over
// MCP it answers in MCP's form, whatever form it was bound with), and every
// name in initial. The search logs its fallbacks to toolsearch.WithLogger's
// logger, given to Bind (default slog.Default()), not to WithLogger's. The default is one tool set, every bound tool, for every
// session.
//
// Each session (each Run or Connect, each new streamable HTTP session) gets
// an SDK server of its own; Server.MCP still returns the server of every
// tool, which connected directly bypasses the per-session sets. A stateless
// streamable HTTP handler starts every request from initial.
func WithToolSearch(initial ...string) Option {
	return func(c *config) { c.search = &searchConfig{initial: slices.Clone(initial)} }
}

type searchConfig struct {
	initial []string
	byName  map[string]*mcp.Tool // rendered tools/list entries, by name
}

// initSearch checks WithToolSearch's tools against the bound set.
func (s *Server) initSearch() error {
	sc := s.cfg.search
	if _, err := s.bound.Pipeline.Get(toolsearch.Name); err != nil {
		return fmt.Errorf("mcpserver: WithToolSearch serves search_tools, which the bound set lacks: append toolsearch.Spec() to the specs and bind it with toolsearch.Bind")
	}
	sc.byName = make(map[string]*mcp.Tool, len(s.tools))
	for _, t := range s.tools {
		sc.byName[t.Name] = t
	}
	var unknown []string
	for _, n := range sc.initial {
		if sc.byName[n] == nil {
			unknown = append(unknown, fmt.Sprintf("%q", n))
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("mcpserver: WithToolSearch: no bound tool named %s: name tools of the bound set", strings.Join(unknown, ", "))
	}
	return nil
}

// sdkServer returns the SDK server a new connection or session is served by:
// the server of every tool, or with WithToolSearch one of its own.
func (s *Server) sdkServer() *mcp.Server {
	if s.cfg.search == nil {
		return s.mcp
	}
	return s.newSessionServer()
}

// sessionTools is one session's tool set and the SDK server that serves it.
type sessionTools struct {
	s       *Server
	srv     *mcp.Server
	mu      sync.Mutex
	offered map[string]bool
}

func (s *Server) newSessionServer() *mcp.Server {
	st := &sessionTools{s: s, offered: make(map[string]bool)}
	st.srv = mcp.NewServer(&s.cfg.impl, &mcp.ServerOptions{
		Logger: s.cfg.logger,
		Capabilities: &mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{ListChanged: true},
		},
	})
	st.srv.AddReceivingMiddleware(st.refuseUnoffered)
	if s.scoped() {
		st.srv.AddReceivingMiddleware(s.listAllowed)
	}
	st.add(append([]string{toolsearch.Name}, s.cfg.search.initial...))
	return st.srv
}

// add offers the tools called names that the session does not offer yet.
// Adding a tool to the SDK server makes it send tools/list_changed.
func (st *sessionTools) add(names []string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, n := range names {
		mt := st.s.cfg.search.byName[n]
		if st.offered[n] || mt == nil {
			continue
		}
		t, err := st.s.bound.Pipeline.Get(n)
		if err != nil {
			continue
		}
		h := st.s.handler(t)
		if n == toolsearch.Name {
			inner := h
			h = func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return inner(toolsearch.WithFound(ctx, st.add), req)
			}
		}
		// The tool was added to the server of every tool in New: the SDK
		// accepts it.
		if err := addTool(st.srv, mt, h); err != nil {
			st.s.cfg.logger.Error("mcpserver: offering a found tool", "tool", n, "error", err)
			continue
		}
		st.offered[n] = true
	}
}

// refuseUnoffered answers a tools/call of a tool the session does not offer
// with the refusal the model reads, before the SDK looks the tool up.
func (st *sessionTools) refuseUnoffered(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
			st.mu.Lock()
			offered := st.offered[call.Params.Name]
			st.mu.Unlock()
			if !offered {
				e := &toolreg.ToolNotOfferedError{Name: call.Params.Name, Search: toolsearch.Name}
				return errorResult(e.ModelMessage()), nil
			}
		}
		return next(ctx, method, req)
	}
}
