package bridge

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/search"
)

// Bounds of one tool_search and one tool_describe: a model may ask for several tools at
// once, but one call must not become a dump of the catalog.
const (
	// MaxQueries is how many queries one tool_search takes ("queries").
	MaxQueries = 5
	// MaxSelect is how many names one "select:" query takes.
	MaxSelect = 10
	// MaxDescribe is how many tools one tool_describe describes ("names").
	MaxDescribe = 10
)

// selectPrefix starts a query that names the tools it wants ("select:a,b"), as Claude
// Code's own ToolSearch takes them: no search, the tools themselves.
const selectPrefix = "select:"

// IsSelect reports whether query names its tools ("select:NAME,NAME") rather than
// searches for them.
func IsSelect(query string) bool { return strings.HasPrefix(strings.TrimSpace(query), selectPrefix) }

// QueryResult is one query's answer within a tool_search of several ("queries").
type QueryResult struct {
	Query string `json:"query"`
	SearchResult
}

// MultiSearchResult is what tool_search returns for several queries: each one's answer,
// in the order asked.
type MultiSearchResult struct {
	Searches []QueryResult `json:"searches"`
}

// Confidence values of SearchResult.Confidence.
const (
	// LowConfidence says no match shares enough of the query's words to fit it
	// surely: the model should try other words, or tell the user the tool may not
	// exist, rather than take the first match for the right one.
	LowConfidence = "low"
)

// Search answers tool_search: {"query": string, "queries"?: [string, ...], "limit"?:
// integer}. With queries, each query (query first, up to MaxQueries in all) is answered
// on its own, as {"searches": [...]} in that order. A query "select:NAME,NAME" returns
// those tools themselves (up to MaxSelect).
func (b *Bridge) Search(args json.RawMessage) Result {
	var in struct {
		Query   *string         `json:"query"`
		Queries []string        `json:"queries"`
		Limit   json.RawMessage `json:"limit"`
	}
	if r, ok := decodeArgs(SearchTool, args, &in); !ok {
		return r
	}
	var queries []string
	if in.Query != nil {
		queries = append(queries, *in.Query)
	}
	queries = appendNew(queries, in.Queries)
	switch {
	case len(queries) == 0:
		return ErrorResult(search.InvalidToolInput, "tool_search needs a \"query\": describe the tool you need in a few words, such as {\"query\": \"create github issue\"} (more in \"queries\")")
	case len(queries) > MaxQueries:
		return ErrorResult(search.InvalidToolInput, "tool_search takes at most %d queries at once, got %d: search for the rest in another call", MaxQueries, len(queries))
	}
	limit, asked, err := parseLimit(in.Limit)
	if err != nil {
		return ErrorResult(search.InvalidToolInput, "tool_search: %v", err)
	}
	limit = b.Plan.Config.Limit(limit, asked)
	if b.Index.Snapshot().Hash() != b.Plan.Snapshot.Hash() {
		return ErrorResult(search.Unavailable, "tool_search cannot search now: its index is not of this session's catalog (a bug of toolshed's front, which must index the plan's own catalog); report it")
	}
	if len(queries) == 1 {
		out, r := b.searchOne(queries[0], limit)
		if r.IsError {
			return r
		}
		return jsonResult(out)
	}
	multi := MultiSearchResult{Searches: make([]QueryResult, 0, len(queries))}
	for i, q := range queries {
		out, r := b.searchOne(q, limit)
		if r.IsError {
			return ErrorResult(r.Code, "query %d of %d (%q): %s", i+1, len(queries), Snippet(q, 80), r.Text)
		}
		multi.Searches = append(multi.Searches, QueryResult{Query: q, SearchResult: out})
	}
	return jsonResult(multi)
}

// searchOne answers one query, or says why it cannot (an error Result).
func (b *Bridge) searchOne(query string, limit int) (SearchResult, Result) {
	if IsSelect(query) {
		return b.selectTools(strings.TrimPrefix(strings.TrimSpace(query), selectPrefix))
	}
	rank := b.Index.Search
	if b.Rank != nil {
		rank = b.Rank
	}
	found, err := rank(query, search.Options{Limit: limit, Allow: b.Plan.Searchable()})
	if err != nil {
		return SearchResult{}, errorFrom(err)
	}
	out := SearchResult{Matches: make([]Match, 0, len(found)), Searched: len(b.Plan.Deferred)}
	for _, r := range found {
		out.Matches = append(out.Matches, matchOf(r.Tool))
	}
	low := len(found) > 0 && weak(query, found)
	if low {
		out.Confidence = LowConfidence
	}
	switch {
	case (len(out.Matches) < limit || low) && len(b.Unsearched) > 0:
		out.Unavailable = b.Unsearched
		out.Hint = unsearchedText(b.Unsearched)
		switch {
		case len(out.Matches) == 0:
			out.Hint = "no tool matched; " + out.Hint + ". Search again then, or try other words for what the tool does"
		case low:
			out.Hint = weakText + " " + b.serversText() + "; and " + out.Hint + ", whose tools were not searched"
		}
	case len(out.Matches) == 0:
		out.Hint = "no tool matched; try other words for what the tool does, or fewer of them. " + b.serversText()
	case low:
		out.Hint = weakText + " " + b.serversText()
	}
	return out, Result{}
}

// weakText opens the hint of a search whose matches are weak.
const weakText = "these matches are weak: none of them has even half of the query's words, so they may not do what was asked; try words a tool for it would use, or tell the user no such tool may be here."

func matchOf(t *catalog.Tool) Match {
	return Match{Name: t.Qualified, Server: t.Server, Description: Snippet(t.Description, 200), Required: t.Required}
}

// selectTools answers "select:NAME,NAME": those tools, in the order named, and the
// names that are none.
func (b *Bridge) selectTools(list string) (SearchResult, Result) {
	var names []string
	for n := range strings.SplitSeq(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	switch {
	case len(names) == 0:
		return SearchResult{}, ErrorResult(search.InvalidToolInput, "select: names no tool; write select: and the tools' names separated by commas, such as \"select:github__create_issue,slack__post_message\"")
	case len(names) > MaxSelect:
		return SearchResult{}, ErrorResult(search.InvalidToolInput, "select: takes at most %d names at once, got %d", MaxSelect, len(names))
	}
	out := SearchResult{Matches: []Match{}, Searched: len(b.Plan.Deferred)}
	var missing []string
	seen := map[*catalog.Tool]bool{}
	for _, n := range names {
		t, err := b.Plan.Lookup(n)
		if err != nil {
			missing = append(missing, n)
			continue
		}
		if !seen[t] {
			seen[t] = true
			out.Matches = append(out.Matches, matchOf(t))
		}
	}
	if len(missing) > 0 {
		out.Hint = fmt.Sprintf("no tool is named %s here (or the name is ambiguous: use the qualified name, server__tool); search for what it does instead", quoteList(missing))
	}
	return out, Result{}
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// weakShare is the share of a query's words one of its matches must have for the
// search to count as sure of it.
const weakShare = 0.5

// weak reports whether no tool of found fits query surely: none was found by its name,
// and none of the first three has half of the query's words (their index terms, as
// search sees them: stemmed, stop words out) in its name, title, description,
// parameters or the operator's search overrides. A tool found by other evidence (4-grams, a learned query, a vector)
// may still be right; the answer keeps it and says it is unsure.
func weak(query string, found []search.Result) bool {
	want := map[string]bool{}
	search.Words(query, func(_, term string) {
		if term != "" {
			want[term] = true
		}
	})
	if len(want) == 0 {
		return false
	}
	for i, r := range found {
		if r.Match == search.MatchExact || r.Match == search.MatchNamed || r.Match == search.MatchRegex {
			return false
		}
		if i >= 3 {
			continue
		}
		have := map[string]bool{}
		add := func(text string) {
			search.Words(text, func(_, term string) {
				if want[term] {
					have[term] = true
				}
			})
		}
		t := r.Tool
		for _, text := range append([]string{t.Qualified, t.Name, t.Title, t.Description, t.Search.Title, t.Search.Description}, append(t.Search.Keywords, t.Search.Aliases...)...) {
			add(text)
		}
		for _, p := range t.Params {
			add(p.Name)
			add(p.Description)
			for _, e := range p.Enum {
				add(e)
			}
		}
		if float64(len(have)) >= weakShare*float64(len(want)) {
			return false
		}
	}
	return true
}

// serversText names the servers whose tools the session searches, with their tool
// counts, the largest first, in about 300 characters: what a model that found nothing
// fitting can ask the user about.
func (b *Bridge) serversText() string {
	counts := map[string]int{}
	for _, t := range b.Plan.Deferred {
		counts[t.Server]++
	}
	servers := make([]string, 0, len(counts))
	for s := range counts {
		servers = append(servers, s)
	}
	sort.Slice(servers, func(i, j int) bool {
		if counts[servers[i]] != counts[servers[j]] {
			return counts[servers[i]] > counts[servers[j]]
		}
		return servers[i] < servers[j]
	})
	var parts []string
	size := 0
	for i, s := range servers {
		p := fmt.Sprintf("%s (%d)", s, counts[s])
		if size+len(p) > 300 && i > 0 {
			parts = append(parts, fmt.Sprintf("and %d more", len(servers)-i))
			break
		}
		parts = append(parts, p)
		size += len(p) + 2
	}
	return "The servers searched, with their tool counts: " + strings.Join(parts, ", ") + "."
}
