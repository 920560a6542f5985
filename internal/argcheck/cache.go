package argcheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"regexp"
	"runtime"
	"sync"
	"weak"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A process compiles each distinct argument schema, and each distinct
// pattern, once: 10,000 tools whose params look alike share one Checker and
// one *regexp.Regexp instead of holding 10,000 copies. Both caches hold their
// values weakly, so what no tool uses any more is collected, and a
// long-running process that compiles schemas as they come holds only those in
// use. Sharing is safe because a Checker and a *regexp.Regexp never change
// once built (a Checker's plans are built on first use, each once, under
// sync.Map's rules) and both are safe for concurrent use.
//
// texts finds a Checker by the hash of the schema's exact bytes, before
// checkers parses the schema to find it by behaviour: callers that render
// like schemas alike (package bindings leaves descriptions out) pay one hash
// per tool, not a JSON decode and encode. Both map to the same Checkers.
var (
	checkers weakCache[checkerKey, Checker]
	texts    weakCache[checkerKey, Checker]
	patterns weakCache[string, regexp.Regexp]
	formats  weakCache[string, jsonschema.Schema]
)

// checkerKey names a Checker by what decides its behaviour: the schema with
// its annotations (title, description, examples) left out, and strict.
type checkerKey struct {
	sum    [sha256.Size]byte
	strict bool
}

// CompilePattern compiles a pattern keyword's regexp, once per process for
// each distinct pattern in use. The validator, the fast decoder and package
// toolreg's result check all use it, so they also agree on what it matches.
func CompilePattern(s string) (*regexp.Regexp, error) {
	return patterns.get(s, func() (*regexp.Regexp, error) { return regexp.Compile(s) })
}

// CompileFormat compiles {"format": f} with the format asserted, as Compile
// asserts it in params, once per process for each distinct format in use;
// nil when it does not compile. Package toolreg's result check uses it, so a
// result's format means what a param's does.
func CompileFormat(f string) *jsonschema.Schema {
	s, _ := formats.get(f, func() (*jsonschema.Schema, error) {
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		const url = "toolreg:///format.json"
		if err := c.AddResource(url, map[string]any{"format": f}); err != nil {
			return nil, err
		}
		return c.Compile(url)
	})
	return s
}

// weakCache maps keys to values built once and held weakly: an entry lasts
// as long as something else holds its value. Errors are not cached.
type weakCache[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]weak.Pointer[V]
}

func (c *weakCache[K, V]) lookup(k K) *V {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k].Value() // the zero weak.Pointer's Value is nil
}

func (c *weakCache[K, V]) get(k K, build func() (*V, error)) (*V, error) {
	if v := c.lookup(k); v != nil {
		return v, nil
	}
	// Built outside the lock: two goroutines may build the same value at
	// once, and then the first one stored wins, so all callers share it.
	v, err := build()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k].Value(); old != nil {
		return old, nil
	}
	if c.m == nil {
		c.m = make(map[K]weak.Pointer[V])
	}
	wp := weak.Make(v)
	c.m[k] = wp
	runtime.AddCleanup(v, c.forget, entry[K, V]{k, wp})
	return v, nil
}

type entry[K comparable, V any] struct {
	k  K
	wp weak.Pointer[V]
}

// forget drops k's entry once its value is collected, unless the entry was
// replaced meanwhile by a value built again.
func (c *weakCache[K, V]) forget(e entry[K, V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[e.k] == e.wp {
		delete(c.m, e.k)
	}
}

// size is how many entries the cache holds, for tests.
func (c *weakCache[K, V]) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// annotations are the keywords that change no validation outcome: a schema
// differing from another only in them compiles to a Checker that behaves
// the same.
var annotations = []string{"title", "description", "examples"}

// behaviourKey is the cache key of a schema: the SHA-256 of its canonical
// JSON without annotations, at every level where a subschema sits (the
// members of properties, items, additionalProperties), so a param named
// "description" stays. ok is false when the schema does not parse; then it
// is compiled uncached, to report its error.
func behaviourKey(schema []byte, strict bool) (checkerKey, bool) {
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || d.More() {
		return checkerKey{}, false
	}
	stripAnnotations(v)
	b, err := json.Marshal(v) // map keys sorted; json.Number written as read
	if err != nil {
		return checkerKey{}, false
	}
	return checkerKey{sum: sha256.Sum256(b), strict: strict}, true
}

func stripAnnotations(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, k := range annotations {
		delete(m, k)
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, p := range props {
			stripAnnotations(p)
		}
	}
	stripAnnotations(m["items"])
	stripAnnotations(m["additionalProperties"])
}

// planFor returns the checker's plan for struct type t, built once per type.
func (c *Checker) planFor(t reflect.Type) *Plan {
	if p, ok := c.plans.Load(t); ok {
		return p.(*Plan)
	}
	p, _ := c.plans.LoadOrStore(t, c.buildPlan(t))
	return p.(*Plan)
}
