// Package faulttest is the proof of execute-once under faults. Its tests build
// the effector service in ./effectord, run it as real processes against a real
// SQLite file, a real redis-server (package internal/redistest) or a real
// Postgres server (package internal/pgtest), and a fake downstream service
// that records every call with its idempotency key, and then break things:
// SIGKILL an effector at each named point and restart it, SIGSTOP one past its
// lease while another takes over, run four at once on one store over a stream
// with duplicates, restart redis-server or the Postgres server mid-run, stop an
// effector with SIGTERM while its tools run (its callers' contexts end), fail
// the store's result writes for a while (a full disk, freed later). After
// each, the tests read the downstream's log and the results files and check
// that no intent was lost and none executed twice where the store can prevent
// it, and count the duplicates where it cannot.
//
// A summary table (scenario, intents, executions, duplicates, lost) is logged,
// and written to the file named by $FAULTTEST_SUMMARY when it is set;
// scripts/fault-table.sh puts it in the README.
//
// The package has no API; it holds only tests and the effectord command.
package faulttest
