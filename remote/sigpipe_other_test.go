//go:build !unix

package remote_test

// keepWritingAfterEPIPE: there is no SIGPIPE; a write to a closed pipe
// fails.
func keepWritingAfterEPIPE() {}
