package jsonl

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
)

// Sink writes results as JSONL, one result a line in the JSON form of
// intent.Result. Writing to a regular file, it fsyncs before Publish returns,
// so a published result survives a crash.
//
// On a regular file, writes and fsyncs are group-committed: Publish buffers
// its line, and the first Publish to find no fsync under way writes every
// line buffered by then in one write and fsyncs once; Publishes that come
// while it works wait for it, then the next of them writes and fsyncs
// whatever gathered meanwhile. So the batch adapts to the load: a lone
// result is written and synced at once (there is no timer to wait for), and
// under load one write and one fsync cover every line that arrived during
// the previous fsync. Publish returns only once its own line is synced.
// Anywhere else (a pipe, a terminal) each line is written at once, and
// there is nothing to sync.
//
// A write that fails part way keeps the line's unwritten rest, which the
// next write puts first, so that lines stay whole; the Publish whose batch
// it was fails, and Serve publishes its result again (a duplicate line,
// harmless to consumers, which key results by intent id).
//
// An fsync that fails fails every Publish whose line it was to sync, though
// a later fsync succeeds: the kernel reports a writeback error once and may
// have dropped the pages it could not write, so a later fsync's success says
// nothing of them. Serve publishes those results again.
type Sink struct {
	mu      sync.Mutex
	w       io.Writer
	sync    func() error
	buf     []byte // bytes not yet written, whole lines but for a failed write's rest first
	written uint64 // lines staged

	syncMu sync.Mutex    // one write and fsync at a time; taken before mu
	spare  []byte        // the buffer the last write emptied, reused; under syncMu
	synced atomic.Uint64 // lines known synced
	syncs  atomic.Int64  // fsyncs done, for tests and benchmarks

	// lost holds the lines (lo, hi] a failed fsync was to sync, under
	// syncMu, and lostThrough the highest hi: their Publishes fail, whatever
	// fsync succeeds later. Fsyncs failing in a row share an entry, so it
	// holds one per run of failures.
	lost        [][2]uint64
	lostThrough atomic.Uint64
}

// NewSink writes results to w, such as os.Stdout or a file opened with
// os.O_APPEND. A regular file that ends in part of a line (a write that a
// full disk cut short and that was never completed, a power loss that kept
// part of a write) gets a newline before the first result, so that the
// fragment stays a line of its own, for consumers to skip, and no result is
// glued onto it.
func NewSink(w io.Writer) *Sink {
	s := &Sink{w: w}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			s.sync = f.Sync
			if fi.Size() > 0 && !endsInNewline(f, fi.Size()) {
				s.buf = append(s.buf, '\n')
			}
		}
	}
	return s
}

// endsInNewline reports whether the file f, of size bytes, ends in a
// newline: true if it cannot tell.
func endsInNewline(f *os.File, size int64) bool {
	var b [1]byte
	if _, err := f.ReadAt(b[:], size-1); err == nil {
		return b[0] == '\n'
	}
	r, err := os.Open(f.Name()) // f was opened write-only, as O_APPEND files are
	if err != nil {
		return true
	}
	defer r.Close()
	if _, err := r.ReadAt(b[:], size-1); err != nil {
		return true
	}
	return b[0] == '\n'
}

var _ effector.StagedSink = (*Sink)(nil)

// Publish writes res as one line.
func (s *Sink) Publish(ctx context.Context, res intent.Result) error {
	wait, err := s.Stage(ctx, res)
	if err != nil {
		return err
	}
	return wait()
}

// Stage buffers res's line (or, with nothing to sync, writes it) and returns
// what waits until it is written and synced: Publish in two steps, so that
// effector.Serve can stage results in order and wait for their writes and fsyncs,
// shared, while its workers go on (effector.StagedSink).
func (s *Sink) Stage(ctx context.Context, res intent.Result) (wait func() error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("jsonl: encoding the result of intent %q: %w", res.IntentID, err)
	}
	s.mu.Lock()
	s.buf = append(append(s.buf, b...), '\n')
	s.written++
	seq := s.written
	if s.sync == nil {
		// Nothing to sync: write at once, so consumers see each result.
		n, err := s.w.Write(s.buf)
		s.buf = s.buf[:copy(s.buf, s.buf[n:])]
		s.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("jsonl: writing the result of intent %q: %w", res.IntentID, err)
		}
		return func() error { return nil }, nil
	}
	s.mu.Unlock()
	return func() error { return s.syncTo(seq, res.IntentID) }, nil
}

// syncTo returns once line seq is written and synced, writing what is
// buffered and fsyncing unless a write and fsync that began after it was
// staged have done it.
func (s *Sink) syncTo(seq uint64, id string) error {
	if s.synced.Load() >= seq && seq > s.lostThrough.Load() {
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for _, r := range s.lost {
		if seq > r[0] && seq <= r[1] {
			return fmt.Errorf("jsonl: syncing the result of intent %q: an fsync that was to sync it failed, so it may not be on disk", id)
		}
	}
	if s.synced.Load() >= seq {
		return nil // a batch while this one waited covered its line
	}
	s.mu.Lock()
	upTo := s.written
	data := s.buf
	s.buf = s.spare[:0]
	s.mu.Unlock()
	if len(data) > 0 {
		n, err := s.w.Write(data)
		if err != nil {
			// Keep the unwritten rest first, so the next write completes
			// the line it cut.
			s.mu.Lock()
			s.buf = append(data[:copy(data, data[n:])], s.buf...)
			s.mu.Unlock()
			return fmt.Errorf("jsonl: writing the result of intent %q: %w", id, err)
		}
	}
	s.spare = data
	if err := s.sync(); err != nil {
		// Every line written since the last fsync that succeeded may be
		// lost, and a later fsync will not say so.
		if lo := s.synced.Load(); upTo > lo {
			if k := len(s.lost); k > 0 && s.lost[k-1][0] == lo {
				s.lost[k-1][1] = upTo // fsyncs failing in a row: one range
			} else {
				s.lost = append(s.lost, [2]uint64{lo, upTo})
			}
			s.lostThrough.Store(upTo)
		}
		return fmt.Errorf("jsonl: syncing the result of intent %q: %w", id, err)
	}
	s.syncs.Add(1)
	s.synced.Store(upTo)
	return nil
}
