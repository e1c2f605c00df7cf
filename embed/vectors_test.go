package embed_test

import (
	"math"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/toolshed/toolshed/embed"
)

type countingTransport struct{ before, after func() }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.before()
	defer c.after()
	return http.DefaultTransport.RoundTrip(r)
}

func wrappedClient(t http.RoundTripper) *http.Client { return &http.Client{Transport: t} }

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func buildVectors(t testing.TB, rows [][]float32) *embed.Vectors {
	t.Helper()
	v, err := embed.FromFloats(rows)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// clustered returns n random vectors of dim around a few dozen directions, as real
// embeddings of tools cluster by topic, so the nearest neighbours are meaningful.
func clustered(r *rand.Rand, n, dim int) [][]float32 {
	centres := make([][]float32, 50)
	for i := range centres {
		centres[i] = randVec(r, dim, 1)
	}
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(len(centres))]
		noise := randVec(r, dim, 0.8)
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + noise[j]
		}
		out[i] = v
	}
	return out
}

func randVec(r *rand.Rand, dim int, scale float64) []float32 {
	v := make([]float32, dim)
	for j := range v {
		v[j] = float32(r.NormFloat64() * scale)
	}
	return v
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

// TestTopKMatchesExactCosine checks the quantized two-stage search against float64
// cosine: the top 10 agree on at least 9 of 10 on average, above and below the size
// at which the sign-bit stage starts, and the scores are within quantization error.
func TestTopKMatchesExactCosine(t *testing.T) {
	for _, tc := range []struct{ n, dim int }{{300, 64}, {3000, 256}} {
		r := rand.New(rand.NewPCG(1, uint64(tc.n)))
		rows := clustered(r, tc.n, tc.dim)
		v := buildVectors(t, rows)
		overlap := 0
		const queries = 30
		for range queries {
			q := rows[r.IntN(tc.n)]
			q = slices.Clone(q)
			for j := range q {
				q[j] += float32(r.NormFloat64() * 0.3)
			}
			exact := make([]int, tc.n)
			for i := range exact {
				exact[i] = i
			}
			sort.Slice(exact, func(a, b int) bool { return cosine(q, rows[exact[a]]) > cosine(q, rows[exact[b]]) })
			hits := v.TopK(q, 10, nil)
			if len(hits) != 10 {
				t.Fatalf("%d hits", len(hits))
			}
			for _, h := range hits {
				if d := math.Abs(float64(h.Score) - cosine(q, rows[h.Index])); d > 0.02 {
					t.Fatalf("score %v vs cosine %v", h.Score, cosine(q, rows[h.Index]))
				}
				if slices.Contains(exact[:10], h.Index) {
					overlap++
				}
			}
		}
		if avg := float64(overlap) / queries; avg < 9 {
			t.Errorf("n=%d dim=%d: top-10 overlap with exact cosine %.2f, want ≥ 9", tc.n, tc.dim, avg)
		}
	}
}

func TestTopKAllow(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	rows := clustered(r, 2000, 512)
	v := buildVectors(t, rows)
	for _, h := range v.TopK(rows[5], 20, func(i int) bool { return i%3 == 0 }) {
		if h.Index%3 != 0 {
			t.Fatalf("hit %d not allowed", h.Index)
		}
	}
	if got := v.TopK(rows[5], 1, nil); got[0].Index != 5 {
		t.Errorf("a row's own vector is not its nearest: %v", got)
	}
	if v.TopK(make([]float32, 512), 5, nil) != nil || v.TopK(rows[0][:10], 5, nil) != nil {
		t.Error("a zero or wrong-length query found something")
	}
}

// The vectors of some rows are the vectors built from those rows alone: the same hits,
// scores and order for any query, rows renumbered; a row out of range is an error.
func TestRows(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	all := clustered(r, 2000, 512)
	rows := []int{1999, 7, 500, 3, 1200}
	for i := 10; i < 2000; i += 3 {
		rows = append(rows, i)
	}
	part, err := buildVectors(t, all).Rows(rows)
	if err != nil {
		t.Fatal(err)
	}
	var picked [][]float32
	for _, i := range rows {
		picked = append(picked, all[i])
	}
	want := buildVectors(t, picked)
	if part.Len() != want.Len() || part.Dim() != want.Dim() || part.Bytes() != want.Bytes() {
		t.Fatalf("%d vectors of %d dimensions in %d bytes, want %d of %d in %d", part.Len(), part.Dim(), part.Bytes(), want.Len(), want.Dim(), want.Bytes())
	}
	for _, q := range append(clustered(r, 20, 512), all[7], all[8]) {
		for _, k := range []int{1, 10, 50} {
			if got, exp := part.TopK(q, k, nil), want.TopK(q, k, nil); !slices.Equal(got, exp) {
				t.Fatalf("top %d of the rows %v, of vectors built from them %v", k, got, exp)
			}
		}
	}
	for _, bad := range [][]int{{-1}, {0, 2000}} {
		if _, err := want.Rows(bad); err == nil {
			t.Errorf("rows %v of %d: no error", bad, want.Len())
		}
	}
}

// BenchmarkTopK is the vector side at 10,000 tools × 1,024 dimensions: one query's top
// 50 (the fusion depth). It reports the median query time (p50-ns), the vectors' own
// bytes (MB) and the heap the build kept (heap-MB).
func BenchmarkTopK(b *testing.B) {
	const n, dim = 10000, 1024
	r := rand.New(rand.NewPCG(3, 3))
	rows := clustered(r, n, dim)
	queries := clustered(r, 64, dim)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := buildVectors(b, rows)
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(rows)
	var times []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		v.TopK(queries[i%len(queries)], 50, nil)
		times = append(times, time.Since(start))
		i++
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(v.Bytes())/1e6, "MB")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/1e6, "heap-MB")
}

// TestTopKAnisotropic: vectors that share one large component, as many models' do (all
// positive here: a common offset three times the topics' spread), have nearly the same
// raw signs; the sign-bit stage, taken around the catalog's mean with the mean's part
// of each similarity added back, still keeps their true nearest neighbours among its
// candidates, as exact cosine finds them (raw signs kept 2 of the 10).
func TestTopKAnisotropic(t *testing.T) {
	const n, dim, k = 4000, 256, 10
	r := rand.New(rand.NewPCG(3, 4))
	rows := clustered(r, n, dim)
	offset := make([]float32, dim)
	for j := range offset {
		offset[j] = 3 + r.Float32()
	}
	positive := 0
	for _, row := range rows {
		for j := range row {
			row[j] += offset[j]
			if row[j] > 0 {
				positive++
			}
		}
	}
	if share := float64(positive) / (n * dim); share < 0.99 {
		t.Fatalf("only %.3f of the components are positive", share)
	}
	v := buildVectors(t, rows)
	if n*dim <= 1<<19 { // embed's exactWork
		t.Fatal("the test must exercise the sign-bit stage")
	}
	overlap := 0
	const queries = 30
	for range queries {
		q := slices.Clone(rows[r.IntN(n)])
		for j := range q {
			q[j] += float32(r.NormFloat64() * 0.3)
		}
		exact := make([]int, n)
		for i := range exact {
			exact[i] = i
		}
		sort.Slice(exact, func(a, b int) bool { return cosine(q, rows[exact[a]]) > cosine(q, rows[exact[b]]) })
		for _, h := range v.TopK(q, k, nil) {
			if slices.Contains(exact[:k], h.Index) {
				overlap++
			}
		}
	}
	if avg := float64(overlap) / queries; avg < 9 {
		t.Errorf("top-%d overlap with exact cosine %.2f, want ≥ 9", k, avg)
	}
}
