//go:build e2e

package e2e

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/tokens"
)

// Claude Code 2.1.332 with the .mcp.json blocks of docs/clients.md → toolshed serve
// (stdio, and HTTP) → the npm memory, everything and filesystem servers, with a scripted
// model behind ANTHROPIC_BASE_URL. The model gets the bridge tools in full in its first
// request (Claude Code defers every MCP tool whose _meta lacks anthropic/alwaysLoad, and
// would need a ToolSearch round trip to load them), then searches, describes and calls a
// real tool, makes a bad call, and reads server-filesystem's allowed directories, which
// Claude Code's root has replaced through toolshed.
//
//	go test -tags e2e ./internal/e2e -run TestClaudeCodeServe -v

func TestClaudeCodeServeStdio(t *testing.T) { testClaudeCodeServe(t, "stdio") }

func TestClaudeCodeServeHTTP(t *testing.T) { testClaudeCodeServe(t, "http") }

// TestClaudeCodeServeStateless runs the same conversation against serve --http
// --stateless, the mode docs/scale.md suggests for agents that only search, describe and
// call: everything works but the roots, which a stateless server cannot ask for.
func TestClaudeCodeServeStateless(t *testing.T) { testClaudeCodeServe(t, "http-stateless") }

// The names Claude Code gives toolshed's tools: mcp__<server key in .mcp.json>__<tool>.
const (
	ccSearch   = "mcp__toolshed__tool_search"
	ccDescribe = "mcp__toolshed__tool_describe"
	ccCall     = "mcp__toolshed__tool_call"
)

func testClaudeCodeServe(t *testing.T, front string) {
	mcmd, margs := testupstream.Memory(t)
	memoryFile := strings.TrimPrefix(margs[0], "MEMORY_FILE_PATH=")
	ecmd, eargs := testupstream.Everything(t)
	fcmd, fargs := testupstream.Filesystem(t)              // a directory of its own, until Claude Code's root replaces it
	tcmd, targs := testupstream.TS2Stdio(t, "reject", nil) // MCP 2026-07-28 only, beside the old servers
	servers := writeConfigFile(t, map[string]any{
		"mcpServers": map[string]any{
			"memory":     map[string]any{"command": mcmd, "args": margs},
			"everything": map[string]any{"command": ecmd, "args": eargs},
			"filesystem": map[string]any{"command": fcmd, "args": fargs},
			"modern":     map[string]any{"command": tcmd, "args": targs},
		},
		"tools": map[string]any{"tool_search": map[string]any{"enabled": "on"}},
	})

	model := fakellm.NewAnthropic(
		fakellm.Call("", "toolu_01", ccSearch, `{"query": "create entities in the knowledge graph", "limit": 3}`),
		fakellm.Call("", "toolu_02", ccDescribe, `{"name": "memory__create_entities"}`),
		fakellm.Call("", "toolu_03", ccCall, `{"name": "memory__create_entities", "arguments": {"entities": [{"name": "claude-code-e2e", "entityType": "test", "observations": ["created through toolshed tool_call"]}]}}`),
		fakellm.Call("", "toolu_04", ccCall, `{"name": "everything__get-sum", "arguments": {"a": 2, "b": "three"}}`),
		fakellm.Call("", "toolu_05", ccCall, `{"name": "filesystem__list_allowed_directories", "arguments": {}}`),
		fakellm.Call("", "toolu_06", ccCall, `{"name": "modern__echo", "arguments": {"text": "hello from claude code to 2026-07-28"}}`),
		fakellm.Say("Gateway test finished."),
	)
	llm := httptest.NewServer(model)
	defer llm.Close()

	var url string
	var serveLog *testupstream.SyncBuffer
	stateless := front == "http-stateless"
	if front != "stdio" {
		addr := testupstream.FreeAddr(t)
		url = "http://" + addr + "/mcp"
		args := []string{"serve", "--config", servers, "--http", addr}
		if stateless {
			args = append(args, "--stateless")
		}
		serveLog = testupstream.Start(t, exec.Command(toolshedBin, args...), testupstream.ServersReady)
	}
	mcpConfig := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(mcpConfig, []byte(docConfig(t, "claude-code-"+strings.TrimSuffix(front, "-stateless"), servers, url)), 0o644); err != nil {
		t.Fatal(err)
	}

	res := runClaudeCode(t, llm.URL, mcpConfig, "Use the toolshed gateway.", nil, nil)
	if res.Subtype != "success" || res.IsError || res.Result != "Gateway test finished." {
		t.Fatalf("Claude Code did not complete the conversation: %+v", res)
	}
	calls := upstreamCalls(t, model.Requests())
	if len(calls) != 7 {
		t.Fatalf("the model got %d requests, want 7: one per scripted reply, and no ToolSearch step", len(calls))
	}

	// 1. The bridge tools are in the first request in full, and not deferred.
	first := calls[0]
	for _, name := range []string{ccSearch, ccDescribe, ccCall} {
		switch tool := first.tool(name); {
		case tool == nil:
			t.Errorf("the first request lacks %s: Claude Code deferred it (it names deferred tools in a system message only)", name)
		case tool.deferLoading:
			t.Errorf("the first request has %s with defer_loading", name)
		case len(tool.schema) == 0 || tool.description == "":
			t.Errorf("the first request has %s without its definition: %+v", name, *tool)
		}
	}
	if deferredList(first, ccSearch) {
		t.Errorf("Claude Code announces %s among its deferred tools", ccSearch)
	}

	// 2. tool_search finds the memory server's tool; tool_describe gives its schema.
	if !toolResultContains(calls[1], "anthropic", "toolu_01", `memory__create_entities`) {
		t.Errorf("tool_search did not find memory__create_entities")
	}
	if !toolResultContains(calls[2], "anthropic", "toolu_02", `inputSchema`) || !toolResultContains(calls[2], "anthropic", "toolu_02", `entities`) {
		t.Errorf("tool_describe did not give memory__create_entities' schema")
	}
	// 3. The real call took effect: the entity is in the memory server's file.
	if !toolResultContains(calls[3], "anthropic", "toolu_03", "claude-code-e2e") {
		t.Errorf("tool_call of memory__create_entities did not return the entity")
	}
	if graph := readMemory(t, memoryFile); !strings.Contains(graph, `"claude-code-e2e"`) {
		t.Errorf("the memory server's file has no entity claude-code-e2e:\n%s", graph)
	}
	// 4. A bad call gets toolshed's error: what was wrong, and what to do.
	for _, want := range []string{"everything__get-sum", "at /b", "tool_describe"} {
		if !toolResultContains(calls[4], "anthropic", "toolu_04", want) {
			t.Errorf("the error of a call with a string for a number does not say %q", want)
		}
	}
	if !toolResultIsError(calls[4], "toolu_04") {
		t.Errorf("the error of a bad call is not an error result")
	}
	// 5. Claude Code's root (its working directory) does not reach server-filesystem:
	// Claude Code 2.1.332 probes server/discover and speaks MCP 2026-07-28 with
	// toolshed, which has no requests from server to client outside a call (nor has a
	// stateless POST), so toolshed cannot ask it for its roots when the server asks,
	// and the server keeps the directory it was started with (docs/clients.md).
	root, own := testupstream.RealPath(t, fargs[len(fargs)-1]), testupstream.RealPath(t, res.Dir)
	if !toolResultContains(calls[5], "anthropic", "toolu_05", root) || toolResultContains(calls[5], "anthropic", "toolu_05", own) {
		t.Errorf("server-filesystem's allowed directories are not %s (stateless: %v)", root, stateless)
	}
	// 6. A server of MCP 2026-07-28 only (TypeScript SDK v2, legacy "reject") answers
	// beside the old ones.
	if !toolResultContains(calls[6], "anthropic", "toolu_06", "hello from claude code to 2026-07-28") || toolResultIsError(calls[6], "toolu_06") {
		t.Errorf("tool_call of modern__echo (an MCP 2026-07-28 server) did not return its echo")
	}

	// The figure toolshed prints is what the bridge tools cost in Claude Code's request,
	// counted under their MCP names (Claude Code's mcp__toolshed__ prefix is its own).
	if serveLog != nil {
		m := regexp.MustCompile(`lists the 3 bridge tools \(([\d,]+) tokens\)`).FindAllStringSubmatch(serveLog.String(), -1)
		if len(m) == 0 {
			t.Fatalf("no summary in toolshed's stderr:\n%s", serveLog.String())
		}
		printed, _ := strconv.Atoi(strings.ReplaceAll(m[len(m)-1][1], ",", ""))
		sent := 0
		for _, name := range []string{ccSearch, ccDescribe, ccCall} {
			if tool := first.tool(name); tool != nil {
				def := catalog.Tool{Qualified: strings.TrimPrefix(name, "mcp__toolshed__"), Description: tool.description, InputSchema: tool.schema}
				sent += tokens.Count(string(def.Definition()))
			}
		}
		if printed != sent {
			t.Errorf("toolshed says the bridge costs %d tokens; the definitions Claude Code sent cost %d", printed, sent)
		}
	}
}

// deferredList reports whether Claude Code names tool among the deferred tools it
// announces in a system message.
func deferredList(c upstreamCall, tool string) bool {
	for _, m := range c.messages {
		if m["role"] == "assistant" {
			continue
		}
		var text string
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			if blk, ok := b.(map[string]any); ok {
				s, _ := blk["text"].(string)
				text += s
			}
		}
		if s, ok := m["content"].(string); ok {
			text += s
		}
		if i := strings.Index(text, "deferred tools"); i >= 0 && strings.Contains(text[i:], "\n"+tool+"\n") {
			return true
		}
	}
	return false
}

// toolResultIsError reports whether the tool_result of tool use id has is_error set.
func toolResultIsError(c upstreamCall, id string) bool {
	for _, m := range c.messages {
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			if blk, ok := b.(map[string]any); ok && blk["type"] == "tool_result" && blk["tool_use_id"] == id {
				return blk["is_error"] == true
			}
		}
	}
	return false
}
