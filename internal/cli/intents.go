package cli

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/natsstore"
	"github.com/beam-agents/toolreg/effector/pgstore"
	"github.com/beam-agents/toolreg/effector/redisstore"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/intent"
)

var intentsCommand = &command{
	name:  "intents",
	args:  "list|show|stats|resolve|purge [flags] STORE [ID]",
	short: "inspect and repair the effector's dedup store",
	long: `Intents reads and repairs the effector's dedup store at STORE, a SQLite
file path, a redis:// URL (the store's default key prefix), a
postgres:// URL (its tables migrated: see toolreg migrate) or a
nats://[user:password@]host:port[,host:port...]/bucket URL (a JetStream
bucket an effector opened), while effectors use it: each step is one
short transaction.

  toolreg intents list [-state S] [-tool T] [-json] STORE
      every record, streamed as it is read (ordered by id; on Redis, in
      the server's scan order): a table (its columns fit intent ids, which
      are UUIDs, and put the tool last; a deadline the store no longer
      keeps is -), or JSON lines with -json, each result in the wire's JSON
      form (payload base64; no deadline field where the store keeps none). -state is in_flight, unknown, done or expired.
  toolreg intents show STORE ID
      one record as JSON, with its decoded result: the entity key as text,
      a JSON payload as JSON, other text as payload_text, other bytes as
      payload_base64.
  toolreg intents stats STORE
      counts by state and by tool, and the oldest lease still in flight.
  toolreg intents resolve (-ok PAYLOAD | -error MESSAGE) [-ttl D] STORE ID
      record the true outcome of an intent whose effect is unknown (its claim
      lapsed without a result), so the next delivery is answered with it and
      nothing runs again; the effector gives that answer the intent's entity
      key and seq, which the store does not keep. Refused for an intent that
      is done or still leased.
  toolreg intents purge [-older-than D] STORE
      delete the results that expired at least D ago (every expired one by
      default), and claims lapsed past both D and the store's memory. A
      result is never purged before its time-to-live ends: a redelivery must
      still find it. (Redis and NATS expire results themselves: purge
      deletes nothing.)

On a terminal, list, stats and purge show a running count on stderr as they
go; piped or redirected, stderr gets none.

The exit status is 0 on success, 1 when the store cannot be read or a resolve
is refused, and 2 on a usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		return func(e *env, args []string) int {
			if len(args) == 0 {
				fmt.Fprintln(e.stderr, "toolreg intents: give a subcommand: list, show, stats, resolve or purge")
				return exitUsage
			}
			return runIntents(e, args[0], args[1:])
		}
	},
}

func runIntents(e *env, sub string, args []string) int {
	fs := flag.NewFlagSet("toolreg intents "+sub, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var (
		state, tool, okPayload, errMsg string
		asJSON                         bool
		ttl, olderThan                 time.Duration
	)
	nargs := 1
	switch sub {
	case "list":
		fs.StringVar(&state, "state", "", "only records in `state` (in_flight, unknown, done, expired)")
		fs.StringVar(&tool, "tool", "", "only records of `tool`")
		fs.BoolVar(&asJSON, "json", false, "JSON lines instead of a table")
	case "show":
		nargs = 2
	case "stats":
	case "purge":
		fs.DurationVar(&olderThan, "older-than", 0, "only results that expired at least `d` ago")
	case "resolve":
		nargs = 2
		fs.StringVar(&okPayload, "ok", "", "the intent succeeded with this JSON `payload`")
		fs.StringVar(&errMsg, "error", "", "the intent failed with this `message`")
		fs.DurationVar(&ttl, "ttl", effector.DefaultResultTTL, "keep the result for `d`")
	default:
		fmt.Fprintf(e.stderr, "toolreg intents: unknown subcommand %q: want list, show, stats, resolve or purge\n", sub)
		return exitUsage
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if f := flagAfterArgs(fs, args); f != "" {
		fmt.Fprintf(e.stderr, "toolreg intents %s: flag %s comes after an argument, where it is read as one: write flags right after %q, before STORE\n", sub, f, "toolreg intents "+sub)
		return exitUsage
	}
	if olderThan < 0 {
		fmt.Fprintf(e.stderr, "toolreg intents purge: -older-than %v is negative: give 0 or more, such as 24h\n", olderThan)
		return exitUsage
	}
	if fs.NArg() != nargs {
		fmt.Fprintf(e.stderr, "toolreg intents %s: want %d argument(s) (STORE%s), got %d\n", sub, nargs, map[int]string{1: "", 2: " ID"}[nargs], fs.NArg())
		return exitUsage
	}
	if state != "" && !slices.Contains(recordStates, state) {
		fmt.Fprintf(e.stderr, "toolreg intents list: -state %q: want %s\n", state, orList(recordStates))
		return exitUsage
	}
	ctx := context.Background()
	store, closeStore, err := openInspector(ctx, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(e.stderr, "toolreg intents: %v\n", err)
		return exitFindings
	}
	defer closeStore()
	term := isTerminal(e.stderr) // progress lines go there, only on a terminal
	switch sub {
	case "list":
		err = listIntents(ctx, e, store, state, tool, asJSON, term)
	case "show":
		err = showIntent(ctx, e, store, fs.Arg(1))
	case "stats":
		err = intentStats(ctx, e, store, term)
	case "resolve":
		if (okPayload == "") == (errMsg == "") {
			fmt.Fprintln(e.stderr, "toolreg intents resolve: give exactly one of -ok PAYLOAD or -error MESSAGE")
			return exitUsage
		}
		err = resolveIntent(ctx, e, store, fs.Arg(1), okPayload, errMsg, ttl)
	case "purge":
		err = purgeIntents(ctx, e, store, olderThan, term)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "toolreg intents %s: %v\n", sub, err)
		return exitFindings
	}
	return exitOK
}

// inspectStore is what the intents and approvals commands need of a store: every
// store of this module is both an Inspector and a DedupStore.
type inspectStore interface {
	effector.Inspector
	effector.DedupStore
}

// openInspector opens the store STORE names: a SQLite file path, a redis://
// URL, a postgres:// URL or a nats:// URL (nats://host:port/bucket). When a server does not answer, the error names
// it (never its password) and says what to check.
func openInspector(ctx context.Context, spec string) (inspectStore, func(), error) {
	if strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://") {
		opts, err := redis.ParseURL(spec)
		if err != nil {
			return nil, nil, fmt.Errorf("store: %w", err)
		}
		// The client's own log lines (each failed dial of its pool) would
		// bury the one error below that says what to check.
		redis.SetLogger(quietRedis{})
		rdb := redis.NewClient(opts)
		if err := rdb.Ping(ctx).Err(); err != nil {
			rdb.Close()
			return nil, nil, fmt.Errorf("store redis %s: %w; check that redis-server runs there and the URL is right", opts.Addr, err)
		}
		return redisstore.New(rdb), func() { rdb.Close() }, nil
	}
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		pool, err := pgxpool.New(ctx, spec)
		if err != nil {
			return nil, nil, fmt.Errorf("store: %w", err)
		}
		s, err := pgstore.Open(ctx, pool, pgstore.WithSweepInterval(0))
		if err != nil {
			cc := pool.Config().ConnConfig
			pool.Close()
			return nil, nil, fmt.Errorf("store postgres %s:%d: %w; check that Postgres runs there, the URL is right and toolreg migrate was run on it", cc.Host, cc.Port, err)
		}
		return s, func() { s.Close(); pool.Close() }, nil
	}
	if strings.HasPrefix(spec, "nats://") || strings.HasPrefix(spec, "tls://") {
		u, err := natsstore.ParseURL(spec)
		if err != nil {
			return nil, nil, fmt.Errorf("store: %w", err)
		}
		// A cluster still electing its leader answers within seconds; one
		// that never does should not hang the command.
		octx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		s, closeConn, err := natsstore.OpenURL(octx, spec, natsstore.WithExisting())
		if err != nil {
			return nil, nil, fmt.Errorf("store nats %s: %w; check that nats-server runs there with JetStream, the URL is right and an effector opened the bucket", strings.Join(u.Hosts, ","), err)
		}
		return s, closeConn, nil
	}
	if scheme, _, ok := strings.Cut(spec, "://"); ok {
		// Not the whole URL: it may hold a password.
		return nil, nil, fmt.Errorf("store URL of scheme %q: want a SQLite file path, a redis://, postgres:// or nats:// URL", scheme)
	}
	if _, err := os.Stat(spec); err != nil {
		// Open would create it, an empty store that hides the mistyped path.
		return nil, nil, fmt.Errorf("store %q: %w; give the SQLite file an effector writes, or a redis://, postgres:// or nats:// URL", spec, err)
	}
	s, err := sqlitestore.Open(ctx, spec, sqlitestore.WithSweepInterval(0))
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}

// quietRedis drops go-redis's log lines: a one-shot command reports its
// errors itself.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

type recordJSON struct {
	ID       string          `json:"intent_id"`
	Tool     string          `json:"tool"`
	State    string          `json:"state"`
	Attempts int             `json:"attempts"`
	Deadline string          `json:"deadline,omitempty"` // none when the store keeps none
	Result   json.RawMessage `json:"result,omitempty"`
}

// deadlineText is a record's deadline in layout, or "" when the store keeps
// none (Redis, once a lease lapsed, keeps no deadline for it).
func deadlineText(d time.Time, layout string) string {
	if d.IsZero() {
		return ""
	}
	return d.UTC().Format(layout)
}

func toJSON(r effector.Record) recordJSON {
	j := recordJSON{ID: r.ID, Tool: r.Tool, State: r.State.String(), Attempts: r.Attempts, Deadline: deadlineText(r.Deadline, time.RFC3339Nano)}
	if r.Result != nil {
		var res intent.Result
		if err := res.UnmarshalBinary(r.Result); err == nil {
			if b, err := json.Marshal(res); err == nil {
				j.Result = b
			}
		}
	}
	return j
}

// isTerminal reports whether w is a terminal (a character device), where a
// progress line belongs; piped or redirected output gets none.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// meter shows a long operation's running count on one line of w, redrawn
// in place, when on (w is a terminal) and the count has grown by every
// since it was last shown; done clears the line. Off, it shows nothing.
type meter struct {
	w          io.Writer
	on         bool
	what, unit string
	every      int64
	n, shown   int64
}

func (m *meter) set(n int64) {
	m.n = n
	if m.on && n-m.shown >= m.every {
		fmt.Fprintf(m.w, "\r%s: %d %s", m.what, n, m.unit)
		m.shown = n
	}
}

func (m *meter) done() {
	if m.on && m.shown > 0 {
		fmt.Fprint(m.w, "\r\033[K")
	}
}

// recordStates are the states -state takes, as Record's State names them.
var recordStates = []string{"in_flight", "unknown", "done", "expired"}

// orList writes words as "a, b, c or d".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// listColumns are the widths of the table's columns but the last: an
// intent id is a UUID (36 characters), a state at most in_flight, a
// deadline RFC 3339 in UTC to the second. The tool, the one column of no
// fixed width, comes last.
var listColumns = []int{36, len("in_flight"), len("ATTEMPTS"), len("2006-01-02T15:04:05Z")}

func listIntents(ctx context.Context, e *env, s effector.Inspector, state, tool string, asJSON, term bool) error {
	// Each row is written as the store hands it over, a page per read
	// transaction, never collected: a large store's first rows show at once
	// and memory holds no more than a page. So the columns have the widths
	// of what they hold, known in advance, and the tool comes last; only an
	// id longer than a UUID (one the effector did not derive) widens its
	// column from its row on.
	enc := json.NewEncoder(e.stdout)
	tbl := &streamTable{w: e.stdout, widths: slices.Clone(listColumns)}
	if !asJSON {
		if err := tbl.row("INTENT", "STATE", "ATTEMPTS", "DEADLINE", "TOOL"); err != nil {
			return err
		}
	}
	prog := &meter{w: e.stderr, on: term, what: "list", unit: "records read", every: 1000}
	defer prog.done()
	var read int64
	return s.Records(ctx, func(r effector.Record) error {
		read++
		prog.set(read)
		if state != "" && r.State.String() != state || tool != "" && r.Tool != tool {
			return nil
		}
		if asJSON {
			return enc.Encode(toJSON(r))
		}
		deadline := cmp.Or(deadlineText(r.Deadline, time.RFC3339), "-")
		return tbl.row(r.ID, r.State.String(), strconv.Itoa(r.Attempts), deadline, r.Tool)
	})
}

// streamTable writes rows at once, each column padded to its width (or the
// widest value it has seen so far, if wider) and two spaces.
type streamTable struct {
	w      io.Writer
	widths []int
	buf    []byte
}

func (t *streamTable) row(cells ...string) error {
	t.buf = t.buf[:0]
	for i, c := range cells {
		if i == len(t.widths) {
			t.widths = append(t.widths, 0)
		}
		t.widths[i] = max(t.widths[i], len(c))
		t.buf = append(t.buf, c...)
		if i < len(cells)-1 {
			for range t.widths[i] - len(c) + 2 {
				t.buf = append(t.buf, ' ')
			}
		}
	}
	t.buf = append(t.buf, '\n')
	_, err := t.w.Write(t.buf)
	return err
}

// purgeIntents purges s, showing the running count on stderr when term.
func purgeIntents(ctx context.Context, e *env, s effector.Inspector, olderThan time.Duration, term bool) error {
	var (
		n   int64
		err error
	)
	if pp, ok := s.(effector.ProgressPurger); ok {
		prog := &meter{w: e.stderr, on: term, what: "purge", unit: "records deleted", every: 1}
		n, err = pp.PurgeProgress(ctx, olderThan, prog.set)
		prog.done()
	} else {
		n, err = s.Purge(ctx, olderThan)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "purged %d records\n", n)
	return err
}

func showIntent(ctx context.Context, e *env, s effector.Inspector, id string) error {
	r, ok, err := s.Record(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("intent %q has no record", id)
	}
	b, err := json.MarshalIndent(showJSON(r), "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}

// recordView is a record as show prints it, for people: its result decoded.
type recordView struct {
	ID       string      `json:"intent_id"`
	Tool     string      `json:"tool"`
	State    string      `json:"state"`
	Attempts int         `json:"attempts"`
	Deadline string      `json:"deadline,omitempty"`
	Result   *resultView `json:"result,omitempty"`
	// The stored result's bytes, base64, when they are no ToolResult.
	Undecodable string `json:"undecodable_result,omitempty"`
	Why         string `json:"undecodable_because,omitempty"`
}

// resultView is a ToolResult decoded for people: the entity key as text
// (base64 when it is no UTF-8), the payload as JSON when it is JSON, as
// text when it is other UTF-8 text, and as base64 otherwise.
type resultView struct {
	IntentID        string          `json:"intent_id"`
	EntityKey       *string         `json:"entity_key"`
	EntityKeyBase64 string          `json:"entity_key_base64,omitempty"`
	Seq             int64           `json:"seq"`
	Status          string          `json:"status"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	PayloadText     *string         `json:"payload_text,omitempty"`
	PayloadBase64   []byte          `json:"payload_base64,omitempty"`
	ErrorMessage    string          `json:"error_message,omitempty"`
	CompletedAtMs   int64           `json:"completed_at_ms"`
	CompletedAt     string          `json:"completed_at"`
}

func showJSON(r effector.Record) recordView {
	v := recordView{ID: r.ID, Tool: r.Tool, State: r.State.String(), Attempts: r.Attempts, Deadline: deadlineText(r.Deadline, time.RFC3339Nano)}
	if r.Result == nil {
		return v
	}
	var res intent.Result
	if err := res.UnmarshalBinary(r.Result); err != nil {
		v.Undecodable, v.Why = base64.StdEncoding.EncodeToString(r.Result), err.Error()
		return v
	}
	rv := &resultView{IntentID: res.IntentID, Seq: res.Seq, Status: res.Status.String(), ErrorMessage: res.ErrorMessage,
		CompletedAtMs: res.CompletedAtMs, CompletedAt: time.UnixMilli(res.CompletedAtMs).UTC().Format(time.RFC3339Nano)}
	switch {
	case len(res.EntityKey) == 0:
	case utf8.Valid(res.EntityKey):
		k := string(res.EntityKey)
		rv.EntityKey = &k
	default:
		rv.EntityKeyBase64 = base64.StdEncoding.EncodeToString(res.EntityKey)
	}
	switch {
	case len(res.Payload) == 0:
	case json.Valid(res.Payload):
		rv.Payload = res.Payload
	case utf8.Valid(res.Payload):
		p := string(res.Payload)
		rv.PayloadText = &p
	default:
		rv.PayloadBase64 = res.Payload
	}
	v.Result = rv
	return v
}

func intentStats(ctx context.Context, e *env, s effector.Inspector, term bool) error {
	byState := map[string]int{}
	byTool := map[string]map[string]int{}
	var oldest *effector.Record
	prog := &meter{w: e.stderr, on: term, what: "stats", unit: "records read", every: 1000}
	var read int64
	err := s.Records(ctx, func(r effector.Record) error {
		read++
		prog.set(read)
		st := r.State.String()
		byState[st]++
		if byTool[r.Tool] == nil {
			byTool[r.Tool] = map[string]int{}
		}
		byTool[r.Tool][st]++
		if r.State == effector.RecordInFlight && (oldest == nil || r.Deadline.Before(oldest.Deadline)) {
			rc := r
			oldest = &rc
		}
		return nil
	})
	prog.done()
	if err != nil {
		return err
	}
	states := []string{"in_flight", "unknown", "done", "expired"}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\t"+strings.Join(states, "\t"))
	tools := make([]string, 0, len(byTool))
	for t := range byTool {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	row := func(name string, m map[string]int) {
		fmt.Fprint(tw, name)
		for _, st := range states {
			fmt.Fprintf(tw, "\t%d", m[st])
		}
		fmt.Fprintln(tw)
	}
	for _, t := range tools {
		name := t
		if name == "" {
			name = "(unknown tool)"
		}
		row(name, byTool[t])
	}
	row("total", byState)
	if err := tw.Flush(); err != nil {
		return err
	}
	if oldest != nil {
		fmt.Fprintf(e.stdout, "oldest in flight: %s (%s), lease ends %s\n", oldest.ID, oldest.Tool, oldest.Deadline.UTC().Format(time.RFC3339))
	}
	return nil
}

func resolveIntent(ctx context.Context, e *env, s effector.Inspector, id, okPayload, errMsg string, ttl time.Duration) error {
	res := intent.Result{IntentID: id, CompletedAtMs: time.Now().UnixMilli()}
	if okPayload != "" {
		if !json.Valid([]byte(okPayload)) {
			return fmt.Errorf("-ok %q is not JSON", okPayload)
		}
		res.Status, res.Payload = intent.StatusOK, []byte(okPayload)
	} else {
		res.Status, res.ErrorMessage = intent.StatusError, errMsg
	}
	b, err := res.MarshalBinary()
	if err != nil {
		return err
	}
	if err := s.Resolve(ctx, id, b, ttl); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "resolved %s as %s\n", id, res.Status)
	return err
}
