package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/beam-agents/toolreg/effector/pgstore"
)

var migrateCommand = &command{
	name:  "migrate",
	args:  "postgres://URL",
	short: "create or upgrade the Postgres dedup store's and queue's tables",
	long: `Migrate brings the tables of the Postgres dedup store (effector/pgstore) and
intent queue (effector/pgqueue) in the database at URL up to the schema version this toolreg knows, creating
them in a new database, in one transaction: the database is at one version or
the next, never between. It is what pgstore.Migrate does; run it before
starting effectors whose pgstore.Open refuses the database, or let a service
call pgstore.Migrate itself. Several may run at once.

URL is a postgres:// or postgresql:// URL, or a key=value connection string,
as pgx reads them (PGHOST, PGUSER, PGPASSWORD and the other PG* variables
fill in what it leaves out).

The exit status is 0 when the database is at the current version, 1 when it
cannot be reached or its schema is newer than this toolreg knows, and 2 on a
usage error.
`,
	setup: func(fs *flag.FlagSet) func(*env, []string) int {
		timeout := fs.Duration("timeout", 30*time.Second, "give up after `d`")
		return func(e *env, args []string) int {
			if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
				fmt.Fprintln(e.stderr, "toolreg migrate: give the database's URL, such as toolreg migrate postgres://user@host/db")
				return exitUsage
			}
			ctx, cancel := context.WithTimeout(context.Background(), *timeout)
			defer cancel()
			pool, err := pgxpool.New(ctx, args[0])
			if err != nil {
				fmt.Fprintf(e.stderr, "toolreg migrate: %v\n", err)
				return exitUsage
			}
			defer pool.Close()
			if err := pgstore.Migrate(ctx, pool); err != nil {
				fmt.Fprintf(e.stderr, "toolreg migrate: %v\n", err)
				return exitFindings
			}
			fmt.Fprintf(e.stdout, "toolreg migrate: the database is at schema version %d\n", pgstore.SchemaVersion)
			return 0
		}
	},
}
