package search

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
)

// substringByName is the substring fallback written the plain way, every name searched:
// the definition that substring, which searches only the names its pair sets leave,
// must agree with. names are the tools' normalized qualified names.
func (ix *Index) substringByName(names []string, query string, allow *catalog.Set, limit int) []Result {
	whole, parts := substringWords(query)
	type cand struct{ doc, hits, length int }
	var cands []cand
	for d, name := range names {
		hits := 0
		if whole != "" && strings.Contains(name, whole) {
			hits = len(parts) + 2
		} else {
			for _, w := range parts {
				if strings.Contains(name, w) {
					hits++
				}
			}
		}
		if hits > 0 && allow.Has(d) {
			cands = append(cands, cand{d, hits, len(name)})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.hits != b.hits {
			return b.hits - a.hits
		}
		return a.length - b.length
	})
	var out []Result
	for _, c := range cands[:min(limit, len(cands))] {
		out = append(out, Result{Tool: ix.snap.Tool(c.doc), Score: float64(c.hits), Match: MatchSubstring})
	}
	return out
}

// TestSubstringMatchesByName checks the fallback against substringByName on pieces of
// real tool names, alone and joined by other words, under a scope and without, at
// several limits.
func TestSubstringMatchesByName(t *testing.T) {
	snap, _ := scaleCatalog(t, 1000)
	ix := NewIndex(snap)
	scope := catalog.NewSet(snap)
	for d := 0; d < snap.Len(); d += 3 {
		scope.Add(d)
	}
	names := make([]string, snap.Len())
	for d, t := range snap.Tools() {
		names[d] = normalizeName(t.Qualified)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	piece := func() string {
		name := snap.Tool(rng.IntN(snap.Len())).Qualified
		i := rng.IntN(len(name))
		return name[i : i+min(len(name)-i, 2+rng.IntN(10))]
	}
	queries := []string{"", "!!!", "zzz", "get", "GET-File", "issue create", "a_b_c_d", "ünïcode", "최근 github 이슈", "ünï_get"}
	for range 300 {
		queries = append(queries, piece(), piece()+" "+piece(), "xq "+piece()+"-"+piece())
	}
	for _, q := range queries {
		for _, allow := range []*catalog.Set{nil, scope} {
			for _, limit := range []int{1, 5, 50} {
				got, want := ix.substring(q, allow, limit), ix.substringByName(names, q, allow, limit)
				if !slices.EqualFunc(got, want, func(a, b Result) bool { return a.Tool == b.Tool && a.Score == b.Score }) {
					t.Fatalf("substring(%q, scoped %v, %d) = %v, want %v", q, allow != nil, limit, toolNames(got), toolNames(want))
				}
			}
		}
	}
}

func toolNames(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Tool.Qualified)
	}
	return out
}
