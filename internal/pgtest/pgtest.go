package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BinDir is where Debian's postgresql 15 package installs initdb and
// postgres; Start looks there first, then on PATH.
const BinDir = "/usr/lib/postgresql/15/bin"

// port is the port number in the socket's name; nothing listens on TCP.
const port = 5432

// Server is a postgres child process owned by one test.
type Server struct {
	// Dir is the directory holding the data directory and the unix socket.
	Dir string
	// URL is a postgres:// URL for the superuser postgres to the database
	// postgres over the unix socket; it stays the same across Restart.
	URL string

	bin   string // directory of initdb and postgres
	cred  *syscall.Credential
	fsync bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{}
	log  *bytes.Buffer
}

// Option configures Start.
type Option func(*Server)

// WithFsync makes the server flush every commit to disk (fsync=on), as a
// production server does; benchmarks that compare against a floor use it.
// Default: fsync off. Commits are synchronous either way (each is written to
// the write-ahead log before it is acknowledged), so every acknowledged
// commit survives Restart, a crash of the server; fsync off only gives up
// surviving a crash of the machine, and spares a loaded disk.
func WithFsync() Option {
	return func(s *Server) { s.fsync = true }
}

// Start runs initdb in a fresh temporary directory, starts postgres on a unix
// socket in it, and waits until it accepts connections. The server is shut
// down and the directory removed when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{bin: findBinDir(t, BinDir)}
	for _, o := range opts {
		o(s)
	}
	s.cred = credential(t)
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatalf("pgtest: making a temporary directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			t.Fatalf("pgtest: giving %s to the postgres user: %v", dir, err)
		}
	}
	s.Dir = dir
	s.URL = s.urlOf("postgres")
	t.Cleanup(s.stop)

	initdb := s.command(filepath.Join(s.bin, "initdb"), "-D", s.dataDir(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb in %s: %v\n%s", dir, err, out)
	}
	if err := s.start(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return s
}

// findBinDir returns the directory of initdb and postgres, dir or else on
// PATH, failing t if either is missing.
func findBinDir(t testing.TB, dir string) string {
	t.Helper()
	if isExec(filepath.Join(dir, "initdb")) && isExec(filepath.Join(dir, "postgres")) {
		return dir
	}
	initdb, err := exec.LookPath("initdb")
	if err == nil && isExec(filepath.Join(filepath.Dir(initdb), "postgres")) {
		return filepath.Dir(initdb)
	}
	t.Fatalf("pgtest: the PostgreSQL server is not installed (no initdb and postgres in %s nor on PATH); install the Debian package postgresql (.ci/run does)", dir)
	return ""
}

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// credential is who the server runs as: nil (the test's own user) unless the
// test runs as root, which postgres refuses; then the system user postgres.
func credential(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("pgtest: running as root, and postgres refuses to run as root, but there is no user postgres to run it as (%v); install the Debian package postgresql, which creates it, or run the tests as another user", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		t.Fatalf("pgtest: user postgres has uid %q gid %q: want numbers", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// urlOf is the postgres:// URL of database db over the unix socket.
func (s *Server) urlOf(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", db, url.QueryEscape(s.Dir), port)
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.Dir
	// The server gets a process group of its own, so a Ctrl-C of go test
	// reaches it through us (stop), not directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

func (s *Server) start() error {
	onoff := map[bool]string{true: "on", false: "off"}[s.fsync]
	cmd := s.command(filepath.Join(s.bin, "postgres"),
		"-D", s.dataDir(),
		"-k", s.Dir, // the unix socket's directory
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=", // no TCP at all
		"-c", "fsync="+onoff,
		"-c", "full_page_writes="+onoff,
		"-c", "max_connections=200",
		"-c", "shared_buffers=32MB",
	)
	log := new(bytes.Buffer)
	cmd.Stdout = log
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	exit := make(chan struct{})
	go func() { cmd.Wait(); close(exit) }()
	s.mu.Lock()
	s.cmd, s.exit, s.log = cmd, exit, log
	s.mu.Unlock()
	if err := s.waitReady(exit); err != nil {
		s.signal(syscall.SIGQUIT)
		return fmt.Errorf("postgres in %s: %w\n%s", s.Dir, err, s.logText())
	}
	return nil
}

// waitReady connects until the server accepts a query, it exits, or 30s pass.
func (s *Server) waitReady(exit <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		select {
		case <-exit:
			return errors.New("exited before accepting connections")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var conn *pgx.Conn
		conn, err = pgx.Connect(ctx, s.URL)
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not accepting connections within 30s: %v", err)
}

// Restart crashes the server (SIGQUIT, postgres's immediate shutdown: no
// checkpoint, every connection cut) and starts it again on the same socket
// and data directory; it replays its write-ahead log, so every commit it
// acknowledged survives. Clients see their connections broken.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.signal(syscall.SIGQUIT)
	if err := s.start(); err != nil {
		t.Fatalf("pgtest: restarting: %v", err)
	}
}

// Stop crashes the server as Restart does, without starting it again; Start
// it with Restart. Tests use it to see how clients behave while it is down.
func (s *Server) Stop() { s.signal(syscall.SIGQUIT) }

// stop shuts the server down at the end of the test: a fast shutdown
// (SIGINT), then SIGKILL of its process group if it lingers.
func (s *Server) stop() { s.signal(syscall.SIGINT) }

// signal sends sig to the server and waits for it to exit, killing its
// process group after 10s.
func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-exit:
	case <-time.After(10 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exit
	}
}

func (s *Server) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

// Pool returns a pgx pool on the server's database postgres, closed when the
// test ends.
func (s *Server) Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return s.pool(t, s.URL)
}

// NewDatabase creates a database of its own for the test (so tests sharing a
// server do not see each other's tables) and returns a pool on it, closed
// when the test ends, with its postgres:// URL.
func (s *Server) NewDatabase(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	name := fmt.Sprintf("test_%d", dbSeq.Add(1))
	conn, err := pgx.Connect(context.Background(), s.URL)
	if err != nil {
		t.Fatalf("pgtest: connecting to create database %s: %v", name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: CREATE DATABASE %s: %v", name, err)
	}
	u := s.urlOf(name)
	return s.pool(t, u), u
}

func (s *Server) pool(t testing.TB, u string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatalf("pgtest: pool on %s: %v", u, err)
	}
	t.Cleanup(p.Close)
	return p
}

var dbSeq atomic.Int64

// CPU is the processor time (user and system) the server's processes have
// used so far: the postmaster, the children it has reaped, and its live
// children (the backends, the WAL writer, the checkpointer, ...), as Linux's
// /proc counts it. Benchmarks report it per intent, a figure that does not
// move with the machine's load as throughput does. It returns 0 where /proc
// cannot tell.
func (s *Server) CPU() time.Duration {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	postmaster := cmd.Process.Pid
	ticks := int64(0)
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// Fields after the command, which is in parentheses and may hold
		// spaces: state ppid ... utime(14) stime(15) cutime(16) cstime(17).
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 15 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		ppid, _ := strconv.Atoi(f[1])
		if pid != postmaster && ppid != postmaster {
			continue
		}
		n := 2 // utime, stime
		if pid == postmaster {
			n = 4 // and its reaped children's
		}
		for _, v := range f[11 : 11+n] {
			t, _ := strconv.ParseInt(v, 10, 64)
			ticks += t
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100
