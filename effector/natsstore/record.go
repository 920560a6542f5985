package natsstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/beam-agents/toolreg/effector"
)

// The record of an intent is one KV value, told apart by its first byte:
//
//	'c' a claim:    the owner's token, its attempts, the lease's end
//	'd' done:       the completing owner's token, the result's expiry, the result
//	                (inline, or the count, length and digest of its parts)
//	'r' released:   the released token, the attempts not given back
//
// Every record holds the call it was claimed for and the intent id (for
// Records and `toolreg intents`: the key is a digest of the id). Times are
// Unix milliseconds of the writer's clock.
const (
	tagClaim    = 'c'
	tagDone     = 'd'
	tagReleased = 'r'
)

// record is an intent's record, decoded.
type record struct {
	tag      byte
	call     effector.Call
	token    string
	attempts int
	deadline time.Time // the lease's end ('c'), the result's expiry ('d')
	id       string
	// 'd' only: the result inline, or in parts.
	parts     int
	total     int
	digest    [sha256.Size]byte
	result    []byte
	revision  uint64 // the KV revision it was read at
	hasRecord bool
}

// MaxIDBytes is the longest intent id the store takes: the id is kept in
// its record, which must fit one message. The key is a digest of the id, so
// no id, however long or whatever its bytes, reaches a subject.
const MaxIDBytes = 16 << 10

func (r *record) append(b []byte) []byte {
	b = append(b, r.tag)
	b = append(b, byte(len(r.call.Tool)))
	b = append(b, r.call.Tool...)
	b = append(b, r.call.Digest[:]...)
	b = append(b, byte(len(r.token)))
	b = append(b, r.token...)
	b = binary.AppendUvarint(b, uint64(r.attempts))
	var ms int64
	if !r.deadline.IsZero() {
		ms = r.deadline.UnixMilli()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(ms))
	b = binary.AppendUvarint(b, uint64(len(r.id)))
	b = append(b, r.id...)
	if r.tag == tagDone {
		b = binary.AppendUvarint(b, uint64(r.parts))
		if r.parts > 0 {
			b = binary.AppendUvarint(b, uint64(r.total))
			b = append(b, r.digest[:]...)
		} else {
			b = append(b, r.result...)
		}
	}
	return b
}

var errCorrupt = errors.New("not a record this store wrote")

// decode reads v into r. The result, if inline, is copied.
func decode(v []byte) (record, error) {
	var r record
	if len(v) < 2 {
		return r, errCorrupt
	}
	r.tag = v[0]
	if r.tag != tagClaim && r.tag != tagDone && r.tag != tagReleased {
		return r, errCorrupt
	}
	n := int(v[1])
	v = v[2:]
	if len(v) < n+sha256.Size+1 || n > effector.MaxCallToolBytes {
		return r, errCorrupt
	}
	r.call.Tool = string(v[:n])
	copy(r.call.Digest[:], v[n:n+sha256.Size])
	v = v[n+sha256.Size:]
	n = int(v[0])
	v = v[1:]
	if len(v) < n {
		return r, errCorrupt
	}
	r.token = string(v[:n])
	v = v[n:]
	a, k := binary.Uvarint(v)
	if k <= 0 || a > 1<<31 {
		return r, errCorrupt
	}
	r.attempts = int(a)
	v = v[k:]
	if len(v) < 8 {
		return r, errCorrupt
	}
	if ms := int64(binary.BigEndian.Uint64(v)); ms != 0 {
		r.deadline = time.UnixMilli(ms)
	}
	v = v[8:]
	l, k := binary.Uvarint(v)
	if k <= 0 || l > uint64(len(v)-k) {
		return r, errCorrupt
	}
	r.id = string(v[k : k+int(l)])
	v = v[k+int(l):]
	if r.tag == tagDone {
		p, k := binary.Uvarint(v)
		if k <= 0 || p > 1<<20 {
			return r, errCorrupt
		}
		r.parts = int(p)
		v = v[k:]
		if r.parts > 0 {
			t, k := binary.Uvarint(v)
			if k <= 0 || t > 1<<40 || len(v)-k != sha256.Size {
				return r, errCorrupt
			}
			r.total = int(t)
			copy(r.digest[:], v[k:])
		} else {
			r.result = append([]byte{}, v...)
		}
	}
	r.hasRecord = true
	return r, nil
}

// key is the KV key of intentID's record: "i." and the hex SHA-256 of the
// id. A digest takes any id, of any length and any bytes, to a valid key of
// fixed length: ids are not escaped, because an escaped id can push the
// subject past the server's 4 KiB limit on a protocol line (the server then
// closes the connection: one intent would stop every worker on it), and
// escapes that fold white space or case would give two ids one record.
func key(intentID string) string {
	d := sha256.Sum256([]byte(intentID))
	return "i." + hex.EncodeToString(d[:])
}

// partKey is the key of part n of the result completed with token for the
// intent whose record is at k ("i.<hex>"): each completion writes its own
// parts, so a stale owner's parts never mix with the current one's.
func partKey(k, token string, n int) string {
	return "p." + k[2:] + "." + token + "." + fmt.Sprint(n)
}
