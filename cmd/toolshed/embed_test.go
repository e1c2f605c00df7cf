package main

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/embedtest"
)

func runArgs(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestSearchEmbed: the first search embeds every tool with progress on stderr; the
// second, another process's restart, embeds only the query (the vectors come from the
// cache under XDG_CACHE_HOME).
func TestSearchEmbed(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := embedtest.Start()
	defer srv.Close()
	args := []string{"search", "--catalog", "testdata/small.json", "--json", "--embed-url", srv.URL + "/api/embed", "--embed-model", embedtest.Model, "weather forecast for Paris"}
	code, out, errOut := runArgs(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got searchOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Mode != "hybrid" || len(got.Results) == 0 || got.Results[0].Name != "weather__get_forecast" {
		t.Fatalf("mode %q results %+v", got.Mode, got.Results)
	}
	if !strings.Contains(errOut, "embedding tools with test-embed: ") {
		t.Errorf("no progress on stderr: %q", errOut)
	}
	first := srv.Inputs()
	if first < 2 {
		t.Fatalf("%d texts embedded on the first run", first)
	}
	srv.Reset()
	code, _, errOut = runArgs(args...)
	if code != 0 || srv.Inputs() != 1 || strings.Contains(errOut, "embedding tools") {
		t.Fatalf("second run: exit %d, %d texts embedded (want the query alone), stderr %q", code, srv.Inputs(), errOut)
	}
}

// TestSearchEmbedDown: an endpoint that is down costs the vectors, never the search.
func TestSearchEmbedDown(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	code, out, errOut := runArgs("search", "--catalog", "testdata/small.json", "--embed-url", "http://"+addr+"/v1/embeddings", "--embed-model", "m", "weather forecast")
	if code != 0 || !strings.Contains(out, "weather__get_forecast") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "no embeddings") || !strings.Contains(errOut, "searching with words alone") || strings.Count(errOut, "no embeddings") != 1 {
		t.Errorf("stderr should say once that words alone answered: %q", errOut)
	}
}

func TestEvalEmbed(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := embedtest.Start()
	defer srv.Close()
	code, out, errOut := runArgs("eval", "--catalog", "testdata/small.json", "--queries", "testdata/small-queries.jsonl", "--embed-url", srv.URL+"/v1/embeddings", "--embed-model", embedtest.Model)
	if code != 0 || !strings.Contains(out, "hybrid: BM25F fused with test-embed (") || !strings.Contains(out, "recall@5") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Measuring needs the vectors: a failing endpoint is an error here.
	srv.SetMode(embedtest.Error, 0)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	code, _, errOut = runArgs("eval", "--catalog", "testdata/small.json", "--queries", "testdata/small-queries.jsonl", "--embed-url", srv.URL+"/v1/embeddings", "--embed-model", embedtest.Model)
	if code != 1 || !strings.Contains(errOut, "embedding the catalog's tools: embed: endpoint unavailable") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestEmbedFlagUsage(t *testing.T) {
	for _, args := range [][]string{
		{"search", "--embed-url", "http://localhost:11434/api/embed", "x"},
		{"search", "--embed-model", "m", "x"},
		{"search", "--regex", "--embed-url", "http://localhost:1/api/embed", "--embed-model", "m", "x"},
		{"search", "--embed-url", "localhost:11434", "--embed-model", "m", "x"},
		{"serve", "--embed-url", "http://localhost:11434/api/embed"},
		{"serve", "--embed-url", "ftp://x", "--embed-model", "m"},
		{"proxy", "--embed-model", "m"},
		{"proxy", "--embed-url", "ftp://x", "--embed-model", "m"},
		{"eval", "--catalog", "testdata/small.json", "--queries", "testdata/small-queries.jsonl", "--embed-url", "http://x/api/embed"},
	} {
		if code, _, errOut := runArgs(args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
}
