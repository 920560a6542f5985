package argcheck

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestCompileSharesCheckersThatBehaveAlike(t *testing.T) {
	t.Parallel()
	const base = `{"type":"object","properties":{"id":{"type":"string","pattern":"^c_[0-9]+$","description":"%s"}},"required":["id"],"additionalProperties":false,"description":"%s"}`
	a := mustCompile(t, fmt.Sprintf(base, "first", "tool a"), false)
	b := mustCompile(t, fmt.Sprintf(base, "second", "tool b"), false)
	if a != b {
		t.Error("schemas differing only in descriptions compiled to two Checkers")
	}
	if s := mustCompile(t, fmt.Sprintf(base, "first", "tool a"), true); s == a {
		t.Error("a strict and a lax Checker were shared")
	}
	other := mustCompile(t, `{"type":"object","properties":{"id":{"type":"string","pattern":"^d_[0-9]+$"}},"required":["id"],"additionalProperties":false}`, false)
	if other == a {
		t.Error("schemas with different patterns shared one Checker")
	}
	runtime.KeepAlive(b)
}

// A param may be named like an annotation: its schema is not an annotation,
// and dropping it would make a checker that accepts what it must refuse.
func TestCompileKeepsParamsNamedLikeAnnotations(t *testing.T) {
	t.Parallel()
	asString := mustCompile(t, `{"type":"object","properties":{"description":{"type":"string"},"title":{"type":"string"}},"required":["description"],"additionalProperties":false}`, true)
	asInt := mustCompile(t, `{"type":"object","properties":{"description":{"type":"integer"},"title":{"type":"string"}},"required":["description"],"additionalProperties":false}`, true)
	if asString == asInt {
		t.Fatal("params named description of two types shared one Checker")
	}
	if _, err := asString.Check([]byte(`{"title":"x"}`)); err == nil {
		t.Error("a missing required param named description was accepted")
	}
	if _, err := asInt.Check([]byte(`{"description":"x"}`)); err == nil {
		t.Error("a string for an integer param named description was accepted")
	}
	if _, err := asString.Check([]byte(`{"description":"x"}`)); err != nil {
		t.Errorf("a valid call was refused: %v", err)
	}
}

func TestPatternsCompileOncePerProcess(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object","properties":{"q":{"type":"string","pattern":"^once_[a-z]{2,9}$","description":"%d"},"n":{"type":"integer","maximum":%d}},"required":["q"],"additionalProperties":false}`
	type args struct {
		Q string `json:"q"`
		N *int64 `json:"n"`
	}
	var res []any
	var held []*Checker
	for i := range 3 {
		c := mustCompile(t, fmt.Sprintf(schema, i, i+10), false) // three distinct Checkers
		held = append(held, c)
		p := c.Plan(reflect.TypeFor[args]())
		if p == nil {
			t.Fatal("no plan")
		}
		for _, f := range p.root.fields {
			if f.name == "q" {
				res = append(res, f.val.scalar.re)
			}
		}
		res = append(res, c.schema.Properties["q"].Pattern)
	}
	if held[0] == held[1] {
		t.Fatal("schemas with different maximums shared one Checker")
	}
	if len(res) != 6 {
		t.Fatalf("found %d regexps, want 6", len(res))
	}
	for i, re := range res {
		if re == nil || re != res[0] {
			t.Fatalf("pattern %d is %p, want the first one, %p: the pattern was compiled again", i, re, res[0])
		}
	}
}

func TestCompileCacheDropsWhatNoOneHolds(t *testing.T) {
	const schema = `{"type":"object","properties":{"p":{"type":"string","pattern":"^dropped_%d$"}}}`
	n, nt := func() (int, int) {
		c := mustCompile(t, fmt.Sprintf(schema, 1), false)
		defer runtime.KeepAlive(c)
		return checkers.size(), texts.size()
	}() // c is dropped
	deadline := time.Now().Add(5 * time.Second)
	for checkers.size() >= n && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := checkers.size(); got >= n {
		t.Errorf("the cache holds %d checkers after the only user dropped its own; want fewer than %d", got, n)
	}
	for texts.size() >= nt && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := texts.size(); got >= nt {
		t.Errorf("the exact-bytes cache holds %d entries after the only user dropped its checker; want fewer than %d", got, nt)
	}
}

func TestCompileConcurrentCallsShareOneChecker(t *testing.T) {
	t.Parallel()
	const schema = `{"type":"object","properties":{"p":{"type":"string","pattern":"^conc_[0-9]+$","description":"%d"}}}`
	got := make([]*Checker, 16)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			c, err := Compile(fmt.Appendf(nil, schema, i), false)
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = c
		})
	}
	wg.Wait()
	for i, c := range got {
		if c != got[0] {
			t.Fatalf("call %d got checker %p, call 0 %p", i, c, got[0])
		}
	}
}

// The exact-bytes layer answers a schema seen before without parsing it, and
// answers with the Checker the behaviour key gives: never one of a schema
// that differs, nor one of the other strictness.
func TestCompileByExactBytesKeepsBehaviourApart(t *testing.T) {
	t.Parallel()
	const described = `{"type":"object","properties":{"n":{"type":"integer","maximum":%d,"description":"tool %d"}},"required":["n"],"additionalProperties":false}`
	const bare = `{"type":"object","properties":{"n":{"type":"integer","maximum":%d}},"required":["n"],"additionalProperties":false}`
	first := mustCompile(t, fmt.Sprintf(described, 7, 1), false)
	again := mustCompile(t, fmt.Sprintf(bare, 7), false)
	if again != first {
		t.Fatal("the same schema without its description got a Checker of its own")
	}
	if got := mustCompile(t, fmt.Sprintf(bare, 7), false); got != first {
		t.Fatal("the same bytes compiled twice gave two Checkers")
	}
	other := mustCompile(t, fmt.Sprintf(bare, 8), false)
	if other == first {
		t.Fatal("schemas with different maximums shared one Checker")
	}
	if _, err := other.Check([]byte(`{"n":8}`)); err != nil {
		t.Errorf("maximum 8 refused 8: %v", err)
	}
	if _, err := first.Check([]byte(`{"n":8}`)); err == nil {
		t.Error("maximum 7 accepted 8")
	}
	strict := mustCompile(t, fmt.Sprintf(bare, 7), true)
	if strict == first {
		t.Fatal("the same bytes compiled strict and lax shared one Checker")
	}
	if _, err := strict.Check([]byte(`{"n":"5"}`)); err == nil {
		t.Error("the strict Checker coerced \"5\"")
	}
	if _, err := first.Check([]byte(`{"n":"5"}`)); err != nil {
		t.Errorf("the lax Checker refused \"5\": %v", err)
	}
	runtime.KeepAlive(again)
}
