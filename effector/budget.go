package effector

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"go.opentelemetry.io/otel/metric"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/genai"
	"github.com/beam-agents/toolreg/registry"
)

// Budgets. A manifest's budgets limit how often its tool is called
// (toolreg.Budgets). The effector counts a side-effecting tool's intents
// against its per_entity budget (calls per entity key within a sliding
// window) durably, in the store that holds its claims, at claim time, so the
// counts survive restarts and every effector on the store shares them. A
// store keeps budgets by implementing BudgetStore: every store of this
// module does. A per_activation budget is the activation's: Act refuses the
// call over it as it stages (runner), deterministically, so a replay stages
// the same intents; the effector does not count it again, since a producer
// that would stage past it can as well stage under another seq.
//
// Intents are counted by id. A replay or a redelivery of an intent already
// counted, and a reclaim after its owner died, is not counted again. An
// intent is counted when it is claimed, before it runs, in the claim's
// transaction where the store has one, so a crash between counting and
// running leaves it counted and claimed: the claim lapses, and the next
// delivery reclaims it, finds it counted, and runs it. The count is never
// below what ran; it is above it only by intents that were claimed and
// then never delivered again, whose effect is unknown (toolreg intents
// lists them as unknown), and by intents refused after their claim (an
// unknown tool, arguments that break the contract, a denied approval).
//
// A count is exact: a store counts a key's uses when it admits an intent,
// so a budget's cost grows with its calls per window. Budgets are meant for
// tens to thousands of calls per entity.

// BudgetUse is one budget an intent is counted against.
type BudgetUse struct {
	// Key names the count: the tool, the budget and whose calls it counts,
	// such as `refund_order per_entity entity="ticket-42"`. Uses with one
	// key share a count.
	Key string
	// Group is what every use of one intent shares (the tool and the entity
	// key), and every use of one Key has: a store that spreads keys over
	// servers (a Redis Cluster) keeps a group's keys together, so that an
	// intent's uses are counted at once.
	Group string
	// Limit is the most intents the key counts at a time.
	Limit int
	// Window is how long a use counts from when it was admitted, on the
	// store's clock.
	Window time.Duration
}

// Admission is what a store found for an intent's budget uses.
type Admission struct {
	// Refused is the index in the uses of a budget with no room left, or -1
	// when the intent is counted against every one (or already was).
	Refused int
	// FreesAt is when the refusing budget next has room: when its oldest
	// use stops counting. The zero time when nothing was refused.
	FreesAt time.Time
}

// BudgetStore is a DedupStore that keeps call budgets with its claims.
// Every implementation passes storetest.RunBudgets.
type BudgetStore interface {
	DedupStore
	// ClaimAdmit claims intentID as Claim does and, when it claims it,
	// counts it against every budget of uses, all or none: in the claim's
	// transaction where the store has one. An intent a key already counts
	// (a redelivery, a replay, a reclaim) is not counted again under it.
	// When a budget has no room, nothing is counted, the Admission says
	// which budget and when it frees, and the claim is still the caller's,
	// to record the intent's REJECTED result with. With any other state
	// than Claimed nothing is counted and the Admission's Refused is -1.
	ClaimAdmit(ctx context.Context, intentID string, call Call, lease time.Duration, uses []BudgetUse) (Claim, Admission, error)
	// BudgetUsage calls fn for every budget key that counts at least one
	// use now, reading a page at a time, for people (`toolreg budgets`).
	BudgetUsage(ctx context.Context, fn func(BudgetUsage) error) error
}

// BudgetUsage is a budget key in use.
type BudgetUsage struct {
	Key   string
	Used  int // uses counting now
	Limit int // the limit the last admitted use was counted under
	// FreesAt is when the oldest use stops counting; Until when the last does.
	FreesAt, Until time.Time
}

// entityText names an entity key in a budget key: quoted when it is
// printable text, else 0x and its hex.
func entityText(key []byte) string {
	if utf8.Valid(key) {
		printable := true
		for _, r := range string(key) {
			if !unicode.IsPrint(r) {
				printable = false
				break
			}
		}
		if printable {
			return strconv.Quote(string(key))
		}
	}
	return "0x" + hex.EncodeToString(key)
}

// budgetUses returns the uses in, an intent of tool t, is counted
// against: its per_entity budget's; nil when t has none.
func budgetUses(t *toolreg.Tool, in *intent.Intent) []BudgetUse {
	b := t.Spec().Budgets
	if b == nil || b.PerEntity == nil {
		return nil
	}
	group := t.Name() + " entity=" + entityText(in.EntityKey)
	return []BudgetUse{{Key: group + " " + toolreg.BudgetPerEntity, Group: group, Limit: b.PerEntity.Calls, Window: b.PerEntity.Window}}
}

// budgetError is the refusal of t's per_entity budget, which frees at
// freesAt.
func budgetError(t *toolreg.Tool, u BudgetUse, freesAt time.Time) *toolreg.BudgetError {
	return &toolreg.BudgetError{Tool: t.Name(), Budget: toolreg.BudgetPerEntity, Limit: u.Limit, Window: u.Window, FreesAt: freesAt}
}

// checkBudgetStore refuses, at New, a table with budgeted tools and a
// store that keeps no budgets: they would not be enforced.
func checkBudgetStore(table *registry.Registry, store DedupStore, add func(string, ...any)) {
	if _, ok := store.(BudgetStore); ok || table == nil || store == nil {
		return
	}
	for _, t := range table.Tools() {
		if b := t.Spec().Budgets; b != nil && b.PerEntity != nil {
			add("tool %q declares budgets, and the dedup store %T keeps none (it is no effector.BudgetStore): they would not be enforced; use a store of this module, or remove the budgets", t.Name(), store)
			return
		}
	}
}

// budgetNote is the refusal's message: the model reads it.
func budgetNote(in *intent.Intent, be *toolreg.BudgetError) string {
	return fmt.Sprintf("%s (effector: intent %s was not run)", be.ModelMessage(), in.ID)
}

// budgeted returns the tool of in and the budget uses its claim counts it
// against (its per_entity budget's): none for an approval (its execution is counted), for a call of
// a tool that requires approval that is not its execution (it is
// REJECTED), and for a principal lacking the tool's scopes (it is REJECTED
// and must not use up anyone's budget).
func (e *Effector) budgeted(in *intent.Intent, execution bool) (*toolreg.Tool, []BudgetUse) {
	if in.Kind == intent.KindApproval {
		return nil, nil
	}
	t, err := e.table.Get(in.ToolName)
	if err != nil {
		return nil, nil
	}
	spec := t.Spec()
	if spec.Budgets == nil || spec.Approval != nil && !execution || !in.Principal.Allows(spec) {
		return nil, nil
	}
	if _, ok := e.store.(BudgetStore); !ok {
		return nil, nil // New refused such a store
	}
	return t, budgetUses(t, in)
}

// overBudget is the budget adm refused, or nil.
func overBudget(t *toolreg.Tool, uses []BudgetUse, adm Admission) *toolreg.BudgetError {
	if uses == nil || adm.Refused < 0 || adm.Refused >= len(uses) {
		return nil
	}
	return budgetError(t, uses[adm.Refused], adm.FreesAt)
}

// authority is phase 4's check of who may run in: a principal lacking the
// tool's scopes, or a budget its claim found used up, gets a REJECTED
// result worded for the model, and nothing runs.
func (e *Effector) authority(ctx context.Context, in *intent.Intent, t *toolreg.Tool, cl claim) (intent.Result, bool) {
	if se := scopeErr(in, t); se != nil {
		return e.rejected(in, fmt.Sprintf("%s (effector: intent %s was not run: %v)", se.ModelMessage(), in.ID, se)), true
	}
	if be := cl.overBudget; be != nil {
		if m := e.tel.metrics(); m != nil {
			m.budgetRefusals.Add(ctx, 1, metric.WithAttributes(genai.ToolName.String(t.Name()), budgetKey.String(be.Budget)))
		}
		e.cfg.logger.InfoContext(ctx, "effector: intent over its tool's budget; nothing ran", "intent_id", in.ID, "tool", t.Name(), "budget", be.Budget, "frees_at", be.FreesAt)
		return e.rejected(in, budgetNote(in, be)), true
	}
	return intent.Result{}, false
}

// scopeErr refuses in when its principal (none: the anonymous caller)
// lacks one of t's scopes. The principal is the intent's, covered by its
// signature: run the effector with WithVerify(VerifyRequire, keys) where
// anyone could write to its source, or an unsigned intent can claim any
// principal.
func scopeErr(in *intent.Intent, t *toolreg.Tool) *toolreg.ScopeError {
	missing := in.Principal.Missing(t.Spec())
	if missing == nil {
		return nil
	}
	e := &toolreg.ScopeError{Tool: t.Name(), Missing: missing}
	if in.Principal != nil {
		e.Subject = in.Principal.Subject
	}
	return e
}
