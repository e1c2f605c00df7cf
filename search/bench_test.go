package search_test

import (
	"fmt"
	"runtime/metrics"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/scale"
	"github.com/toolshed/toolshed/search"
)

var benchSizes = []int{1000, 10000}

// benchSnapshot returns the scale catalog of n real tools, failing tb on any problem.
func benchSnapshot(tb testing.TB, n int) *catalog.Snapshot {
	tb.Helper()
	real, err := scale.Real("../bench")
	if err != nil {
		tb.Fatal(err)
	}
	snap, problems := catalog.Build(scale.Catalog(real, n))
	if len(problems) > 0 {
		tb.Fatalf("scale catalog: %d problems, the first: %v", len(problems), problems[0])
	}
	if snap.Len() != n {
		tb.Fatalf("scale catalog has %d tools, want %d", snap.Len(), n)
	}
	return snap
}

func benchQueries(b *testing.B) []string {
	b.Helper()
	qs, err := scale.Queries("../bench")
	if err != nil {
		b.Fatal(err)
	}
	for i, q := range qs {
		qs[i] = search.Shorten(q, search.MaxQueryLen)
	}
	return qs
}

// reportLatency adds p50 and p99 per-operation latency metrics to a benchmark.
func reportLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
}

// gcSamples are the garbage collector's cycles and CPU time so far in this process.
var gcSamples = []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}

// reportGC adds to a build benchmark the garbage collection cycles and collector CPU time
// per build since start, a reading of gcSamples. A build allocates; a collection cycle
// marks the whole live heap, the catalog snapshot included, concurrently with the build
// and on the same cores, so these say how much of a build's time is the collector's.
func reportGC(b *testing.B, start []metrics.Sample) {
	end := readGC()
	b.ReportMetric(float64(end[0].Value.Uint64()-start[0].Value.Uint64())/float64(b.N), "gc-cycles/op")
	b.ReportMetric((end[1].Value.Float64()-start[1].Value.Float64())*1000/float64(b.N), "gc-cpu-ms/op")
}

// readGC returns a fresh reading of gcSamples.
func readGC() []metrics.Sample {
	s := slices.Clone(gcSamples)
	metrics.Read(s)
	return s
}

// BenchmarkIndexBuild measures cold builds: the process-wide stem cache and build
// buffers are emptied before each, as in a process that has never built an index.
func BenchmarkIndexBuild(b *testing.B) {
	benchFresh(b, func(_ *testing.B, snap *catalog.Snapshot) func() {
		search.ResetCaches()
		return func() { search.NewIndex(snap) }
	})
}

// benchFresh measures, at each of benchSizes, the operation prepare returns, each time
// on the fresh state prepare makes untimed.
func benchFresh(b *testing.B, prepare func(b *testing.B, snap *catalog.Snapshot) func()) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			snap := benchSnapshot(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			gc := readGC()
			for range b.N {
				b.StopTimer()
				op := prepare(b, snap)
				b.StartTimer()
				op()
			}
			b.StopTimer()
			reportGC(b, gc)
		})
	}
}

// BenchmarkIndexRebuild measures builds in a process that has indexed these words before,
// as the gateway does when a server's tool list changes.
func BenchmarkIndexRebuild(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			snap := benchSnapshot(b, n)
			search.NewIndex(snap)
			b.ReportAllocs()
			b.ResetTimer()
			gc := readGC()
			for range b.N {
				search.NewIndex(snap)
			}
			b.StopTimer()
			reportGC(b, gc)
		})
	}
}

func BenchmarkSearch(b *testing.B) {
	queries := benchQueries(b)
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchSearch(b, search.NewIndex(benchSnapshot(b, n)), queries)
		})
	}
}

// gramParams are DefaultParams with 4-gram rescoring on, at the weight bench/README.md
// measures it at, for the benchmarks of what it costs.
var gramParams = func() search.Params {
	p := search.DefaultParams
	p.Grams = 0.1
	return p
}()

// BenchmarkSearchGrams is BenchmarkSearch with 4-gram rescoring on.
func BenchmarkSearchGrams(b *testing.B) {
	queries := benchQueries(b)
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchSearch(b, search.NewIndexParams(benchSnapshot(b, n), gramParams), queries)
		})
	}
}

// BenchmarkIndexRebuildGrams is BenchmarkIndexRebuild with 4-gram rescoring on: the
// build also makes every tool's 4-grams.
func BenchmarkIndexRebuildGrams(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			snap := benchSnapshot(b, n)
			search.NewIndexParams(snap, gramParams)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				search.NewIndexParams(snap, gramParams)
			}
		})
	}
}

// BenchmarkIndexHeap reports the heap an index keeps alive (index-MB, see KeptBytes),
// without and with 4-grams, at each of benchSizes.
func BenchmarkIndexHeap(b *testing.B) {
	for _, n := range benchSizes {
		snap := benchSnapshot(b, n)
		for _, v := range []struct {
			name string
			p    search.Params
		}{{"off", search.DefaultParams}, {"grams", gramParams}} {
			b.Run(fmt.Sprintf("%s/%d", v.name, n), func(b *testing.B) {
				var kept int64
				for range b.N {
					kept += search.KeptBytes(func() any { return search.NewIndexParams(snap, v.p) })
				}
				b.ReportMetric(float64(kept)/float64(b.N)/(1<<20), "index-MB")
			})
		}
	}
}

// benchSearch runs the benchmark queries over ix, five results each, and reports their
// latency percentiles.
func benchSearch(b *testing.B, ix *search.Index, queries []string) {
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if _, err := ix.Search(queries[i%len(queries)], search.Options{Limit: 5}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// regexPatterns are patterns a model writes: literal words, alternations, wildcards
// between words, anchors, and one with no literal at all.
var regexPatterns = []string{
	"weather", "github.*issue", "create|delete", "^get_", "(?i)slack", "file$",
	`\bpull request\b`, "screenshot|snapshot", "[a-z]+_[a-z]+_[a-z]+", "calendar.*event",
}

func BenchmarkRegex(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ix := search.NewIndex(benchSnapshot(b, n))
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, err := ix.Regex(regexPatterns[i%len(regexPatterns)], search.Options{Limit: 5}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
}

// BenchmarkRegexFirst measures the first regex search over a new index, which folds the
// tools' text and indexes its trigrams before it searches.
func BenchmarkRegexFirst(b *testing.B) {
	benchFresh(b, func(b *testing.B, snap *catalog.Snapshot) func() {
		ix := search.NewIndex(snap)
		return func() {
			if _, err := ix.Regex("weather", search.Options{Limit: 5}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkScopeIndex is what a profile's scope costs the gateway each time the catalog
// changes: the scope's own catalog (catalog.Snapshot.Subset: a copy of its tools and
// their content hash) and its index (as BenchmarkIndexRebuild, warm), for scopes of a
// tenth and of half of the scale catalog's tools.
func BenchmarkScopeIndex(b *testing.B) {
	for _, n := range benchSizes {
		snap := benchSnapshot(b, n)
		for _, every := range []int{10, 2} {
			keep := func(t *catalog.Tool) bool { return t.Index%every == 0 }
			sub := snap.Subset(keep)
			name := fmt.Sprintf("1of%d/%d", every, n)
			b.Run("subset/"+name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					snap.Subset(keep)
				}
				b.ReportMetric(float64(sub.Len()), "tools")
			})
			b.Run("index/"+name, func(b *testing.B) {
				search.NewIndex(sub)
				b.ReportAllocs()
				for b.Loop() {
					search.NewIndex(sub)
				}
				b.ReportMetric(float64(sub.Len()), "tools")
			})
		}
	}
}
