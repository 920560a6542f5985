package loader_test

import (
	"testing"

	"github.com/beam-agents/toolreg/loader"
)

func TestLoadExampleManifests(t *testing.T) {
	t.Parallel()
	specs, err := loader.Load("../manifests")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	want := []string{"lookup_customer", "lookup_order", "search_orders", "refund_order", "search_kb", "send_email"}
	if len(names) != len(want) {
		t.Fatalf("got tools %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("got tools %v, want %v", names, want)
		}
	}
}
