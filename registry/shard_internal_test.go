package registry

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/loader"
)

// shardTools returns n tools made of the evaluation sets' own: each takes
// one's params and tags, a name of its own, and a description of words
// drawn from every description, so that each shard first sees its words in
// an order of its own.
func shardTools(t *testing.T, n int) []*toolreg.Tool {
	t.Helper()
	var base []*toolreg.Spec
	for _, dir := range []string{"testdata/searcheval/tools", "testdata/searcheval/tools3", "testdata/corpus"} {
		specs, err := loader.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		base = append(base, specs...)
	}
	var words []string
	for _, s := range base {
		words = append(words, strings.Fields(s.Description)...)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	tools := make([]*toolreg.Tool, n)
	for i := range tools {
		s := *base[rng.IntN(len(base))]
		s.Name = fmt.Sprintf("%s_%s", s.Name, strings.Trim(words[rng.IntN(len(words))], ".,()"))
		desc := make([]string, 4+rng.IntN(12))
		for j := range desc {
			desc[j] = words[rng.IntN(len(words))]
		}
		s.Description = strings.Join(desc, " ")
		tools[i] = toolreg.NewTool(&s)
	}
	return tools
}

// indexOf builds the index of tools as Search does: in steps of the sizes
// given (each the tools registered before the next search), sharded or not;
// it also returns the most shards a step built.
func indexOf(tools []*toolreg.Tool, sharded bool, steps ...int) (*searchIndex, int) {
	x := new(searchIndex)
	most := 1
	for _, n := range steps {
		next := tools[x.n : x.n+n]
		if sharded {
			most = max(most, x.addAll(next))
		} else {
			for _, t := range next {
				x.add(t.Spec())
			}
		}
		x.normalise()
	}
	return x, most
}

// TestShardedIndexIsTheOneBuiltToolByTool checks that building the index in
// shards merged in order builds, to the bit, the index adding the tools one
// by one builds: the same term ids, postings, lengths and sums (a float sum
// taken in another order rounds otherwise), and the same vocabulary for
// typo tolerance in the same order; also when the shards are added to an
// index already built, as a search after more tools were registered does.
func TestShardedIndexIsTheOneBuiltToolByTool(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // four shards, whatever the machine
	tools := shardTools(t, 6*minShard+7)
	want, _ := indexOf(tools, false, len(tools))
	for _, steps := range [][]int{
		{len(tools)}, // four shards at once
		{minShard + 3, len(tools) - minShard - 3}, // one built alone, then four shards
		{2*minShard + 1, 5, len(tools) - 2*minShard - 6},
	} {
		t.Run(fmt.Sprint(steps), func(t *testing.T) {
			got, shards := indexOf(tools, true, steps...)
			if shards != 4 {
				t.Fatalf("the build made %d shards, want 4: the test proves nothing", shards)
			}
			same := func(what string, g, w any) {
				t.Helper()
				if !reflect.DeepEqual(g, w) {
					t.Errorf("%s differs from the index built tool by tool", what)
				}
			}
			if got.n != want.n {
				t.Fatalf("indexed %d tools, want %d", got.n, want.n)
			}
			same("ids", got.ids, want.ids)
			same("terms", got.terms, want.terms)
			for id := range want.postings {
				g, w := got.postings[id], want.postings[id]
				if !reflect.DeepEqual(g, w) {
					i := 0
					for i < min(len(g), len(w)) && g[i] == w[i] {
						i++
					}
					t.Fatalf("the postings of %q differ from their %dth on: %d of them, want %d", want.terms[id], i, len(g), len(w))
				}
			}
			same("lengths", got.lengths, want.lengths)
			same("total", got.total, want.total)
			same("headNorm", got.headNorm, want.headNorm)
			same("stems", got.scan.stems, want.scan.stems)
			same("byLen", got.scan.byLen, want.scan.byLen)
		})
	}
}

// TestShardedIndexAddsToolsAfterItToolByTool checks that a tool registered
// after a sharded build is added to it as it would be to any index: its
// postings follow the merged ones, in document order.
func TestShardedIndexAddsToolsAfterItToolByTool(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	tools := shardTools(t, 4*minShard+2)
	want, _ := indexOf(tools, false, len(tools))
	got, shards := indexOf(tools, true, len(tools)-2, 1, 1)
	if shards != 4 {
		t.Fatalf("the build made %d shards, want 4: the test proves nothing", shards)
	}
	if !reflect.DeepEqual(got.postings, want.postings) || !reflect.DeepEqual(got.ids, want.ids) {
		t.Fatal("adding a tool after a sharded build gave another index")
	}
}
