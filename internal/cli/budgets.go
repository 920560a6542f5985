package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

var budgetsCommand = &command{
	name:  "budgets",
	args:  "[-json] STORE",
	short: "show the call budgets in use in the effector's store",
	long: `Budgets lists the call budgets (a manifest's budgets: per_activation and
per_entity) that count at least one intent now in the effector's store at
STORE, a SQLite file path, a redis://, postgres:// or nats:// URL, as
toolreg intents opens it, while effectors use it:

	BUDGET                                            USED  LIMIT  FREES AT              UNTIL
	refund_order entity="ticket-42" per_entity        3     3      2026-03-01T10:00:00Z  2026-03-01T10:20:00Z

BUDGET names the tool, the entity key and the budget (a per_activation
budget its activation's seq too). USED counts the intents it holds now;
a budget whose USED is its LIMIT refuses the next intent until FREES AT, when
its oldest use leaves the window; UNTIL is when its last one does. With
-json, one JSON object a budget.

The exit status is 0 on success, 1 when the store cannot be read, and 2 on
a usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		asJSON := fs.Bool("json", false, "JSON lines instead of a table")
		return func(e *env, args []string) int {
			if len(args) != 1 {
				fmt.Fprintf(e.stderr, "toolreg budgets: want 1 argument (STORE), got %d\n", len(args))
				return exitUsage
			}
			ctx := context.Background()
			store, closeStore, err := openInspector(ctx, args[0])
			if err != nil {
				fmt.Fprintf(e.stderr, "toolreg budgets: %v\n", err)
				return exitFindings
			}
			defer closeStore()
			bs, ok := store.(effector.BudgetStore)
			if !ok {
				fmt.Fprintf(e.stderr, "toolreg budgets: the store %T keeps no budgets\n", store)
				return exitFindings
			}
			if err := listBudgets(ctx, e, bs, *asJSON); err != nil {
				fmt.Fprintf(e.stderr, "toolreg budgets: %v\n", err)
				return exitFindings
			}
			return exitOK
		}
	},
}

type budgetJSON struct {
	Budget  string `json:"budget"`
	Used    int    `json:"used"`
	Limit   int    `json:"limit"`
	FreesAt string `json:"frees_at"`
	Until   string `json:"until"`
}

func listBudgets(ctx context.Context, e *env, s effector.BudgetStore, asJSON bool) error {
	stamp := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		return s.BudgetUsage(ctx, func(u effector.BudgetUsage) error {
			return enc.Encode(budgetJSON{Budget: u.Key, Used: u.Used, Limit: u.Limit, FreesAt: stamp(u.FreesAt), Until: stamp(u.Until)})
		})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BUDGET\tUSED\tLIMIT\tFREES AT\tUNTIL")
	n := 0
	err := s.BudgetUsage(ctx, func(u effector.BudgetUsage) error {
		n++
		_, err := fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", u.Key, u.Used, u.Limit, stamp(u.FreesAt), stamp(u.Until))
		return err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintln(e.stderr, "toolreg budgets: no budget counts an intent now")
	}
	return tw.Flush()
}
