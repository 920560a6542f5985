package idrounds

import (
	"fmt"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		ids  []string
		want string
	}{
		{"no items are no round", nil, "[]"},
		{"distinct ids are one round", []string{"a", "b", "c"}, "[[0 1 2]]"},
		{"a repeated id goes in the next round, in batch order", []string{"a", "b", "a", "c", "a", "b"}, "[[0 1 3] [2 5] [4]]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := make([]int, len(tt.ids))
			for i := range idx {
				idx[i] = i
			}
			if got := fmt.Sprint(Split(idx, func(i int) string { return tt.ids[i] })); got != tt.want {
				t.Fatalf("Split(%q) = %s, want %s", tt.ids, got, tt.want)
			}
		})
	}
}

func TestFirst(t *testing.T) {
	ids := []string{"a", "b", "a", "c", "a", "b"}
	first, rest := First([]int{0, 1, 2, 3, 4, 5}, func(i int) string { return ids[i] })
	if fmt.Sprint(first) != "[0 1 3]" || fmt.Sprint(rest) != "[2 4 5]" {
		t.Fatalf("First = %v, %v; want [0 1 3], [2 4 5]", first, rest)
	}
}
