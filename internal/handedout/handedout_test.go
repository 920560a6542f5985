package handedout

import (
	"testing"

	"github.com/beam-agents/toolreg/intent"
)

// Two deliveries of one entry carry equal intents (same id, same bytes):
// the table tells them apart, so acknowledging the older one never takes
// what acknowledges the newer.
func TestTableTellsApartTwoDeliveriesOfOneIntent(t *testing.T) {
	var tab Table[int]
	first, second := &intent.Intent{ID: "same"}, &intent.Intent{ID: "same"}
	tab.Put(first, 1)
	tab.Put(second, 2)
	if v, ok := tab.Get(first); !ok || v != 1 {
		t.Fatalf("Get(first) = %d, %v; want 1, true", v, ok)
	}
	tab.Delete(first)
	if _, ok := tab.Get(first); ok {
		t.Fatal("first still found after Delete")
	}
	if v, ok := tab.Get(second); !ok || v != 2 {
		t.Fatalf("Get(second) = %d, %v after deleting first; want 2, true", v, ok)
	}
	if _, ok := tab.Get(nil); ok {
		t.Fatal("a nil intent (an entry that is no intent) was found")
	}
	tab.Clear()
	if tab.Len() != 0 {
		t.Fatalf("Len() = %d after Clear, want 0", tab.Len())
	}
}
