package registry_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
	"github.com/beam-agents/toolreg/registry"
)

// Words the generated manifests are made of, so that 10,000 of them have the
// spread of a real registry: many tools share common words (customer, list),
// few share rare ones.
var (
	benchVerbs = strings.Fields(`get list create update delete search find send cancel refund track book
		check adjust approve archive assign close export import merge publish restore schedule sync upload`)
	benchNouns = strings.Fields(`customer order invoice payment subscription ticket shipment parcel product
		inventory warehouse email message meeting calendar event file document folder report user account
		team project task issue repository branch deployment service log metric alert contract quote lead
		campaign coupon discount refund card balance transfer vendor supplier employee timesheet expense`)
	benchAdjectives = strings.Fields(`open closed pending paid overdue recent archived shared private draft
		urgent internal external monthly daily weekly active inactive failed`)
	benchTags = strings.Fields(`billing crm support orders shipping inventory messaging calendar files
		github data ops hr finance marketing sales legal`)
)

// writeBenchManifests writes n single-tool YAML manifests, made of the words
// above by a fixed seed, into dir, and returns the queries to run over them.
func writeBenchManifests(tb testing.TB, dir string, n int) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(ws []string) string { return ws[rng.IntN(len(ws))] }
	for i := range n {
		verb, noun, adj := pick(benchVerbs), pick(benchNouns), pick(benchAdjectives)
		other := pick(benchNouns)
		src := fmt.Sprintf(`name: %s_%s_%05d
description: %s the %s %s of a %s, and return its %s details.
side_effect: %t
tags: [%s]
keywords: [%s, %s]
params:
  %s_id:
    type: string
    description: The %s's id.
  status:
    type: string
    description: Only %s in this status.
    enum: [%s, %s]
    required: false
  limit:
    type: integer
    description: How many %s to return at most.
    default: 10
    minimum: 1
`, verb, noun, i, verb, adj, noun, other, pick(benchNouns),
			rng.IntN(3) == 0, pick(benchTags), pick(benchNouns), pick(benchAdjectives),
			other, other, noun, pick(benchAdjectives), pick(benchAdjectives), noun)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("t%05d.yaml", i)), []byte(src), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

var benchQueries = []string{
	"refund a payment",
	"where is my parcel",
	"list overdue invoices for a customer",
	"schedule a meeting",
	"send email",
	"cancel_subscription",
	"export monthly expense report",
	"deployment logs of a failed service",
	"archived documents in a shared folder",
	"approve a pending contract for a vendor",
}

// BenchmarkSearch10000 times, in one run, over 10,000 generated manifests:
//
//   - load: loader.Load of the 10,000 files, what a service does at startup;
//   - register: making and registering their 10,000 tools;
//   - index: building the search index of the registry (BuildSearchIndex),
//     which the first Search does; the figure to compare with load (issue
//     34's bound: at most 10% of it; both use every processor, so compare
//     them at the same GOMAXPROCS);
//   - heap: what the built index adds to the heap (index-heap-B);
//   - query: one Search (limit 10) of the queries above, in turn; it also
//     reports the median of every query's own time (median-ns/query; the
//     bound: under 1 ms).
func BenchmarkSearch10000(b *testing.B) {
	dir := b.TempDir()
	writeBenchManifests(b, dir, 10_000)
	specs, err := loader.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	register := func(b *testing.B) *registry.Registry {
		r := registry.New()
		for _, s := range specs {
			if err := r.Register(toolreg.NewTool(s)); err != nil {
				b.Fatal(err)
			}
		}
		return r
	}
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := loader.Load(dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("register", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			register(b)
		}
	})
	b.Run("index", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			r := register(b)
			b.StartTimer()
			r.BuildSearchIndex()
		}
	})
	b.Run("heap", func(b *testing.B) {
		// What the index keeps on the heap: the registry's heap after
		// BuildSearchIndex less before, both after a collection.
		var before, after runtime.MemStats
		var r *registry.Registry
		for b.Loop() {
			b.StopTimer()
			r = register(b)
			runtime.GC()
			runtime.ReadMemStats(&before)
			b.StartTimer()
			r.BuildSearchIndex()
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.StartTimer()
		}
		b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "index-heap-B")
		runtime.KeepAlive(r)
	})
	b.Run("query", func(b *testing.B) {
		r := register(b)
		r.BuildSearchIndex()
		var each []time.Duration
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			start := time.Now()
			ms := r.Search(registry.Query{Text: benchQueries[i%len(benchQueries)]})
			each = append(each, time.Since(start))
			if len(ms) == 0 {
				b.Fatalf("Search(%q) found nothing", benchQueries[i%len(benchQueries)])
			}
			i++
		}
		slices.Sort(each)
		b.ReportMetric(float64(each[len(each)/2].Nanoseconds()), "median-ns/query")
	})
}
