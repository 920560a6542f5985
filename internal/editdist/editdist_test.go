package editdist

import "testing"

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"lookup_customer", "lookup_customer", 0},
		{"lookup_custmer", "lookup_customer", 1},
		{"kitten", "sitting", 3},
		{"flaw", "lawn", 2},
		{"charge", "refund", 6},
	}
	var rows []int
	for _, tt := range tests {
		t.Run(tt.a+" to "+tt.b, func(t *testing.T) {
			var got int
			got, rows = Levenshtein(tt.a, tt.b, rows) // reused rows must not change the answer
			if got != tt.want {
				t.Errorf("Levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if fresh, _ := Levenshtein(tt.b, tt.a, nil); fresh != tt.want {
				t.Errorf("Levenshtein(%q, %q) = %d, want %d: the distance is symmetric", tt.b, tt.a, fresh, tt.want)
			}
		})
	}
}
