package redisstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/internal/redistest"
)

// TestOpenRefusesAServerThatDoesNotPersistWrites is part of item 10 of issue
// 13: after a restart of a redis-server that persists nothing, every done
// intent ran again. Open reads the server's appendonly and save settings and
// refuses such a server unless told to accept it, and then warns.
func TestOpenRefusesAServerThatDoesNotPersistWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a server with no AOF and no snapshots is refused", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t) // --save "" --appendonly no
		s, err := Open(ctx, srv.Client(t))
		var pe *PersistenceError
		if !errors.As(err, &pe) || s != nil {
			t.Fatalf("Open = %v, %v; want a *PersistenceError and no store", s, err)
		}
		for _, want := range []string{srv.Addr, "appendonly no", "appendonly yes", "WithUnpersistedServer"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("the same server is accepted with WithUnpersistedServer, with a warning", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		var buf bytes.Buffer
		s, err := Open(ctx, srv.Client(t), WithUnpersistedServer(), WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		if err != nil || s == nil {
			t.Fatalf("Open with WithUnpersistedServer = %v", err)
		}
		if log := buf.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "does not persist") {
			t.Errorf("Open accepted a non-persistent server without a warning:\n%s", log)
		}
		if _, err := s.Claim(ctx, "i", effector.NewCall("t", []byte("{}")), 1e9); err != nil {
			t.Errorf("the accepted store does not work: %v", err)
		}
	})
	t.Run("a server with appendonly yes is accepted silently", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, redistest.WithDurability())
		var buf bytes.Buffer
		s, err := Open(ctx, srv.Client(t), WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		if err != nil || s == nil {
			t.Fatalf("Open of a durable server = %v", err)
		}
		if buf.Len() != 0 {
			t.Errorf("Open of a durable server logged:\n%s", buf.String())
		}
	})
	t.Run("a server that only snapshots is accepted with a warning about the window", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		rdb := srv.Client(t)
		if err := rdb.ConfigSet(ctx, "save", "3600 1").Err(); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := Open(ctx, rdb, WithLogger(slog.New(slog.NewTextHandler(&buf, nil)))); err != nil {
			t.Fatalf("Open of a snapshotting server = %v", err)
		}
		if log := buf.String(); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "snapshot") {
			t.Errorf("no warning about the writes a crash loses since the last snapshot:\n%s", log)
		}
	})
}
