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
	n := func() int {
		c := mustCompile(t, fmt.Sprintf(schema, 1), false)
		defer runtime.KeepAlive(c)
		return checkers.size()
	}() // c is dropped
	deadline := time.Now().Add(5 * time.Second)
	for checkers.size() >= n && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := checkers.size(); got >= n {
		t.Errorf("the cache holds %d checkers after the only user dropped its own; want fewer than %d", got, n)
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
