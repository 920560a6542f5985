package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/bindings"
	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/examples/support-agent/tools"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/mcpserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifests := fs.String("manifests", "manifests", "the tool manifests `dir`")
	transport := fs.String("transport", "stdio", "serve over `stdio` or streamable `http`")
	addr := fs.String("addr", "localhost:8080", "the `address` to listen on with -transport http")
	state := fs.String("state", "", "a state `dir` for the SQLite dedup store and the effects log (default: in memory, no log)")
	entityKey := fs.String("entity-key", "mcp-server", "the entity `key` of this server's intents")
	caller := fs.String("caller", "local-user", "who the client acts for, over stdio: its idempotency keys are this caller's, across restarts")
	scopes := fs.String("scopes", "", "the comma-separated `scopes` the caller holds over stdio, for tools whose manifests declare scopes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *transport != "stdio" && *transport != "http" {
		fmt.Fprintf(stderr, "mcp-server: -transport %q: use stdio or http\n", *transport)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	who := toolreg.Principal{Subject: *caller}
	for _, sc := range strings.Split(*scopes, ",") {
		if sc = strings.TrimSpace(sc); sc != "" {
			who.Scopes = append(who.Scopes, sc)
		}
	}
	srv, closeFn, err := start(ctx, *manifests, *state, *entityKey, log, mcpserver.WithCaller(who))
	if err != nil {
		fmt.Fprintf(stderr, "mcp-server: %v\n", err)
		return 1
	}
	defer closeFn()
	store := "in memory"
	if *state != "" {
		store = filepath.Join(*state, "effects.db") + " (SQLite); effects logged to " + filepath.Join(*state, "effects.log")
	}
	fmt.Fprintf(stderr, "mcp-server: %d tools from %s: read-only ones run inline, side-effecting ones through the effector; dedup store %s\n",
		len(srv.Tools()), *manifests, store)
	switch *transport {
	case "stdio":
		err = srv.Run(ctx, mcpserver.StdioTransport())
	case "http":
		err = serveHTTP(ctx, srv, *addr, stderr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "mcp-server: %v\n", err)
		return 1
	}
	return 0
}

func start(ctx context.Context, manifests, state, entityKey string, log *slog.Logger, opts ...mcpserver.Option) (*mcpserver.Server, func(), error) {
	specs, err := loader.Load(manifests)
	if err != nil {
		return nil, nil, err
	}
	be := &backend{}
	b := bindings.New(specs)
	tools.BindLookupCustomer(b, be.lookupCustomer)
	tools.BindLookupOrder(b, be.lookupOrder)
	tools.BindSearchOrders(b, be.searchOrders)
	tools.BindSearchKB(b, be.searchKB)
	tools.BindRefundOrder(b, be.refundOrder)
	tools.BindRefundOverLimit(b, be.refundOverLimit)
	tools.BindSendEmail(b, be.sendEmail)
	bound, err := b.Bind()
	if err != nil {
		return nil, nil, err
	}

	var store effector.DedupStore = effector.NewMemoryStore()
	closeFn := func() {}
	if state != "" {
		if err := os.MkdirAll(state, 0o755); err != nil {
			return nil, nil, fmt.Errorf("state directory: %w", err)
		}
		sq, err := sqlitestore.Open(ctx, filepath.Join(state, "effects.db"))
		if err != nil {
			return nil, nil, err
		}
		be.log, err = os.OpenFile(filepath.Join(state, "effects.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			sq.Close()
			return nil, nil, err
		}
		store = sq
		closeFn = func() { be.log.Close(); sq.Close() }
	}
	eff, err := effector.New(bound.Effector, store, effector.WithClock(time.Now), effector.WithLogger(log))
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	srv, err := mcpserver.New(bound, eff, append([]mcpserver.Option{mcpserver.WithImplementation("toolreg-mcp-server", "v0"),
		mcpserver.WithEntityKey(entityKey), mcpserver.WithLogger(log)}, opts...)...)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	return srv, closeFn, nil
}

func serveHTTP(ctx context.Context, srv *mcpserver.Server, addr string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler(nil), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "mcp-server: serving MCP over streamable HTTP at http://%s\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shutdown)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
