// Command mcp-server serves every tool of toolreg's example manifests over the
// Model Context Protocol with package mcpserver: the read-only ones
// (lookup_customer, lookup_order, search_orders, search_kb) run inline; the
// side-effecting ones (refund_order, send_email) are staged as intents and
// executed once by the effector. A manifest it has no function for stops it
// at startup, as the binder refuses to start.
//
//	go run ./examples/mcp-server [-manifests dir] [-transport stdio|http] [-addr host:port] [-state dir]
//
// With -state, the effector's dedup store is SQLite (dir/effects.db), so a
// call retried with the same idempotency key is not executed again even
// after a restart, and every effect actually executed is appended to
// dir/effects.log, one JSON line each: count its lines to count effects.
// Without -state the store is in memory and nothing is written.
//
// Over stdio, stdout carries the protocol; logs go to stderr.
package main
