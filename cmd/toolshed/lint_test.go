package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/embedtest"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/searchlog"
)

// lint --config lints what a gateway over the config would serve: the real everything
// server's tools, with the config's overrides (a hidden tool is not linted, a
// search-only description is).
func TestLintConfig(t *testing.T) {
	cmd, args := testupstream.Everything(t)
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": cmd, "args": args},
			"missing":    map[string]any{"command": filepath.Join(t.TempDir(), "no-such-server")},
		},
		"overrides": []any{
			map[string]any{"tools": "everything__get-env", "hide": true},
			map[string]any{"tools": "everything__get-sum", "description": "Sum."},
		},
	})
	stdout, stderr := lintConfig(t, cfg)
	var report struct {
		Tools    int
		Findings []struct{ Check, Tool, Message string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	own := lintedTools(t, "everything", cmd, args)
	if report.Tools != own-1 {
		t.Errorf("linted %d tools, want the server's %d but the hidden one", report.Tools, own-1)
	}
	short := false
	for _, f := range report.Findings {
		if strings.Contains(f.Tool, "get-env") {
			t.Errorf("a hidden tool is linted: %+v", f)
		}
		short = short || f.Check == "description" && f.Tool == "everything__get-sum" && strings.Contains(f.Message, `"Sum."`)
	}
	if !short {
		t.Errorf("the search-only description of get-sum is not linted: %s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "server missing is") || !strings.Contains(stderr.String(), "not linted") {
		t.Errorf("a server that cannot start is not reported:\n%s", stderr.String())
	}
}

// lintedTools is how many tools lint --config finds in a config of server alone.
func lintedTools(t *testing.T, server string, command string, args []string) int {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{server: map[string]any{"command": command, "args": args}}})
	stdout, _ := lintConfig(t, cfg)
	var out struct{ Tools int }
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Tools == 0 {
		t.Fatalf("lint of %s: %v %s", server, err, stdout.String())
	}
	return out.Tools
}

// lintConfig runs lint --config --json on the config cfg, which must succeed.
func lintConfig(t *testing.T, cfg []byte) (stdout, stderr *bytes.Buffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	if code := run([]string{"lint", "--config", path, "--json"}, stdout, stderr); code != 0 {
		t.Fatalf("lint --config: exit %d\nstderr: %s", code, stderr.String())
	}
	return stdout, stderr
}

// lint --config with an embedding model that answers says whether it helps on the
// config's tools: recall@5 of words, vectors and hybrid on the tools' own descriptions,
// and, once the search log holds enough searches that led to a successful call, on
// those. (The model here is embedtest's scripted one: this proves what lint measures
// and says, not a real model's quality, which docs/embeddings.md gives.)
func TestLintEmbedGain(t *testing.T) {
	srv := embedtest.Start()
	defer srv.Close()
	cmd, args := testupstream.Everything(t)
	logPath := filepath.Join(t.TempDir(), "log.db")
	cfg, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"everything": map[string]any{"command": cmd, "args": args}},
		"embed":      map[string]any{"url": srv.URL + "/v1/embeddings", "model": embedtest.Model},
		"search_log": map[string]any{"db": logPath},
	})
	gain := func() string {
		t.Helper()
		stdout, _ := lintConfig(t, cfg)
		var report struct {
			Findings []struct{ Severity, Check, Message string }
		}
		if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
			t.Fatal(err)
		}
		for _, f := range report.Findings {
			if f.Check == "embeddings" && strings.Contains(f.Message, "recall@5") {
				return f.Message
			}
		}
		t.Fatalf("no finding says whether the model helps: %s", stdout.String())
		return ""
	}
	if m := gain(); !strings.Contains(m, "test-embed") || !strings.Contains(m, "the tools' own descriptions (") || !regexp.MustCompile(`words [01]\.\d{3}, vectors [01]\.\d{3}, hybrid [01]\.\d{3}`).MatchString(m) {
		t.Errorf("without a search log: %s", m)
	}
	log, err := searchlog.Open(context.Background(), logPath, searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range minLogQueries {
		log.Call(searchlog.Call{Time: time.Now(), Source: "gateway", Tool: "everything__echo", Server: "everything", Outcome: searchlog.OutcomeOK, Rank: 1, Query: fmt.Sprintf("repeat my words back %d", i)})
	}
	if err := log.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := gain(); !strings.Contains(m, fmt.Sprintf("searches of the search log that led to a call (%d)", minLogQueries)) {
		t.Errorf("with %d logged searches: %s", minLogQueries, m)
	}
}
