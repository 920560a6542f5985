package toolreg

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Principal is who calls a tool: a subject (a user or a service, such as an
// access token's sub) and the scopes (permissions) it holds, such as an
// OAuth access token's scope. A tool whose manifest declares scopes runs, or
// is staged, only for a principal holding every one of them.
//
// The runner finds the caller's principal in the context (WithPrincipal), an
// activation also in its runner.WithPrincipal, the effector in the intent
// (staged with it, covered by its signature), and the MCP server in the
// verified bearer token or its configuration. No principal is the anonymous
// caller: it holds no scope.
type Principal struct {
	// Subject names the caller; "" when it has no name.
	Subject string
	// Scopes are the scopes the caller holds, in any order.
	Scopes []string
}

// HasScope reports whether p holds scope. A nil p holds none.
func (p *Principal) HasScope(scope string) bool {
	return p != nil && slices.Contains(p.Scopes, scope)
}

// Missing returns the scopes spec declares that p does not hold, in the
// manifest's order, or nil when p may call the tool. A nil p lacks them all.
func (p *Principal) Missing(spec *Spec) []string {
	var out []string
	for _, s := range spec.Scopes {
		if !p.HasScope(s) {
			out = append(out, s)
		}
	}
	return out
}

// Allows reports whether p holds every scope spec declares: whether p may
// call, be offered, list and find the tool.
func (p *Principal) Allows(spec *Spec) bool {
	for _, s := range spec.Scopes {
		if !p.HasScope(s) {
			return false
		}
	}
	return true
}

// String names p for messages: its subject, or "anonymous".
func (p *Principal) String() string {
	if p == nil || p.Subject == "" {
		return "anonymous"
	}
	return p.Subject
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p as the caller's principal: the runner
// refuses tools whose scopes p lacks, and search finds only the tools p may
// call. A nil p is the anonymous caller.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries, and whether it carries
// one (a nil principal, the anonymous caller, counts).
func PrincipalFrom(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok
}

// scopeRE is schema.cue's #Scope: an OAuth 2.0 scope token (RFC 6749
// section 3.3: printable ASCII but space, '"' and '\'), 1 to 128 of them.
var scopeRE = regexp.MustCompile(`^[!#-\[\]-~]{1,128}$`)

// ValidScope reports whether s is a scope a manifest may declare: an OAuth
// 2.0 scope token (printable ASCII but space, '"' and '\') of 1 to 128
// characters.
func ValidScope(s string) bool { return scopeRE.MatchString(s) }

// The budget names, as a manifest's budgets block names them and messages
// and metrics say them.
const (
	BudgetPerActivation = "per_activation"
	BudgetPerEntity     = "per_entity"
)

// Budgets limit how often a tool is called. An activation counts its calls
// (runner: RunTool, and Act as it stages); the effector counts a
// side-effecting tool's intents per entity, durably, in its dedup store.
type Budgets struct {
	// PerActivation is the most calls of the tool in one activation (one
	// agent run: an entity key and a seq); 0 for no limit.
	PerActivation int
	// PerEntity is the most calls of the tool for one entity key within a
	// sliding window of time; nil for no limit. Only a side-effecting tool
	// may have one: it is counted durably by the effector.
	PerEntity *WindowBudget
}

// WindowBudget is a number of calls within a sliding window of time.
type WindowBudget struct {
	Calls  int
	Window time.Duration
}

// MinBudgetWindow is the shortest window a per_entity budget may have.
const MinBudgetWindow = time.Second

// maxBudgetCalls is schema.cue's bound on a budget's calls.
const maxBudgetCalls = 1000000

// ScopeError is a call of a tool whose scopes the caller's principal lacks.
// Nothing ran and nothing was staged: the runner, the MCP server and the
// effector refuse such a call before anything else.
type ScopeError struct {
	Tool    string
	Subject string   // the principal's subject; "" for an anonymous caller
	Missing []string // the scopes it lacks, in the manifest's order
}

func (e *ScopeError) Error() string {
	who := "the anonymous caller"
	if e.Subject != "" {
		who = fmt.Sprintf("principal %q", e.Subject)
	}
	return fmt.Sprintf("toolreg: tool %q needs %s %s, which %s lacks: nothing ran; grant the caller the %s, or do not offer it the tool",
		e.Tool, scopesWord(len(e.Missing)), quoteList(e.Missing), who, scopesWord(len(e.Missing)))
}

// ModelMessage renders the refusal for the model that made the call: the
// caller is not allowed the tool, and retrying will not change that.
func (e *ScopeError) ModelMessage() string {
	return fmt.Sprintf("The call to %s was not run: it needs the %s %s, which the user's credentials do not grant. Do not call it again; tell the user this action needs that permission.",
		e.Tool, scopesWord(len(e.Missing)), quoteList(e.Missing))
}

func (e *ScopeError) Is(target error) bool { return target == ErrTool }

// BudgetError is a call of a tool over one of its manifest's budgets.
// Nothing ran and nothing was staged.
type BudgetError struct {
	Tool   string
	Budget string // BudgetPerActivation or BudgetPerEntity
	Limit  int    // the budget's calls
	Window time.Duration
	// FreesAt is when the budget next has room: when the oldest call it
	// counts leaves its window. Zero for a per-activation budget, which
	// frees only in the next activation.
	FreesAt time.Time
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("toolreg: tool %q: %s: nothing ran; the manifest's budgets limit it", e.Tool, e.what())
}

// what says which budget is used up and when it frees.
func (e *BudgetError) what() string {
	if e.Budget == BudgetPerActivation || e.FreesAt.IsZero() {
		return fmt.Sprintf("budget %s (at most %s per activation) is used up; it frees in the next activation", e.Budget, calls(e.Limit))
	}
	return fmt.Sprintf("budget %s (at most %s per entity in %s) is used up; it frees at %s",
		e.Budget, calls(e.Limit), e.Window, e.FreesAt.UTC().Format(time.RFC3339))
}

// ModelMessage renders the refusal for the model that made the call: which
// budget, when it frees, and not to call again before then.
func (e *BudgetError) ModelMessage() string {
	return fmt.Sprintf("The call to %s was not run: its %s. Do not call %s again before then; go on without it, or tell the user.", e.Tool, e.what(), e.Tool)
}

func (e *BudgetError) Is(target error) bool { return target == ErrTool }

// scopesWord is "scope" or "scopes", as n says.
func scopesWord(n int) string {
	if n == 1 {
		return "scope"
	}
	return "scopes"
}

// calls is "1 call" or "n calls".
func calls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// authorityProblems are the problems of s's scopes and budgets that a Spec
// built in Go could have, and a manifest's loader also refuses: a scope that
// is no scope token or is declared twice, a budget of no calls, a window too
// short to count in, a per_entity budget on a read-only tool (nothing counts
// it durably inline), and a per_activation budget per_entity never lets an
// activation reach.
func (s *Spec) authorityProblems() []Problem {
	var ps []Problem
	add := func(path, format string, args ...any) {
		ps = append(ps, Problem{Pos: s.Pos, Tool: s.Name, Path: path, Message: fmt.Sprintf(format, args...)})
	}
	seen := make(map[string]bool, len(s.Scopes))
	for i, sc := range s.Scopes {
		switch {
		case !ValidScope(sc):
			add(fmt.Sprintf("scopes.%d", i), "invalid scope %q: use 1 to 128 printable ASCII characters other than space, '\"' and '\\' (an OAuth scope token)", sc)
		case seen[sc]:
			add(fmt.Sprintf("scopes.%d", i), "scope %q is declared twice: remove one", sc)
		}
		seen[sc] = true
	}
	b := s.Budgets
	if b == nil {
		return ps
	}
	if b.PerActivation < 0 || b.PerActivation > maxBudgetCalls {
		add("budgets.per_activation", "per_activation %d is out of range: give 1 to %d calls, or leave the budget out", b.PerActivation, maxBudgetCalls)
	}
	if e := b.PerEntity; e != nil {
		switch {
		case e.Calls < 1 || e.Calls > maxBudgetCalls:
			add("budgets.per_entity.calls", "calls %d is out of range: give 1 to %d calls (a budget of none would refuse every call: remove the tool instead)", e.Calls, maxBudgetCalls)
		case b.PerActivation > e.Calls:
			add("budgets.per_activation", "per_activation %d can never be reached: per_entity allows at most %s per entity in %s, and an activation is one entity's; lower per_activation to %d or less, or raise per_entity.calls", b.PerActivation, calls(e.Calls), e.Window, e.Calls)
		}
		if e.Window < MinBudgetWindow {
			add("budgets.per_entity.window", "window %s is shorter than %s: the stores count calls in windows of at least a second; give a longer window, such as \"1h\" or \"24h\"", e.Window, MinBudgetWindow)
		}
		if !s.SideEffect {
			add("budgets.per_entity", "a per_entity budget cannot be kept for a read-only tool: it runs inline, where no durable store counts its calls; use per_activation, or set side_effect: true if the tool changes the world")
		}
	}
	return ps
}
