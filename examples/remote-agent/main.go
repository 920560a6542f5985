package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/diff"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/remote"
	"github.com/beam-agents/toolreg/runner"
)

func main() {
	os.Exit(mainArgs(os.Args[1:], os.Stdout, os.Stderr))
}

func mainArgs(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("remote-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "examples/remote-agent", "the example's `directory`: its manifests/ and mcp-servers.yaml")
	serve := fs.String("serve", "", "only serve the tracker over streamable HTTP at `addr`")
	release := fs.Int("release", 1, "the tracker `release` -serve serves")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *serve != "" {
		srv := newTracker().server(*release)
		fmt.Fprintf(stdout, "tracker release %d at http://%s\n", *release, *serve)
		if err := http.ListenAndServe(*serve, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)); err != nil {
			fmt.Fprintln(stderr, "remote-agent:", err)
			return 1
		}
		return 0
	}
	if err := run(context.Background(), stdout, *dir); err != nil {
		fmt.Fprintln(stderr, "remote-agent:", err)
		return 1
	}
	return 0
}

// run tells the example's story on w; see the package doc.
func run(ctx context.Context, w io.Writer, dir string) error {
	tr := newTracker()
	var release atomic.Int32
	release.Store(1)
	servers := map[int32]*mcp.Server{1: tr.server(1), 2: tr.server(2)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return servers[release.Load()] }, nil)}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	os.Setenv("TRACKER_URL", "http://"+ln.Addr().String())

	cfg, err := remote.LoadConfig(filepath.Join(dir, "mcp-servers.yaml"))
	if err != nil {
		return err
	}
	manifests := filepath.Join(dir, "manifests")
	specs, err := loader.Load(manifests)
	if err != nil {
		return err
	}
	quiet := remote.WithLogger(slog.New(slog.DiscardHandler))

	fmt.Fprintln(w, "== 1. toolreg pin tracker")
	rep, err := remote.Pin(ctx, "tracker", cfg["tracker"], specs, remote.PinOptions{Dir: manifests}, quiet)
	if err != nil {
		return err
	}
	for _, p := range rep.Written {
		state := "changed: re-pin and review"
		if p.Same {
			state = "already pins what the tracker serves"
		}
		fmt.Fprintf(w, "%s: %s\n", rel(dir, p.File), state)
	}

	fmt.Fprintln(w, "\n== 2. startup: two Go tools, three pinned remote ones")
	set, err := remote.Connect(ctx, specs, cfg, quiet)
	if err != nil {
		return err
	}
	defer set.Close()
	b := bindings.New(specs)
	bindings.ReadOnly(b, "lookup_customer", lookupCustomer)
	bindings.Effect(b, "send_email", sendEmail)
	set.Bind(b)
	bound, err := b.Bind()
	if err != nil {
		return err
	}
	for _, t := range bound.Pipeline.Tools() {
		where := "Go function"
		if r := t.Spec().Remote; r != nil {
			where = fmt.Sprintf("MCP server %q, tool %q", r.Server, r.Tool)
		}
		kind := "read-only, inline"
		if t.SideEffect() {
			kind = "side effect, through the effector"
		}
		fmt.Fprintf(w, "  %-16s %-34s %s\n", t.Name(), kind, where)
	}
	now := time.UnixMilli(1767225600000)
	act := runner.NewActivation(bound.Pipeline, []byte("ticket-7"), 1, runner.WithClock(func() time.Time { return now }))
	for _, c := range []struct{ tool, args string }{
		{"lookup_customer", `{"customer_id":"cus_8f3k2p"}`},
		{"search_issues", `{"query":"refund"}`},
		{"search_issues", `{"query":""}`},
	} {
		res, err := act.RunTool(ctx, c.tool, json.RawMessage(c.args))
		fmt.Fprintf(w, "%s %s -> %s\n", c.tool, c.args, show(res, err))
	}
	for _, c := range []struct{ tool, args string }{
		{"create_issue", `{"title":"Refund fails for cus_8f3k2p","body":"Second report this week."}`},
		{"send_email", `{"to":"ana@example.com","subject":"We are on it","body":"Tracked as a new issue."}`},
	} {
		if _, err := act.Act(c.tool, json.RawMessage(c.args)); err != nil {
			return err
		}
	}
	ins, err := act.Drain()
	if err != nil {
		return err
	}
	eff, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(func() time.Time { return now }), effector.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	for _, in := range ins {
		res, err := eff.Process(ctx, in)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "effector: %s (intent %s) -> %s %s\n", in.ToolName, in.ID, res.Status, res.Payload)
	}
	// The same intent delivered to an effector whose store never saw it (a
	// lost store, a replay elsewhere): the tracker honours the idempotency
	// key, so the issue is not opened twice.
	again, err := effector.New(bound.Effector, effector.NewMemoryStore(), effector.WithClock(func() time.Time { return now }), effector.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	res, err := again.Process(ctx, ins[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "effector, another store: %s -> %s %s (the tracker still has %d issues)\n", ins[0].ToolName, res.Status, res.Payload, tr.count())
	_ = set.Close()

	fmt.Fprintln(w, "\n== 3. the tracker's next release, and the same manifests")
	release.Store(2)
	_, err = remote.Connect(ctx, specs, cfg, quiet)
	var de *remote.DriftError
	if !errors.As(err, &de) {
		return fmt.Errorf("startup did not refuse the drifted tracker: %v", err)
	}
	fmt.Fprintln(w, "startup refused:")
	fmt.Fprintln(w, strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))

	fmt.Fprintln(w, "\n== 4. the re-pin, as a pull request, and toolreg diff")
	work, err := os.MkdirTemp("", "remote-agent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := os.CopyFS(work, os.DirFS(manifests)); err != nil {
		return err
	}
	old, err := loader.Load(work)
	if err != nil {
		return err
	}
	rep, err = remote.Pin(ctx, "tracker", cfg["tracker"], old, remote.PinOptions{Dir: work}, quiet)
	if err != nil {
		return err
	}
	files, err := rep.Write()
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(w, "toolreg pin rewrote %s\n", rel(work, f))
	}
	repinned, err := loader.Load(work)
	if err != nil {
		return err
	}
	report := diff.Compare(old, repinned)
	var text strings.Builder
	if err := report.WriteText(&text); err != nil {
		return err
	}
	fmt.Fprint(w, strings.ReplaceAll(text.String(), work+string(filepath.Separator), "manifests/"))
	return nil
}

func rel(base, file string) string {
	if r, err := filepath.Rel(base, file); err == nil {
		return r
	}
	return file
}

func show(v any, err error) string {
	if err != nil {
		var ae *toolreg.ToolArgumentError
		if errors.As(err, &ae) {
			return "refused before anything was sent: " + strings.ReplaceAll(ae.ModelMessage(), "\n", " ")
		}
		return "error: " + err.Error()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// The service's own tools.

type lookupArgs struct {
	CustomerID string `json:"customer_id"`
}

type customer struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

func lookupCustomer(ctx context.Context, a lookupArgs) (customer, error) {
	return customer{Name: "Ana Lima", Email: "ana@example.com"}, nil
}

type emailArgs struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

func sendEmail(ctx context.Context, a emailArgs) (map[string]string, error) {
	in, _ := effector.IntentFrom(ctx)
	return map[string]string{"message_id": "msg_" + in.ID[:8]}, nil
}
