package pgqueue

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/beam-agents/toolreg/internal/pgtest"
)

// TestTransientTellsALostConnectionFromABadStatement classifies errors a
// real server and a real driver produce: a connection whose backend was
// terminated (the error of the statement it was running, and of the next
// one on the closed connection), a server that is gone, against errors about
// the statement itself, which Receive must report instead of retrying
// forever. An error that only says "conn closed" or "unexpected EOF" in its
// text is not a lost connection: a tool's or a caller's message could say so.
func TestTransientTellsALostConnectionFromABadStatement(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := pgtest.Start(t)
	pool, u := srv.NewDatabase(t)

	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	running := make(chan error, 1)
	go func() { _, err := conn.Exec(ctx, `SELECT pg_sleep(30)`); running <- err }()
	for { // terminate the backend once it runs the statement
		var active bool
		if err := pool.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%'`, pid).Scan(&active); err != nil {
			t.Fatal(err)
		}
		if active {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	terminated := <-running
	_, closed := conn.Exec(ctx, `SELECT 1`)

	_, badStatement := pool.Exec(ctx, `SELECT * FROM no_such_table`)
	_, violation := pool.Exec(ctx, `SELECT 1/0`)

	srv.Stop()
	_, serverGone := pool.Exec(ctx, `SELECT 1`)

	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"the statement running when its backend was terminated", terminated, true},
		{"the next statement on that connection", closed, true},
		{"a statement once the server stopped", serverGone, true},
		{"the terminated statement, wrapped", fmt.Errorf("claiming: %w", terminated), true},
		{"a missing table", badStatement, false},
		{"a division by zero", violation, false},
		{"a message saying conn closed", errors.New("tool said: conn closed"), false},
		{"a message saying unexpected EOF", errors.New("decoding: unexpected EOF in the payload"), false},
		{"a message saying connection reset", errors.New("upstream: connection reset by peer"), false},
	} {
		if c.err == nil {
			t.Errorf("%s: no error, want one", c.name)
			continue
		}
		if got := transient(c.err); got != c.want {
			t.Errorf("transient(%s: %v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
