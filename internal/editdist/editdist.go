package editdist

// Levenshtein is the Levenshtein distance between a and b, by bytes. It works
// in rows, which it grows as needed and returns for the next call to reuse;
// pass nil when there is no next call.
func Levenshtein(a, b string, rows []int) (int, []int) {
	if cap(rows) < 2*(len(b)+1) {
		rows = make([]int, 2*(len(b)+1))
	}
	prev := rows[:len(b)+1]
	cur := rows[len(b)+1 : 2*(len(b)+1)]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)], rows
}
