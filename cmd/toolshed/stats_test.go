package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/stats"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/searchlog"
)

const (
	statsLog     = "../../internal/stats/testdata/log.jsonl"
	statsCatalog = "../../internal/stats/testdata/catalog.json"
	statsUntil   = "--until 2026-12-01T00:00:00Z"
)

func TestStatsCommand(t *testing.T) {
	t.Setenv("TOOLSHED_CONFIG", "") // the default of --config
	tests := []struct {
		name string
		args string
		code int
	}{
		{"stats-from", "stats --from " + statsLog + " --catalog " + statsCatalog + " " + statsUntil, 0},
		{"stats-from-nocatalog-top3", "stats --from " + statsLog + " --top 3 " + statsUntil, 0},
		{"stats-since-1d", "stats --since 1d --from " + statsLog + " --catalog " + statsCatalog + " " + statsUntil, 0},
		{"stats-since-36h-json", "stats --since 36h --json --from " + statsLog + " " + statsUntil, 0},
		{"stats-empty-window", "stats --since 1h --from " + statsLog + " --until 2020-01-01T00:00:00Z", 0},
		{"stats-hashed", "stats --from testdata/stats-hashed.jsonl " + statsUntil, 0},
		{"stats-bad-since", "stats --since 7x --from " + statsLog, 2},
		{"stats-negative-since", "stats --since -7d --from " + statsLog, 2},
		{"stats-bad-until", "stats --until yesterday --from " + statsLog, 2},
		{"stats-bad-top", "stats --top 0 --from " + statsLog, 2},
		{"stats-db-and-from", "stats --db /tmp/x.db --from " + statsLog, 2},
		{"stats-extra-args", "stats last week", 2},
		{"stats-bad-records", "stats --from testdata/stats-bad.jsonl", 1},
		{"stats-missing-records", "stats --from testdata/no-such-log.jsonl", 1},
		{"stats-missing-catalog", "stats --from " + statsLog + " --catalog testdata/missing.json", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkCommand(t, tc.name, tc.args, tc.code) })
	}
}

// TestStatsJSON checks that the command's --json is the report package stats computes
// of the same records, whose golden file holds it.
func TestStatsJSON(t *testing.T) {
	t.Setenv("TOOLSHED_CONFIG", "") // the default of --config
	var stdout, stderr bytes.Buffer
	args := "stats --json --from " + statsLog + " --catalog " + statsCatalog + " " + statsUntil
	if code := run(strings.Fields(args), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want, err := os.ReadFile("../../internal/stats/testdata/recorded.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("toolshed %s differs from internal/stats/testdata/recorded.json:\n%s", args, stdout.String())
	}
}

func TestStatsHTML(t *testing.T) {
	t.Setenv("TOOLSHED_CONFIG", "") // the default of --config
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var stdout, stderr bytes.Buffer
	args := []string{"stats", "--from", statsLog, "--html", page, "--until", "2026-12-01T00:00:00Z"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`data-metric="searches">22<`)) || !bytes.HasPrefix(data, []byte("<!doctype html>")) {
		t.Errorf("the page lacks the search count:\n%.400s", data)
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "wrote "+page+" (22 searches, 17 calls)") {
		t.Errorf("stdout %q, stderr %q: want the page only, and a line saying so", stdout.String(), stderr.String())
	}

	// A page that cannot be written is an error that leaves nothing behind.
	stdout.Reset()
	stderr.Reset()
	args = []string{"stats", "--from", statsLog, "--html", filepath.Join(dir, "no-such-dir", "report.html")}
	if code := run(args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "no-such-dir") {
		t.Errorf("writing into a missing directory: exit %d, stderr %q", code, stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a failed write left files: %v", entries)
	}
}

// TestStatsConfig lists the tools never surfaced of a real server (the npm memory
// server) started from a gateway config, and checks suggestions against its real
// descriptions.
func TestStatsConfig(t *testing.T) {
	mcmd, margs := testupstream.Memory(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	servers := map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": mcmd, "args": margs},
		"broken": map[string]any{"command": filepath.Join(dir, "no-such-server")},
	}}
	data, _ := json.Marshal(servers)
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	records := filepath.Join(dir, "log.jsonl")
	log := `{"type": "search", "time": "2026-11-30T09:00:00Z", "session": "s1", "query": "remember that alice works at acme", "results": [{"tool": "memory__search_nodes", "rank": 1}], "latency_ms": 0.2}
{"type": "search", "time": "2026-11-30T09:00:05Z", "session": "s1", "query": "store a new person", "results": [{"tool": "memory__create_entities", "rank": 1}], "latency_ms": 0.2}
{"type": "call", "time": "2026-11-30T09:00:09Z", "session": "s1", "tool": "memory__create_entities", "outcome": "ok", "duration_ms": 20, "rank": 1}
`
	if err := os.WriteFile(records, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"stats", "--json", "--from", records, "--config", cfg, "--until", "2026-12-01T00:00:00Z"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r stats.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	ns := r.NeverSurfaced
	if !ns.Catalog || ns.CatalogTools < 5 || ns.Count != ns.CatalogTools-2 ||
		!slices.Contains(ns.Tools, "memory__read_graph") || slices.Contains(ns.Tools, "memory__create_entities") {
		t.Errorf("never surfaced %+v: want every memory tool but the two searches returned", ns)
	}
	if !strings.Contains(stderr.String(), "server broken is failed, so its tools are not counted") {
		t.Errorf("stderr does not warn of the server that did not start:\n%s", stderr.String())
	}
	// The memory server describes create_entities as creating "entities in the
	// knowledge graph": "store", "person", "remember", "alice"… are missing, "new" may not be.
	if len(r.Suggestions) != 1 || r.Suggestions[0].Tool != "memory__create_entities" ||
		!slices.Contains(r.Suggestions[0].Keywords, "remember") || slices.Contains(r.Suggestions[0].Keywords, "entities") {
		t.Errorf("suggestions %+v", r.Suggestions)
	}

	// A config none of whose servers starts lists no tool: an error, not an empty catalog.
	only := filepath.Join(dir, "broken.json")
	os.WriteFile(only, []byte(`{"mcpServers": {"broken": {"command": "`+filepath.Join(dir, "no-such-server")+`"}}}`), 0o644)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"stats", "--from", records, "--config", only}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "no server of "+only+" started") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestStatsMissingFiles: a search log or records file that is not there is an error
// saying so and what to do, and creates nothing: --db /tmp/typo.db created an empty
// database (and --db in a missing directory, the directory too) and reported "no
// searches".
func TestStatsMissingFiles(t *testing.T) {
	t.Setenv("TOOLSHED_CONFIG", "") // the default of --config
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	def := filepath.Join(data, "toolshed", "searchlog.db")
	for _, tc := range []struct {
		name, args string // DIR in args is a fresh directory
		want       []string
		file       string // the path the error names, under DIR
	}{
		{"db typo", "--db DIR/typo.db",
			[]string{"there is no search log at", "check the path given to --db", "without --db, stats reads " + def}, "typo.db"},
		{"db in a missing directory", "--db DIR/nodir/log.db", []string{"there is no search log at", "--db"}, "nodir/log.db"},
		{"db sqlite:PATH", "--db sqlite:DIR/typo.db", []string{"there is no search log at", "--db"}, "typo.db"},
		{"db file:PATH", "--db file:DIR/typo.db?_pragma=busy_timeout(100)", []string{"there is no search log at", "--db"}, "typo.db"},
		{"default log", "", []string{"there is no search log at " + def + " yet", "toolshed serve records one", "--db"}, ""},
		{"from", "--from DIR/log.jsonl", []string{"there is no records file at", "check the path given to --from", "leave --from out"}, "log.jsonl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := run(strings.Fields("stats "+strings.ReplaceAll(tc.args, "DIR", dir)), &stdout, &stderr)
			want := tc.want
			if tc.file != "" {
				want = append(want, filepath.Join(dir, tc.file))
			}
			if code != 1 || stdout.Len() != 0 {
				t.Errorf("exit %d, want 1 with nothing on stdout\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
			}
			for _, w := range want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			for _, d := range []string{dir, data} {
				if entries, _ := os.ReadDir(d); len(entries) > 0 {
					t.Errorf("stats created %v in %s", entries, d)
				}
			}
		})
	}
}

// TestStatsUnknownTool reads a real log: a gateway in front of the real memory server
// records, into a SQLite search log, a search, a call of the tool it found, and calls
// of tools that do not exist (refused, recorded with no server). stats counts those
// apart, as calls of unknown tools with their names, and leaves them out of the
// per-server table, which had a row with an empty server name.
func TestStatsUnknownTool(t *testing.T) {
	t.Setenv("TOOLSHED_CONFIG", "") // the default of --config
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := filepath.Join(t.TempDir(), "log.db")
	log, err := searchlog.Open(ctx, db, searchlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mcmd, margs := testupstream.Memory(t)
	cfg := &config.Config{Servers: []config.Server{{Name: "memory", Type: config.Stdio, Command: mcmd, Args: margs}}}
	g, err := gateway.New(cfg, gateway.Options{Mode: policy.On, SearchLog: log, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		g.Run(runCtx)
		close(done)
	}()
	g.WaitReady(ctx)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := g.Connect(ctx, st, ""); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	call("tool_search", map[string]any{"query": "read the whole knowledge graph"})
	if res := call("tool_call", map[string]any{"name": "memory__read_graph", "arguments": map[string]any{}}); res.IsError {
		t.Fatalf("memory__read_graph failed: %+v", res.Content)
	}
	for _, name := range []string{"memory__no_such_tool", "no_such_tool", "no_such_tool"} {
		if res := call("tool_call", map[string]any{"name": name, "arguments": map[string]any{}}); !res.IsError {
			t.Fatalf("%s did not fail", name)
		}
	}
	cs.Close()
	stop()
	<-done
	if err := log.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	if code := run([]string{"stats", "--json", "--db", db}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var r stats.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 1 || r.Servers[0].Server != "memory" || r.Servers[0].Calls != 1 || r.Servers[0].Errors != 0 {
		t.Errorf("servers %+v, want the memory server's one call alone", r.Servers)
	}
	u := r.UnknownTools
	if r.Calls != 4 || u.Count != 3 || u.Pct != 75 || len(u.Tools) != 2 ||
		u.Tools[0] != (stats.ToolCalls{Tool: "no_such_tool", Calls: 2, Errors: 2}) || u.Tools[1] != (stats.ToolCalls{Tool: "memory__no_such_tool", Calls: 1, Errors: 1}) {
		t.Errorf("%d calls, unknown tools %+v: want 4 calls, 3 of them of the two unknown tools", r.Calls, u)
	}
	if r.ToolsCalled != 1 || len(r.TopTools) != 1 || r.Unsurfaced.Count != 0 {
		t.Errorf("tools called %d, top %+v, unsurfaced %+v: want memory__read_graph alone, found by the search", r.ToolsCalled, r.TopTools, r.Unsurfaced)
	}

	stdout.Reset()
	if code := run([]string{"stats", "--db", db}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	text := stdout.String()
	servers := text[strings.Index(text, "\nServers\n"):]
	servers = servers[:strings.Index(servers[1:], "\n\n")+1]
	for _, line := range strings.Split(strings.TrimSpace(servers), "\n")[2:] {
		if !strings.HasSuffix(line, " memory") {
			t.Errorf("a Servers row that is not the memory server's: %q in\n%s", line, servers)
		}
	}
	for _, want := range []string{"  unknown tools         3  75.0% of calls: they named no tool the session could see, so no server", "Calls of unknown tools (no server)", "no_such_tool\n", "memory__no_such_tool\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
}
