package faulttest

import (
	"testing"

	"github.com/beam-agents/toolreg/internal/pgtest"
)

// TestPostgresRestart crashes the Postgres server (SIGQUIT: an immediate
// shutdown, every connection cut, no checkpoint) and starts it again on the
// same data directory, twice, while two effectors work through the same
// stream on one database: the server replays its write-ahead log, so every
// claim and result it acknowledged survives, and nothing is lost or executed
// twice.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.Start(t)
	_, url := pg.NewDatabase(t)
	restartMidRun(t, "postgres server", url, 4, pg.Restart)
}
