package pgtest

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartAnswersAsAnUnprivilegedUserOnAUnixSocket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := Start(t)
	p := srv.Pool(t)
	var user, version string
	var addr *string
	if err := p.QueryRow(ctx, `SELECT current_user, current_setting('server_version'), inet_server_addr()::text`).Scan(&user, &version, &addr); err != nil {
		t.Fatal(err)
	}
	if user != "postgres" || !strings.HasPrefix(version, "15") {
		t.Fatalf("connected as %q to server %q, want postgres on 15", user, version)
	}
	if addr != nil {
		t.Fatalf("inet_server_addr() = %q, want NULL: the connection must go over the unix socket", *addr)
	}
	var listen string
	if err := p.QueryRow(ctx, `SHOW listen_addresses`).Scan(&listen); err != nil || listen != "" {
		t.Fatalf("listen_addresses = %q (%v), want empty: no TCP", listen, err)
	}
	// The data directory belongs to whoever the server runs as: never root.
	fi, err := os.Stat(srv.dataDir())
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; os.Geteuid() == 0 && uid == 0 {
		t.Fatalf("the data directory %s belongs to root, want the unprivileged user the server runs as", srv.dataDir())
	}
}

func TestRestartKeepsCommittedRowsAndTheURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := Start(t)
	url := srv.URL
	conn, err := pgx.Connect(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')`); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	if srv.URL != url {
		t.Fatalf("URL after Restart = %q, want the same %q", srv.URL, url)
	}
	if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a connection from before the crash still works, want it cut: Restart must crash the server")
	}
	conn.Close(ctx)
	conn, err = pgx.Connect(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, `SELECT v FROM t`).Scan(&v); err != nil || v != "kept" {
		t.Fatalf("row committed before the crash = %q (%v), want %q", v, err, "kept")
	}
}

func TestNewDatabaseIsolatesTests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := Start(t)
	a, _ := srv.NewDatabase(t)
	b, _ := srv.NewDatabase(t)
	if _, err := a.Exec(ctx, `CREATE TABLE only_in_a (v int)`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, `SELECT * FROM only_in_a`); err == nil {
		t.Fatal("a table made in one NewDatabase is visible in another, want them apart")
	}
}

func TestServerIsStoppedAndRemovedAtCleanup(t *testing.T) {
	t.Parallel()
	var srv *Server
	t.Run("server", func(t *testing.T) {
		srv = Start(t)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, srv.URL); err == nil {
		conn.Close(ctx)
		t.Fatalf("connecting to %s after the test ended succeeded, want the server gone", srv.URL)
	}
	if _, err := os.Stat(srv.Dir); !os.IsNotExist(err) {
		t.Fatalf("the server's directory %s after the test ended: %v, want it removed", srv.Dir, err)
	}
}

// recorder is a testing.TB that records Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	fatal string
}

type fatalled struct{}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = format
	panic(fatalled{})
}

func TestMissingBinariesFailTheTest(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty directory: no initdb
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(fatalled); !ok {
					panic(p)
				}
			}
		}()
		findBinDir(r, t.TempDir())
		t.Fatal("findBinDir in an empty directory returned, want it to fail the test")
	}()
	if !strings.Contains(r.fatal, "install the Debian package postgresql") {
		t.Fatalf("without postgres binaries: Fatalf(%q), want a failure saying to install postgresql", r.fatal)
	}
}

// CPU counts the backends' work: a query that keeps one busy raises it.
func TestCPUCountsTheBackends(t *testing.T) {
	t.Parallel()
	srv := Start(t)
	p := srv.Pool(t)
	before := srv.CPU()
	if _, err := p.Exec(context.Background(), `SELECT count(*) FROM generate_series(1, 5000000)`); err != nil {
		t.Fatal(err)
	}
	if after := srv.CPU(); after <= before {
		t.Fatalf("CPU went from %v to %v over a query that counts five million rows", before, after)
	}
}
