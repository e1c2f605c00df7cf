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

// serveStdio runs the toolshed binary as `toolshed serve args...` under a real MCP
// client (the Go SDK's, with opts, over stdio) until the test ends, with its data
// directory in a temporary one, and returns the session and toolshed's stderr.
func serveStdio(t *testing.T, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *testupstream.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.Command(toolshedBinary(t), append([]string{"serve"}, args...)...)
	testupstream.OwnGraceful(t, cmd)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(t.TempDir(), "data"))
	stderr := &testupstream.SyncBuffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "first-contact", Version: "1"}, opts).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to toolshed serve: %v\n%s", err, stderr)
	}
	// Closing the session closes serve's stdin, and serve stops its servers and exits.
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("toolshed serve stderr:\n%s", stderr)
		}
	})
	return cs, stderr
}

// A call of a built-in catalog entry (serve without --config), listed directly or through
// tool_call, is on the wire an error result in the shape of every other error toolshed
// gives: a text that names the tool as the client knows it, and {"error": "tool_error",
// "message": the same text} as structured content.
func TestServeCatalogEntryError(t *testing.T) {
	for _, tc := range []struct {
		mode, tool string
		args       map[string]any
	}{
		{"off", "memory__read_graph", map[string]any{}},
		{"on", "tool_call", map[string]any{"name": "memory__read_graph", "arguments": map[string]any{}}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cs, stderr := serveStdio(t, nil, "--tool-search", tc.mode, "--db", "off")
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("calling %s: %v\n%s", tc.tool, err, stderr)
			}
			text := ""
			if len(res.Content) == 1 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			var structured struct {
				Error   string `json:"error"`
				Message string `json:"message"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &structured); err != nil {
				t.Fatalf("structured content %s: %v", b, err)
			}
			if !res.IsError || !strings.Contains(text, "memory__read_graph is a catalog entry") || structured.Error != "tool_error" || structured.Message != text {
				t.Errorf("a catalog entry's call gave isError %v, text %q, structured content %s; want an error naming memory__read_graph, with {\"error\": \"tool_error\", \"message\": the text}", res.IsError, text, b)
			}
		})
	}
}
