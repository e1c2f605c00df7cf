package search_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/search"
)

// now is the time the learned-field tests build at.
var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// rank returns the 1-based rank of tool in the results of query, 0 when it is not
// among them.
func rank(t *testing.T, ix *search.Index, query, tool string) int {
	t.Helper()
	rs, err := ix.Search(query, search.Options{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Index(names(rs), tool) + 1
}

func TestWithEvidenceFindsByLearnedWords(t *testing.T) {
	ix := smallIndex(t)
	ev := []search.Evidence{
		// Words no tool uses: only the learned field can match them.
		{Tool: "slack__send_message", Query: "ping the oncall crew", Count: 3, Last: now},
		// A bare name one server offers is resolved to that tool.
		{Tool: "screenshot_capture", Query: "grab what my monitor shows", Count: 1, Last: now},
		// Skipped: a hashed query, an empty one, a tool the catalog lacks, a bare
		// name two servers share.
		{Tool: "weather__get_alerts", Query: "sha256:" + fmt.Sprintf("%064x", 0xf00d), Count: 5, Last: now},
		{Tool: "weather__get_alerts", Query: "", Count: 5, Last: now},
		{Tool: "jira__create_ticket", Query: "frobnicate", Count: 5, Last: now},
		{Tool: "create_issue", Query: "frobnicate", Count: 5, Last: now},
	}
	lx := ix.WithEvidence(ev, now)
	tests := []struct {
		query, tool   string
		before, after int // rank without and with the evidence
	}{
		{"ping the oncall crew", "slack__send_message", 0, 1},
		{"tell the oncall crew about it", "slack__send_message", 0, 1},
		{"grab my monitor", "files__screenshot_capture", 0, 1},
		// What the evidence did not touch ranks as before.
		{"weather forecast", "weather__get_forecast", 1, 1},
		{"create a github issue", "github__create_issue", 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			if got := rank(t, ix, tc.query, tc.tool); got != tc.before {
				t.Errorf("without evidence: %s ranks %d, want %d", tc.tool, got, tc.before)
			}
			if got := rank(t, lx, tc.query, tc.tool); got != tc.after {
				t.Errorf("with evidence: %s ranks %d, want %d", tc.tool, got, tc.after)
			}
		})
	}
	for _, tool := range []string{"weather__get_alerts", "github__create_issue", "gitlab__create_issue"} {
		if r := rank(t, lx, "frobnicate "+fmt.Sprintf("%064x", 0xf00d), tool); r != 0 {
			t.Errorf("skipped evidence reached %s (rank %d)", tool, r)
		}
	}
}

func TestWithEvidenceDecay(t *testing.T) {
	ix := smallIndex(t)
	old, recent := now.Add(-90*24*time.Hour), now.Add(-time.Hour)
	// The same query led to two tools; the one it led to lately comes first, whichever
	// it is.
	tests := []struct {
		name              string
		readLast, write   time.Time
		readCount, wCount int
		want              string
	}{
		{"read recent", recent, old, 1, 1, "files__read_file"},
		{"write recent", old, recent, 1, 1, "files__write_file"},
		// 90 days is three half-lives, an eighth of the weight: eight times the calls
		// would not make up for it (1 + ln 8 ≈ 3.1).
		{"old but called more", old, recent, 8, 1, "files__write_file"},
		{"old and called far more", old, recent, 20000, 1, "files__read_file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lx := ix.WithEvidence([]search.Evidence{
				{Tool: "files__read_file", Query: "zorblax the quux", Count: tc.readCount, Last: tc.readLast},
				{Tool: "files__write_file", Query: "zorblax the quux", Count: tc.wCount, Last: tc.write},
			}, now)
			rs, err := lx.Search("zorblax", search.Options{Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(rs); len(got) != 2 || got[0] != tc.want {
				t.Errorf("zorblax finds %v, want %s first of both", got, tc.want)
			}
		})
	}
}

func TestWithEvidencePerToolBound(t *testing.T) {
	snap := catalogtest.Snapshot(t, smallCatalog)
	// Words no tool uses, none a misspelling of another (the fuzzy fallback).
	words := []string{"xylophone", "marmalade", "quokka", "zeppelin", "walrus", "banjo"}
	var ev []search.Evidence
	for i, w := range words {
		// Query i has a word of its own and was called 6-i times: the first ones weigh most.
		ev = append(ev, search.Evidence{Tool: "calc__solve_quadratic_equation", Query: w + " roots", Count: 6 - i, Last: now})
	}
	for _, bound := range []int{1, 3, 6, 0} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			p := search.DefaultParams
			p.LearnedPerTool = bound
			lx := search.NewIndexParams(snap, p).WithEvidence(ev, now)
			kept := bound
			if bound == 0 {
				kept = len(ev)
			}
			for i, word := range words {
				got := rank(t, lx, word, "calc__solve_quadratic_equation")
				if want := i < kept; (got == 1) != want {
					t.Errorf("bound %d: %s (query %d) ranks the tool %d; kept = %v", bound, word, i, got, want)
				}
			}
		})
	}
}

// TestWithEvidenceNoneIsToday holds an index given no usable evidence, or built with
// the field off, or whose evidence only has words no query uses, to the index of
// today: the same results with the same scores for every query of a benchmark set.
func TestWithEvidenceNoneIsToday(t *testing.T) {
	qs, snap := benchSet(t, "livemcpbench")
	base := search.NewIndex(snap)
	off := search.DefaultParams
	off.Learned = 0
	some := []search.Evidence{{Tool: snap.Tool(0).Qualified, Query: "anything at all", Count: 1, Last: now}}
	unusable := []search.Evidence{
		{Tool: "nosuch__tool", Query: "anything", Count: 1, Last: now},
		{Tool: snap.Tool(0).Qualified, Query: "sha256:" + fmt.Sprintf("%064x", 7), Count: 1, Last: now},
		{Tool: snap.Tool(0).Qualified, Query: "  ", Count: 1, Last: now},
		{Tool: snap.Tool(0).Qualified, Query: "the and of", Count: 1, Last: now}, // stop words only
	}
	indexes := map[string]*search.Index{
		"nil evidence":      base.WithEvidence(nil, now),
		"unusable evidence": base.WithEvidence(unusable, now),
		"field off":         search.NewIndexParams(snap, off).WithEvidence(some, now),
		// Words no tool and no query uses: every posting list of the catalog's terms
		// is copied as it was.
		"new words only": base.WithEvidence([]search.Evidence{{Tool: snap.Tool(3).Qualified, Query: "zzyzxq qwvbnk", Count: 2, Last: now}}, now),
	}
	for name, ix := range indexes {
		t.Run(name, func(t *testing.T) {
			for _, q := range qs {
				query := search.Shorten(q.Query, search.MaxQueryLen)
				want, err1 := base.Search(query, search.Options{Limit: 20})
				got, err2 := ix.Search(query, search.Options{Limit: 20})
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !slices.EqualFunc(got, want, func(a, b search.Result) bool {
					return a.Tool == b.Tool && a.Score == b.Score && a.Match == b.Match
				}) {
					t.Fatalf("%s: %q ranks differently:\n got %v\nwant %v", name, q.ID, got, want)
				}
			}
		})
	}
}

// TestWithEvidenceLeavesIndex checks that WithEvidence returns a new index and leaves
// the one it was called on as it was.
func TestWithEvidenceLeavesIndex(t *testing.T) {
	ix := smallIndex(t)
	before, _ := ix.Search("ping the oncall crew about the forecast", search.Options{Limit: 10})
	lx := ix.WithEvidence([]search.Evidence{{Tool: "slack__send_message", Query: "ping the oncall crew", Count: 1, Last: now}}, now)
	if lx == ix {
		t.Fatal("WithEvidence with usable evidence returned the same index")
	}
	after, _ := ix.Search("ping the oncall crew about the forecast", search.Options{Limit: 10})
	if !slices.Equal(names(before), names(after)) || before[0].Score != after[0].Score {
		t.Errorf("the original index changed: %v, then %v", names(before), names(after))
	}
	learned, _ := lx.Search("ping the oncall crew about the forecast", search.Options{Limit: 10})
	if names(learned)[0] != "slack__send_message" {
		t.Errorf("the learned index ranks %v", names(learned))
	}
}
