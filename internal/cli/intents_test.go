package cli

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/effector/sqlitestore"
	"github.com/beam-agents/toolreg/internal/syncbuf"
)

// seedLarge writes n records to a new SQLite file and returns its path:
// i-0000, i-0001, ... claimed for an hour, every third one (i-0000, i-0003,
// ...) done; or, with expired, every one done with a result that expired
// an hour ago. More than one page of Records and of Purge (500).
func seedLarge(t *testing.T, n int, expired bool) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "effects.db")
	now := time.Now()
	if expired {
		now = now.Add(-2 * time.Hour)
	}
	s, err := sqlitestore.Open(ctx, path, sqlitestore.WithSweepInterval(0), sqlitestore.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		id := fmt.Sprintf("i-%04d", i)
		c, err := s.Claim(ctx, id, effector.NewCall("refund", []byte(`{}`)), time.Hour)
		if err != nil || c.State != effector.Claimed {
			t.Fatalf("claim %s: %v %v", id, c.State, err)
		}
		if expired || i%3 == 0 {
			if err := s.Complete(ctx, id, c.Token, []byte("r"), time.Hour); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

func openLarge(t *testing.T, path string) effector.Inspector {
	t.Helper()
	s, closeStore, err := openInspector(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeStore)
	return s
}

// pausing hands over the store's records until the first one after the
// first page, and then waits for resume: a store that is slow to read its
// next page.
type pausing struct {
	effector.Inspector
	page           int
	paused, resume chan struct{}
}

func (p *pausing) Records(ctx context.Context, fn func(effector.Record) error) error {
	n := 0
	return p.Inspector.Records(ctx, func(r effector.Record) error {
		if n++; n == p.page+1 {
			close(p.paused)
			<-p.resume
		}
		return fn(r)
	})
}

func TestListWritesEachPageBeforeTheStoreReadsTheNext(t *testing.T) {
	t.Parallel()
	const n, page = 1200, 500 // sqlitestore reads 500 records a transaction
	store := &pausing{Inspector: openLarge(t, seedLarge(t, n, false)), page: page, paused: make(chan struct{}), resume: make(chan struct{})}
	for _, asJSON := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", asJSON), func(t *testing.T) {
			store.paused, store.resume = make(chan struct{}), make(chan struct{})
			var stdout, stderr syncbuf.Buffer
			done := make(chan error, 1)
			go func() {
				// -state done: the first page holds 167 matching rows, not a
				// round number a writer that flushes every so many rows hits.
				done <- listIntents(context.Background(), &env{stdout: &stdout, stderr: &stderr}, store, "done", "", asJSON, false)
			}()
			select {
			case <-store.paused:
			case err := <-done:
				t.Fatalf("list returned before the second page was handed over: %v", err)
			}
			wantFirst := 0
			for i := range page {
				if i%3 == 0 {
					wantFirst++
				}
			}
			got := stdout.String()
			if c := strings.Count(got, "i-"); c != wantFirst {
				t.Errorf("while the store reads its second page, %d rows are out, want the first page's %d:\n%s", c, wantFirst, got)
			}
			if !strings.Contains(got, fmt.Sprintf("i-%04d", (page-1)/3*3)) {
				t.Errorf("the first page's last done row is not out yet")
			}
			close(store.resume)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if c := strings.Count(stdout.String(), "i-"); c != (n+2)/3 {
				t.Errorf("%d rows in all, want %d", c, (n+2)/3)
			}
			if stderr.String() != "" {
				t.Errorf("stderr is not a terminal, but got %q", stderr.String())
			}
		})
	}
}

func TestPurgeShowsItsProgressOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	for _, term := range []bool{true, false} {
		t.Run(fmt.Sprintf("terminal=%v", term), func(t *testing.T) {
			t.Parallel()
			store := openLarge(t, seedLarge(t, 1200, true))
			var stdout, stderr bytes.Buffer
			if err := purgeIntents(context.Background(), &env{stdout: &stdout, stderr: &stderr}, store, 0, term); err != nil {
				t.Fatal(err)
			}
			if got := stdout.String(); got != "purged 1200 records\n" {
				t.Errorf("stdout = %q", got)
			}
			want := ""
			if term {
				// A line per batch of 500, redrawn in place, then cleared.
				want = "\rpurge: 500 records deleted\rpurge: 1000 records deleted\rpurge: 1200 records deleted\r\033[K"
			}
			if got := stderr.String(); got != want {
				t.Errorf("stderr = %q, want %q", got, want)
			}
		})
	}
}

func TestListShowsRecordsReadOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	store := openLarge(t, seedLarge(t, 1200, false))
	for _, term := range []bool{true, false} {
		var stdout, stderr bytes.Buffer
		if err := listIntents(context.Background(), &env{stdout: &stdout, stderr: &stderr}, store, "", "", true, term); err != nil {
			t.Fatal(err)
		}
		want := ""
		if term {
			want = "\rlist: 1000 records read\r\033[K"
		}
		if got := stderr.String(); got != want {
			t.Errorf("terminal=%v: stderr = %q, want %q", term, got, want)
		}
		if c := strings.Count(stdout.String(), "\n"); c != 1200 {
			t.Errorf("terminal=%v: %d JSON lines, want 1200", term, c)
		}
	}
}
