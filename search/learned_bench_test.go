package search_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/search"
)

// benchEvidence gives every tool of snap two of the benchmark queries as evidence, used
// within the last two half-lives: a log that has seen every tool called.
func benchEvidence(snap *catalog.Snapshot, queries []string, now time.Time) []search.Evidence {
	var ev []search.Evidence
	for d, t := range snap.Tools() {
		for k := range 2 {
			ev = append(ev, search.Evidence{
				Tool:  t.Qualified,
				Query: queries[(d*31+k*17)%len(queries)],
				Count: 1 + d%3,
				Last:  now.Add(-time.Duration(d%60) * 24 * time.Hour),
			})
		}
	}
	return ev
}

// BenchmarkWithEvidence measures making the learned index from a built one: what the
// gateway pays when the evidence or the catalog changes.
func BenchmarkWithEvidence(b *testing.B) {
	queries := benchQueries(b)
	now := time.Now()
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			snap := benchSnapshot(b, n)
			ix := search.NewIndex(snap)
			ev := benchEvidence(snap, queries, now)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ix.WithEvidence(ev, now)
			}
		})
	}
}

// BenchmarkSearchLearned is BenchmarkSearch over an index whose every tool has a learned
// field.
func BenchmarkSearchLearned(b *testing.B) {
	queries := benchQueries(b)
	now := time.Now()
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			snap := benchSnapshot(b, n)
			benchSearch(b, search.NewIndex(snap).WithEvidence(benchEvidence(snap, queries, now), now), queries)
		})
	}
}
