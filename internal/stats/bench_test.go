package stats

import (
	"context"
	"fmt"
	"iter"
	"runtime"
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

// generated is a Source of a large log made up as it is read, the same each time: n
// searches and n calls over a week, in 50,000 sessions, of the catalog's tools.
type generated struct {
	n     int
	tools []string
	// peak is the most heap in use seen while reading (every 10,000 records).
	peak *uint64
}

var genStart = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

func (g generated) at(i int) time.Time {
	return genStart.Add(time.Duration(i) * (7 * 24 * time.Hour / time.Duration(g.n)))
}

func (g generated) sample(i int) {
	if i%10_000 == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		*g.peak = max(*g.peak, ms.HeapAlloc)
	}
}

func (g generated) ReadSearches(_ context.Context, _ time.Time) iter.Seq2[searchlog.Search, error] {
	return func(yield func(searchlog.Search, error) bool) {
		for i := range g.n {
			g.sample(i)
			t1, t2 := g.tools[i%len(g.tools)], g.tools[(i*7+3)%len(g.tools)]
			s := searchlog.Search{Time: g.at(i), Source: "gateway", Session: fmt.Sprintf("session-%d", i%50_000),
				Query: fmt.Sprintf("find the %d thing for ticket %d", i%5000, i%77), Mode: "bm25",
				Results: []searchlog.Hit{{Tool: t1, Rank: 1}, {Tool: t2, Rank: 2}}, Latency: time.Duration(200+i%300) * time.Microsecond,
				CatalogTokens: 2140, ResultTokens: 400}
			if !yield(s, nil) {
				return
			}
		}
	}
}

func (g generated) ReadCalls(_ context.Context, _ time.Time) iter.Seq2[searchlog.Call, error] {
	return func(yield func(searchlog.Call, error) bool) {
		for i := range g.n {
			g.sample(i)
			called := g.tools[i%len(g.tools)]
			if i%4 == 0 {
				called = g.tools[(i*13+5)%len(g.tools)]
			}
			c := searchlog.Call{Time: g.at(i).Add(time.Second), Source: "gateway", Session: fmt.Sprintf("session-%d", i%50_000),
				Tool: called, Server: "x", Outcome: searchlog.OutcomeOK, Duration: time.Duration(i%1000) * time.Millisecond, Rank: 1 + i%5,
				Query: fmt.Sprintf("find the %d thing for ticket %d", i%5000, i%77)}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// BenchmarkLargeLog reports the heap a report of a large log needs (peak-MB, the most
// in use while reading, after a collection before it starts): "streamed" computes it
// as the records are read (ComputeFrom, what toolshed stats does), "held" reads them
// all first and then computes (what toolshed stats did). Run it with -benchmem and
// -benchtime=1x: go test -run '^$' -bench LargeLog -benchmem -benchtime=1x ./internal/stats
func BenchmarkLargeLog(b *testing.B) {
	snap := testCatalog(b)
	var tools []string
	for _, t := range snap.Tools() {
		tools = append(tools, t.Qualified)
	}
	for _, n := range []int{100_000, 500_000} {
		for _, mode := range []string{"streamed", "held"} {
			b.Run(fmt.Sprintf("%s/%d", mode, 2*n), func(b *testing.B) {
				var peak uint64
				src := generated{n: n, tools: tools, peak: &peak}
				opts := Options{Since: genStart, Until: genStart.Add(7 * 24 * time.Hour), Catalog: snap}
				ctx := context.Background()
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				b.ReportAllocs()
				for b.Loop() {
					if mode == "streamed" {
						if _, err := ComputeFrom(ctx, src, opts); err != nil {
							b.Fatal(err)
						}
						continue
					}
					var searches []searchlog.Search
					var calls []searchlog.Call
					for s := range src.ReadSearches(ctx, time.Time{}) {
						searches = append(searches, s)
					}
					for c := range src.ReadCalls(ctx, time.Time{}) {
						calls = append(calls, c)
					}
					Compute(searches, calls, opts)
				}
				b.ReportMetric(float64(peak-min(peak, before.HeapAlloc))/(1<<20), "peak-MB")
			})
		}
	}
}
