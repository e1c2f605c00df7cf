package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// toolshed serve reaches servers of MCP 2026-07-28 (TypeScript SDK v2, modern-only over
// stdio and Streamable HTTP) beside an old npm server: each comes up ready (before, a
// modern-only server failed with "Unsupported protocol version: 2025-11-25" and
// restarted forever), /status says which version each speaks, and a call works.
func TestServeModernUpstreams(t *testing.T) {
	bin := toolshedBinary(t)
	scmd, sargs := testupstream.TS2Stdio(t, "reject", nil)
	ecmd, eargs := testupstream.Everything(t)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"ts2stdio":   map[string]any{"command": scmd, "args": sargs},
		"ts2http":    map[string]any{"url": testupstream.TS2HTTP(t, "reject", nil)},
		"everything": map[string]any{"command": ecmd, "args": eargs},
	}})
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	stderr := startCommand(t, bin, nil, []string{"serve", "--http", addr, "--config", cfg, "--tool-search", "off"}, testupstream.ServersReady)
	if log := stderr.String(); !strings.Contains(log, "3 of 3 servers ready") || strings.Contains(log, "could not start") {
		t.Fatalf("toolshed serve did not bring all three servers up:\n%s", log)
	}

	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var status struct {
		Upstreams []struct{ Name, State, Protocol string }
	}
	err = json.NewDecoder(resp.Body).Decode(&status)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ts2stdio": "2026-07-28", "ts2http": "2026-07-28", "everything": "2025-11-25"}
	for _, u := range status.Upstreams {
		if u.State != "ready" || u.Protocol != want[u.Name] {
			t.Errorf("/status: %s is %s at %q, want ready at %s", u.Name, u.State, u.Protocol, want[u.Name])
		}
	}
	if len(status.Upstreams) != len(want) {
		t.Errorf("/status lists %d servers, want %d", len(status.Upstreams), len(want))
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "era-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tool := range []string{"ts2stdio__echo", "ts2http__echo"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "through toolshed"}})
		if err != nil {
			t.Errorf("%s: %v", tool, err)
			continue
		}
		var text *mcp.TextContent
		if len(res.Content) == 1 {
			text, _ = res.Content[0].(*mcp.TextContent)
		}
		if res.IsError || text == nil || text.Text != "through toolshed" {
			t.Errorf("%s = %+v", tool, res)
		}
	}
}
