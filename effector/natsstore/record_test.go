package natsstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/beam-agents/toolreg/effector"
)

// FuzzDecode: any bytes under a key (another program's value, a torn or
// hostile one) decode without a panic, to a record or an error; a record
// the store writes decodes to itself.
func FuzzDecode(f *testing.F) {
	call := effector.NewCall("refund", []byte(`{"amount":1}`))
	for _, r := range []record{
		{tag: tagClaim, call: call, token: "0123456789abcdef0123456789abcdef", attempts: 2, deadline: time.UnixMilli(1700000000123), id: "intent-1"},
		{tag: tagDone, call: call, token: "t", attempts: 1, deadline: time.UnixMilli(1), id: "", result: []byte("\x00\xff result")},
		{tag: tagDone, call: call, token: "t", attempts: 1, id: "big", parts: 3, total: 3 << 20},
		{tag: tagReleased, call: call, token: "t", id: "r"},
	} {
		f.Add(r.append(nil))
	}
	f.Add([]byte("hello"))
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := decode(v)
		if err != nil {
			return
		}
		again, err := decode(r.append(nil))
		if err != nil {
			t.Fatalf("a decoded record, written again, does not decode: %v", err)
		}
		opts := cmp.Options{cmp.AllowUnexported(record{}), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
			cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })}
		if diff := cmp.Diff(r, again, opts); diff != "" {
			t.Fatalf("round trip (-first +second)\n%s", diff)
		}
	})
}
