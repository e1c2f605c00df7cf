package stats

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolshed/toolshed/searchlog"
)

// BenchmarkCompute measures a report of a busy week: 100,000 searches and as many calls
// over 10,000 sessions, with a 16-tool catalog.
func BenchmarkCompute(b *testing.B) {
	snap := testCatalog(b)
	tools := make([]string, 0, snap.Len())
	for _, t := range snap.Tools() {
		tools = append(tools, t.Qualified)
	}
	var searches []searchlog.Search
	var calls []searchlog.Call
	start := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for i := range 100_000 {
		at := start.Add(time.Duration(i) * 6 * time.Second)
		session := fmt.Sprintf("s%d", i%10_000)
		t1, t2 := tools[i%len(tools)], tools[(i*7+3)%len(tools)]
		searches = append(searches, searchlog.Search{Time: at, Session: session, Query: fmt.Sprintf("find the %d thing for ticket", i%500),
			Results: []searchlog.Hit{{Tool: t1, Rank: 1}, {Tool: t2, Rank: 2}}, Latency: time.Duration(200+i%300) * time.Microsecond,
			CatalogTokens: 2140, ResultTokens: 400})
		called := t1
		if i%4 == 0 {
			called = tools[(i*13+5)%len(tools)]
		}
		calls = append(calls, searchlog.Call{Time: at.Add(2 * time.Second), Session: session, Tool: called, Server: "x",
			Outcome: searchlog.OutcomeOK, Duration: time.Duration(i%1000) * time.Millisecond, Rank: 1})
	}
	b.ReportAllocs()
	for b.Loop() {
		Compute(searches, calls, Options{Catalog: snap})
	}
}
