//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestCodexServe runs Codex CLI (codex exec) with the config.toml blocks of
// docs/clients.md against toolshed serve, over stdio and over HTTP, in front of the npm
// everything and memory servers and a modern-only (MCP 2026-07-28) TypeScript SDK v2
// server, with a scripted model behind the Responses API. The model gets toolshed's
// bridge tools and not the deferred ones, searches, calls the memory server (whose file
// then holds the entity), the everything server and the modern server (whose echoes
// come back in the next requests), and the run completes.
func TestCodexServe(t *testing.T) {
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			up := writeUpstreams(t)
			url := ""
			if front == "http" {
				url = serveHTTP(t, up.config, "memory__create_entities")
			}
			block := docConfig(t, "codex-"+front, up.config, url)

			model := fakellm.NewResponses(
				fakellm.CallIn("call_search", "mcp__toolshed", "tool_search", `{"query":"create entities in the knowledge graph"}`),
				fakellm.CallIn("call_memory", "mcp__toolshed", "tool_call",
					`{"name":"memory__create_entities","arguments":{"entities":[{"name":"codex-e2e","entityType":"test","observations":["written through toolshed by Codex"]}]}}`),
				fakellm.CallIn("call_echo", "mcp__toolshed", "tool_call", `{"name":"everything__echo","arguments":{"message":"hello from codex"}}`),
				fakellm.CallIn("call_modern", "mcp__toolshed", "tool_call", `{"name":"modern__echo","arguments":{"text":"hello from codex to 2026-07-28"}}`),
				fakellm.Say("All three steps are done."),
			)
			srv := httptest.NewServer(model)
			defer srv.Close()

			env := testupstream.ClientEnv(t, "TOOLSHED_E2E_KEY=test-key")
			config := `model = "gpt-test"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted model"
base_url = "` + srv.URL + `/v1"
env_key = "TOOLSHED_E2E_KEY"
wire_api = "responses"

` + block + "\n"
			if err := os.WriteFile(filepath.Join(envValue(env, "CODEX_HOME"), "config.toml"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			last := filepath.Join(dir, "last-message.txt")
			cmd, args := testupstream.Codex(t)
			out, code := runCLI(t, dir, env, cmd, append(args, "exec", "--skip-git-repo-check", "-o", last,
				"Remember that codex-e2e is a test, then echo hello from codex.")...)
			if t.Failed() || code != 0 {
				t.Fatalf("codex exec exited %d:\n%s", code, out)
			}

			bodies := model.Bodies()
			if len(bodies) != 5 {
				t.Fatalf("the model got %d requests, want 5 (one per scripted reply):\n%s", len(bodies), out)
			}
			ns, others := codexTools(t, bodies[0])
			if !slices.Equal(ns, []string{"tool_call", "tool_describe", "tool_search"}) {
				t.Errorf("namespace mcp__toolshed declares %v, want the three bridge tools", ns)
			}
			for _, n := range append(ns, others...) {
				if strings.Contains(n, "echo") || strings.Contains(n, "create_entities") {
					t.Errorf("deferred tool %s is declared to the model", n)
				}
			}
			if got := codexOutput(bodies[1], "call_search"); !strings.Contains(got, "memory__create_entities") {
				t.Errorf("tool_search answered %q, want a match memory__create_entities", got)
			}
			if got := codexOutput(bodies[2], "call_memory"); strings.Contains(got, "approval") || !strings.Contains(got, "codex-e2e") {
				t.Errorf("tool_call of memory__create_entities answered %q", got)
			}
			if mem := readMemory(t, up.memoryFile); !strings.Contains(mem, "written through toolshed by Codex") {
				t.Errorf("the memory server's file holds %q, want the entity", mem)
			}
			if got := codexOutput(bodies[3], "call_echo"); !strings.Contains(got, "Echo: hello from codex") {
				t.Errorf("tool_call of everything__echo answered %q", got)
			}
			if got := codexOutput(bodies[4], "call_modern"); !strings.Contains(got, "hello from codex to 2026-07-28") {
				t.Errorf("tool_call of modern__echo (an MCP 2026-07-28 server) answered %q", got)
			}
			if b, _ := os.ReadFile(last); strings.TrimSpace(string(b)) != "All three steps are done." {
				t.Errorf("last message %q", b)
			}
		})
	}
}

// codexTools returns the names of the tools in Codex's namespace mcp__toolshed, sorted,
// and the names of every other tool it declared (namespaced ones included).
func codexTools(t *testing.T, body map[string]any) (toolshed, others []string) {
	t.Helper()
	tools, _ := body["tools"].([]any)
	for _, x := range tools {
		tool, _ := x.(map[string]any)
		name, _ := tool["name"].(string)
		nested, _ := tool["tools"].([]any)
		if tool["type"] != "namespace" {
			others = append(others, name)
			continue
		}
		for _, y := range nested {
			n, _ := y.(map[string]any)["name"].(string)
			if name == "mcp__toolshed" {
				toolshed = append(toolshed, n)
			} else {
				others = append(others, name+"."+n)
			}
		}
	}
	slices.Sort(toolshed)
	return toolshed, others
}

// codexOutput returns the text of the function_call_output for callID in a request's
// input: a string, or input_text items.
func codexOutput(body map[string]any, callID string) string {
	input, _ := body["input"].([]any)
	for _, x := range input {
		item, _ := x.(map[string]any)
		if item["type"] != "function_call_output" || item["call_id"] != callID {
			continue
		}
		switch o := item["output"].(type) {
		case string:
			return o
		case []any:
			var parts []string
			for _, p := range o {
				if m, ok := p.(map[string]any); ok {
					s, _ := m["text"].(string)
					parts = append(parts, s)
				}
			}
			return strings.Join(parts, "\n")
		default:
			b, _ := json.Marshal(o)
			return string(b)
		}
	}
	return ""
}
