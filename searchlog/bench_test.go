package searchlog

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSearchEnqueue measures what recording a search costs the request that
// made it: a copy into the queue, no allocation, no I/O (the writer goroutine writes
// to the SQLite file meanwhile). Records that find the queue full are dropped, which
// costs the same; b.ReportMetric says how many were.
func BenchmarkSearchEnqueue(b *testing.B) {
	l, err := Open(context.Background(), filepath.Join(b.TempDir(), "log.db"), Options{Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(context.Background())
	s := Search{Source: "gateway", Profile: "dev", Session: "a1b2c3d4e5f6", Query: "create github issue", Mode: "bm25",
		Results: []Hit{{"github__create_issue", 1}, {"github__update_issue", 2}, {"github__list_issues", 3}, {"jira__create", 4}, {"linear__new", 5}},
		Latency: 300 * time.Microsecond, CatalogTokens: 48000, ResultTokens: 900}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l.Search(s)
	}
	b.StopTimer()
	b.ReportMetric(float64(l.Dropped()), "dropped")
}

// BenchmarkWrite measures the writer: what storing one search in a SQLite file costs,
// in batches of DefaultBatchSize (Flush after each batch, so nothing is dropped).
func BenchmarkWrite(b *testing.B) {
	l, err := Open(context.Background(), filepath.Join(b.TempDir(), "log.db"), Options{Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(context.Background())
	s := Search{Source: "gateway", Query: "create github issue", Mode: "bm25", Results: []Hit{{"github__create_issue", 1}, {"github__update_issue", 2}}}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		l.Search(s)
		if n++; n%DefaultBatchSize == 0 {
			if err := l.Flush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	if l.Dropped() > 0 {
		b.Fatalf("%d records dropped", l.Dropped())
	}
}
