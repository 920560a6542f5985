package effector

import "io"

// HookJSONLSink replaces s's writer and fsync, for tests that fail writes or
// "crash" between a write and its fsync: w wraps the writer, sync the fsync.
func HookJSONLSink(s *JSONLSink, w func(io.Writer) io.Writer, sync func(real func() error) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w != nil {
		s.w = w(s.w)
	}
	if sync != nil {
		real := s.sync
		s.sync = func() error { return sync(real) }
	}
}
