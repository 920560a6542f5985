package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/beam-agents/toolreg/effector"
	"github.com/beam-agents/toolreg/intent"
	"github.com/beam-agents/toolreg/internal/handedout"
)

// DefaultMaxLineBytes is the longest JSONL line a Source reads as an
// intent; a longer line is reported and skipped, never buffered whole.
const DefaultMaxLineBytes = 1 << 20

// Source reads intents from a JSONL stream, one intent a line in the JSON
// form of intent.Intent (see Intent.MarshalJSON). Blank lines are skipped; a
// line that is not an intent is delivered with effector.Delivery.Err set,
// naming its line, and its bytes and offset, for effector.Serve's entry
// dead-letter sink (effector.WithEntryDeadLetter).
//
// A line is what ends in a newline. A last fragment without one (a writer
// that crashed or is still writing mid-line) is never read as a line nor
// checkpointed past: a file source waits for the rest (WithTornLineWait),
// and then stops with a *TornLineError, so that a restart reads the line
// from its start once it is whole; at the end of a stream (which is closed
// for good) the fragment is delivered with a *TornLineError as its Err.
//
// From a file opened with OpenFile, acknowledgements move a checkpoint
// kept beside the file, so a restarted effector resumes after the last line
// whose result was published, and delivers again every line after it (the
// store answers those that ran). From a plain stream (NewSource, such as
// stdin) acknowledgements are no-ops: the producer must resend intents that
// have no result line when an effector dies.
//
// effector.Serve acknowledges a file's lines in batches (effector.BatchAcker):
// it takes every intent whose result was handed off by then, waits until
// their result lines are written and synced (one write and one fsync with
// Sink), then saves the checkpoint once over them. The checkpoint is never saved before the results
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
type Source struct {
	name    string
	maxLine int
	lines   chan effector.Delivery // filled by the reader goroutine
	done    chan struct{}          // closed by Close
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
	return fmt.Sprintf("jsonl: %s:%d (byte %d): the last line has %d bytes and no newline: its writer crashed or is still writing; it was not read, nor acknowledged: complete the line (or remove the fragment) and run again, which resumes at its start", e.Name, e.Line, e.Offset, e.Len)
}

// Option configures a Source.
type Option func(*config)

type config struct {
	maxLine    int
	checkpoint string
	tornWait   time.Duration
}

// WithTornLineWait sets how long OpenFile's source, at the end of the
// file, waits for the rest of a last line that has no newline, reading
// again as the file grows, before it stops with a *TornLineError: d after
// the line last grew, so a writer still writing a long line slowly is waited
// for. Default: DefaultTornLineWait. OpenFile refuses d < 0; 0 reports
// at once.
func WithTornLineWait(d time.Duration) Option {
	return func(c *config) { c.tornWait = d }
}

// WithMaxLineBytes sets the longest line read as an intent. Default:
// DefaultMaxLineBytes. OpenFile refuses n <= 0; NewSource, which
// returns no error, takes the default for it.
func WithMaxLineBytes(n int) Option {
	return func(c *config) { c.maxLine = n }
}

// WithCheckpointFile sets where OpenFile keeps its checkpoint. Default:
// the intents file's path with ".ack" appended.
func WithCheckpointFile(path string) Option {
	return func(c *config) { c.checkpoint = path }
}

// NewSource reads intents from r, a stream with no way to redeliver
// (stdin, a pipe): acknowledgements do nothing. name labels positions in logs
// and errors ("stdin:3").
func NewSource(r io.Reader, name string, opts ...Option) *Source {
	cfg := config{maxLine: DefaultMaxLineBytes}
	for _, o := range opts {
		o(&cfg)
	}
	s := newSource(name, cfg.maxLine, nil)
	go s.read(bufio.NewReader(r), 0, 0)
	return s
}

// OpenFile reads intents from the file at path, resuming after its
// checkpoint (see WithCheckpointFile) if there is one. Close it when done.
func OpenFile(path string, opts ...Option) (*Source, error) {
	cfg := config{maxLine: DefaultMaxLineBytes, checkpoint: path + ".ack", tornWait: DefaultTornLineWait}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.maxLine <= 0 {
		return nil, fmt.Errorf("jsonl: WithMaxLineBytes(%d): want a positive length", cfg.maxLine)
	}
	if cfg.tornWait < 0 {
		return nil, fmt.Errorf("jsonl: WithTornLineWait(%v): want zero or more", cfg.tornWait)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("jsonl: opening intents: %w", err)
	}
	ck, err := loadCheckpoint(cfg.checkpoint)
	if err != nil {
		f.Close()
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("jsonl: opening intents: %w", err)
	}
	if ck.offset > fi.Size() {
		f.Close()
		return nil, fmt.Errorf("jsonl: checkpoint %s is at byte %d, past the end of %s (%d bytes): the file was replaced; move the checkpoint away to read it from the start", cfg.checkpoint, ck.offset, path, fi.Size())
	}
	if _, err := f.Seek(ck.offset, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("jsonl: opening intents: %w", err)
	}
	s := newSource(path, cfg.maxLine, ck)
	s.closer = f
	s.tornWait = cfg.tornWait
	go s.read(bufio.NewReader(f), ck.offset, ck.line)
	return s, nil
}

func newSource(name string, maxLine int, ck *checkpoint) *Source {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	return &Source{name: name, maxLine: maxLine, lines: make(chan effector.Delivery, readAhead), done: make(chan struct{}), ckpt: ck}
}

// Receive returns the next line's delivery, io.EOF after the last line, or
// ctx's error.
func (s *Source) Receive(ctx context.Context) (effector.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return effector.Delivery{}, err
	}
	select {
	case d, ok := <-s.lines:
		if !ok {
			if s.readErr != nil {
				return effector.Delivery{}, s.readErr
			}
			return effector.Delivery{}, io.EOF
		}
		return d, nil
	case <-ctx.Done():
		return effector.Delivery{}, ctx.Err()
	}
}

// ReceiveBatch implements effector.BatchSource: it waits for the next line's
// delivery as Receive does, then appends it and the lines already read
// (up to max in all) to buf. After the last line it returns what it has with
// io.EOF, or io.EOF alone.
func (s *Source) ReceiveBatch(ctx context.Context, max int, buf []effector.Delivery) ([]effector.Delivery, error) {
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

var _ effector.BatchSource = (*Source)(nil)

// AckBatch implements effector.BatchAcker for a file's deliveries: it marks every
// line of ds answered in the checkpoint, then saves the checkpoint once,
// and returns nil once the checkpoint on disk covers them all. It refuses a
// batch holding a delivery this source did not hand out or has already
// acknowledged, marking nothing (Serve then acknowledges each alone).
func (s *Source) AckBatch(ctx context.Context, ds []effector.Delivery) error {
	if s.ckpt == nil {
		return nil // a plain stream's deliveries need no acknowledgement
	}
	idx := make([]int, len(ds))
	for k, d := range ds {
		i, ok := s.lineOf.Get(d.Intent)
		if !ok || d.Intent == nil {
			return fmt.Errorf("jsonl: %s: AckBatch was given the delivery of %s, which this source did not hand out or has acknowledged already; acknowledge it with its own Ack", s.name, d.Pos)
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

var _ effector.BatchAcker = (*Source)(nil)

// Close stops reading and closes the file, if OpenFile opened one.
func (s *Source) Close() error {
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
func (s *Source) read(r *bufio.Reader, offset int64, line int) {
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
				s.readErr = fmt.Errorf("jsonl: reading %s after line %d: %w", s.name, line, err)
			}
			return
		}
		if err != nil { // n > 0: a last line without its newline
			if !errors.Is(err, io.EOF) {
				s.readErr = fmt.Errorf("jsonl: reading %s after line %d: %w", s.name, line, err)
				return
			}
			if !tooLong && len(bytes.TrimSpace(text)) == 0 && (s.ckpt == nil || waited >= s.tornWait) {
				return // trailing space: no line, and nothing to checkpoint past
			}
			te := &TornLineError{Name: s.name, Line: line + 1, Offset: offset, Len: n}
			if s.ckpt == nil {
				// A stream's end is for good: dead-letter the fragment.
				d := effector.Delivery{Pos: s.name + ":" + strconv.Itoa(line+1), Err: te, Bytes: bytes.Clone(text), Offset: offset}
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
		d := effector.Delivery{Pos: s.name + ":" + strconv.Itoa(line)}
		switch {
		case tooLong:
			d.Err = fmt.Errorf("jsonl: %s: line is longer than %d bytes; split it or raise WithMaxLineBytes", d.Pos, s.maxLine)
			d.Bytes, d.Offset = bytes.Clone(text), start
		case len(bytes.TrimSpace(text)) == 0:
			if s.ckpt != nil {
				s.ckpt.add(offset, line, true)
			}
			continue
		default:
			in := new(intent.Intent)
			if err := in.UnmarshalJSON(text); err != nil {
				d.Err = fmt.Errorf("jsonl: %s: %w", d.Pos, err)
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

// readAhead is how many lines a Source reads and decodes ahead of
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
