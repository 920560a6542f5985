// Package faulttest proves execute-once by killing things: its tests run the
// test binary itself as real effector processes (Serve over checkpointed JSONL
// files) against a real SQLite file or redis-server and a fake downstream
// service that records every call with its idempotency key (the intent id),
// and SIGKILL, SIGSTOP or restart them at named points.
//
// The package has no API; it holds only tests.
package faulttest
