package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/internal/lint"
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

// TestSearchEmbedSlow: an endpoint that does not answer costs a search no more than
// --embed-query-timeout (10 s by default, as docs/embeddings.md says) before words
// answer, however many tools there are to embed: the query is asked for first. Each of
// the tools' requests would otherwise wait the client's own timeout (60 s). The
// endpoint here never answers; the test allows 45 s, past the timeout given and short
// of one request's 60 s.
func TestSearchEmbedSlow(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := embedtest.Start()
	defer srv.Close()
	srv.SetMode(embedtest.Slow, time.Hour) // answers when the client gives up
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runArgs("search", "--catalog", "testdata/small.json", "--embed-url", srv.URL+"/v1/embeddings", "--embed-model", embedtest.Model, "--embed-query-timeout", "2s", "weather forecast")
		done <- result{code, out, errOut}
	}()
	select {
	case r := <-done:
		if r.code != 0 || !strings.Contains(r.out, "weather__get_forecast") {
			t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.out, r.errOut)
		}
		if !strings.Contains(r.errOut, "did not embed the query within --embed-query-timeout 2s); searching with words alone") {
			t.Errorf("stderr should say the endpoint did not answer in time and words answered: %q", r.errOut)
		}
		for _, req := range srv.Requests() {
			if len(req.Input) != 1 || req.Input[0] != "weather forecast" {
				t.Errorf("the endpoint was sent %q; want the query alone", req.Input)
			}
		}
	case <-time.After(45 * time.Second):
		t.Fatal("toolshed search waited more than 45 s for an endpoint that does not answer, with --embed-query-timeout 2s")
	}
}

func TestEvalEmbed(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := embedtest.Start()
	defer srv.Close()
	code, out, errOut := runArgs("eval", "--catalog", "testdata/small.json", "--queries", "testdata/small-queries.jsonl", "--embed-url", srv.URL+"/v1/embeddings", "--embed-model", embedtest.Model)
	host := strings.TrimPrefix(srv.URL, "http://")
	if code != 0 || !strings.Contains(out, "hybrid: BM25F fused with test-embed at "+host+" (5 tools embedded, 0 from the cache)\n") || !strings.Contains(out, "recall@5") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Words and vectors alone are measured beside the fusion, and the verdict said.
	if !regexp.MustCompile(`side by side +words +vectors +hybrid\n +recall@5 +[0-9.]+ +[0-9.]+ +[0-9.]+\n`).MatchString(out) ||
		!regexp.MustCompile(`the model (helps|hurts|changes nothing) here`).MatchString(out) {
		t.Errorf("no side-by-side figures:\n%s", out)
	}
	code, out, _ = runArgs("eval", "--catalog", "testdata/small.json", "--queries", "testdata/small-queries.jsonl", "--embed-url", srv.URL+"/v1/embeddings", "--embed-model", embedtest.Model, "--json")
	var sides struct {
		SideBySide *struct {
			Words, Vectors, Hybrid struct {
				Recall5 *float64 `json:"recall@5"`
			}
		} `json:"side_by_side"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &sides) != nil || sides.SideBySide == nil || sides.SideBySide.Vectors.Recall5 == nil || sides.SideBySide.Words.Recall5 == nil {
		t.Errorf("--json has no side_by_side: %s", out)
	}
	// --json says the run was hybrid, with what, and how many queries fell back to
	// words: here every one, the endpoint failing after the tools came from the cache.
	srv.SetMode(embedtest.Error, 0)
	evalArgs := []string{"eval", "--catalog", "testdata/small.json", "--queries", "testdata/small-queries.jsonl", "--embed-url", srv.URL + "/v1/embeddings", "--embed-model", embedtest.Model}
	code, out, errOut = runArgs(append(evalArgs, "--json")...)
	var report struct {
		Recall5 *float64 `json:"recall@5"`
	}
	var raw map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &raw) != nil || json.Unmarshal([]byte(out), &report) != nil || report.Recall5 == nil {
		t.Fatalf("--json: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	want := map[string]any{"mode": "hybrid", "model": embedtest.Model, "endpoint_host": host, "tools_embedded": 0.0, "tools_cached": 5.0, "query_fallbacks": 4.0}
	if got, _ := raw["search"].(map[string]any); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("--json search = %v, want %v", got, want)
	}
	if code, out, _ = runArgs(evalArgs...); code != 0 || !strings.Contains(out, "; 4 of 4 queries fell back to words alone") {
		t.Errorf("text output does not count the fallbacks: exit %d, %q", code, out)
	}
	code, out, _ = runArgs("eval", "--catalog", "testdata/small.json", "--queries", "testdata/small-queries.jsonl", "--json")
	if json.Unmarshal([]byte(out), &raw) != nil || fmt.Sprint(raw["search"]) != fmt.Sprint(map[string]any{"mode": "bm25", "tools_embedded": 0.0, "tools_cached": 0.0, "query_fallbacks": 0.0}) {
		t.Errorf("words alone --json search = %v (exit %d)", raw["search"], code)
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

// TestEmbedConfigFlagsOverride: the config's embed section fills every flag not given,
// and a flag given wins over the file.
func TestEmbedConfigFlagsOverride(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := addEmbedFlags(fs, hybrid.DefaultQueryTimeout)
	if err := fs.Parse([]string{"--embed-model", "from-flag", "--embed-dimensions", "128"}); err != nil {
		t.Fatal(err)
	}
	f.withConfig(fs, config.Embed{URL: "http://file/api/embed", Model: "from-file", Dimensions: 32, QueryPrefix: "q: ",
		QueryTimeout: 2 * time.Second, APIKeyEnv: "TS_TEST_EMBED_KEY"})
	got := fmt.Sprintf("%s %s %d %q %q %v %s", *f.url, *f.model, *f.dimensions, *f.queryPrefix, *f.docPrefix, *f.queryTimeout, f.apiKeyEnv)
	want := `http://file/api/embed from-flag 128 "q: " "" 2s TS_TEST_EMBED_KEY`
	if got != want {
		t.Errorf("merged: %s\nwant    %s", got, want)
	}
	// The key comes from the variable the file names.
	srv := embedtest.Start()
	defer srv.Close()
	t.Setenv("TS_TEST_EMBED_KEY", "secret-1")
	*f.url = srv.URL + "/api/embed"
	c, err := f.client()
	if err != nil {
		t.Fatal(err)
	}
	c.Query(t.Context(), "x")
	if r := srv.Requests(); len(r) != 1 || r[0].Authorization != "Bearer secret-1" {
		t.Errorf("requests %+v; want one with the key of $TS_TEST_EMBED_KEY", r)
	}
}

// TestConfigEmbedErrors: a mistake in the embed section stops serve and lint before any
// server starts, with what to fix.
func TestConfigEmbedErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "toolshed.yaml")
	os.WriteFile(file, []byte("mcpServers:\n  x:\n    command: /nonexistent/server\nembed:\n  url: http://localhost:11434/api/embed\n  model: nomic-embed-text\n  api_key: sk-secret\n"), 0o600)
	for _, cmd := range []string{"serve", "lint"} {
		code, _, errOut := runArgs(cmd, "--config", file)
		if code == 0 || !strings.Contains(errOut, "embed.api_key: the key never goes in the file") || strings.Contains(errOut, "sk-secret") {
			t.Errorf("%s: exit %d, stderr %q", cmd, code, errOut)
		}
	}
}

// TestLintChecksEmbed: lint says whether the config's embedding endpoint answers.
func TestLintChecksEmbed(t *testing.T) {
	srv := embedtest.Start()
	up := checkEmbed(t.Context(), config.Embed{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model, APIKeyEnv: embed.APIKeyEnv})
	srv.Close()
	if len(up) != 1 || up[0].Severity != lint.Info || !strings.Contains(up[0].Message, "answers with 64 dimensions") {
		t.Errorf("endpoint up: %+v", up)
	}
	down := checkEmbed(t.Context(), config.Embed{URL: srv.URL + "/v1/embeddings", Model: embedtest.Model, APIKeyEnv: embed.APIKeyEnv})
	if len(down) != 1 || down[0].Severity != lint.Error || !strings.Contains(down[0].Message, "does not answer") || !strings.Contains(down[0].Fix, "words alone") {
		t.Errorf("endpoint down: %+v", down)
	}
	wrong := embedtest.Start()
	defer wrong.Close()
	bad := checkEmbed(t.Context(), config.Embed{URL: wrong.URL + "/api/embed", Model: "no-such-model", APIKeyEnv: embed.APIKeyEnv})
	if len(bad) != 1 || bad[0].Severity != lint.Error || !strings.Contains(bad[0].Message, "not found") {
		t.Errorf("unknown model: %+v", bad)
	}
}
