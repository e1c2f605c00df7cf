// Package stats reads the search log and says how well tool search serves a team: how
// often it finds nothing, which searches a session never acted on, which tools it ranks
// too low or never surfaces, how each server answers, what deferral saved, and which
// keywords would make the tools it missed findable.
//
// Compute is a pure function of the records, so the command, the HTML page and the tests
// see the same figures whatever store the records came from.
package stats

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/percent"
	"github.com/toolshed/toolshed/searchlog"
)

// DefaultTop is how many rows the ranked lists keep when Options.Top is 0.
const DefaultTop = 10

// LowRank is the worst rank that is not bad ranking: a call of a tool its session's
// searches returned below it (4th or lower) means the model had to dig for it.
const LowRank = 3

// maxKeywords bounds the keywords suggested for one tool, and maxQueries the queries
// shown with a suggestion: a suggestion is read and pasted by a person.
const (
	maxKeywords = 8
	maxQueries  = 5
)

// Options says what to compute. The zero value reads every record given, without a
// catalog.
type Options struct {
	// Since and Until bound the window: records outside it are left out. A zero Since
	// starts at the first record, a zero Until ends at the last.
	Since, Until time.Time
	// Catalog is the tools the gateway serves. Without it, tools never surfaced cannot
	// be listed and suggested keywords are checked against tool names only.
	Catalog *catalog.Snapshot
	// Top is how many rows each ranked list keeps; 0 means DefaultTop.
	Top int
}

// Report is what toolshed stats prints. Its JSON form is stable: keys are only added.
// Percentages are of the figure they qualify, rounded as package percent rounds them
// (one decimal; never 0 or 100 for what is not exactly that).
type Report struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`

	Searches       int     `json:"searches"`
	Sessions       int     `json:"sessions"`
	FailedSearches int     `json:"failed_searches"`
	EmptySearches  int     `json:"empty_searches"`
	EmptyPct       float64 `json:"empty_pct"`
	Misses         Misses  `json:"misses"`

	Calls int `json:"calls"`
	// ToolsCalled counts the distinct tools called.
	ToolsCalled int         `json:"tools_called"`
	LowRank     RankedCalls `json:"low_rank_calls"`
	Unsurfaced  RankedCalls `json:"unsurfaced_calls"`
	TopTools    []ToolCalls `json:"top_tools"`
	Servers     []Server    `json:"servers"`
	// UnknownTools are the calls that named no tool their session could see (an unknown
	// name, or a tool outside its profile): the gateway refused them, and recorded no
	// server. They count among Calls and their latency, but belong to no server and to
	// no tool, so ToolsCalled, TopTools, LowRank, Unsurfaced, Servers and Suggestions
	// leave them out; Tools lists the names called.
	UnknownTools RankedCalls `json:"unknown_tool_calls"`

	NeverSurfaced NeverSurfaced `json:"never_surfaced"`

	SearchLatency Latency  `json:"search_latency"`
	CallLatency   Latency  `json:"call_latency"`
	Tokens        Tokens   `json:"tokens"`
	Timeline      Timeline `json:"timeline"`

	Suggestions []Suggestion `json:"suggestions"`
	// HashedQueries counts the searches whose query was hashed and UnrecordedQueries those
	// whose query was not recorded: neither can suggest keywords.
	HashedQueries     int `json:"hashed_queries"`
	UnrecordedQueries int `json:"unrecorded_queries"`
}

// Misses are the likely misses: searches that succeeded, in a session, after which the
// session called none of the tools they returned. An empty result is always one.
type Misses struct {
	// Judged counts the searches that could be judged: they succeeded and have a
	// session (a search without one cannot be followed).
	Judged int     `json:"judged"`
	Count  int     `json:"count"`
	Pct    float64 `json:"pct"`
	// Queries are the most often missed queries, most first.
	Queries []QueryCount `json:"top_queries"`
}

// QueryCount is a query and how many times it was missed.
type QueryCount struct {
	Query string `json:"query"`
	Count int    `json:"count"`
}

// RankedCalls counts calls of one kind (of tools ranked below LowRank, or of tools no
// search returned) and the tools they called most.
type RankedCalls struct {
	Count int         `json:"count"`
	Pct   float64     `json:"pct"`
	Tools []ToolCalls `json:"tools"`
}

// ToolCalls is one tool and its calls.
type ToolCalls struct {
	Tool   string `json:"tool"`
	Calls  int    `json:"calls"`
	Errors int    `json:"errors"`
	// MedianRank is the median of the calls' Rank among those a search had returned
	// the tool for, 0 when none had.
	MedianRank int `json:"median_rank"`
}

// Server is one server's calls. Errors are calls that ran and reported an error, failed,
// or found the server unavailable; Timeouts those it did not answer in time.
type Server struct {
	Server     string  `json:"server"`
	Calls      int     `json:"calls"`
	Errors     int     `json:"errors"`
	Timeouts   int     `json:"timeouts"`
	Cancelled  int     `json:"cancelled"`
	ErrorPct   float64 `json:"error_pct"`
	TimeoutPct float64 `json:"timeout_pct"`
	P50Ms      float64 `json:"p50_ms"`
}

// NeverSurfaced lists the catalog's tools that no search returned.
type NeverSurfaced struct {
	// Catalog reports whether a catalog was given; without one nothing is listed.
	Catalog      bool     `json:"catalog"`
	CatalogTools int      `json:"catalog_tools"`
	Count        int      `json:"count"`
	Tools        []string `json:"tools"`
}

// Latency is a distribution of durations, in milliseconds.
type Latency struct {
	Count     int     `json:"count"`
	P50Ms     float64 `json:"p50_ms"`
	P90Ms     float64 `json:"p90_ms"`
	P99Ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	Histogram []Bin   `json:"histogram"`
}

// Bin is one bar of a latency histogram: the durations up to UpToMs (above the previous
// bin's); the last bin of the scale has UpToMs 0 and holds everything longer.
type Bin struct {
	UpToMs float64 `json:"up_to_ms"`
	Count  int     `json:"count"`
}

// Tokens is what deferral saved: each search's catalog cost minus what its results cost.
type Tokens struct {
	// Searches counts the searches that recorded a catalog cost.
	Searches      int     `json:"searches"`
	CatalogTokens int64   `json:"catalog_tokens"`
	ResultTokens  int64   `json:"result_tokens"`
	Saved         int64   `json:"saved"`
	SavedPct      float64 `json:"saved_pct"`
	PerSearch     int64   `json:"saved_per_search"`
}

// Timeline is the searches over time, in buckets of an hour (windows up to two days), a
// day (up to 180 days) or a week.
type Timeline struct {
	Bucket string  `json:"bucket"`
	Points []Point `json:"points"`
}

// Point is one bucket of the timeline.
type Point struct {
	Start    time.Time `json:"start"`
	Searches int       `json:"searches"`
	Empty    int       `json:"empty"`
	Misses   int       `json:"misses"`
	Calls    int       `json:"calls"`
}

// Suggestion is an override that would let search find a tool that sessions called after
// searches that missed it: the words of those queries that the tool's own text lacks.
type Suggestion struct {
	Tool     string   `json:"tool"`
	Keywords []string `json:"keywords"`
	// Queries are the missing queries, most frequent first, and Misses how many
	// searches missed the tool in all.
	Queries []string `json:"queries"`
	Misses  int      `json:"misses"`
}

// Compute builds the report of the records within the window of opts. It does not
// modify the records.
func Compute(searches []searchlog.Search, calls []searchlog.Call, opts Options) Report {
	top := opts.Top
	if top <= 0 {
		top = DefaultTop
	}
	searches = within(searches, opts, func(s *searchlog.Search) time.Time { return s.Time })
	calls = within(calls, opts, func(c *searchlog.Call) time.Time { return c.Time })
	r := Report{Since: opts.Since, Until: opts.Until, Searches: len(searches), Calls: len(calls)}
	r.window(searches, calls)

	missed := likelyMisses(searches, calls)
	r.searchFigures(searches, missed, top)
	r.callFigures(calls, top)
	r.NeverSurfaced = neverSurfaced(searches, opts.Catalog)
	r.Timeline = timeline(r.Since, r.Until, searches, calls, missed)
	r.Suggestions = suggest(searches, calls, opts.Catalog, top)
	return r
}

// within returns the records whose time falls in the window, in time order (stable, so
// records of the same instant keep the store's order).
func within[T any](recs []T, opts Options, at func(*T) time.Time) []T {
	out := make([]T, 0, len(recs))
	for i := range recs {
		t := at(&recs[i])
		if (!opts.Since.IsZero() && t.Before(opts.Since)) || (!opts.Until.IsZero() && t.After(opts.Until)) {
			continue
		}
		out = append(out, recs[i])
	}
	slices.SortStableFunc(out, func(a, b T) int { return at(&a).Compare(at(&b)) })
	return out
}

// window fills in a zero Since or Until from the records.
func (r *Report) window(searches []searchlog.Search, calls []searchlog.Call) {
	var first, last time.Time
	see := func(t time.Time) {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	for i := range searches {
		see(searches[i].Time)
	}
	for i := range calls {
		see(calls[i].Time)
	}
	if r.Since.IsZero() {
		r.Since = first
	}
	if r.Until.IsZero() {
		r.Until = last
	}
	r.Since, r.Until = r.Since.UTC(), r.Until.UTC()
}

// likelyMisses reports, for each search, whether it is a likely miss: it succeeded, has
// a session, and no call of that session at or after it called a tool it returned.
// Searches that failed or have no session are left unjudged.
func likelyMisses(searches []searchlog.Search, calls []searchlog.Call) []verdict {
	lastCall := map[[2]string]time.Time{} // session, tool → the session's last call of it
	for _, c := range calls {
		if c.Session == "" {
			continue
		}
		k := [2]string{c.Session, c.Tool}
		if t, ok := lastCall[k]; !ok || c.Time.After(t) {
			lastCall[k] = c.Time
		}
	}
	out := make([]verdict, len(searches))
	for i, s := range searches {
		if s.Session == "" || s.Error != "" {
			continue
		}
		out[i] = missed
		for _, h := range s.Results {
			if t, ok := lastCall[[2]string{s.Session, h.Tool}]; ok && !t.Before(s.Time) {
				out[i] = followed
				break
			}
		}
	}
	return out
}

// verdict is what became of a search.
type verdict uint8

const (
	unjudged verdict = iota // failed, or no session to follow
	followed                // the session called a tool it returned
	missed                  // the session called none of them: a likely miss
)

// searchFigures counts the searches, empty results, misses, latencies and tokens.
func (r *Report) searchFigures(searches []searchlog.Search, verdicts []verdict, top int) {
	sessions := map[string]bool{}
	missedQueries := map[string]int{}
	lat := make([]time.Duration, 0, len(searches))
	for i, s := range searches {
		if s.Session != "" {
			sessions[s.Session] = true
		}
		switch {
		case s.Query == "":
			r.UnrecordedQueries++
		case isHashed(s.Query):
			r.HashedQueries++
		}
		lat = append(lat, s.Latency)
		if s.Error != "" {
			r.FailedSearches++
			continue
		}
		if len(s.Results) == 0 {
			r.EmptySearches++
		}
		if s.CatalogTokens > 0 {
			r.Tokens.Searches++
			r.Tokens.CatalogTokens += int64(s.CatalogTokens)
			r.Tokens.ResultTokens += int64(s.ResultTokens)
		}
		switch verdicts[i] {
		case missed:
			r.Misses.Count++
			if s.Query != "" {
				missedQueries[s.Query]++
			}
			fallthrough
		case followed:
			r.Misses.Judged++
		}
	}
	r.Sessions = len(sessions)
	r.EmptyPct = percent.Of(r.EmptySearches, r.Searches)
	r.Misses.Pct = percent.Of(r.Misses.Count, r.Misses.Judged)
	r.Misses.Queries = topQueries(missedQueries, top)
	r.SearchLatency = latency(lat)
	t := &r.Tokens
	t.Saved = t.CatalogTokens - t.ResultTokens
	if t.CatalogTokens > 0 {
		t.SavedPct = percent.Round(100 * float64(t.Saved) / float64(t.CatalogTokens))
		t.PerSearch = t.Saved / int64(t.Searches)
	}
}

// isHashed reports whether a recorded query is a hash rather than the query.
func isHashed(q string) bool { return strings.HasPrefix(q, "sha256:") }

func topQueries(counts map[string]int, top int) []QueryCount {
	out := make([]QueryCount, 0, len(counts))
	for q, n := range counts {
		out = append(out, QueryCount{q, n})
	}
	slices.SortFunc(out, func(a, b QueryCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Query, b.Query))
	})
	return out[:min(len(out), top)]
}

// callFigures counts the calls by tool, by server and by rank.
func (r *Report) callFigures(calls []searchlog.Call, top int) {
	all, low, unsurfaced, unknown := tally{}, tally{}, tally{}, tally{}
	servers := map[string]*Server{}
	serverLat := map[string][]time.Duration{}
	lat := make([]time.Duration, 0, len(calls))
	for _, c := range calls {
		lat = append(lat, c.Duration)
		if unknownTool(c) {
			unknown.add(c)
			continue
		}
		all.add(c)
		switch {
		case c.Rank == 0:
			unsurfaced.add(c)
		case c.Rank > LowRank:
			low.add(c)
		}
		s := servers[c.Server]
		if s == nil {
			s = &Server{Server: c.Server}
			servers[c.Server] = s
		}
		s.Calls++
		switch c.Outcome {
		case searchlog.OutcomeToolError, searchlog.OutcomeFailed, searchlog.OutcomeUnavailable:
			s.Errors++
		case searchlog.OutcomeTimeout:
			s.Timeouts++
		case searchlog.OutcomeCancelled:
			s.Cancelled++
		}
		serverLat[c.Server] = append(serverLat[c.Server], c.Duration)
	}
	r.CallLatency = latency(lat)
	r.ToolsCalled = len(all.tools)
	r.TopTools = all.top(top)
	r.LowRank = RankedCalls{low.calls, percent.Of(low.calls, r.Calls), low.top(top)}
	r.Unsurfaced = RankedCalls{unsurfaced.calls, percent.Of(unsurfaced.calls, r.Calls), unsurfaced.top(top)}
	r.UnknownTools = RankedCalls{unknown.calls, percent.Of(unknown.calls, r.Calls), unknown.top(top)}
	r.Servers = make([]Server, 0, len(servers))
	for name, s := range servers {
		s.ErrorPct = percent.Of(s.Errors, s.Calls)
		s.TimeoutPct = percent.Of(s.Timeouts, s.Calls)
		s.P50Ms = latency(serverLat[name]).P50Ms
		r.Servers = append(r.Servers, *s)
	}
	slices.SortFunc(r.Servers, func(a, b Server) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Server, b.Server))
	})
}

// unknownTool reports whether a call named no tool its session could see: the gateway
// records such a call with no server.
func unknownTool(c searchlog.Call) bool { return c.Server == "" }

// tally counts calls by tool.
type tally struct {
	calls int
	tools map[string]*toolTally
}

type toolTally struct {
	ToolCalls
	ranks []int
}

func (t *tally) add(c searchlog.Call) {
	t.calls++
	if t.tools == nil {
		t.tools = map[string]*toolTally{}
	}
	tt := t.tools[c.Tool]
	if tt == nil {
		tt = &toolTally{ToolCalls: ToolCalls{Tool: c.Tool}}
		t.tools[c.Tool] = tt
	}
	tt.Calls++
	if c.Outcome != searchlog.OutcomeOK && c.Outcome != searchlog.OutcomeCancelled {
		tt.Errors++
	}
	if c.Rank > 0 {
		tt.ranks = append(tt.ranks, c.Rank)
	}
}

// top returns the most called tools, most first, ties by name.
func (t *tally) top(n int) []ToolCalls {
	out := make([]ToolCalls, 0, len(t.tools))
	for _, tt := range t.tools {
		if len(tt.ranks) > 0 {
			slices.Sort(tt.ranks)
			tt.MedianRank = tt.ranks[(len(tt.ranks)-1)/2]
		}
		out = append(out, tt.ToolCalls)
	}
	slices.SortFunc(out, func(a, b ToolCalls) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Tool, b.Tool))
	})
	return out[:min(len(out), n)]
}

// neverSurfaced lists the catalog's tools no search returned.
func neverSurfaced(searches []searchlog.Search, snap *catalog.Snapshot) NeverSurfaced {
	if snap == nil {
		return NeverSurfaced{Tools: []string{}}
	}
	seen := map[string]bool{}
	for _, s := range searches {
		for _, h := range s.Results {
			seen[h.Tool] = true
		}
	}
	out := NeverSurfaced{Catalog: true, CatalogTools: snap.Len(), Tools: []string{}}
	for _, t := range snap.Tools() {
		if !seen[t.Qualified] {
			out.Tools = append(out.Tools, t.Qualified)
		}
	}
	sort.Strings(out.Tools)
	out.Count = len(out.Tools)
	return out
}

// latencyScale is the histogram's bins, in milliseconds: 1-2-5 steps from 10µs to 10s,
// wide enough for a search (tens of microseconds) and a tool call (seconds) alike.
var latencyScale = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 0}

// latency summarizes durations: nearest-rank percentiles and a histogram cut to the bins
// from the first to the last that hold any.
func latency(ds []time.Duration) Latency {
	l := Latency{Count: len(ds), Histogram: []Bin{}}
	if len(ds) == 0 {
		return l
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(sorted)))) - 1
		return ms(sorted[max(i, 0)])
	}
	l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs = at(0.50), at(0.90), at(0.99), ms(sorted[len(sorted)-1])
	bins := make([]Bin, len(latencyScale))
	for i, up := range latencyScale {
		bins[i].UpToMs = up
	}
	for _, d := range sorted {
		v := float64(d) / float64(time.Millisecond)
		i := sort.Search(len(latencyScale)-1, func(i int) bool { return v <= latencyScale[i] })
		bins[i].Count++
	}
	first := slices.IndexFunc(bins, func(b Bin) bool { return b.Count > 0 })
	last := len(bins) - 1
	for bins[last].Count == 0 {
		last--
	}
	l.Histogram = bins[first : last+1]
	return l
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}
