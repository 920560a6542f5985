package registry

import (
	"runtime"
	"testing"
	"weak"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/provider"
)

// The cache beside Registry must not keep a Registry alive, nor outlive it.
func TestARegistrysRenderCacheGoesWithIt(t *testing.T) {
	r := New()
	if err := r.Register(toolreg.NewTool(&toolreg.Spec{Name: "ping", Description: "Ping."})); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ProviderSchema(provider.MCP); err != nil {
		t.Fatal(err)
	}
	key := weak.Make(r)
	if _, ok := caches.Load(key); !ok {
		t.Fatal("no cache entry after ProviderSchema")
	}
	r = nil
	// Cleanups run on their own goroutine after a collection.
	for i := 0; i < 200; i++ {
		runtime.GC()
		runtime.Gosched()
		if _, ok := caches.Load(key); !ok {
			if key.Value() != nil {
				t.Fatal("entry dropped while the registry lives")
			}
			return
		}
	}
	t.Fatal("the cache entry outlived its registry")
}
