package embed

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Vectors holds one unit vector a tool, int8-quantized, and finds the nearest to a
// query by cosine similarity.
//
// The search is brute force in two stages, both linear in the catalog: a scan of every
// vector's sign bits (1 bit a dimension, compared with XOR and POPCNT) keeps the
// Candidates closest in Hamming distance, and those are rescored exactly (up to
// quantization) with int8 dot products. An int8 dot product over every vector would
// cost 10–15 ms at 10,000 tools × 1,024 dimensions on this machine; the sign-bit scan
// costs about 16 POPCNTs a tool, so the whole search stays well under 2 ms (see
// BenchmarkTopK). Memory is 1 byte a dimension plus 1 bit a dimension plus 4 bytes a
// tool: 11.6 MB at 10,000 × 1,024.
//
// Where an ANN index (HNSW, IVF) starts to pay: the sign-bit scan grows linearly, about
// 0.1–0.2 µs a tool at 1,024 dimensions, so it nears the 2 ms budget at 100,000 tools or
// more; tool catalogs are far smaller (thousands), where an ANN index would only add
// build time, memory and recall loss. Small catalogs (tools × dimensions ≤ exactWork)
// skip the first stage and are scored exactly.
type Vectors struct {
	dim   int
	n     int
	words int       // uint64 words of sign bits a vector
	q     []int8    // n*dim: each unit vector divided by scale
	scale []float32 // a vector's largest |component| / 127
	sign  []uint64  // n*words: bit j set when component j is above the catalog's mean
	// mean is the catalog's mean vector, which the sign bits are taken around: a model
	// whose vectors are all positive, or crowd in a narrow cone (most do, to some
	// degree), gives nearly the same raw signs to every vector, and the sign-bit stage
	// would then keep candidates all but at random. Centred, the signs say on which
	// side of the catalog's average a vector lies in each dimension, which they differ
	// in whatever the model's bias.
	mean []float32
	// bias is each vector's dot product with mean, and dev its distance from it: the
	// exact part of a query's similarity to the vector that centring leaves out of the
	// signs (see nearestSigns).
	bias, dev []float32
}

// Hit is one vector found: its position and cosine similarity.
type Hit struct {
	Index int
	Score float32
}

// Candidates is how many vectors the sign-bit stage keeps for exact rescoring, at
// least: more when k is large (8k). Rescoring 400 vectors of 1,024 dimensions costs
// about 0.5 ms.
const Candidates = 400

// exactWork is the most tools × dimensions scored exactly without the sign-bit stage.
const exactWork = 1 << 19

// quantized is one vector as Vectors stores it.
type quantized struct {
	q     []int8
	scale float32
	used  int64 // in a cache: when a Build last wanted it, Unix seconds
}

// quantize normalizes v to unit length and rounds it to int8. It returns false for a
// vector of zero length, which has no direction.
func quantize(v []float32) (quantized, bool) {
	var norm, maxAbs float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return quantized{}, false
	}
	for _, x := range v {
		maxAbs = max(maxAbs, math.Abs(float64(x))/norm)
	}
	s := maxAbs / 127
	out := make([]int8, len(v))
	for i, x := range v {
		out[i] = int8(math.Round(float64(x) / norm / s))
	}
	return quantized{q: out, scale: float32(s)}, true
}

// newVectors lays rows out for search. All rows have the same length.
func newVectors(rows []quantized) *Vectors {
	v := &Vectors{n: len(rows)}
	for _, r := range rows {
		if len(r.q) > 0 {
			v.dim = len(r.q)
			break
		}
	}
	if v.dim == 0 {
		return v
	}
	// A row without a vector (a text the endpoint refused) is zeros with scale 0:
	// no search finds it (see TopK), and the mean is of the others.
	v.words = (v.dim + 63) / 64
	v.q = make([]int8, 0, v.n*v.dim)
	v.scale = make([]float32, v.n)
	v.sign = make([]uint64, v.n*v.words)
	v.mean = make([]float32, v.dim)
	sum := make([]float64, v.dim)
	have := 0
	for i, r := range rows {
		if len(r.q) == 0 {
			v.q = append(v.q, make([]int8, v.dim)...)
			continue
		}
		have++
		v.q = append(v.q, r.q...)
		v.scale[i] = r.scale
		for j, x := range r.q {
			sum[j] += float64(x) * float64(r.scale)
		}
	}
	for j := range sum {
		v.mean[j] = float32(sum[j] / float64(have))
	}
	v.bias, v.dev = make([]float32, v.n), make([]float32, v.n)
	for i, r := range rows {
		if len(r.q) == 0 {
			continue
		}
		signBits(r.q, r.scale, v.mean, v.sign[i*v.words:(i+1)*v.words])
		v.bias[i], v.dev[i] = centred(r, v.mean)
	}
	return v
}

// centred returns r's dot product with mean and its distance from it.
func centred(r quantized, mean []float32) (bias, dev float32) {
	var b, d float64
	for j, x := range r.q {
		f := float64(x) * float64(r.scale)
		b += f * float64(mean[j])
		e := f - float64(mean[j])
		d += e * e
	}
	return float32(b), float32(math.Sqrt(d))
}

// signBits sets bit j of out when component j of the vector q (times scale) is above
// mean's.
func signBits(q []int8, scale float32, mean []float32, out []uint64) {
	for j, x := range q {
		if float32(x)*scale > mean[j] {
			out[j/64] |= 1 << (j % 64)
		}
	}
}

// FromFloats quantizes rows, which must share one dimension and each have a direction,
// into Vectors: for a library user who has vectors of their own (Build makes them from
// an endpoint).
func FromFloats(rows [][]float32) (*Vectors, error) {
	qs := make([]quantized, len(rows))
	for i, r := range rows {
		if len(r) != len(rows[0]) {
			return nil, fmt.Errorf("%w: row %d has %d dimensions, row 0 has %d", ErrBadResponse, i, len(r), len(rows[0]))
		}
		q, ok := quantize(r)
		if !ok {
			return nil, fmt.Errorf("%w: row %d has no direction (zero, NaN or infinite)", ErrBadResponse, i)
		}
		qs[i] = q
	}
	return newVectors(qs), nil
}

// Rows returns the vectors at rows, in that order: the vectors of part of the catalog v
// was built for (a session's scope, see policy.Scope.Catalog), without embedding it
// again. A row out of range is an error, and v is not changed.
func (v *Vectors) Rows(rows []int) (*Vectors, error) {
	out := &Vectors{dim: v.dim, n: len(rows), words: v.words, q: make([]int8, 0, len(rows)*v.dim),
		scale: make([]float32, 0, len(rows)), sign: make([]uint64, 0, len(rows)*v.words), mean: v.mean,
		bias: make([]float32, 0, len(rows)), dev: make([]float32, 0, len(rows))}
	for _, r := range rows {
		if r < 0 || r >= v.n {
			return nil, fmt.Errorf("embed: row %d of %d vectors", r, v.n)
		}
		out.q = append(out.q, v.q[r*v.dim:(r+1)*v.dim]...)
		out.scale = append(out.scale, v.scale[r])
		out.bias, out.dev = append(out.bias, v.bias[r]), append(out.dev, v.dev[r])
		out.sign = append(out.sign, v.sign[r*v.words:(r+1)*v.words]...)
	}
	return out, nil
}

// Len is the number of vectors.
func (v *Vectors) Len() int { return v.n }

// Dim is the vectors' dimension.
func (v *Vectors) Dim() int { return v.dim }

// Bytes is the memory the vectors hold.
func (v *Vectors) Bytes() int { return len(v.q) + 4*len(v.scale) + 8*len(v.sign) + 4*len(v.mean) }

// TopK returns the k vectors most similar to query, best first, among those allow
// accepts (nil accepts all). A query of the wrong dimension or of zero length finds
// nothing.
func (v *Vectors) TopK(query []float32, k int, allow func(int) bool) []Hit {
	if v == nil || k <= 0 || len(query) != v.dim || v.n == 0 {
		return nil
	}
	qq, ok := quantize(query)
	if !ok {
		return nil
	}
	var cands []int32
	if c := max(Candidates, 8*k); v.n*v.dim > exactWork && v.n > c {
		cands = v.nearestSigns(qq, c, allow)
	} else {
		cands = make([]int32, 0, v.n)
		for i := range v.n {
			if allow == nil || allow(i) {
				cands = append(cands, int32(i))
			}
		}
	}
	hits := make([]Hit, 0, len(cands))
	for _, i := range cands {
		if v.scale[i] == 0 {
			continue // no vector: the endpoint refused its text
		}
		row := v.q[int(i)*v.dim : int(i+1)*v.dim]
		s := float32(dot8(qq.q, row)) * qq.scale * v.scale[i]
		hits = append(hits, Hit{Index: int(i), Score: s})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return a.Index - b.Index
	})
	return hits[:min(k, len(hits))]
}

// nearestSigns returns the (about) c allowed vectors most likely to be nearest q. A
// vector's similarity to q splits into its dot product with the catalog's mean, which
// is known (bias), and the dot product of the two's departures from the mean, which the
// signs estimate: the share h of the dimensions in which they lie on different sides
// of the mean gives cos(πh) of the angle between the departures, as with random
// hyperplanes (SimHash), times their lengths. Without the first part, a model whose
// vectors crowd around one direction would have its neighbours found by the departures
// alone, which say little there.
func (v *Vectors) nearestSigns(q quantized, c int, allow func(int) bool) []int32 {
	qs := make([]uint64, v.words)
	signBits(q.q, q.scale, v.mean, qs)
	_, qdev := centred(q, v.mean)
	cosOf := make([]float32, v.dim+1)
	for d := range cosOf {
		cosOf[d] = qdev * float32(math.Cos(math.Pi*float64(d)/float64(v.dim)))
	}
	type scored struct {
		est float32
		i   int32
	}
	all := make([]scored, 0, v.n)
	for i := range v.n {
		if allow != nil && !allow(i) || v.scale[i] == 0 {
			continue
		}
		row := v.sign[i*v.words : (i+1)*v.words]
		d := 0
		for w, x := range row {
			d += bits.OnesCount64(x ^ qs[w])
		}
		all = append(all, scored{v.bias[i] + v.dev[i]*cosOf[d], int32(i)})
	}
	if len(all) > c {
		// The c best estimates, in no order (the exact scores order them): a
		// selection, linear, where sorting every estimate took longer than the rest of
		// the search.
		lo, hi := 0, len(all)-1
		for lo < hi {
			pivot := all[(lo+hi)/2].est
			i, j := lo, hi
			for i <= j {
				for all[i].est > pivot {
					i++
				}
				for all[j].est < pivot {
					j--
				}
				if i <= j {
					all[i], all[j] = all[j], all[i]
					i++
					j--
				}
			}
			switch {
			case c-1 <= j:
				hi = j
			case c-1 >= i:
				lo = i
			default:
				lo = hi
			}
		}
		all = all[:c]
	}
	out := make([]int32, len(all))
	for k, s := range all {
		out[k] = s.i
	}
	slices.Sort(out) // rescored in catalog order, as before
	return out
}

// dot8 is the int8 dot product, unrolled by four: Go does not vectorize it.
func dot8(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}
