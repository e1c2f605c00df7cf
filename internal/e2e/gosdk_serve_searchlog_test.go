//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/searchlog"
)

// TestGoSDKServeSearchLog: a real MCP client (the Go SDK's) searches and calls
// through toolshed serve in front of the real npm server-everything; once serve has
// exited, the searches and calls are in the SQLite file --db names, the call with the
// rank and query of the search that found it.
func TestGoSDKServeSearchLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	node, args := testupstream.Everything(t)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": node, "args": args}}})
	cfgFile := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "logs", "search.db")
	cmd := exec.Command(toolshedBin, "serve", "--config", cfgFile, "--tool-search", "on", "--db", db)
	testupstream.OwnGraceful(t, cmd)
	stderr := &testupstream.SyncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "searchlog-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to toolshed serve: %v\n%s", err, stderr)
	}
	callTool := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, stderr)
		}
		return res
	}
	res := callTool("tool_search", map[string]any{"query": "echo back a message"})
	text := res.Content[0].(*mcp.TextContent).Text
	var found struct{ Matches []struct{ Name string } }
	json.Unmarshal([]byte(text), &found)
	rank := 0
	for i, m := range found.Matches {
		if m.Name == "everything__echo" {
			rank = i + 1
		}
	}
	if rank == 0 {
		t.Fatalf("tool_search did not find everything__echo: %s", text)
	}
	res = callTool("tool_call", map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": "hello log"}})
	if res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hello log") {
		t.Fatalf("tool_call of echo = %+v", res.Content)
	}
	// Closing the session ends serve (its stdin closes), which writes what it holds.
	if err := cs.Close(); err != nil {
		t.Logf("closing: %v", err)
	}

	log, err := searchlog.Open(ctx, db, searchlog.Options{})
	if err != nil {
		t.Fatalf("opening the log serve wrote: %v\n%s", err, stderr)
	}
	defer log.Close(ctx)
	searches, calls, err := log.Read(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(searches) != 1 || len(calls) != 1 {
		t.Fatalf("the log holds %d searches and %d calls, want 1 and 1\n%+v\n%+v\nserve's stderr:\n%s", len(searches), len(calls), searches, calls, stderr)
	}
	s, c := searches[0], calls[0]
	if s.Source != "gateway" || s.Query != "echo back a message" || len(s.Results) != len(found.Matches) || s.Results[rank-1].Tool != "everything__echo" {
		t.Errorf("search = %+v", s)
	}
	if c.Tool != "everything__echo" || c.Server != "everything" || c.Outcome != searchlog.OutcomeOK || c.Rank != rank || c.Query != s.Query || c.Session != s.Session {
		t.Errorf("call = %+v, want everything__echo ok at rank %d of the search's session", c, rank)
	}
}
