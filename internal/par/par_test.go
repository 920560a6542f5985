package par

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestDoCallsEachIndexOnce(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 3, 1000} {
		calls := make([]atomic.Int32, n)
		Do(n, func(i int) { calls[i].Add(1) })
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: fn(%d) called %d times", n, i, c)
			}
		}
	}
}

func TestFirstIsTheFirstInOrder(t *testing.T) {
	t.Parallel()
	a, b := errors.New("a"), errors.New("b")
	if err := First([]error{nil, a, nil, b}); err != a {
		t.Errorf("First = %v, want a", err)
	}
	if err := First([]error{nil, nil}); err != nil {
		t.Errorf("First of no errors = %v", err)
	}
}
