package jsonl

import "io"

// HookSink replaces s's writer and fsync, for tests that fail writes or
// "crash" between a write and its fsync: w wraps the writer, sync the fsync.
func HookSink(s *Sink, w func(io.Writer) io.Writer, sync func(real func() error) error) {
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

// Fsyncs returns the fsyncs a sink and a file source's checkpoint have
// done: one per sink batch, two per checkpoint save (the file's and its
// directory's), for benchmarks to report beside their floors'.
func Fsyncs(sink *Sink, src *Source) int64 {
	n := sink.syncs.Load()
	if src.ckpt != nil {
		src.ckpt.mu.Lock()
		n += 2 * int64(src.ckpt.saves)
		src.ckpt.mu.Unlock()
	}
	return n
}

// Staged returns how many result lines s has taken (Stage or Publish),
// written or not.
func Staged(s *Sink) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}
