package effector

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/handedout"
)

// DefaultMaxLineBytes is the longest JSONL line a JSONLSource reads as an
// intent; a longer line is reported and skipped, never buffered whole.
const DefaultMaxLineBytes = 1 << 20

// JSONLSource reads intents from a JSONL stream, one intent a line in the
// JSON form of intent.Intent (see Intent.MarshalJSON). Blank lines are
// skipped; a line that is not an intent is delivered with Delivery.Err set,
// naming its line, and its bytes and offset, for Serve's entry dead-letter
// sink.
//
// A line is what ends in a newline. A last fragment without one (a writer
// that crashed or is still writing mid-line) is never read as a line nor
// checkpointed past: a file source waits for the rest (WithTornLineWait),
// and then stops with a *TornLineError, so that a restart reads the line
// from its start once it is whole; at the end of a stream (which is closed
// for good) the fragment is delivered with a *TornLineError as its Err.
//
// From a file opened with OpenJSONLFile, acknowledgements move a checkpoint
// kept beside the file, so a restarted effector resumes after the last line
// whose result was published, and delivers again every line after it (the
// store answers those that ran). From a plain stream (NewJSONLSource, such as
// stdin) acknowledgements are no-ops: the producer must resend intents that
// have no result line when an effector dies.
//
// Serve acknowledges a file's lines in batches: it takes every intent whose
// result was handed off by then, waits until their result lines are written
// and synced (one write and one fsync with JSONLSink), then saves the
// checkpoint once over them. The checkpoint is never saved before the results
// it covers are durable, and never passes a line not answered, however out
// of order concurrent workers answer them; a crash mid-batch leaves it before
// the batch, whose lines are delivered again. The batch adapts to the load:
// it is what gathered while the previous one was being synced and saved, and
// while other intents are still being processed it waits for their results
// until it holds 128 intents or its first has waited 1 ms (the most a batch
// waits to grow). A lone intent starts its batch at once, so it waits at most
// for the batch in progress (one write and fsync of the results and one
// checkpoint save: 1-2 ms measured here, more under load) before its own.
//
// A source reads and decodes up to 256 lines ahead of Receive, so that
// decoding runs beside the workers (at most 256 lines of WithMaxLineBytes
// each held at once). Lines read ahead are not acknowledged until Serve
// answers them.
type JSONLSource struct {
	name    string
	maxLine int
	lines   chan Delivery // filled by the reader goroutine
	done    chan struct{} // closed by Close
	closer  io.Closer
	once    sync.Once

	readErr error // the reader's final error, read after lines is closed

	ckpt     *checkpoint          // nil for a plain stream
	lineOf   handedout.Table[int] // a file's intents read and not acknowledged: their checkpoint index
	tornWait time.Duration        // how long a file source waits for a torn line's rest
}

// DefaultTornLineWait is how long a JSONL file source waits for the rest of
// a last line without a newline before it reports it.
const DefaultTornLineWait = 2 * time.Second

// TornLineError reports a last line without its newline: a writer crashed,
// or is still writing, mid-line. Nothing of it was read as an intent, and a
// file's checkpoint stays before it.
type TornLineError struct {
	Name   string // the source's name: the file's path, "stdin"
	Line   int    // its line number
	Offset int64  // where it starts, in bytes
	Len    int    // the bytes of it there are
}

func (e *TornLineError) Error() string {
	return fmt.Sprintf("effector: %s:%d (byte %d): the last line has %d bytes and no newline: its writer crashed or is still writing; it was not read, nor acknowledged: complete the line (or remove the fragment) and run again, which resumes at its start", e.Name, e.Line, e.Offset, e.Len)
}

// JSONLOption configures a JSONLSource.
type JSONLOption func(*jsonlConfig)

type jsonlConfig struct {
	maxLine    int
	checkpoint string
	tornWait   time.Duration
}

// WithTornLineWait sets how long OpenJSONLFile's source, at the end of the
// file, waits for the rest of a last line that has no newline, reading
// again as the file grows, before it stops with a *TornLineError: d after
// the line last grew, so a writer still writing a long line slowly is waited
// for. Default: DefaultTornLineWait. OpenJSONLFile refuses d < 0; 0 reports
// at once.
func WithTornLineWait(d time.Duration) JSONLOption {
	return func(c *jsonlConfig) { c.tornWait = d }
}

// WithMaxLineBytes sets the longest line read as an intent. Default:
// DefaultMaxLineBytes. OpenJSONLFile refuses n <= 0; NewJSONLSource, which
// returns no error, takes the default for it.
func WithMaxLineBytes(n int) JSONLOption {
	return func(c *jsonlConfig) { c.maxLine = n }
}

// WithCheckpointFile sets where OpenJSONLFile keeps its checkpoint. Default:
// the intents file's path with ".ack" appended.
func WithCheckpointFile(path string) JSONLOption {
	return func(c *jsonlConfig) { c.checkpoint = path }
}

// NewJSONLSource reads intents from r, a stream with no way to redeliver
// (stdin, a pipe): acknowledgements do nothing. name labels positions in logs
// and errors ("stdin:3").
func NewJSONLSource(r io.Reader, name string, opts ...JSONLOption) *JSONLSource {
	cfg := jsonlConfig{maxLine: DefaultMaxLineBytes}
	for _, o := range opts {
		o(&cfg)
	}
	s := newJSONLSource(name, cfg.maxLine, nil)
	go s.read(bufio.NewReader(r), 0, 0)
	return s
}

// OpenJSONLFile reads intents from the file at path, resuming after its
// checkpoint (see WithCheckpointFile) if there is one. Close it when done.
func OpenJSONLFile(path string, opts ...JSONLOption) (*JSONLSource, error) {
	cfg := jsonlConfig{maxLine: DefaultMaxLineBytes, checkpoint: path + ".ack", tornWait: DefaultTornLineWait}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxLine <= 0 {
		return nil, fmt.Errorf("effector: WithMaxLineBytes(%d): want a positive length", cfg.maxLine)
	}
	if cfg.tornWait < 0 {
		return nil, fmt.Errorf("effector: WithTornLineWait(%v): want zero or more", cfg.tornWait)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("effector: opening intents: %w", err)
	}
	ck, err := loadCheckpoint(cfg.checkpoint)
	if err != nil {
		f.Close()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("effector: opening intents: %w", err)
	}
	if ck.offset > fi.Size() {
		f.Close()
		return nil, fmt.Errorf("effector: checkpoint %s is at byte %d, past the end of %s (%d bytes): the file was replaced; move the checkpoint away to read it from the start", cfg.checkpoint, ck.offset, path, fi.Size())
	}
	if _, err := f.Seek(ck.offset, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("effector: opening intents: %w", err)
	}
	s := newJSONLSource(path, cfg.maxLine, ck)
	s.closer = f
	s.tornWait = cfg.tornWait
	go s.read(bufio.NewReader(f), ck.offset, ck.line)
	return s, nil
}

func newJSONLSource(name string, maxLine int, ck *checkpoint) *JSONLSource {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	return &JSONLSource{name: name, maxLine: maxLine, lines: make(chan Delivery, readAhead), done: make(chan struct{}), ckpt: ck}
}

// Receive returns the next line's delivery, io.EOF after the last line, or
// ctx's error.
func (s *JSONLSource) Receive(ctx context.Context) (Delivery, error) {
	if err := ctx.Err(); err != nil {
		return Delivery{}, err
	}
	select {
	case d, ok := <-s.lines:
		if !ok {
			if s.readErr != nil {
				return Delivery{}, s.readErr
			}
			return Delivery{}, io.EOF
		}
		return d, nil
	case <-ctx.Done():
		return Delivery{}, ctx.Err()
	}
}

// ReceiveBatch implements BatchSource: it waits for the next line's
// delivery as Receive does, then appends it and the lines already read
// (up to max in all) to buf. After the last line it returns what it has with
// io.EOF, or io.EOF alone.
func (s *JSONLSource) ReceiveBatch(ctx context.Context, max int, buf []Delivery) ([]Delivery, error) {
	d, err := s.Receive(ctx)
	if err != nil {
		return buf, err
	}
	buf = append(buf, d)
	for n := 1; n < max; n++ {
		select {
		case d, ok := <-s.lines:
			if !ok {
				if s.readErr != nil {
					return buf, s.readErr
				}
				return buf, io.EOF
			}
			buf = append(buf, d)
		default:
			return buf, nil
		}
	}
	return buf, nil
}

var _ BatchSource = (*JSONLSource)(nil)

// AckBatch implements BatchAcker for a file's deliveries: it marks every
// line of ds answered in the checkpoint, then saves the checkpoint once,
// and returns nil once the checkpoint on disk covers them all. It refuses a
// batch holding a delivery this source did not hand out or has already
// acknowledged, marking nothing (Serve then acknowledges each alone).
func (s *JSONLSource) AckBatch(ctx context.Context, ds []Delivery) error {
	if s.ckpt == nil {
		return nil // a plain stream's deliveries need no acknowledgement
	}
	idx := make([]int, len(ds))
	for k, d := range ds {
		i, ok := s.lineOf.Get(d.Intent)
		if !ok || d.Intent == nil {
			return fmt.Errorf("effector: %s: AckBatch was given the delivery of %s, which this source did not hand out or has acknowledged already; acknowledge it with its own Ack", s.name, d.Pos)
		}
		idx[k] = i
	}
	for _, i := range idx {
		s.ckpt.mark(i)
	}
	if err := s.ckpt.commit(); err != nil {
		return err
	}
	for _, d := range ds {
		s.lineOf.Delete(d.Intent)
	}
	return nil
}

var _ BatchAcker = (*JSONLSource)(nil)

// Close stops reading and closes the file, if OpenJSONLFile opened one.
func (s *JSONLSource) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		if s.closer != nil {
			err = s.closer.Close()
		}
	})
	return err
}

// read runs in its own goroutine, so that Receive can return at shutdown
// while a read from a stream blocks.
func (s *JSONLSource) read(r *bufio.Reader, offset int64, line int) {
	defer close(s.lines)
	// torn holds a last fragment without its newline, and tornN the bytes
	// it took, while the source waits for the rest; offset stays at its start.
	var torn []byte
	var buf []byte // the last line's array, reused
	var tornN int
	var tornLong bool
	var waited time.Duration // since the fragment last grew
	var tornSeen int         // the fragment's bytes when it last grew
	for {
		text, n, tooLong, err := readLine(r, s.maxLine, buf[:0])
		if cap(text) > cap(buf) {
			buf = text[:0] // reused for the next line: nothing keeps text but a clone
		}
		if torn != nil {
			tooLong = tornLong || tooLong || len(torn)+len(text) > s.maxLine
			text, n = appendLimited(torn, text, s.maxLine), n+tornN
			torn, tornN = nil, 0
		}
		if n == 0 && err != nil {
			if !errors.Is(err, io.EOF) {
				s.readErr = fmt.Errorf("effector: reading %s after line %d: %w", s.name, line, err)
			}
			return
		}
		if err != nil { // n > 0: a last line without its newline
			if !errors.Is(err, io.EOF) {
				s.readErr = fmt.Errorf("effector: reading %s after line %d: %w", s.name, line, err)
				return
			}
			if !tooLong && len(bytes.TrimSpace(text)) == 0 && (s.ckpt == nil || waited >= s.tornWait) {
				return // trailing space: no line, and nothing to checkpoint past
			}
			te := &TornLineError{Name: s.name, Line: line + 1, Offset: offset, Len: n}
			if s.ckpt == nil {
				// A stream's end is for good: dead-letter the fragment.
				d := Delivery{Pos: s.name + ":" + strconv.Itoa(line+1), Err: te, Bytes: bytes.Clone(text), Offset: offset}
				select {
				case s.lines <- d:
				case <-s.done:
				}
				return
			}
			if n > tornSeen { // it grew: its writer is alive
				waited, tornSeen = 0, n
			}
			if waited >= s.tornWait {
				s.readErr = te
				return
			}
			// Wait for the writer to finish the line; the reader reads on
			// from where it stopped.
			step := min(tornPoll, s.tornWait-waited)
			t := time.NewTimer(step)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return
			}
			waited += step
			torn, tornN, tornLong = append([]byte{}, text...), n, tooLong
			continue
		}
		waited, tornSeen = 0, 0
		start := offset
		line++
		offset += int64(n)
		d := Delivery{Pos: s.name + ":" + strconv.Itoa(line)}
		switch {
		case tooLong:
			d.Err = fmt.Errorf("effector: %s: line is longer than %d bytes; split it or raise WithMaxLineBytes", d.Pos, s.maxLine)
			d.Bytes, d.Offset = bytes.Clone(text), start
		case len(bytes.TrimSpace(text)) == 0:
			if s.ckpt != nil {
				s.ckpt.add(offset, line, true)
			}
			continue
		default:
			in := new(intent.Intent)
			if err := in.UnmarshalJSON(text); err != nil {
				d.Err = fmt.Errorf("effector: %s: %w", d.Pos, err)
				d.Bytes, d.Offset = bytes.Clone(text), start
			} else { // UnmarshalJSON keeps nothing of text
				d.Intent = in
			}
		}
		if s.ckpt != nil {
			i := s.ckpt.add(offset, line, false)
			in := d.Intent
			d.Ack = func(ctx context.Context) error {
				if err := s.ckpt.ack(i); err != nil {
					return err
				}
				if in != nil {
					s.lineOf.Delete(in)
				}
				return nil
			}
			if in != nil {
				s.lineOf.Put(in, i)
				d.Acker = s
			}
		}
		select {
		case s.lines <- d:
		case <-s.done:
			return
		}
	}
}

// readAhead is how many lines a JSONLSource reads and decodes ahead of
// Receive, so that decoding runs beside the workers rather than between
// their intents. A line read ahead and never received is never acknowledged:
// the checkpoint stays before it.
const readAhead = 256

// tornPoll is how often a file source reads again for a torn line's rest.
const tornPoll = 20 * time.Millisecond

// appendLimited appends b to dst, keeping at most max bytes in all.
func appendLimited(dst, b []byte, limit int) []byte {
	if room := limit - len(dst); room < len(b) {
		b = b[:max(room, 0)]
	}
	return append(dst, b...)
}

// readLine reads one line, without its newline, keeping at most max bytes:
// n counts every byte consumed, tooLong says the line was longer than max.
// A line cut short by an error (io.EOF: no newline) comes with the error.
// The line is appended to line (empty), whose array it may reuse.
func readLine(r *bufio.Reader, max int, line []byte) (_ []byte, n int, tooLong bool, err error) {
	for {
		frag, err := r.ReadSlice('\n')
		n += len(frag)
		if !tooLong {
			if len(line)+len(frag) > max+1 { // +1: the newline
				tooLong = true
			}
		}
		line = appendLimited(line, frag, max+1)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > max { // no newline: the byte allowed for it is one too many
			line, tooLong = line[:max], true
		}
		return line, n, tooLong, err
	}
}

// checkpoint is the contiguous prefix of a file's lines that is acknowledged:
// the byte offset and line number after it, kept in a small file written
// atomically.
type checkpoint struct {
	path string

	mu       sync.Mutex
	offset   int64
	line     int
	base     int       // index in the whole file's sequence of pending[0]
	pending  []ckEntry // lines read after offset, in order
	gen      int       // bumped whenever offset moves
	savedGen int       // the gen the file on disk holds
	saves    int       // saves done, for tests

	saveMu sync.Mutex // one save at a time; taken before mu
}

type ckEntry struct {
	end   int64
	line  int
	acked bool
}

func loadCheckpoint(path string) (*checkpoint, error) {
	ck := &checkpoint{path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ck, nil
	}
	if err != nil {
		return nil, fmt.Errorf("effector: reading checkpoint: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		ck.offset, err = strconv.ParseInt(f[0], 10, 64)
		if err == nil {
			ck.line, err = strconv.Atoi(f[1])
		}
	}
	if len(f) != 2 || err != nil || ck.offset < 0 || ck.line < 0 {
		return nil, fmt.Errorf("effector: checkpoint %s holds %q, want \"<byte offset> <line number>\": fix or remove it", path, truncateForError(b))
	}
	return ck, nil
}

func truncateForError(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// add records a line read up to byte end and returns its index for ack.
func (c *checkpoint) add(end int64, line int, acked bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = append(c.pending, ckEntry{end: end, line: line, acked: acked})
	return c.base + len(c.pending) - 1
}

// ack marks line i answered and, if that extends the answered prefix, moves
// the checkpoint, and returns once the checkpoint on disk covers it.
//
// Saves are group-committed: acks that move the checkpoint while a save is
// under way wait for it, and then one save covers them all, so concurrent
// workers share the fsyncs and the rename. A checkpoint saved is never past a
// line not acknowledged, and a line is acknowledged only once its result is
// published (durably, with JSONLSink on a file).
func (c *checkpoint) ack(i int) error {
	c.mark(i)
	return c.commit()
}

// mark marks line i answered and, if that extends the answered prefix,
// moves the checkpoint in memory, for commit to save. Serve marks a batch's
// lines, then commits once.
func (c *checkpoint) mark(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j := i - c.base
	if j >= 0 && j < len(c.pending) {
		c.pending[j].acked = true
	}
	// j < 0 is a line already behind the checkpoint in memory: acknowledged
	// twice, or the retry of an ack whose save failed. That retry must not
	// succeed until the checkpoint is on disk (commit sees to it), or the
	// line would be acknowledged and still delivered again after a restart.
	k := 0
	for k < len(c.pending) && c.pending[k].acked {
		k++
	}
	if k > 0 {
		c.offset, c.line = c.pending[k-1].end, c.pending[k-1].line
		c.pending = c.pending[k:]
		c.base += k
		c.gen++
	}
}

// commit returns once the checkpoint on disk is at least where mark has
// moved it in memory by the time commit was called.
func (c *checkpoint) commit() error {
	c.mu.Lock()
	want, durable := c.gen, c.savedGen >= c.gen
	c.mu.Unlock()
	if durable {
		return nil
	}
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	c.mu.Lock()
	if c.savedGen >= want { // a save while this ack waited covered it
		c.mu.Unlock()
		return nil
	}
	offset, line, gen := c.offset, c.line, c.gen
	c.mu.Unlock()
	if err := c.save(offset, line); err != nil {
		return err
	}
	c.mu.Lock()
	c.savedGen = max(c.savedGen, gen)
	c.saves++
	c.mu.Unlock()
	return nil
}

// save writes the checkpoint durably: a temporary file, fsynced, renamed over
// the old one, then the directory fsynced, so a crash leaves the old or the
// new checkpoint, never a torn one.
//
// Each step is needed. Without the file's fsync before the rename, a crash
// could leave the new name on an empty or partly written file. Without the
// directory's fsync, a crash could lose the rename and bring back the
// previous checkpoint: still safe (every checkpoint written covers only
// durable results, so an older one only delivers a batch again), but an
// acknowledgement would return before its checkpoint is durable, and that is
// what ack promises. Serve saves once per batch, so these two fsyncs are
// shared by every intent of the batch (under load, fewer than one per 100).
func (c *checkpoint) save(offset int64, line int) error {
	tmp := c.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("effector: saving checkpoint: %w", err)
	}
	_, err = fmt.Fprintf(f, "%d %d\n", offset, line)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(c.path))
	}
	if err != nil {
		return fmt.Errorf("effector: saving checkpoint %s: %w", c.path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// JSONLSink writes results as JSONL, one result a line in the JSON form of
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
type JSONLSink struct {
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

// NewJSONLSink writes results to w, such as os.Stdout or a file opened with
// os.O_APPEND. A regular file that ends in part of a line (a write that a
// full disk cut short and that was never completed, a power loss that kept
// part of a write) gets a newline before the first result, so that the
// fragment stays a line of its own, for consumers to skip, and no result is
// glued onto it.
func NewJSONLSink(w io.Writer) *JSONLSink {
	s := &JSONLSink{w: w}
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

var _ StagedSink = (*JSONLSink)(nil)

// Publish writes res as one line.
func (s *JSONLSink) Publish(ctx context.Context, res intent.Result) error {
	wait, err := s.Stage(ctx, res)
	if err != nil {
		return err
	}
	return wait()
}

// Stage buffers res's line (or, with nothing to sync, writes it) and returns
// what waits until it is written and synced: Publish in two steps, so that
// Serve can stage results in order and wait for their writes and fsyncs,
// shared, while its workers go on (StagedSink).
func (s *JSONLSink) Stage(ctx context.Context, res intent.Result) (wait func() error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("effector: encoding the result of intent %q: %w", res.IntentID, err)
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
			return nil, fmt.Errorf("effector: writing the result of intent %q: %w", res.IntentID, err)
		}
		return func() error { return nil }, nil
	}
	s.mu.Unlock()
	return func() error { return s.syncTo(seq, res.IntentID) }, nil
}

// syncTo returns once line seq is written and synced, writing what is
// buffered and fsyncing unless a write and fsync that began after it was
// staged have done it.
func (s *JSONLSink) syncTo(seq uint64, id string) error {
	if s.synced.Load() >= seq && seq > s.lostThrough.Load() {
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for _, r := range s.lost {
		if seq > r[0] && seq <= r[1] {
			return fmt.Errorf("effector: syncing the result of intent %q: an fsync that was to sync it failed, so it may not be on disk", id)
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
			return fmt.Errorf("effector: writing the result of intent %q: %w", id, err)
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
		return fmt.Errorf("effector: syncing the result of intent %q: %w", id, err)
	}
	s.syncs.Add(1)
	s.synced.Store(upTo)
	return nil
}
