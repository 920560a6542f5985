package loader

import (
	"bytes"
	"strings"
	"testing"
)

// sized reports a size that may be stale: the file changed after it was
// opened.
type sized struct {
	*strings.Reader
	n int64
}

func (s sized) size() int64 { return s.n }

func TestReadAllReadsWhatIsThereWhateverTheSizeSaid(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("name: x\n", 300)
	for _, n := range []int64{0, 1, 7, int64(len(text)) - 1, int64(len(text)), int64(len(text)) + 100, MaxFileSize + 1} {
		b, err := readAll(sized{strings.NewReader(text), n})
		if err != nil || !bytes.Equal(b, []byte(text)) {
			t.Errorf("size %d: read %d bytes (%v), want the %d there", n, len(b), err, len(text))
		}
	}
	big := strings.Repeat("x", MaxFileSize+10)
	if b, _ := readAll(sized{strings.NewReader(big), 10}); len(b) != MaxFileSize+1 {
		t.Errorf("a file grown past the limit: read %d bytes, want %d (one past the limit, to refuse it)", len(b), MaxFileSize+1)
	}
}
