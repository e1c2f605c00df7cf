package stats

import (
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog"
)

// suggest finds, for each tool a session called, the searches of that session since its
// previous call that did not return the tool: the model was looking for it and search
// missed. The words of those queries that the tool's own text lacks (as search's
// analyzer sees words: "creating" is not missing from a tool that "creates") are the
// keywords an override should add. Queries hashed or not recorded give no words.
func suggest(searches []searchlog.Search, calls []searchlog.Call, snap *catalog.Snapshot, top int) []Suggestion {
	type event struct {
		at     time.Time
		search *searchlog.Search
		call   *searchlog.Call
	}
	kind := func(e event) int { // searches first
		if e.search != nil {
			return 0
		}
		return 1
	}
	bySession := map[string][]event{}
	for i := range searches {
		s := &searches[i]
		if s.Session != "" && s.Error == "" {
			bySession[s.Session] = append(bySession[s.Session], event{at: s.Time, search: s})
		}
	}
	for i := range calls {
		c := &calls[i]
		if c.Session != "" && !unknownTool(*c) { // no override can find a tool that is not there
			bySession[c.Session] = append(bySession[c.Session], event{at: c.Time, call: c})
		}
	}
	missing := map[string]map[string]int{} // tool → missing query → searches
	for _, events := range bySession {
		// Searches before calls of the same instant: a call answers the searches before it.
		slices.SortStableFunc(events, func(a, b event) int {
			return cmp.Or(a.at.Compare(b.at), cmp.Compare(kind(a), kind(b)))
		})
		var pending []*searchlog.Search
		for _, e := range events {
			if e.search != nil {
				pending = append(pending, e.search)
				continue
			}
			for _, s := range pending {
				if s.Query == "" || isHashed(s.Query) || returned(s, e.call.Tool) {
					continue
				}
				if missing[e.call.Tool] == nil {
					missing[e.call.Tool] = map[string]int{}
				}
				missing[e.call.Tool][s.Query]++
			}
			pending = pending[:0]
		}
	}
	out := make([]Suggestion, 0, len(missing))
	for tool, queries := range missing {
		sg := Suggestion{Tool: tool, Keywords: keywords(queries, toolTerms(tool, snap))}
		if len(sg.Keywords) == 0 {
			continue // every word of the queries is already the tool's: ranking, not words
		}
		qs := topQueries(queries, maxQueries)
		for _, q := range qs {
			sg.Queries = append(sg.Queries, q.Query)
		}
		for _, n := range queries {
			sg.Misses += n
		}
		out = append(out, sg)
	}
	slices.SortFunc(out, func(a, b Suggestion) int {
		return cmp.Or(cmp.Compare(b.Misses, a.Misses), cmp.Compare(a.Tool, b.Tool))
	})
	return out[:min(len(out), top)]
}

func returned(s *searchlog.Search, tool string) bool {
	return slices.ContainsFunc(s.Results, func(h searchlog.Hit) bool { return h.Tool == tool })
}

// toolTerms is the set of index terms of a tool's name, title and description, or of
// its name alone when the catalog does not have it.
func toolTerms(tool string, snap *catalog.Snapshot) map[string]bool {
	text := []string{tool}
	if snap != nil {
		if t, err := snap.Lookup(tool, nil); err == nil && t.Qualified == tool {
			text = append(text, t.Name, t.Title, t.Description)
		}
	}
	terms := map[string]bool{}
	for _, s := range text {
		search.Words(s, func(_, term string) { terms[term] = true })
	}
	return terms
}

// keywords returns the words of the queries whose terms are not among have, the words of
// more searches first, at most maxKeywords. Stop words, single characters and numbers
// say nothing about a tool and are left out; each term is written as the queries first
// wrote it.
func keywords(queries map[string]int, have map[string]bool) []string {
	type word struct {
		text     string
		searches int
	}
	byTerm := map[string]*word{}
	ordered := slices.Sorted(func(yield func(string) bool) {
		for q := range queries {
			if !yield(q) {
				return
			}
		}
	})
	for _, q := range ordered {
		seen := map[string]bool{}
		search.Words(q, func(w, term string) {
			if term == "" || have[term] || seen[term] || len([]rune(w)) < 2 || strings.IndexFunc(w, isNotDigit) < 0 {
				return
			}
			seen[term] = true
			if byTerm[term] == nil {
				byTerm[term] = &word{text: w}
			}
			byTerm[term].searches += queries[q]
		})
	}
	words := make([]*word, 0, len(byTerm))
	for _, w := range byTerm {
		words = append(words, w)
	}
	slices.SortFunc(words, func(a, b *word) int {
		return cmp.Or(cmp.Compare(b.searches, a.searches), cmp.Compare(a.text, b.text))
	})
	out := []string{}
	for _, w := range words[:min(len(words), maxKeywords)] {
		out = append(out, w.text)
	}
	return out
}

func isNotDigit(r rune) bool { return !unicode.IsDigit(r) }
