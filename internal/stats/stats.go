// Package stats reads the search log and says how well tool search serves a team: how
// often it finds nothing, which searches a session never acted on, which tools it ranks
// too low or never surfaces, how each server answers, what deferral saved, and which
// keywords would make the tools it missed findable.
//
// ComputeFrom is a function of the records a Source yields, read as they come rather
// than held (a log of millions of records costs a few bytes each), and Compute the same
// of records in memory: the command, the HTML page and the tests see the same figures
// whatever store the records came from. The text and HTML reports show every string of
// the log escaped (show); the JSON keeps them exact.
package stats

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolshed/toolshed/catalog"
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
// modify the records. It is ComputeFrom of the records in memory.
func Compute(searches []searchlog.Search, calls []searchlog.Call, opts Options) Report {
	r, _ := ComputeFrom(context.Background(), Records(searches, calls), opts) // records in memory do not fail
	return r
}

// verdict is what became of a search.
type verdict uint8

const (
	unjudged verdict = iota // failed, or no session to follow
	followed                // the session called a tool it returned
	missed                  // the session called none of them: a likely miss
)

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
	// ranks counts the calls by the rank their tool was found at (when found): a
	// median needs no more, and this does not grow with the calls.
	ranks map[int]int
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
		if tt.ranks == nil {
			tt.ranks = map[int]int{}
		}
		tt.ranks[c.Rank]++
	}
}

// top returns the most called tools, most first, ties by name.
func (t *tally) top(n int) []ToolCalls {
	out := make([]ToolCalls, 0, len(t.tools))
	for _, tt := range t.tools {
		tt.MedianRank = medianRank(tt.ranks)
		out = append(out, tt.ToolCalls)
	}
	slices.SortFunc(out, func(a, b ToolCalls) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Tool, b.Tool))
	})
	return out[:min(len(out), n)]
}

// medianRank is the lower median of the ranks counted, 0 for none.
func medianRank(ranks map[int]int) int {
	n := 0
	for _, k := range ranks {
		n += k
	}
	at := (n - 1) / 2
	for _, r := range slices.Sorted(maps.Keys(ranks)) {
		if at -= ranks[r]; at < 0 {
			return r
		}
	}
	return 0
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
