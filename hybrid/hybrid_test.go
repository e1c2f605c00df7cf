package hybrid_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/search"
)

const doc = `{"servers": [
	{"name": "camera", "tools": [{"name": "take_picture", "description": "Take a picture with the device camera.", "inputSchema": {"type": "object"}}]},
	{"name": "weather", "tools": [{"name": "get_forecast", "description": "Get the forecast for a city.", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]},
	{"name": "mail", "tools": [{"name": "send", "description": "Send an email to a recipient.", "inputSchema": {"type": "object"}}]},
	{"name": "files", "tools": [{"name": "read_file", "description": "Read a file from disk.", "inputSchema": {"type": "object"}}]},
	{"name": "github", "tools": [{"name": "create_issue", "description": "Create an issue in a repository.", "inputSchema": {"type": "object"}}]}
]}`

// logBuffer is a log destination the searcher and the test share.
type logBuffer struct{ testupstream.SyncBuffer }

func (l *logBuffer) count(level string) int { return strings.Count(l.String(), "level="+level) }

type fixture struct {
	srv  *embedtest.Server
	snap *catalog.Snapshot
	ix   *search.Index
	hs   *hybrid.Searcher
	log  *logBuffer
}

func setup(t *testing.T, path string, opts hybrid.Options) *fixture {
	t.Helper()
	srv := embedtest.Start()
	t.Cleanup(srv.Close)
	snap := catalogtest.Snapshot(t, doc)
	c, err := embed.New(embed.Options{URL: srv.URL + path, Model: embedtest.Model})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, snap.Len())
	for i := range texts {
		texts[i] = embed.ToolText(snap.Tool(i))
	}
	vecs, _, err := embed.Build(context.Background(), c, texts, embed.BuildOptions{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	log := &logBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(log, nil))
	ix := search.NewIndex(snap)
	return &fixture{srv: srv, snap: snap, ix: ix, hs: hybrid.New(ix, vecs, c, opts), log: log}
}

func names(rs []search.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Tool.Qualified+"/"+r.Match)
	}
	return out
}

// TestVectorsFindWhatWordsMiss: "grab a selfie" shares no word with camera__take_picture,
// so words alone miss it; the test model reads grab as take and selfie as picture.
func TestVectorsFindWhatWordsMiss(t *testing.T) {
	for _, path := range []string{"/v1/embeddings", "/api/embed"} {
		t.Run(path, func(t *testing.T) {
			f := setup(t, path, hybrid.Options{})
			const q = "grab a selfie"
			words, err := f.ix.Search(q, search.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range words {
				if r.Tool.Qualified == "camera__take_picture" {
					t.Fatalf("the premise fails: words alone find the tool: %v", names(words))
				}
			}
			got, err := f.hs.Search(context.Background(), q, search.Options{Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || got[0].Tool.Qualified != "camera__take_picture" || got[0].Match != hybrid.MatchVector {
				t.Fatalf("hybrid = %v, want camera__take_picture/vector first", names(got))
			}
			if f.log.count("WARN") != 0 {
				t.Errorf("warnings logged: %s", f.log.String())
			}
		})
	}
}

func TestExactAndNamedStayFirst(t *testing.T) {
	f := setup(t, "/v1/embeddings", hybrid.Options{})
	// The vectors favour the camera (photo, snapshot); the query names mail__send.
	got, err := f.hs.Search(context.Background(), "photo snapshot picture with mail__send", search.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Tool.Qualified != "mail__send" || got[0].Match != search.MatchNamed {
		t.Fatalf("got %v, want mail__send/named first", names(got))
	}
	got, _ = f.hs.Search(context.Background(), "github__create_issue", search.Options{})
	if got[0].Tool.Qualified != "github__create_issue" || got[0].Match != search.MatchExact {
		t.Fatalf("got %v, want github__create_issue/exact first", names(got))
	}
	for _, r := range got[1:] {
		if r.Tool.Qualified == "github__create_issue" {
			t.Fatalf("the exact match appears twice: %v", names(got))
		}
	}
}

func TestAllowAndLimit(t *testing.T) {
	f := setup(t, "/v1/embeddings", hybrid.Options{})
	allow := catalog.NewSet(f.snap)
	for i := range f.snap.Len() {
		if f.snap.Tool(i).Server != "camera" {
			allow.Add(i)
		}
	}
	got, _ := f.hs.Search(context.Background(), "grab a selfie", search.Options{Allow: allow, Limit: 2})
	if len(got) > 2 {
		t.Fatalf("%d results over the limit 2", len(got))
	}
	for _, r := range got {
		if r.Tool.Server == "camera" {
			t.Fatalf("a tool outside Allow: %v", names(got))
		}
	}
}

// TestFallback: a down, slow or garbage endpoint gives exactly BM25F's answer, one
// warning however many searches, and the fused answer again once it recovers.
func TestFallback(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode embedtest.Mode
		down bool
	}{
		{"slow", embedtest.Slow, false},
		{"garbage", embedtest.Garbage, false},
		{"error", embedtest.Error, false},
		{"down", embedtest.Normal, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, "/v1/embeddings", hybrid.Options{QueryTimeout: 100 * time.Millisecond})
			f.srv.SetMode(tc.mode, 5*time.Second)
			if tc.down {
				// Point a client at a port nothing listens on.
				l, _ := net.Listen("tcp", "127.0.0.1:0")
				addr := l.Addr().String()
				l.Close()
				c, _ := embed.New(embed.Options{URL: "http://" + addr + "/v1/embeddings", Model: embedtest.Model})
				vecs := vectorsOf(t, f)
				f.hs = hybrid.New(f.ix, vecs, c, hybrid.Options{QueryTimeout: 100 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(f.log, nil))})
			}
			for _, q := range []string{"grab a selfie", "send an email", "forecast city"} {
				want, _ := f.ix.Search(q, search.Options{})
				got, err := f.hs.Search(context.Background(), q, search.Options{})
				if err != nil {
					t.Fatalf("%q: %v", q, err)
				}
				if strings.Join(names(got), " ") != strings.Join(names(want), " ") {
					t.Fatalf("%q: got %v, want BM25F's %v", q, names(got), names(want))
				}
			}
			if n := f.log.count("WARN"); n != 1 {
				t.Fatalf("%d warnings, want 1:\n%s", n, f.log.String())
			}
			if tc.down {
				return
			}
			f.srv.SetMode(embedtest.Normal, 0)
			got, _ := f.hs.Search(context.Background(), "grab a selfie", search.Options{})
			if len(got) == 0 || got[0].Match != hybrid.MatchVector || f.log.count("INFO") != 1 {
				t.Fatalf("after recovery: %v, log:\n%s", names(got), f.log.String())
			}
		})
	}
}

func vectorsOf(t *testing.T, f *fixture) *embed.Vectors {
	c, _ := embed.New(embed.Options{URL: f.srv.URL + "/v1/embeddings", Model: embedtest.Model})
	f.srv.SetMode(embedtest.Normal, 0)
	texts := make([]string, f.snap.Len())
	for i := range texts {
		texts[i] = embed.ToolText(f.snap.Tool(i))
	}
	v, _, err := embed.Build(context.Background(), c, texts, embed.BuildOptions{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSearchErrorsAreSearchs(t *testing.T) {
	f := setup(t, "/v1/embeddings", hybrid.Options{})
	if _, err := f.hs.Search(context.Background(), "", search.Options{}); err == nil {
		t.Fatal("an empty query gave no error")
	}
	if len(f.srv.Requests()) != f.snap.Len()/embed.DefaultBatchSize+1 {
		t.Errorf("an invalid query was sent to the endpoint: %d requests", len(f.srv.Requests()))
	}
}

// TestFuse checks the arithmetic on lists of its own: pinned first, then RRF.
func TestFuse(t *testing.T) {
	snap := catalogtest.Snapshot(t, doc)
	tool := func(i int) *catalog.Tool { return snap.Tool(i) }
	lexical := []search.Result{
		{Tool: tool(4), Match: search.MatchNamed},
		{Tool: tool(0), Match: search.MatchBM25, Score: 10},
		{Tool: tool(1), Match: search.MatchBM25, Score: 9},
		{Tool: tool(2), Match: search.MatchBM25, Score: 8},
	}
	hits := []embed.Hit{{Index: 2}, {Index: 3}, {Index: 4}, {Index: 1}}
	got := hybrid.Fuse(snap, lexical, hits, hybrid.FuseOptions{Limit: 10, Depth: 50})
	// Without confident matches, plain RRF (tool 4, pinned, out of the vectors' ranks):
	// tool 2: 1/63 + 1/61; tool 1: 1/62 + 1/63; tool 0: 1/61; tool 3: 1/62.
	want := []string{tool(4).Qualified + "/named", tool(2).Qualified + "/hybrid", tool(1).Qualified + "/hybrid",
		tool(0).Qualified + "/bm25", tool(3).Qualified + "/vector"}
	if strings.Join(names(got), " ") != strings.Join(want, " ") {
		t.Fatalf("got  %v\nwant %v", names(got), want)
	}
	if got := hybrid.Fuse(snap, lexical, hits, hybrid.FuseOptions{Limit: 2, Depth: 50}); len(got) != 2 {
		t.Errorf("limit 2 gave %d", len(got))
	}
}

// TestFuseConfident: word matches scoring at least Confident times the best one stay
// first in their order, whatever the vectors say; the others are fused with the
// vectors' ranking by RRF, ranks counted without the tools already placed.
func TestFuseConfident(t *testing.T) {
	snap := catalogtest.Snapshot(t, doc)
	tool := func(i int) *catalog.Tool { return snap.Tool(i) }
	lexical := []search.Result{
		{Tool: tool(0), Match: search.MatchBM25, Score: 10},
		{Tool: tool(1), Match: search.MatchBM25, Score: 4},   // confident at 0.3, not at 0.5
		{Tool: tool(2), Match: search.MatchBM25, Score: 2.9}, // below 0.3 of 10
	}
	hits := []embed.Hit{{Index: 2}, {Index: 3}, {Index: 1}}
	for _, tc := range []struct {
		confident float64
		want      string
	}{
		// Tools 0 and 1 confident (1 found by the vectors too); then tool 2, words'
		// rank 1 and vectors' rank 1 without the placed tools, before tool 3.
		{0.3, "0/bm25 1/hybrid 2/hybrid 3/vector"},
		// Tool 0 alone confident; tool 2 (1/62 + 1/61) before tool 1 (1/61 + 1/63).
		{0.5, "0/bm25 2/hybrid 1/hybrid 3/vector"},
		// None: plain RRF, where both lists' votes put tools 2 and 1 before tool 0,
		// the best word match by far.
		{-1, "2/hybrid 1/hybrid 0/bm25 3/vector"},
	} {
		got := hybrid.Fuse(snap, lexical, hits, hybrid.FuseOptions{Limit: 10, Depth: 50, Confident: tc.confident})
		var short []string
		for _, r := range got {
			for i := range 5 {
				if r.Tool == tool(i) {
					short = append(short, fmt.Sprintf("%d/%s", i, r.Match))
				}
			}
		}
		if strings.Join(short, " ") != tc.want {
			t.Errorf("confident %g: %v, want %s", tc.confident, short, tc.want)
		}
	}
	if got := hybrid.Fuse(snap, lexical, hits, hybrid.FuseOptions{Limit: 1, Depth: 50, Confident: 0.3}); len(got) != 1 || got[0].Score != 10 {
		t.Errorf("limit 1: %v; want the best word match with its BM25F score", names(got))
	}
}

// TestWithSharesTheWarning: Searchers made With one another (a gateway's, as its
// catalog changes) log one warning between them, not one each.
func TestWithSharesTheWarning(t *testing.T) {
	f := setup(t, "/v1/embeddings", hybrid.Options{QueryTimeout: 100 * time.Millisecond})
	vecs := vectorsOf(t, f)
	f.srv.SetMode(embedtest.Garbage, 0)
	other := f.hs.With(search.NewIndex(f.snap), vecs)
	for _, s := range []*hybrid.Searcher{f.hs, other, f.hs.With(f.ix, vecs)} {
		if _, err := s.Search(context.Background(), "grab a selfie", search.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.log.count("WARN"); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
	f.srv.SetMode(embedtest.Normal, 0)
	got, _ := other.Search(context.Background(), "grab a selfie", search.Options{})
	if len(got) == 0 || got[0].Tool.Qualified != "camera__take_picture" {
		t.Fatalf("With's searcher does not fuse: %v", names(got))
	}
}

// TestSearchVector: a query vector made beforehand ranks as Search's own would, and one
// of another dimension gives words alone, counted as a fallback with one warning.
func TestSearchVector(t *testing.T) {
	f := setup(t, "/v1/embeddings", hybrid.Options{})
	const q = "grab a selfie"
	c, err := embed.New(embed.Options{URL: f.srv.URL + "/v1/embeddings", Model: embedtest.Model})
	if err != nil {
		t.Fatal(err)
	}
	qv, err := c.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.hs.Search(context.Background(), q, search.Options{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.hs.SearchVector(q, qv, search.Options{Limit: 3})
	if err != nil || fmt.Sprint(names(got)) != fmt.Sprint(names(want)) {
		t.Fatalf("SearchVector = %v, %v; want Search's %v", names(got), err, names(want))
	}
	words, _ := f.ix.Search(q, search.Options{Limit: 3})
	got, err = f.hs.SearchVector(q, qv[:len(qv)-1], search.Options{Limit: 3})
	if err != nil || fmt.Sprint(names(got)) != fmt.Sprint(names(words)) || f.hs.Fallbacks() != 1 || f.log.count("WARN") != 1 {
		t.Errorf("a vector of the wrong dimension: %v, %v, %d fallbacks, log %s; want words alone %v, one fallback and warning", names(got), err, f.hs.Fallbacks(), f.log.String(), names(words))
	}
}
