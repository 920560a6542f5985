package idrounds

// Split returns the rounds of the items idx names (indices into a batch, in
// the batch's order): the first round holds the first occurrence of every
// id, the second the second occurrences, and so on, each in the batch's
// order. id gives an item's intent id. A batch without a repeated id is
// one round, idx itself.
func Split(idx []int, id func(i int) string) [][]int {
	seen := make(map[string]int, len(idx))
	repeated := false
	for _, i := range idx {
		k := id(i)
		if seen[k] > 0 {
			repeated = true
		}
		seen[k]++
	}
	if !repeated {
		if len(idx) == 0 {
			return nil
		}
		return [][]int{idx}
	}
	clear(seen)
	var out [][]int
	for _, i := range idx {
		k := id(i)
		r := seen[k]
		seen[k]++
		if r == len(out) {
			out = append(out, nil)
		}
		out[r] = append(out[r], i)
	}
	return out
}

// First splits idx into the first occurrence of each id and the rest, both
// in idx's order: the round to send now, and what waits for the next.
func First(idx []int, id func(i int) string) (first, rest []int) {
	seen := make(map[string]bool, len(idx))
	for _, i := range idx {
		k := id(i)
		if seen[k] {
			rest = append(rest, i)
			continue
		}
		seen[k] = true
		first = append(first, i)
	}
	return first, rest
}
