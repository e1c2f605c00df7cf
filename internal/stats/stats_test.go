package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/searchlog"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// at is t0 plus seconds.
func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func hits(tools ...string) []searchlog.Hit {
	out := make([]searchlog.Hit, len(tools))
	for i, t := range tools {
		out[i] = searchlog.Hit{Tool: t, Rank: i + 1}
	}
	return out
}

func srch(sec int, session, query string, results ...string) searchlog.Search {
	return searchlog.Search{Time: at(sec), Session: session, Query: query, Mode: "bm25", Results: hits(results...),
		Latency: 300 * time.Microsecond, CatalogTokens: 1000, ResultTokens: 100 * len(results)}
}

func call(sec int, session, tool string, rank int) searchlog.Call {
	server, _, _ := strings.Cut(tool, "__")
	return searchlog.Call{Time: at(sec), Session: session, Tool: tool, Server: server, Outcome: searchlog.OutcomeOK,
		Duration: 100 * time.Millisecond, Rank: rank}
}

func TestNoData(t *testing.T) {
	r := Compute(nil, nil, Options{})
	if r.Searches != 0 || r.Calls != 0 || r.Misses.Count != 0 || r.EmptyPct != 0 || r.Tokens.SavedPct != 0 {
		t.Errorf("empty log gave figures: %+v", r)
	}
	// Every list is empty, not null, so the JSON keeps one shape.
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(js, []byte("null")) {
		t.Errorf("JSON of an empty report has a null: %s", js)
	}
	var text, page bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "no searches or calls") {
		t.Errorf("text of an empty report:\n%s", text.String())
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "no searches in this window") {
		t.Error("the page of an empty report does not say the chart is empty")
	}
}

func TestMisses(t *testing.T) {
	tests := []struct {
		name                   string
		searches               []searchlog.Search
		calls                  []searchlog.Call
		judged, misses         int
		wantQueries            []QueryCount
		empty, failed, session int
	}{
		{
			name:     "one session, search then call of a returned tool",
			searches: []searchlog.Search{srch(0, "s1", "create issue", "gh__create_issue", "gh__list_issues")},
			calls:    []searchlog.Call{call(5, "s1", "gh__list_issues", 2)},
			judged:   1, session: 1, wantQueries: []QueryCount{},
		},
		{
			name:     "call of a tool the search did not return",
			searches: []searchlog.Search{srch(0, "s1", "create issue", "gh__create_issue")},
			calls:    []searchlog.Call{call(5, "s1", "linear__create_issue", 0)},
			judged:   1, misses: 1, session: 1, wantQueries: []QueryCount{{"create issue", 1}},
		},
		{
			name:     "call before the search does not follow it",
			searches: []searchlog.Search{srch(10, "s1", "create issue", "gh__create_issue")},
			calls:    []searchlog.Call{call(5, "s1", "gh__create_issue", 1)},
			judged:   1, misses: 1, session: 1, wantQueries: []QueryCount{{"create issue", 1}},
		},
		{
			name:     "call in the same instant follows",
			searches: []searchlog.Search{srch(5, "s1", "create issue", "gh__create_issue")},
			calls:    []searchlog.Call{call(5, "s1", "gh__create_issue", 1)},
			judged:   1, session: 1, wantQueries: []QueryCount{},
		},
		{
			name:     "call in another session does not follow",
			searches: []searchlog.Search{srch(0, "s1", "create issue", "gh__create_issue")},
			calls:    []searchlog.Call{call(5, "s2", "gh__create_issue", 0)},
			judged:   1, misses: 1, session: 1, wantQueries: []QueryCount{{"create issue", 1}},
		},
		{
			name:     "empty result is a miss and empty",
			searches: []searchlog.Search{srch(0, "s1", "weather"), srch(1, "s1", "weather")},
			judged:   2, misses: 2, empty: 2, session: 1, wantQueries: []QueryCount{{"weather", 2}},
		},
		{
			name:     "no session: not judged",
			searches: []searchlog.Search{srch(0, "", "weather")},
			empty:    1, wantQueries: []QueryCount{},
		},
		{
			name: "failed search: not judged, not empty",
			searches: []searchlog.Search{func() searchlog.Search {
				s := srch(0, "s1", "(", "")
				s.Results, s.Error = nil, "invalid_tool_input"
				return s
			}()},
			failed: 1, session: 1, wantQueries: []QueryCount{},
		},
		{
			name:     "hashed queries count as misses and are listed as recorded",
			searches: []searchlog.Search{srch(0, "s1", "sha256:"+strings.Repeat("ab", 32))},
			judged:   1, misses: 1, empty: 1, session: 1,
			wantQueries: []QueryCount{{"sha256:" + strings.Repeat("ab", 32), 1}},
		},
		{
			name:     "query logging off: a miss without a query",
			searches: []searchlog.Search{srch(0, "s1", "")},
			judged:   1, misses: 1, empty: 1, session: 1, wantQueries: []QueryCount{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Compute(tc.searches, tc.calls, Options{})
			if r.Misses.Judged != tc.judged || r.Misses.Count != tc.misses {
				t.Errorf("misses %d of %d judged, want %d of %d", r.Misses.Count, r.Misses.Judged, tc.misses, tc.judged)
			}
			if r.EmptySearches != tc.empty || r.FailedSearches != tc.failed || r.Sessions != tc.session {
				t.Errorf("empty %d failed %d sessions %d, want %d %d %d", r.EmptySearches, r.FailedSearches, r.Sessions, tc.empty, tc.failed, tc.session)
			}
			if !reflect.DeepEqual(r.Misses.Queries, tc.wantQueries) {
				t.Errorf("missed queries %v, want %v", r.Misses.Queries, tc.wantQueries)
			}
		})
	}
}

func TestRankedCalls(t *testing.T) {
	calls := []searchlog.Call{
		call(0, "s1", "a__x", 1), call(1, "s1", "a__x", 3), call(2, "s1", "a__y", 4), call(3, "s1", "a__y", 9),
		call(4, "s1", "b__z", 0), call(5, "s1", "b__z", 0), call(6, "s1", "a__x", 2),
	}
	calls[6].Outcome = searchlog.OutcomeToolError
	r := Compute(nil, calls, Options{})
	if r.LowRank.Count != 2 || r.LowRank.Pct != 28.6 {
		t.Errorf("low rank %d (%v%%), want 2 (28.6%%): rank 3 is not below 3, 4 and 9 are", r.LowRank.Count, r.LowRank.Pct)
	}
	if want := []ToolCalls{{Tool: "a__y", Calls: 2, MedianRank: 4}}; !reflect.DeepEqual(r.LowRank.Tools, want) {
		t.Errorf("low rank tools %+v, want %+v", r.LowRank.Tools, want)
	}
	if want := []ToolCalls{{Tool: "b__z", Calls: 2}}; r.Unsurfaced.Count != 2 || !reflect.DeepEqual(r.Unsurfaced.Tools, want) {
		t.Errorf("unsurfaced %d %+v, want 2 %+v", r.Unsurfaced.Count, r.Unsurfaced.Tools, want)
	}
	want := []ToolCalls{{Tool: "a__x", Calls: 3, Errors: 1, MedianRank: 2}, {Tool: "a__y", Calls: 2, MedianRank: 4}, {Tool: "b__z", Calls: 2}}
	if !reflect.DeepEqual(r.TopTools, want) {
		t.Errorf("top tools %+v, want %+v", r.TopTools, want)
	}
	if r.ToolsCalled != 3 {
		t.Errorf("tools called %d, want 3", r.ToolsCalled)
	}
	if got := Compute(nil, calls, Options{Top: 1}).TopTools; len(got) != 1 || got[0].Tool != "a__x" {
		t.Errorf("Top 1 kept %+v", got)
	}
}

func TestServers(t *testing.T) {
	var calls []searchlog.Call
	for i, outcome := range []string{
		searchlog.OutcomeOK, searchlog.OutcomeToolError, searchlog.OutcomeFailed, searchlog.OutcomeUnavailable,
		searchlog.OutcomeTimeout, searchlog.OutcomeCancelled, searchlog.OutcomeOK, searchlog.OutcomeOK,
	} {
		c := call(i, "s1", "a__x", 1)
		c.Outcome = outcome
		calls = append(calls, c)
	}
	calls = append(calls, call(20, "s1", "b__y", 1))
	r := Compute(nil, calls, Options{})
	want := []Server{
		{Server: "a", Calls: 8, Errors: 3, Timeouts: 1, Cancelled: 1, ErrorPct: 37.5, TimeoutPct: 12.5, P50Ms: 100},
		{Server: "b", Calls: 1, P50Ms: 100},
	}
	if !reflect.DeepEqual(r.Servers, want) {
		t.Errorf("servers\n got %+v\nwant %+v", r.Servers, want)
	}
}

// TestUnknownTools: a call that named no tool its session could see (recorded with no
// server) is counted apart, with its name, and in no server's row, no tool list and no
// suggestion: an override cannot make a tool that is not there findable.
func TestUnknownTools(t *testing.T) {
	unknown := func(sec int, tool string) searchlog.Call {
		c := call(sec, "s1", tool, 0)
		c.Server, c.Outcome = "", searchlog.OutcomeFailed
		return c
	}
	searches := []searchlog.Search{srch(0, "s1", "wipe the repository", "github__list_repos")}
	calls := []searchlog.Call{unknown(1, "github__delete_repo"), unknown(2, "delete_repo"), unknown(3, "delete_repo"), call(4, "s1", "github__list_repos", 1)}
	r := Compute(searches, calls, Options{})
	if want := []Server{{Server: "github", Calls: 1, P50Ms: 100}}; !reflect.DeepEqual(r.Servers, want) {
		t.Errorf("servers\n got %+v\nwant %+v", r.Servers, want)
	}
	want := RankedCalls{Count: 3, Pct: 75, Tools: []ToolCalls{{Tool: "delete_repo", Calls: 2, Errors: 2}, {Tool: "github__delete_repo", Calls: 1, Errors: 1}}}
	if !reflect.DeepEqual(r.UnknownTools, want) {
		t.Errorf("unknown tools\n got %+v\nwant %+v", r.UnknownTools, want)
	}
	if r.Calls != 4 || r.CallLatency.Count != 4 || r.ToolsCalled != 1 || len(r.TopTools) != 1 || r.Unsurfaced.Count != 0 || len(r.Suggestions) != 0 {
		t.Errorf("calls %d (latency of %d), tools called %d, top %+v, unsurfaced %+v, suggestions %+v: want 4 calls and github__list_repos alone",
			r.Calls, r.CallLatency.Count, r.ToolsCalled, r.TopTools, r.Unsurfaced, r.Suggestions)
	}
	var text, page bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"unknown tools         3  75.0% of calls", "Calls of unknown tools (no server)\n    calls  errors tool\n        2       2 delete_repo\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if want := `data-metric="unknown-tool-calls">3 calls (75.0%) named no tool the session could see, so no server: <span class="name">delete_repo</span> (2), <span class="name">github__delete_repo</span> (1)</p>`; !strings.Contains(page.String(), want) {
		t.Errorf("page lacks %s", want)
	}
	if strings.Contains(page.String(), `data-server=""`) {
		t.Errorf("page has a server without a name")
	}
}

func TestLatency(t *testing.T) {
	tests := []struct {
		name          string
		ds            []time.Duration
		p50, p90, p99 float64
		bins          []Bin
	}{
		{"none", nil, 0, 0, 0, []Bin{}},
		{"one", []time.Duration{1500 * time.Microsecond}, 1.5, 1.5, 1.5, []Bin{{2, 1}}},
		{
			"nearest rank over ten",
			[]time.Duration{1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000},
			0.005, 0.009, 0.01, []Bin{{0.01, 10}},
		},
		{
			"bounds belong to their bin, beyond the scale to the last",
			[]time.Duration{time.Millisecond, 1001 * time.Microsecond, time.Minute},
			1.001, 60000, 60000,
			[]Bin{{1, 1}, {2, 1}, {5, 0}, {10, 0}, {20, 0}, {50, 0}, {100, 0}, {200, 0}, {500, 0}, {1000, 0}, {2000, 0}, {5000, 0}, {10000, 0}, {0, 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := latency(tc.ds)
			if l.P50Ms != tc.p50 || l.P90Ms != tc.p90 || l.P99Ms != tc.p99 || l.Count != len(tc.ds) {
				t.Errorf("p50 %v p90 %v p99 %v (count %d), want %v %v %v", l.P50Ms, l.P90Ms, l.P99Ms, l.Count, tc.p50, tc.p90, tc.p99)
			}
			if !reflect.DeepEqual(l.Histogram, tc.bins) {
				t.Errorf("histogram %v, want %v", l.Histogram, tc.bins)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	searches := []searchlog.Search{srch(0, "s1", "a", "x__a", "x__b"), srch(1, "s1", "b", "x__c"), srch(2, "", "c")}
	searches[2].CatalogTokens = 0 // the library does not know the catalog's cost
	r := Compute(searches, nil, Options{})
	want := Tokens{Searches: 2, CatalogTokens: 2000, ResultTokens: 300, Saved: 1700, SavedPct: 85, PerSearch: 850}
	if r.Tokens != want {
		t.Errorf("tokens %+v, want %+v", r.Tokens, want)
	}
}

func TestWindow(t *testing.T) {
	searches := []searchlog.Search{srch(-3600, "s1", "old", "x__a"), srch(0, "s1", "now", "x__a"), srch(3600, "s1", "later", "x__a")}
	r := Compute(searches, nil, Options{Since: at(-60), Until: at(60)})
	if r.Searches != 1 || !r.Since.Equal(at(-60)) || !r.Until.Equal(at(60)) {
		t.Errorf("window kept %d searches, %v to %v", r.Searches, r.Since, r.Until)
	}
	r = Compute(searches, nil, Options{})
	if r.Searches != 3 || !r.Since.Equal(at(-3600)) || !r.Until.Equal(at(3600)) {
		t.Errorf("open window: %d searches, %v to %v", r.Searches, r.Since, r.Until)
	}
}

func TestTimeline(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name   string
		since  time.Time
		until  time.Time
		bucket string
		points int
	}{
		{"a day by hour", t0, t0.Add(day), "hour", 24},
		{"two days by hour", t0, t0.Add(2 * day), "hour", 48},
		{"a week by day, ending at midnight", time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), "day", 7},
		{"a week by day, ending in the morning", t0.Add(-7 * day), t0, "day", 8},
		// From Sunday, Nov 30 2025: the week starts on the Monday before.
		{"a year by week, from the Monday before", t0.Add(-365 * day), t0, "week", 54},
		{"ten years by several weeks", t0.Add(-3650 * day), t0, "3 weeks", 175},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			searches := []searchlog.Search{srch(0, "s1", "a"), {Time: tc.since, Session: "s2", Results: hits("x__a")}, {Time: tc.until, Session: "s2", Results: hits("x__a")}}
			tl := Compute(searches, nil, Options{Since: tc.since, Until: tc.until}).Timeline
			if tl.Bucket != tc.bucket || len(tl.Points) != tc.points {
				t.Fatalf("%d points by %s, want %d by %s", len(tl.Points), tl.Bucket, tc.points, tc.bucket)
			}
			total := 0
			for i, p := range tl.Points {
				total += p.Searches
				if i > 0 && !p.Start.After(tl.Points[i-1].Start) {
					t.Errorf("point %d starts at %v, not after %v", i, p.Start, tl.Points[i-1].Start)
				}
			}
			// The search at t0 lies in every window but the ones that end before it.
			want := 2
			if !t0.Before(tc.since) && !t0.After(tc.until) {
				want = 3
			}
			if t0.Equal(tc.since) || t0.Equal(tc.until) {
				want = 3
			}
			if total != want {
				t.Errorf("timeline holds %d searches, want %d (records at both ends of the window count)", total, want)
			}
		})
	}
	if tl := Compute(nil, nil, Options{}).Timeline; len(tl.Points) != 0 {
		t.Errorf("timeline of nothing: %+v", tl)
	}
}

func TestSuggestions(t *testing.T) {
	snap := testCatalog(t)
	hashed := "sha256:" + strings.Repeat("cd", 32)
	tests := []struct {
		name     string
		searches []searchlog.Search
		calls    []searchlog.Call
		want     []Suggestion
	}{
		{
			name: "words of the missing queries that the tool lacks, stems included",
			searches: []searchlog.Search{
				srch(0, "s1", "file a bug report", "sentry__get_issue"),
				srch(5, "s1", "creating new issues", "github__create_issue"), // found: not a missing query
			},
			calls: []searchlog.Call{call(9, "s1", "github__create_issue", 1)},
			want:  []Suggestion{{Tool: "github__create_issue", Keywords: []string{"bug", "file", "report"}, Queries: []string{"file a bug report"}, Misses: 1}},
		},
		{
			name: "only the searches since the session's previous call",
			searches: []searchlog.Search{
				srch(0, "s1", "post to slack", "slack__post_message"),
				srch(10, "s1", "open ticket"),
			},
			calls: []searchlog.Call{call(5, "s1", "slack__post_message", 1), call(15, "s1", "linear__create_issue", 0)},
			want:  []Suggestion{{Tool: "linear__create_issue", Keywords: []string{"open", "ticket"}, Queries: []string{"open ticket"}, Misses: 1}},
		},
		{
			name: "words of more searches first, across sessions",
			searches: []searchlog.Search{
				srch(0, "s1", "open ticket"), srch(0, "s2", "open ticket"), srch(0, "s3", "raise ticket"),
			},
			calls: []searchlog.Call{call(5, "s1", "github__create_issue", 0), call(5, "s2", "github__create_issue", 0), call(5, "s3", "github__create_issue", 0)},
			want: []Suggestion{{Tool: "github__create_issue", Keywords: []string{"ticket", "open", "raise"},
				Queries: []string{"open ticket", "raise ticket"}, Misses: 3}},
		},
		{
			name:     "hashed and unrecorded queries give no words",
			searches: []searchlog.Search{srch(0, "s1", hashed), srch(1, "s1", "")},
			calls:    []searchlog.Call{call(5, "s1", "github__create_issue", 0)},
			want:     []Suggestion{},
		},
		{
			name:     "a missing query whose words the tool has already: nothing to add",
			searches: []searchlog.Search{srch(0, "s1", "create the issue", "linear__create_issue")},
			calls:    []searchlog.Call{call(5, "s1", "github__create_issue", 0)},
			want:     []Suggestion{},
		},
		{
			name:     "stop words, numbers and single letters are no keywords",
			searches: []searchlog.Search{srch(0, "s1", "a 2026 ticket for me x")},
			calls:    []searchlog.Call{call(5, "s1", "github__create_issue", 0)},
			want:     []Suggestion{{Tool: "github__create_issue", Keywords: []string{"ticket"}, Queries: []string{"a 2026 ticket for me x"}, Misses: 1}},
		},
		{
			name:     "a session's searches without a call suggest nothing",
			searches: []searchlog.Search{srch(0, "s1", "open ticket")},
			want:     []Suggestion{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Compute(tc.searches, tc.calls, Options{Catalog: snap}).Suggestions
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("suggestions\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestSuggestionsWithoutCatalog(t *testing.T) {
	searches := []searchlog.Search{srch(0, "s1", "new repository issue")}
	calls := []searchlog.Call{call(5, "s1", "github__create_issue", 0)}
	with := Compute(searches, calls, Options{Catalog: testCatalog(t)}).Suggestions
	without := Compute(searches, calls, Options{}).Suggestions
	// The catalog's description ("Create a new issue in a GitHub repository") has
	// "new" and "repository"; the name alone has only "issue".
	if len(with) != 0 {
		t.Errorf("with the catalog: %+v, want none", with)
	}
	if len(without) != 1 || !slices.Equal(without[0].Keywords, []string{"new", "repository"}) {
		t.Errorf("without the catalog: %+v, want the keywords new and repository", without)
	}
}

func TestNeverSurfaced(t *testing.T) {
	snap := testCatalog(t)
	searches := []searchlog.Search{srch(0, "s1", "x", "github__create_issue"), srch(1, "s1", "y", "slack__post_message", "not__in_catalog")}
	ns := Compute(searches, nil, Options{Catalog: snap}).NeverSurfaced
	if !ns.Catalog || ns.CatalogTools != snap.Len() || ns.Count != snap.Len()-2 || len(ns.Tools) != ns.Count {
		t.Errorf("never surfaced %+v, want the catalog's %d tools but 2", ns, snap.Len())
	}
	if slices.Contains(ns.Tools, "github__create_issue") || !slices.IsSorted(ns.Tools) {
		t.Errorf("never surfaced lists a surfaced tool or is unsorted: %v", ns.Tools)
	}
	if ns := Compute(searches, nil, Options{}).NeverSurfaced; ns.Catalog || len(ns.Tools) != 0 {
		t.Errorf("without a catalog: %+v", ns)
	}
}

func TestOverridesYAML(t *testing.T) {
	got := Overrides([]Suggestion{{Tool: "github__create_issue", Keywords: []string{"bug", `say "hi"`}, Queries: []string{"file a bug", "sha256:" + strings.Repeat("0", 64)}, Misses: 2}})
	want := `overrides:
  # missed by 2 searches: "file a bug", sha256:000000000000… (hashed)
  - tools: "github__create_issue"
    keywords: ["bug", "say \"hi\""]
`
	if got != want {
		t.Errorf("Overrides:\n%s\nwant\n%s", got, want)
	}
}

func TestNeverSurfacedTextBounded(t *testing.T) {
	r := Report{Searches: 1, NeverSurfaced: NeverSurfaced{Catalog: true, CatalogTools: 40, Count: 40}}
	for i := range 40 {
		r.NeverSurfaced.Tools = append(r.NeverSurfaced.Tools, fmt.Sprintf("s__t%02d", i))
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "s__t29\n  … and 10 more (--json and --html list them all)\n") || strings.Contains(b.String(), "s__t30") {
		t.Errorf("text of 40 tools never surfaced:\n%s", b.String())
	}
}

func TestNiceScale(t *testing.T) {
	tests := []struct{ peak, top, step int }{
		{1, 1, 1}, {2, 2, 1}, {4, 4, 1}, {5, 6, 2}, {6, 6, 2}, {9, 10, 5}, {17, 20, 5}, {100, 100, 50}, {101, 150, 50}, {1234, 1500, 500},
	}
	for _, tc := range tests {
		top, step := niceScale(tc.peak)
		if top != tc.top || step != tc.step {
			t.Errorf("niceScale(%d) = %d, %d; want %d, %d", tc.peak, top, step, tc.top, tc.step)
		}
		if lines := top/step + 1; lines < 2 || lines > 6 {
			t.Errorf("niceScale(%d) draws %d grid lines", tc.peak, lines)
		}
	}
}
