package main

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
)

// modernConfig is a config with the TypeScript SDK v2 test server (modern-only, over
// stdio) as upstream ts2, whose echo needs the user's approval.
func modernConfig(t *testing.T) string {
	t.Helper()
	cmd, args := testupstream.TS2Stdio(t, "reject", nil)
	b, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"ts2": map[string]any{"command": cmd, "args": args}},
		"hooks":      map[string]any{"approve": []string{"ts2__echo"}},
	})
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// modernSteps is what each client of TestServeModernClients does: list, search,
// describe, a call that needs approval (answered through MRTR), a bad call through
// tool_call and a direct one, and a call it cancels.
var modernSteps = []map[string]any{
	{"op": "list"},
	{"op": "call", "name": "tool_search", "args": map[string]any{"query": "echo text"}},
	{"op": "call", "name": "tool_describe", "args": map[string]any{"name": "ts2__echo"}},
	{"op": "call", "name": "tool_call", "args": map[string]any{"name": "ts2__echo", "arguments": map[string]any{"text": "approved"}}},
	{"op": "call", "name": "tool_call", "args": map[string]any{"name": "ts2__nope", "arguments": map[string]any{}}},
	{"op": "call", "name": "nope", "args": map[string]any{}},
	{"op": "cancel", "name": "tool_call", "args": map[string]any{"name": "ts2__slow", "arguments": map[string]any{}}, "ms": 1000},
}

// checkModernRun checks what a client did with modernSteps.
func checkModernRun(t *testing.T, run *testupstream.TS2Run) {
	t.Helper()
	if run.Connect != nil || run.Version != "2026-07-28" {
		t.Fatalf("negotiated %q (connect error %v), want 2026-07-28", run.Version, run.Connect)
	}
	if len(run.Steps) != len(modernSteps) {
		t.Fatalf("%d steps done, want %d: %+v", len(run.Steps), len(modernSteps), run.Steps)
	}
	step := func(i int) string { b, _ := json.Marshal(run.Steps[i]); return string(b) }
	if tools := strings.Join(run.Steps[0].Tools, ","); tools != "tool_call,tool_describe,tool_search" {
		t.Errorf("list: %s", tools)
	}
	for i, want := range map[int]string{1: `ts2__echo`, 2: `inputSchema`, 3: `approved`, 4: `"isError":true`} {
		if s := step(i); run.Steps[i].Error != nil || !strings.Contains(s, want) {
			t.Errorf("step %d (%v): %s, want %s", i, modernSteps[i], s, want)
		}
	}
	if e := run.Steps[3].Result; strings.Contains(string(e), `"isError":true`) {
		t.Errorf("the approved call failed: %s", e)
	}
	if e := run.Steps[5].Error; e == nil || string(e.Code) != "-32602" {
		t.Errorf("a direct call of an unknown tool: %s, want error -32602", step(5))
	}
	if run.Steps[6].Error == nil {
		t.Errorf("the cancelled call: %s, want its cancellation", step(6))
	}
	if len(run.Elicitations) != 1 || !strings.Contains(run.Elicitations[0], "Allow the assistant to call ts2__echo") {
		t.Errorf("elicitations: %q, want the one approval", run.Elicitations)
	}
}

// The TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0), in its "auto"
// mode and pinned to 2026-07-28, negotiates 2026-07-28 with toolshed serve over stdio,
// over Streamable HTTP and over stateless Streamable HTTP, and lists, searches,
// describes, calls (with approval through MRTR), gets a bad call's error and cancels.
// Before toolshed served 2026-07-28, "auto" fell back to 2025-11-25 and a pinned client
// could not connect.
func TestServeModernClients(t *testing.T) {
	bin := toolshedBinary(t)
	cfg := modernConfig(t)
	serve := []string{"serve", "--config", cfg, "--tool-search", "on"}
	fronts := map[string][]string{
		"stdio": append([]string{"stdio", bin}, serve...),
		"http":  {"http", startServe(t, bin, serve[1:]...)},
	}
	fronts["stateless"] = []string{"http", startServe(t, bin, append(serve[1:], "--stateless")...)}
	for front, target := range fronts {
		for _, mode := range []string{"auto", "2026-07-28"} {
			t.Run(front+"/"+mode, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				run, err := testupstream.TS2Client(t, ctx, mode, modernSteps, target...)
				if err != nil {
					t.Fatal(err)
				}
				checkModernRun(t, run)
			})
		}
	}
}

// The go-sdk client (v1.8.0) with default options negotiates 2026-07-28 with toolshed
// serve over stdio and Streamable HTTP, and a go-sdk client pinned to 2025-11-25 gets a
// session on the same endpoint at the same time, at a cap of one session.
func TestServeModernGoClient(t *testing.T) {
	bin := toolshedBinary(t)
	cfg := modernConfig(t)
	url := startServe(t, bin, "--config", cfg, "--tool-search", "on", "--max-sessions", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	approve := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}
	connect := func(tr mcp.Transport, version string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, approve).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connecting at %q: %v", version, err)
		}
		return cs
	}
	stdio := exec.Command(bin, "serve", "--config", cfg, "--tool-search", "on")
	stdio.Env = append(os.Environ(), "HOME="+t.TempDir())
	testupstream.OwnGraceful(t, stdio)
	sessions := map[string]*mcp.ClientSession{
		"stdio":           connect(&mcp.CommandTransport{Command: stdio}, ""),
		"http":            connect(&mcp.StreamableClientTransport{Endpoint: url}, ""),
		"http 2025-11-25": connect(&mcp.StreamableClientTransport{Endpoint: url}, "2025-11-25"),
	}
	for name, cs := range sessions {
		defer cs.Close()
		want := "2026-07-28"
		if strings.HasSuffix(name, "2025-11-25") {
			want = "2025-11-25"
		}
		if v := cs.InitializeResult().ProtocolVersion; v != want {
			t.Errorf("%s: negotiated %s, want %s", name, v, want)
		}
	}
	for name, cs := range sessions {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_call", Arguments: map[string]any{"name": "ts2__echo", "arguments": map[string]any{"text": "hi " + name}}})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Errorf("%s: the approved call: %v %+v", name, err, res)
			continue
		}
		if text, _ := res.Content[0].(*mcp.TextContent); text == nil || text.Text != "hi "+name {
			t.Errorf("%s: the approved call: %+v", name, res.Content[0])
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "nope") {
			t.Errorf("%s: a call of an unknown tool: %v", name, err)
		}
	}
}
