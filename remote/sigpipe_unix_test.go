//go:build unix

package remote_test

import (
	"os"
	"os/signal"
	"syscall"
)

// keepWritingAfterEPIPE makes a write to a stdout whose reader is gone
// return EPIPE instead of killing the process, so a test server can say how
// much it wrote.
func keepWritingAfterEPIPE() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }
