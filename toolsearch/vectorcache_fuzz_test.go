package toolsearch

import (
	"crypto/sha256"
	"os"
	"slices"
	"testing"
)

// FuzzVectorCache: whatever bytes the cache file holds (torn, damaged,
// hostile), opening it does not fail or panic, keeps only whole records
// whose checksum holds (so a record written and read back is the same
// vector), and leaves a file that takes new records and reads them back.
func FuzzVectorCache(f *testing.F) {
	good := func(vs ...[]float32) []byte {
		dir := f.TempDir()
		c, _, err := openVectorCache(dir, "m")
		if err != nil {
			f.Fatal(err)
		}
		var ds [][32]byte
		for i := range vs {
			ds = append(ds, sha256.Sum256([]byte{byte(i)}))
		}
		if err := c.append(ds, vs); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(c.path)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	two := good([]float32{1, 2, 3}, []float32{-1, 0.5, 4})
	f.Add([]byte{})
	f.Add(two)
	f.Add(two[:len(two)-3])
	f.Add(append(slices.Clone(two), 0xff, 0xff, 0xff, 0xff))
	damaged := slices.Clone(two)
	damaged[40] ^= 1
	f.Add(damaged)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(cacheFile(dir, "m"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, vs, err := openVectorCache(dir, "m")
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		for d, v := range vs {
			if len(v) == 0 || len(v) > maxDims {
				t.Fatalf("record %x has %d dims", d[:4], len(v))
			}
		}
		d := sha256.Sum256([]byte("new"))
		if err := c.append([][32]byte{d}, [][]float32{{7, 8}}); err != nil {
			t.Fatal(err)
		}
		_, again, err := openVectorCache(dir, "m")
		if err != nil {
			t.Fatal(err)
		}
		if got := again[d]; !slices.Equal(got, []float32{7, 8}) {
			t.Fatalf("a record appended after opening reads back as %v", got)
		}
		if len(again) < len(vs) {
			t.Fatalf("reopening lost records: %d, had %d", len(again), len(vs))
		}
	})
}
