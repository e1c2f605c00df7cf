package stats

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog"
)

// maxPendingSearches bounds the searches a session may make without a call that the
// suggestions remember: a session that searches on and on without calling must not
// make the report's memory grow with it. The oldest are forgotten first.
const maxPendingSearches = 256

// suggester finds, for each tool a session called, the searches of that session since
// its previous call that did not return the tool: the model was looking for it and
// search missed. The words of those queries that the tool's own text lacks (as search's
// analyzer sees words: "creating" is not missing from a tool that "creates") are the
// keywords an override should add. Queries hashed or not recorded give no words.
//
// It is fed the searches and calls in time order, a search before a call of the same
// instant (a call answers the searches before it), and keeps only each session's
// searches since its last call.
type suggester struct {
	pending map[string][]pendingSearch // session → its searches since its last call
	missing map[string]map[string]int  // tool → missing query → searches
}

// pendingSearch is what a search waiting for its session's next call needs.
type pendingSearch struct {
	query string
	tools []string // the tools it returned
}

func newSuggester() *suggester {
	return &suggester{pending: map[string][]pendingSearch{}, missing: map[string]map[string]int{}}
}

func (sg *suggester) search(s *searchlog.Search) {
	// Searches without a session cannot be followed, failed ones returned nothing, and
	// unrecorded or hashed queries give no words.
	if s.Session == "" || s.Error != "" || s.Query == "" || isHashed(s.Query) {
		return
	}
	tools := make([]string, len(s.Results))
	for i, h := range s.Results {
		tools[i] = h.Tool
	}
	p := sg.pending[s.Session]
	if len(p) == maxPendingSearches {
		p = append(p[:0], p[1:]...)
	}
	sg.pending[s.Session] = append(p, pendingSearch{s.Query, tools})
}

func (sg *suggester) call(c *searchlog.Call) {
	if c.Session == "" || unknownTool(*c) { // no override can find a tool that is not there
		return
	}
	for _, s := range sg.pending[c.Session] {
		if slices.Contains(s.tools, c.Tool) {
			continue
		}
		if sg.missing[c.Tool] == nil {
			sg.missing[c.Tool] = map[string]int{}
		}
		sg.missing[c.Tool][s.query]++
	}
	delete(sg.pending, c.Session)
}

// suggestions returns the overrides of the tools missed most, at most top.
func (sg *suggester) suggestions(snap *catalog.Snapshot, top int) []Suggestion {
	out := make([]Suggestion, 0, len(sg.missing))
	for tool, queries := range sg.missing {
		sug := Suggestion{Tool: tool, Keywords: keywords(queries, toolTerms(tool, snap))}
		if len(sug.Keywords) == 0 {
			continue // every word of the queries is already the tool's: ranking, not words
		}
		qs := topQueries(queries, maxQueries)
		for _, q := range qs {
			sug.Queries = append(sug.Queries, q.Query)
		}
		for _, n := range queries {
			sug.Misses += n
		}
		out = append(out, sug)
	}
	slices.SortFunc(out, func(a, b Suggestion) int {
		return cmp.Or(cmp.Compare(b.Misses, a.Misses), cmp.Compare(a.Tool, b.Tool))
	})
	return out[:min(len(out), top)]
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
