package stats

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/searchlog"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestReadRecords(t *testing.T) {
	in := `{"type": "search", "time": "2026-11-30T09:00:00Z", "source": "gateway", "profile": "p", "session": "s1", "query": "create issue", "mode": "bm25", "results": [{"tool": "github__create_issue", "rank": 1}], "latency_ms": 0.25, "catalog_tokens": 900, "result_tokens": 120}

{"type": "call", "time": "2026-11-30T09:00:05.5+01:00", "session": "s1", "tool": "github__create_issue", "outcome": "ok", "duration_ms": 412.5, "rank": 1, "query": "create issue"}
`
	searches, calls, err := ReadRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	wantS := []searchlog.Search{{
		Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Source: "gateway", Profile: "p", Session: "s1", Query: "create issue",
		Mode: "bm25", Results: []searchlog.Hit{{Tool: "github__create_issue", Rank: 1}}, Latency: 250 * time.Microsecond,
		CatalogTokens: 900, ResultTokens: 120,
	}}
	if !reflect.DeepEqual(searches, wantS) {
		t.Errorf("searches\n got %+v\nwant %+v", searches, wantS)
	}
	if len(calls) != 1 {
		t.Fatalf("calls %+v", calls)
	}
	c := calls[0]
	if !c.Time.Equal(time.Date(2026, 11, 30, 8, 0, 5, 5e8, time.UTC)) || c.Server != "github" || c.Duration != 412500*time.Microsecond || c.Rank != 1 || c.Query != "create issue" {
		t.Errorf("call %+v: want the time in UTC 08:00:05.5, server github from the tool's name, 412.5ms", c)
	}
}

func TestReadRecordsErrors(t *testing.T) {
	const okSearch = `{"type": "search", "time": "2026-11-30T09:00:00Z", "query": "x"}`
	tests := []struct{ in, err string }{
		{`{"type": "search", "time": "2026-11-30T09:00:00Z", "querry": "x"}`, `line 1: json: unknown field "querry"`},
		{okSearch + "\n" + `{"type": "click", "time": "2026-11-30T09:00:00Z"}`, `line 2: type "click" is neither`},
		{`{"type": "search", "time": "yesterday"}`, `time "yesterday" is not an RFC 3339 time`},
		{`{"type": "search", "time": "2026-11-30T09:00:00Z", "tool": "a__b"}`, "a search has no tool"},
		{`{"type": "search", "time": "2026-11-30T09:00:00Z", "results": [{"tool": "a__b"}]}`, "result 1 needs a tool and a rank"},
		{`{"type": "search", "time": "2026-11-30T09:00:00Z", "latency_ms": -1}`, "latency_ms -1 is not a duration"},
		{`{"type": "search", "time": "2026-11-30T09:00:00Z", "catalog_tokens": -5}`, "cannot be negative"},
		{`{"type": "call", "time": "2026-11-30T09:00:00Z", "outcome": "ok"}`, "a call needs its tool"},
		{`{"type": "call", "time": "2026-11-30T09:00:00Z", "tool": "a__b", "outcome": "great"}`, `outcome "great" is not one of`},
		{`{"type": "call", "time": "2026-11-30T09:00:00Z", "tool": "a__b", "outcome": "ok", "rank": -1}`, "rank -1"},
		{`{"type": "call", "time": "2026-11-30T09:00:00Z", "tool": "a__b", "outcome": "ok", "mode": "bm25"}`, "a call has no results"},
		{`{"type": "call", "time": "2026-11-30T09:00:00Z", "tool": "a__b", "outcome": "ok", "duration_ms": 1e300}`, "is not a duration"},
		{`{"type": "search"} {"type": "call"}`, "more than one JSON value"},
		{`[1, 2]`, "each line is one JSON object"},
	}
	for _, tc := range tests {
		s, c, err := ReadRecords(strings.NewReader(tc.in))
		if err == nil || !errors.Is(err, ErrRecords) || !strings.Contains(err.Error(), tc.err) || s != nil || c != nil {
			t.Errorf("ReadRecords(%s) = %d searches, %d calls, %v; want nothing and an ErrRecords saying %q", tc.in, len(s), len(c), err, tc.err)
		}
	}
}

func FuzzReadRecords(f *testing.F) {
	f.Add(`{"type": "search", "time": "2026-11-30T09:00:00Z", "session": "s", "query": "q", "results": [{"tool": "a__b", "rank": 1}], "latency_ms": 0.3}`)
	f.Add(`{"type": "call", "time": "2026-11-30T09:00:00Z", "session": "s", "tool": "a__b", "outcome": "timeout", "duration_ms": 3e4, "rank": 2}`)
	f.Fuzz(func(t *testing.T, in string) {
		searches, calls, err := ReadRecords(strings.NewReader(in))
		if err != nil {
			return
		}
		// Whatever reads must compute and render without a panic.
		r := Compute(searches, calls, Options{})
		if r.Searches != len(searches) || r.Calls != len(calls) {
			t.Errorf("report of %d searches and %d calls counts %d and %d", len(searches), len(calls), r.Searches, r.Calls)
		}
		var b strings.Builder
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteHTML(&b); err != nil {
			t.Fatal(err)
		}
		if n := len(r.Timeline.Points); n > maxPoints+2 {
			t.Errorf("timeline of %v to %v has %d points", r.Since, r.Until, n)
		}
	})
}
