//go:build e2e && unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// Two replicas share one PostgreSQL search log (--db postgres://): calls made through
// replica A, after a search that found the tool, teach replica B's search (the learned
// field, read again every search_log.learn_every) a query whose words are in no tool's
// definition. Then PostgreSQL stops: B goes on serving searches and calls with what it
// learned, and says once that it cannot reach the log.
func TestReplicasSharePostgresLog(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t)
	dsn := pg.Database(t)
	gw := newSDKGateway(t, "on", "everything")
	node, args := testupstream.Everything(t)
	quoted, _ := json.Marshal(args)
	cfg := filepath.Join(t.TempDir(), "toolshed.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("mcpServers:\n  everything:\n    command: %q\n    args: %s\nsearch_log:\n  learn_every: 1s\n", node, quoted)), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(id string) (*replica, *mcp.ClientSession) {
		r := launchReplica(t, id, []string{"serve", "--config", cfg, "--tool-search", "on", "--http", "127.0.0.1:0", "--replica-id", id, "--db", dsn}, gw.marker)
		addr, err := r.wait(1)
		if err != nil {
			t.Fatal(err)
		}
		r.addr = addr
		hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "pg-" + id, Version: "1"}, nil).
			// A session of 2025-11-25: the search log links a call to the search that
			// found it within a session, and a client of 2026-07-28 (the SDK's
			// default) has none (docs/searchlog.md).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return r, cs
	}
	_, a := start("toolshed-a")
	b, bs := start("toolshed-b")

	call := func(cs *mcp.ClientSession, name string, args map[string]any) string {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: error result %v", name, res.Content)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	first := func(cs *mcp.ClientSession, query string) string {
		t.Helper()
		var found struct{ Matches []struct{ Name string } }
		json.Unmarshal([]byte(call(cs, "tool_search", map[string]any{"query": query, "limit": 3})), &found)
		if len(found.Matches) == 0 {
			return ""
		}
		return found.Matches[0].Name
	}
	const learned = "zorblax quillfeather"
	if got := first(bs, learned); got == "everything__echo" {
		t.Fatalf("before any call, %q already finds everything__echo on B", learned)
	}
	// On A: a search that finds echo, with the new words in it, then calls of echo.
	if !strings.Contains(call(a, "tool_search", map[string]any{"query": "echo a message " + learned, "limit": 10}), `"everything__echo"`) {
		t.Fatal("A's search did not find everything__echo")
	}
	for i := range 3 {
		msg := fmt.Sprintf("through A %d", i)
		if got := call(a, "tool_call", map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": msg}}); got != "Echo: "+msg {
			t.Fatalf("echo through A: %q", got)
		}
	}
	// B learns it from the shared log: its learned field is read again every second
	// (the log is written in batches, and the index rebuilt off the request path).
	deadline := time.Now().Add(90 * time.Second)
	for first(bs, learned) != "everything__echo" {
		if time.Now().After(deadline) {
			t.Fatalf("90s after A's calls, %q does not find everything__echo on B", learned)
		}
		time.Sleep(250 * time.Millisecond)
	}

	// The database goes away: B keeps serving, with what it learned, and says so once.
	pg.Stop()
	for i := range 20 {
		if got := first(bs, learned); got != "everything__echo" {
			t.Errorf("search %d on B without the database: %q first, want everything__echo (what it learned)", i, got)
		}
		msg := fmt.Sprintf("through B without the database %d", i)
		if got := call(bs, "tool_call", map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": msg}}); got != "Echo: "+msg {
			t.Errorf("echo through B without the database: %q", got)
		}
		time.Sleep(250 * time.Millisecond) // over several refreshes of the learned field
	}
	deadline = time.Now().Add(60 * time.Second)
	for !strings.Contains(b.stderr.String(), "search log: cannot") {
		if time.Now().After(deadline) {
			t.Fatalf("60s without the database, B has not said so:\n%s", b.stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // more refreshes and writes that fail
	log := b.stderr.String()
	for _, say := range []string{"search log: cannot read what searches led to calls", "search log: cannot write to"} {
		if n := strings.Count(log, say); n > 1 {
			t.Errorf("B said %q %d times; once is enough:\n%s", say, n, log)
		}
	}
	t.Logf("what B said without the database:\n%s", grepLines(log, "search log"))
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
