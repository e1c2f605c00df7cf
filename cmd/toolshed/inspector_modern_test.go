package main

import (
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// The MCP Inspector CLI (an old client, MCP 2025-11-25) through a toolshed with old
// servers (the npm everything and memory servers) and a modern-only one (the
// TypeScript SDK v2 test server, MCP 2026-07-28 only) at once: over HTTP the whole
// bridge works as without the modern server, and over stdio and HTTP a tool_call reaches
// the modern server. (Each Inspector call over stdio starts a toolshed of its own, so
// the stdio front does only the calls TestServeInspectorStdio does not.)
func TestServeInspectorModernUpstream(t *testing.T) {
	bin := toolshedBinary(t)
	ecmd, eargs := testupstream.Everything(t)
	mcmd, margs := testupstream.Memory(t)
	tcmd, targs := testupstream.TS2Stdio(t, "reject", nil)
	cfg := writeConfig(t, map[string][]string{"everything": argv(ecmd, eargs), "memory": argv(mcmd, margs), "modern": argv(tcmd, targs)})
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			target := []string{bin, "serve", "--config", cfg, "--tool-search", "on"}
			if front == "http" {
				target = []string{startServe(t, bin, "--config", cfg, "--tool-search", "on")}
				checkBridge(t, target, argv(ecmd, eargs))
			}
			res, code := inspect(t, target, "--method", "tools/call", "--tool-name", "tool_call", "--tool-arg", "name=modern__echo", `arguments={"text": "from the Inspector to 2026-07-28"}`)
			if code != 0 || toolText(res) != "from the Inspector to 2026-07-28" {
				t.Errorf("tool_call of modern__echo (an MCP 2026-07-28 server) exited %d: %v", code, res)
			}
		})
	}
}
