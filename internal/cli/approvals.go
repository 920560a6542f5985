package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"text/tabwriter"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

var approvalsCommand = &command{
	name:  "approvals",
	args:  "list|show|approve|deny [flags] STORE [ID]",
	short: "list the calls waiting for a person's approval, and decide them",
	long: `Approvals reads and decides the approvals in the effector's dedup store at
STORE (a SQLite file path, a redis://, postgres:// or nats:// URL, as for
toolreg intents): the calls to tools whose manifest says approval: required,
staged by the pipeline and recorded by an effector.

  toolreg approvals list [-state S] [-json] STORE
      the approvals in STATE (pending by default; approved, denied, expired
      or all), with the tool, the arguments as the model sent them, the
      manifest's reason and the age: a table, or JSON lines with -json.
  toolreg approvals show STORE ID
      one approval as JSON: the call, the decision, the execution's result.
  toolreg approvals approve [-by NAME] [-note TEXT] STORE ID
  toolreg approvals deny [-by NAME] [-note TEXT] STORE ID
      record a decision. The first decision wins: a decision on an approval
      already decided (the same way or not) is ignored, and the command says
      who decided, when, and whether the call has run; a decision after the
      approval's deadline is refused. An approved call is executed once by
      an effector holding the tool: effector.Serve with WithDecisions, or
      Effector.ResumeDecided or Resume; a denial records the execution as
      REJECTED with the note.
      -by defaults to the user running the command.

The exit status is 0 on success, 1 when the store cannot be read or a
decision is not taken (ignored or refused), and 2 on a usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		return func(e *env, args []string) int {
			if len(args) == 0 {
				fmt.Fprintln(e.stderr, "toolreg approvals: give a subcommand: list, show, approve or deny")
				return exitUsage
			}
			return runApprovals(e, args[0], args[1:])
		}
	},
}

func runApprovals(e *env, sub string, args []string) int {
	fs := flag.NewFlagSet("toolreg approvals "+sub, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var (
		state, by, note string
		asJSON          bool
	)
	nargs := 2
	switch sub {
	case "list":
		nargs = 1
		fs.StringVar(&state, "state", "pending", "only approvals in `state` (pending, approved, denied, expired, all)")
		fs.BoolVar(&asJSON, "json", false, "JSON lines instead of a table")
	case "show":
	case "approve", "deny":
		fs.StringVar(&by, "by", currentUser(), "who decides (`name`)")
		fs.StringVar(&note, "note", "", "a note kept with the decision; a denial's result carries it")
	default:
		fmt.Fprintf(e.stderr, "toolreg approvals: unknown subcommand %q: want list, show, approve or deny\n", sub)
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if f := flagAfterArgs(fs, args); f != "" {
		fmt.Fprintf(e.stderr, "toolreg approvals %s: flag %s comes after an argument, where it is read as one: write flags right after %q, before STORE\n", sub, f, "toolreg approvals "+sub)
		return exitUsage
	}
	if fs.NArg() != nargs {
		fmt.Fprintf(e.stderr, "toolreg approvals %s: want %d argument(s) (STORE%s), got %d\n", sub, nargs, map[int]string{1: "", 2: " ID"}[nargs], fs.NArg())
		return exitUsage
	}
	switch state {
	case "", "pending", "approved", "denied", "expired", "all":
	default:
		fmt.Fprintf(e.stderr, "toolreg approvals list: -state %q: want pending, approved, denied, expired or all\n", state)
		return exitUsage
	}
	if (sub == "approve" || sub == "deny") && by == "" {
		fmt.Fprintf(e.stderr, "toolreg approvals %s: say who decides with -by NAME (no user name was found)\n", sub)
		return exitUsage
	}
	ctx := context.Background()
	store, closeStore, err := openInspector(ctx, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(e.stderr, "toolreg approvals: %v\n", err)
		return exitFindings
	}
	defer closeStore()
	switch sub {
	case "list":
		err = listApprovals(ctx, e, store, state, asJSON)
	case "show":
		var a effector.Approval
		if a, err = effector.LookupApproval(ctx, store, fs.Arg(1)); err == nil {
			err = printJSON(e, approvalJSON(a, time.Now()), "  ")
		}
	case "approve", "deny":
		v := effector.Approve
		if sub == "deny" {
			v = effector.Deny
		}
		var a effector.Approval
		a, err = effector.RecordDecision(ctx, store, fs.Arg(1), effector.Decision{Verdict: v, By: by, Note: note})
		var conflict *effector.DecisionConflictError
		switch {
		case errors.As(err, &conflict):
			err = fmt.Errorf("ignored: approval %s (%s) was already %s; it cannot be %s now (the first decision wins)", a.ID, a.Tool, decided(conflict.Recorded), conflict.Asked)
		case err == nil && a.AlreadyDecided:
			err = fmt.Errorf("ignored: approval %s (%s) was already %s%s", a.ID, a.Tool, decided(*a.Decision), approvalOutcome(a))
		case err == nil:
			fmt.Fprintf(e.stdout, "%s %s (%s) by %s\n", a.State, a.ID, a.Tool, a.Decision.By)
			if v == effector.Approve && a.Result == nil {
				fmt.Fprintf(e.stdout, "an effector holding %s runs it once, under intent %s\n", a.Tool, a.ExecutionID)
			}
		}
	}
	if err != nil {
		if errors.Is(err, effector.ErrUnknownApproval) {
			err = fmt.Errorf("%w; toolreg approvals list %s shows the pending ones", err, fs.Arg(0))
		}
		fmt.Fprintf(e.stderr, "toolreg approvals %s: %v\n", sub, err)
		return exitFindings
	}
	return exitOK
}

// decided says who decided d and when: "approved by ana at 2026-03-01T12:00:00Z".
func decided(d effector.Decision) string {
	return fmt.Sprintf("%s by %s at %s", d.Verdict, d.By, d.At.UTC().Format(time.RFC3339))
}

// approvalOutcome says what became of an approval already decided: the denial's
// note; for an approved call, that it ran (and its result), or that it
// waits for an effector.
func approvalOutcome(a effector.Approval) string {
	switch {
	case a.State == effector.ApprovalDenied:
		if a.Decision.Note != "" {
			return fmt.Sprintf(" (note: %s)", a.Decision.Note)
		}
		return ""
	case a.Result == nil:
		return fmt.Sprintf("; an effector holding %s runs it once, under intent %s", a.Tool, a.ExecutionID)
	}
	what := string(a.Result.Payload)
	if a.Result.ErrorMessage != "" {
		what = a.Result.ErrorMessage
	}
	switch a.Result.Status {
	case intent.StatusOK, intent.StatusError:
		return fmt.Sprintf(", and it ran: %s %s", a.Result.Status, what)
	}
	return fmt.Sprintf(", and its execution is recorded: %s %s", a.Result.Status, what)
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

func listApprovals(ctx context.Context, e *env, store effector.DedupStore, state string, asJSON bool) error {
	var tw *tabwriter.Writer
	if !asJSON {
		tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "APPROVAL\tTOOL\tSTATE\tAGE\tARGUMENTS\tREASON")
	}
	now := time.Now()
	err := effector.Approvals(ctx, store, func(a effector.Approval) error {
		if state != "all" && a.State.String() != state {
			return nil
		}
		if asJSON {
			return printJSON(e, approvalJSON(a, now), "")
		}
		_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Tool, a.State, age(now.Sub(a.RequestedAt)), a.Arguments, a.Reason)
		return err
	})
	if tw != nil {
		if ferr := tw.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

// age rounds d for people: 42s, 5m10s, 3h2m, 2d4h.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	days := d / (24 * time.Hour)
	return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
}

type approvalOut struct {
	ID          string          `json:"approval_id"`
	ExecutionID string          `json:"execution_id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Reason      string          `json:"reason,omitempty"`
	State       string          `json:"state"`
	RequestedAt time.Time       `json:"requested_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
	AgeSeconds  int64           `json:"age_seconds"`
	DecidedBy   string          `json:"decided_by,omitempty"`
	DecidedAt   *time.Time      `json:"decided_at,omitempty"`
	Note        string          `json:"note,omitempty"`
	Result      *intent.Result  `json:"result,omitempty"`
}

func approvalJSON(a effector.Approval, now time.Time) approvalOut {
	o := approvalOut{
		ID: a.ID, ExecutionID: a.ExecutionID, Tool: a.Tool, Arguments: a.Arguments, Reason: a.Reason, State: a.State.String(),
		RequestedAt: a.RequestedAt.UTC(), ExpiresAt: a.ExpiresAt.UTC(), AgeSeconds: int64(now.Sub(a.RequestedAt) / time.Second),
		Result: a.Result,
	}
	if d := a.Decision; d != nil {
		at := d.At.UTC()
		o.DecidedBy, o.DecidedAt, o.Note = d.By, &at, d.Note
	}
	return o
}

// printJSON prints v as JSON indented with indent, or on one line when
// indent is "".
func printJSON(e *env, v any, indent string) error {
	b, err := json.Marshal(v)
	if indent != "" {
		b, err = json.MarshalIndent(v, "", indent)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}
