package jsonl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

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
		return nil, fmt.Errorf("jsonl: reading checkpoint: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		ck.offset, err = strconv.ParseInt(f[0], 10, 64)
		if err == nil {
			ck.line, err = strconv.Atoi(f[1])
		}
	}
	if len(f) != 2 || err != nil || ck.offset < 0 || ck.line < 0 {
		return nil, fmt.Errorf("jsonl: checkpoint %s holds %q, want \"<byte offset> <line number>\": fix or remove it", path, truncateForError(b))
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
// published (durably, with Sink on a file).
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
		return fmt.Errorf("jsonl: saving checkpoint: %w", err)
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
		return fmt.Errorf("jsonl: saving checkpoint %s: %w", c.path, err)
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
