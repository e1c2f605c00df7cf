package blevebench_test

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/scale"
	"github.com/toolshed/toolshed/search"
)

// benchDir is the repository's bench/ folder, which holds the benchmark sets; this module
// lives in bench/bleve.
const benchDir = ".."

var sizes = []int{1000, 10000}

// limit is the number of results each search asks for, as a client does by default.
const limit = 5

var (
	snapMu    sync.Mutex
	snapshots = map[int]*catalog.Snapshot{}
)

// snapshot returns the scale catalog of n tools, built once per process.
func snapshot(tb testing.TB, n int) *catalog.Snapshot {
	tb.Helper()
	snapMu.Lock()
	defer snapMu.Unlock()
	if s := snapshots[n]; s != nil {
		return s
	}
	real, err := scale.Real(benchDir)
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
	snapshots[n] = snap
	return snap
}

// queries returns the real benchmark queries, cut to toolshed's query limit so both
// engines see exactly the same text.
func queries(tb testing.TB) []string {
	tb.Helper()
	qs, err := scale.Queries(benchDir)
	if err != nil {
		tb.Fatal(err)
	}
	for i, q := range qs {
		qs[i] = search.Shorten(q, search.MaxQueryLen)
	}
	return qs
}

// engine is one search engine under test: build indexes a snapshot, and the searcher it
// returns answers one query with at most limit tool indexes, best first.
type engine struct {
	name  string
	build func(tb testing.TB, snap *catalog.Snapshot) (searcher, func())
}

type searcher func(query string) ([]int, error)

var engines = []engine{
	{"bleve", buildBleve},
	{"toolshed", buildToolshed},
}

func buildToolshed(tb testing.TB, snap *catalog.Snapshot) (searcher, func()) {
	ix := search.NewIndex(snap)
	return func(q string) ([]int, error) {
		rs, err := ix.Search(q, search.Options{Limit: limit})
		if err != nil {
			return nil, err
		}
		out := make([]int, len(rs))
		for i, r := range rs {
			out[i] = r.Tool.Index
		}
		return out, nil
	}, func() {}
}

// textField is the one field of a bleve document.
const textField = "text"

// bleveMapping indexes one text field with bleve's English analyzer (Unicode word
// tokenizer, possessive filter, lowercase, English stop words, Porter stemmer) and BM25
// scoring. Nothing is stored and no term vectors or doc values are kept: a search only
// needs document IDs and scores.
func bleveMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = false
	text.IncludeTermVectors = false
	text.IncludeInAll = false
	text.DocValues = false
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(textField, text)
	im := bleve.NewIndexMapping()
	im.DefaultMapping = doc
	im.DefaultAnalyzer = en.AnalyzerName
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	im.ScoringModel = index.BM25Scoring
	return im
}

// bleveText is everything toolshed searches in a tool, as one text: name, title,
// description, parameter names, descriptions and enum values, and server name.
func bleveText(t *catalog.Tool) string {
	var sb strings.Builder
	sb.WriteString(t.Name)
	sb.WriteByte('\n')
	sb.WriteString(t.Title)
	sb.WriteByte('\n')
	sb.WriteString(t.Description)
	for _, p := range t.Params {
		sb.WriteByte('\n')
		sb.WriteString(p.Name)
		sb.WriteByte(' ')
		sb.WriteString(p.Description)
		for _, v := range p.Enum {
			sb.WriteByte(' ')
			sb.WriteString(v)
		}
	}
	sb.WriteByte('\n')
	sb.WriteString(t.Server)
	return sb.String()
}

// newBleve opens an empty in-memory bleve index. bleve.NewMemOnly would use the legacy
// upsidedown index, which lacks the field statistics BM25 needs, and bleve then silently
// scores with TF-IDF instead; so this opens bleve's default index type, scorch, without a
// path: scorch then keeps its segments in memory and never persists or merges them.
func newBleve() (bleve.Index, error) {
	return bleve.NewUsing("", bleveMapping(), scorch.Name, scorch.Name, nil)
}

func buildBleve(tb testing.TB, snap *catalog.Snapshot) (searcher, func()) {
	idx, err := newBleve()
	if err != nil {
		tb.Fatal(err)
	}
	// One batch for the whole catalog: bleve analyzes its documents in parallel and
	// writes a single segment, its fastest build and the fastest index to search.
	batch := idx.NewBatch()
	for _, t := range snap.Tools() {
		if err := batch.Index(strconv.Itoa(t.Index), map[string]any{textField: bleveText(t)}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := idx.Batch(batch); err != nil {
		tb.Fatal(err)
	}
	return func(q string) ([]int, error) {
		mq := bleve.NewMatchQuery(q) // OR of the analyzed query terms
		mq.SetField(textField)
		res, err := idx.Search(bleve.NewSearchRequestOptions(mq, limit, 0, false))
		if err != nil {
			return nil, err
		}
		out := make([]int, len(res.Hits))
		for i, h := range res.Hits {
			if out[i], err = strconv.Atoi(h.ID); err != nil {
				return nil, err
			}
		}
		return out, nil
	}, func() { _ = idx.Close() }
}

// reportLatency adds p50 and p99 per-operation latency metrics to a benchmark.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
}

// BenchmarkBuild measures building a search index of a catalog snapshot. Each engine
// builds from the same *catalog.Snapshot; the time of turning tools into bleve documents
// is counted, as toolshed's own tokenizing of those fields is. Toolshed keeps a
// process-wide stem cache, so its builds after the first reuse stems (see README.md).
func BenchmarkBuild(b *testing.B) {
	for _, e := range engines {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/%d", e.name, n), func(b *testing.B) {
				snap := snapshot(b, n)
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					start := time.Now()
					_, done := e.build(b, snap)
					lat = append(lat, time.Since(start))
					b.StopTimer()
					done()
					b.StartTimer()
				}
				b.StopTimer()
				reportLatency(b, lat)
			})
		}
	}
}

// BenchmarkSearch measures one top-5 query at a time, the real benchmark queries cycled
// by iteration.
func BenchmarkSearch(b *testing.B) {
	qs := queries(b)
	for _, e := range engines {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/%d", e.name, n), func(b *testing.B) {
				s, done := e.build(b, snapshot(b, n))
				defer done()
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					start := time.Now()
					if _, err := s(qs[i%len(qs)]); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				reportLatency(b, lat)
			})
		}
	}
}

// TestBothEnginesFind checks that both engines, built as the benchmarks build them, find
// something for plain queries, so the benchmarks time real work.
func TestBothEnginesFind(t *testing.T) {
	snap := snapshot(t, 1000)
	plain := []string{"create github issue", "weather forecast", "read a file", "search the web"}
	for _, e := range engines {
		s, done := e.build(t, snap)
		for _, q := range plain {
			got, err := s(q)
			if err != nil {
				t.Fatalf("%s: %q: %v", e.name, q, err)
			}
			if len(got) == 0 {
				t.Errorf("%s: %q: no results", e.name, q)
			}
			for _, d := range got {
				if d < 0 || d >= snap.Len() {
					t.Errorf("%s: %q: result %d is not a tool of the catalog", e.name, q, d)
				}
			}
		}
		done()
	}
}

// TestBleveScoresBM25 checks that the bleve index really scores with BM25 (bleve falls
// back to TF-IDF without a word when an index type lacks BM25's statistics), and that its
// hits for a plain query have positive, decreasing scores.
func TestBleveScoresBM25(t *testing.T) {
	idx, err := newBleve()
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	batch := idx.NewBatch()
	for _, tool := range snapshot(t, 1000).Tools() {
		if err := batch.Index(strconv.Itoa(tool.Index), map[string]any{textField: bleveText(tool)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Batch(batch); err != nil {
		t.Fatal(err)
	}
	mq := bleve.NewMatchQuery("create github issue")
	mq.SetField(textField)
	req := bleve.NewSearchRequestOptions(mq, limit, 0, true)
	res, err := idx.Search(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) == 0 {
		t.Fatal("no hits")
	}
	if expl := res.Hits[0].Expl.String(); !strings.Contains(expl, "as per bm25 model") {
		t.Errorf("the top hit is not scored with BM25:\n%s", expl)
	}
	for i, h := range res.Hits {
		if h.Score <= 0 || (i > 0 && h.Score > res.Hits[i-1].Score) {
			t.Fatalf("hit %d (%s) has score %v after %v", i, h.ID, h.Score, res.Hits[max(i-1, 0)].Score)
		}
	}
}
