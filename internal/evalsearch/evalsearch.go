// Package evalsearch connects package eval, which measures any search, to toolshed's:
// eval stays free of package search, whose own tests use eval.
package evalsearch

import (
	"context"
	"slices"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/internal/eval"
	"github.com/toolshed/toolshed/search"
)

// Search is the search toolshed is measured by: ix's first Depth results. Queries
// longer than tool search accepts are shortened the way a client should
// (search.Shorten), rather than counted as failures.
func Search(ix *search.Index) eval.SearchFunc {
	return func(q string) ([]*catalog.Tool, error) {
		found, err := ix.Search(search.Shorten(q, search.MaxQueryLen), search.Options{Limit: eval.Depth})
		return toolsOf(found), err
	}
}

// Hybrid is the search measured with embeddings: hs's first Depth results, BM25F and
// cosine fused (see package hybrid).
func Hybrid(hs *hybrid.Searcher) eval.SearchFunc {
	return func(q string) ([]*catalog.Tool, error) {
		found, err := hs.Search(context.Background(), search.Shorten(q, search.MaxQueryLen), search.Options{Limit: eval.Depth})
		return toolsOf(found), err
	}
}

// Vectors is the ranking of hs's vectors alone, for comparison with words and their
// fusion (see hybrid.Searcher.SearchVectors).
func Vectors(hs *hybrid.Searcher) eval.SearchFunc {
	return func(q string) ([]*catalog.Tool, error) {
		found, err := hs.SearchVectors(context.Background(), search.Shorten(q, search.MaxQueryLen), search.Options{Limit: eval.Depth})
		return toolsOf(found), err
	}
}

// LearnSeen is how many results of a logged search the replay takes its model to have
// seen: tool_search's default limit.
var LearnSeen = 5

// Learned is eval.RunLearned's search over ix: with a log, ix.WithEvidence of it,
// each query of the log becoming one successful call, at now, of every tool of its
// relevant name; without one, ix itself.
func Learned(ix *search.Index, now time.Time) func(log []eval.Query) eval.SearchFunc {
	byName := map[string][]string{}
	for _, t := range ix.Snapshot().Tools() {
		byName[t.Name] = append(byName[t.Name], t.Qualified)
	}
	return func(log []eval.Query) eval.SearchFunc {
		var ev []search.Evidence
		for _, q := range log {
			found, _ := ix.Search(search.Shorten(q.Query, search.MaxQueryLen), search.Options{Limit: LearnSeen})
			for _, tool := range byName[q.Relevant[0]] {
				if !slices.ContainsFunc(found, func(r search.Result) bool { return r.Tool.Qualified == tool }) {
					continue // the search did not find it: no call of it follows from this query
				}
				ev = append(ev, search.Evidence{Tool: tool, Query: q.Query, Count: 1, Last: now})
			}
		}
		return Search(ix.WithEvidence(ev, now))
	}
}

// toolsOf is the tools of found, in order.
func toolsOf(found []search.Result) []*catalog.Tool {
	tools := make([]*catalog.Tool, len(found))
	for i, f := range found {
		tools[i] = f.Tool
	}
	return tools
}
