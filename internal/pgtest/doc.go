// Package pgtest starts a real PostgreSQL server for tests: Debian's
// postgresql 15 binaries (initdb, postgres) in a temporary directory,
// listening only on a unix socket in that directory, stopped in t.Cleanup.
// When the test runs as root (as CI does) the server runs as the system user
// postgres, which the Debian package creates, because postgres refuses to run
// as root. It fails the test, never skips it, when the binaries are missing:
// tests that quietly skip prove nothing in CI.
package pgtest
