package loader_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/fstest"

	"github.com/beam-agents/toolreg/loader"
)

// benchManifest is a typical single-tool manifest: three params, constraints,
// a default. BenchmarkLoad1000 writes the files scripts/bench-load.sh times
// cue vet on, so both check the same text.
const benchManifest = `name: tool_%05d
description: Look up order %d for a customer and return its status and items.
params:
  customer_id:
    type: string
    description: The customer's id.
    pattern: "^cus_[a-z0-9]{6,24}$"
  status:
    type: string
    enum: [pending, paid, shipped]
    required: false
  limit:
    type: integer
    description: How many results to return.
    default: 10
    minimum: 1
    maximum: 50
`

// writeManifests writes n single-tool YAML manifests into dir.
func writeManifests(tb testing.TB, dir string, n int) {
	tb.Helper()
	for i := range n {
		name := filepath.Join(dir, fmt.Sprintf("tool_%05d.yaml", i))
		if err := os.WriteFile(name, fmt.Appendf(nil, benchManifest, i, i), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkLoad1000 loads 1,000 single-tool YAML manifests. Its baseline is
// `go tool cue vet -c -d '#Tool' schema.cue <the same files>`, timed in the
// same run by scripts/bench-load.sh; the loader must take at most half of it.
func BenchmarkLoad1000(b *testing.B) {
	dir := os.Getenv("TOOLREG_BENCH_DIR") // set by scripts/bench-load.sh
	if dir == "" {
		dir = b.TempDir()
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); len(files) == 0 {
		writeManifests(b, dir, 1000)
	}
	b.ReportAllocs()
	for b.Loop() {
		specs, err := loader.Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		if len(specs) != 1000 {
			b.Fatalf("loaded %d specs, want 1000", len(specs))
		}
	}
}

// BenchmarkLoad10000Heap loads 10,000 manifests and reports the heap in use
// afterwards, after a GC: retained-B with the specs still held, leftover-B once
// they are dropped. Each document is checked in a CUE context of its own, so
// leftover-B stays near zero however many manifests are loaded; were all
// built in one context, it would hold every document's values.
func BenchmarkLoad10000Heap(b *testing.B) {
	dir := b.TempDir()
	writeManifests(b, dir, 10000)
	b.ReportAllocs()
	var before, held, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		func() {
			specs, err := loader.Load(dir)
			if err != nil {
				b.Fatal(err)
			}
			if len(specs) != 10000 {
				b.Fatalf("loaded %d specs, want 10000", len(specs))
			}
			runtime.GC()
			runtime.ReadMemStats(&held)
			runtime.KeepAlive(specs)
		}()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(held.HeapAlloc)-float64(before.HeapAlloc), "retained-B")
		b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "leftover-B")
	}
}

// manyParams is one tool with n params; distinct gives each its own shape
// (a maxLength of its own), so no work is shared between them. 40,000 params
// make a legal file of about 0.9 MiB.
func manyParams(n int, distinct bool) []byte {
	var b []byte
	b = append(b, "name: wide\ndescription: d\nparams:\n"...)
	for i := range n {
		if distinct {
			b = fmt.Appendf(b, "  p%d: {type: string, maxLength: %d}\n", i, i)
		} else {
			b = fmt.Appendf(b, "  p%d: {type: number}\n", i)
		}
	}
	return b
}

// BenchmarkLoadManyParams loads one tool of 10,000 and 40,000 params alike,
// or 5,000 and 20,000 each of its own shape: time and memory must grow linearly with the
// count. Compare with the loader before it checked params one by one.
func BenchmarkLoadManyParams(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		sizes := []int{10_000, 40_000}
		if distinct {
			sizes = []int{5_000, 20_000} // 40,000 distinct params are over 1 MiB
		}
		for _, n := range sizes {
			name := fmt.Sprintf("alike/%d", n)
			if distinct {
				name = fmt.Sprintf("distinct/%d", n)
			}
			b.Run(name, func(b *testing.B) {
				fsys := fstest.MapFS{"m.yaml": {Data: manyParams(n, distinct)}}
				b.ReportAllocs()
				for b.Loop() {
					specs, err := loader.LoadFS(fsys, "m.yaml")
					if err != nil || len(specs[0].Params) != n {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
