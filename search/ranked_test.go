package search

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/internal/scale"
)

// exhaustive scores every posting of every query term (of the maxTerms that ranked
// keeps), with no skipping, and returns the best k tools as ranked orders them: score
// descending, then catalog order.
func (ix *Index) exhaustive(query string, k int) []Result {
	s := ix.scratch()
	ix.queryTerms(query, shapeOf(query), s)
	terms := append([]queryTerm(nil), capTerms(s.terms)...)
	ix.release(s)
	// ranked adds terms rarest first; float sums depend on the order, so use the same.
	sort.SliceStable(terms, func(i, j int) bool { return ix.postingLen(terms[i].id) < ix.postingLen(terms[j].id) })
	score := map[int32]float32{}
	hits := map[int32]int{}
	for _, qt := range terms {
		start, end := ix.postStart[qt.id], ix.postStart[qt.id+1]
		for j, d := range ix.postDoc[start:end] {
			score[d] += qt.weight * ix.postScore[int(start)+j]
			hits[d]++
		}
	}
	coord := appendCoord(nil, len(terms), ix.params.Coord)
	type cand struct {
		doc   int32
		score float32
	}
	var all []cand
	for d, sc := range score {
		if f := sc * coord[hits[d]]; f > 0 {
			all = append(all, cand{d, f})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].score > all[j].score || all[i].score == all[j].score && all[i].doc < all[j].doc
	})
	var out []Result
	for _, c := range all[:min(k, len(all))] {
		out = append(out, Result{Tool: ix.snap.Tool(int(c.doc)), Score: float64(c.score), Match: MatchBM25})
	}
	return out
}

// TestRankedIsExhaustive checks that ranked's skipping (MaxScore bounds, candidate
// pruning, binary search in long posting lists) returns exactly what scoring every
// posting returns, on real queries over a catalog large enough for long lists.
func TestRankedIsExhaustive(t *testing.T) {
	snap, queries := scaleCatalog(t, 4000)
	ix := NewIndex(snap)
	long := 0
	for term := range ix.termText {
		if ix.postingLen(int32(term)) >= longPostings {
			long++
		}
	}
	if long == 0 {
		t.Fatal("no posting list is long enough to be skipped; the test needs a larger catalog")
	}
	// A negative Coord must count as none: pruning relies on coordination never
	// raising a score.
	negative := DefaultParams
	negative.Coord = -0.5
	for _, ix := range []*Index{ix, NewIndexParams(snap, negative)} {
		for i, q := range queries {
			if i%8 != 0 {
				continue // a sample keeps the test quick, and under -race
			}
			for _, k := range []int{1, 5, 20} {
				checkExhaustive(t, ix, Shorten(q, MaxQueryLen), k)
			}
		}
	}
}

// scaleCatalog returns a scale catalog of n real tools and the real queries.
func scaleCatalog(tb testing.TB, n int) (*catalog.Snapshot, []string) {
	tb.Helper()
	real, err := scale.Real("../bench")
	if err != nil {
		tb.Fatal(err)
	}
	snap, problems := catalog.Build(scale.Catalog(real, n))
	if len(problems) != 0 {
		tb.Fatal(problems[0])
	}
	queries, err := scale.Queries("../bench")
	if err != nil {
		tb.Fatal(err)
	}
	return snap, queries
}

// checkExhaustive fails t unless ranked returns exactly what exhaustive does.
func checkExhaustive(t *testing.T, ix *Index, q string, k int) {
	t.Helper()
	got, want := ix.ranked(q, shapeOf(q), nil, k), ix.exhaustive(q, k)
	if len(got) != len(want) {
		t.Fatalf("Coord %v, %q, k=%d: ranked returned %d tools, exhaustive %d", ix.params.Coord, q, k, len(got), len(want))
	}
	for i := range got {
		if got[i].Tool != want[i].Tool || got[i].Score != want[i].Score {
			t.Fatalf("Coord %v, %q, k=%d: result %d is %s (%v), exhaustive has %s (%v)", ix.params.Coord, q, k, i,
				got[i].Tool.Qualified, got[i].Score, want[i].Tool.Qualified, want[i].Score)
		}
	}
}

// TestQuerySurfaces checks that reading a query word's term from the catalog's surface
// table gives exactly the terms that stemming the word gives.
func TestQuerySurfaces(t *testing.T) {
	snap := trickyCatalog(t, 1200)
	ix := NewIndex(snap)
	if ix.surfaces.n == 0 {
		t.Fatal("the surface table is empty")
	}
	plain := NewIndex(snap) // term ids are the same in both: the build is deterministic
	plain.surfaces = newTermTable(0)
	for _, tool := range snap.Tools() {
		for _, q := range []string{tool.Name, tool.Title, tool.Description, tool.Server + " " + tool.Name} {
			if q == "" {
				continue
			}
			a, b := ix.scratch(), plain.scratch()
			ix.queryTerms(q, shapeOf(q), a)
			plain.queryTerms(q, shapeOf(q), b)
			if !slices.Equal(a.terms, b.terms) {
				t.Fatalf("%q: terms %v through the surface table, %v by stemming", q, a.terms, b.terms)
			}
			ix.release(a)
			plain.release(b)
		}
	}
}

// FuzzRankedIsExhaustive is TestRankedIsExhaustive for any query: whatever terms and
// weights a query brings, ranked's pruning must give what scoring every posting gives.
func FuzzRankedIsExhaustive(f *testing.F) {
	snap, queries := scaleCatalog(f, 3000)
	for _, q := range queries[:40] {
		f.Add(q, 5)
	}
	f.Add("get get get list file data", 1)
	f.Add(strings.Join(queries[:60], " "), 7) // more terms than ranked keeps
	ix := NewIndex(snap)
	f.Fuzz(func(t *testing.T, q string, k int) {
		checkExhaustive(t, ix, q, 1+int(uint(k)%20))
	})
}

// TestRankedManyTerms checks a query of more terms than a tool's match count can hold:
// ranked keeps the weightiest maxTerms. The tool matching all of them comes first, once;
// the other tool's words are in both tools, so they weigh least, are dropped, and it is
// not found.
func TestRankedManyTerms(t *testing.T) {
	var words []string
	for a := 'a'; a <= 'z'; a++ {
		for b := 'a'; b <= 'l'; b++ {
			words = append(words, "q"+string(a)+string(b)) // three letters: never stemmed
		}
	}
	if len(words) <= maxTerms {
		t.Fatalf("%d words, want more than %d", len(words), maxTerms)
	}
	doc, _ := json.Marshal(map[string]any{"tools": []map[string]any{
		{"name": "everything", "description": strings.Join(words, " "), "inputSchema": map[string]any{"type": "object"}},
		{"name": "some", "description": strings.Join(words[:20], " "), "inputSchema": map[string]any{"type": "object"}},
	}})
	ix := NewIndex(catalogtest.Snapshot(t, string(doc)))
	q := strings.Join(words, " ")
	got := ix.ranked(q, shapeOf(q), nil, 5)
	if len(got) != 1 || got[0].Tool.Name != "everything" {
		var names []string
		for _, r := range got {
			names = append(names, r.Tool.Name)
		}
		t.Fatalf("ranked = %v, want [everything]", names)
	}
}

func TestLowerBound(t *testing.T) {
	docs := []int32{2, 3, 3, 7, 9, 40}
	for _, c := range []struct {
		lo   int
		d    int32
		want int
	}{
		{0, 0, 0}, {0, 2, 0}, {0, 3, 1}, {0, 4, 3}, {0, 9, 4}, {0, 10, 5}, {0, 41, 6},
		{2, 3, 2}, {3, 3, 3}, {4, 2, 4}, {6, 1, 6},
	} {
		if got := lowerBound(docs, c.lo, c.d); got != c.want {
			t.Errorf("lowerBound(%v, %d, %d) = %d, want %d", docs, c.lo, c.d, got, c.want)
		}
	}
	if got := lowerBound(nil, 0, 5); got != 0 {
		t.Errorf("lowerBound(nil, 0, 5) = %d, want 0", got)
	}
}

func TestSortDocs(t *testing.T) {
	set := make([]uint64, (1000+63)/64)
	for _, docs := range [][]int32{
		nil,
		{5},
		{999, 0, 63, 64, 1, 500},
		{128, 127, 191, 192},
		{7, 300, 7, 2, 300, 300},
	} {
		want := slices.Compact(slices.Sorted(slices.Values(docs)))
		got := sortDocs(slices.Clone(docs), set)
		if !slices.Equal(got, want) {
			t.Errorf("sortDocs(%v) = %v, want %v", docs, got, want)
		}
		if i := slices.IndexFunc(set, func(w uint64) bool { return w != 0 }); i >= 0 {
			t.Fatalf("sortDocs(%v) left bits set in word %d", docs, i)
		}
	}
}
