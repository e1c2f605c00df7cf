package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// The npm reference servers behind the gateway: the filesystem, memory and everything
// servers, found by search and called through tool_call.
func TestRealUpstreams(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("toolshed was here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	server := func(name string, cmd string, args []string) config.Server {
		return config.Server{Name: name, Type: config.Stdio, Command: cmd, Args: args}
	}
	fcmd, fargs := testupstream.Filesystem(t, dir)
	mcmd, margs := testupstream.Memory(t)
	ecmd, eargs := testupstream.Everything(t)
	h := startGateway(t, &config.Config{Servers: []config.Server{
		server("filesystem", fcmd, fargs), server("memory", mcmd, margs), server("everything", ecmd, eargs),
	}}, gateway.Options{Mode: policy.On})
	for _, name := range []string{"filesystem", "memory", "everything"} {
		if st := status(h, name); st.State != gateway.Ready || st.Tools == 0 {
			t.Fatalf("%s: %+v", name, st)
		}
	}
	cs := h.client("", nil)
	res := call(t, cs, "tool_search", map[string]any{"query": "read the contents of a text file"})
	if !strings.Contains(resultText(res), "filesystem__read_text_file") {
		t.Errorf("tool_search = %s", resultText(res))
	}
	res = call(t, cs, "tool_call", map[string]any{"name": "filesystem__read_text_file", "arguments": map[string]any{"path": filepath.Join(dir, "notes.txt")}})
	if res.IsError || !strings.Contains(resultText(res), "toolshed was here") {
		t.Errorf("read_text_file through tool_call = %s", resultText(res))
	}
	// The server's own error (a path outside its roots) comes back as its error result.
	res = call(t, cs, "tool_call", map[string]any{"name": "filesystem__read_text_file", "arguments": map[string]any{"path": "/etc/passwd"}})
	if !res.IsError || errorCode(t, res) != "" {
		t.Errorf("reading outside the allowed directory = %s (code %q), want the server's own error", resultText(res), errorCode(t, res))
	}
	res = call(t, cs, "tool_call", map[string]any{"name": "memory__create_entities", "arguments": map[string]any{
		"entities": []any{map[string]any{"name": "gateway", "entityType": "component", "observations": []any{"relays calls"}}}}})
	if res.IsError {
		t.Fatalf("create_entities = %s", resultText(res))
	}
	if res := call(t, cs, "tool_call", map[string]any{"name": "memory__read_graph", "arguments": map[string]any{}}); !strings.Contains(resultText(res), "relays calls") {
		t.Errorf("read_graph = %s", resultText(res))
	}
	if res := call(t, cs, "tool_call", map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": "hi"}}); !strings.Contains(resultText(res), "hi") {
		t.Errorf("echo = %s", resultText(res))
	}
}
