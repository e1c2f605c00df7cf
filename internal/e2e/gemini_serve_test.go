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

// geminiModel is the model Gemini CLI is told to use: naming one skips its router, which
// would first ask a small model to rate the prompt's complexity.
const geminiModel = "gemini-2.5-flash"

// runGemini runs Gemini CLI headless (gemini -p) with settings (the settings.json
// mcpServers block of docs/clients.md) against model, and returns its output.
func runGemini(t *testing.T, settings string, model *fakellm.Gemini, prompt string) string {
	t.Helper()
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	var s map[string]any
	if err := json.Unmarshal([]byte(settings), &s); err != nil {
		t.Fatalf("the settings block is not JSON: %v\n%s", err, settings)
	}
	// Test-only: the API key auth, whose requests go to GOOGLE_GEMINI_BASE_URL.
	s["security"] = map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}}
	env := testupstream.ClientEnv(t,
		"GOOGLE_GEMINI_BASE_URL="+srv.URL, "GEMINI_API_KEY=test-key", "GEMINI_CLI_TRUST_WORKSPACE=true")
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(filepath.Join(envValue(env, "HOME"), ".gemini", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, args := testupstream.GeminiCLI(t)
	out, code := runCLI(t, t.TempDir(), env, cmd, append(args, "-m", geminiModel, "-p", prompt)...)
	if code != 0 {
		t.Fatalf("gemini -p exited %d:\n%s", code, out)
	}
	for _, r := range model.Requests() {
		if r.Path != "/v1beta/models/"+geminiModel+":streamGenerateContent" {
			t.Errorf("Gemini CLI asked %s, want only streamGenerateContent of %s", r.Path, geminiModel)
		}
	}
	return out
}

// TestGeminiServe runs Gemini CLI with the settings.json blocks of docs/clients.md
// against toolshed serve, over stdio and over HTTP, in front of the npm everything and
// memory servers and a modern-only (MCP 2026-07-28) TypeScript SDK v2 server, with a
// scripted model behind the Gemini API. The model gets toolshed's bridge tools and not
// the deferred ones, searches, calls the memory server (whose file then holds the
// entity), the everything server and the modern server (whose echoes come back in the
// next requests), and the run completes.
func TestGeminiServe(t *testing.T) {
	for _, front := range []string{"stdio", "http"} {
		t.Run(front, func(t *testing.T) {
			up := writeUpstreams(t)
			url := ""
			if front == "http" {
				url = serveHTTP(t, up.config, "memory__create_entities")
			}
			model := fakellm.NewGemini(
				fakellm.Call("", "", "mcp_toolshed_tool_search", `{"query":"create entities in the knowledge graph"}`),
				fakellm.Call("", "", "mcp_toolshed_tool_call",
					`{"name":"memory__create_entities","arguments":{"entities":[{"name":"gemini-e2e","entityType":"test","observations":["written through toolshed by Gemini CLI"]}]}}`),
				fakellm.Call("", "", "mcp_toolshed_tool_call", `{"name":"everything__echo","arguments":{"message":"hello from gemini"}}`),
				fakellm.Call("", "", "mcp_toolshed_tool_call", `{"name":"modern__echo","arguments":{"text":"hello from gemini to 2026-07-28"}}`),
				fakellm.Say("All three steps are done."),
			)
			out := runGemini(t, docConfig(t, "gemini-"+front, up.config, url), model,
				"Remember that gemini-e2e is a test, then echo hello from gemini.")

			bodies := model.Bodies()
			if len(bodies) != 5 {
				t.Fatalf("the model got %d requests, want 5 (one per scripted reply):\n%s", len(bodies), out)
			}
			var mcpTools []string
			for _, n := range geminiDeclarations(bodies[0]) {
				if strings.HasPrefix(n, "mcp_") {
					mcpTools = append(mcpTools, n)
				}
			}
			slices.Sort(mcpTools)
			if want := []string{"mcp_toolshed_tool_call", "mcp_toolshed_tool_describe", "mcp_toolshed_tool_search"}; !slices.Equal(mcpTools, want) {
				t.Errorf("MCP function declarations %v, want %v (the bridge only)", mcpTools, want)
			}
			if got := geminiResponse(bodies[1], "mcp_toolshed_tool_search"); !strings.Contains(got, "memory__create_entities") {
				t.Errorf("tool_search answered %q, want a match memory__create_entities", got)
			}
			if got := geminiResponse(bodies[2], "mcp_toolshed_tool_call"); !strings.Contains(got, "gemini-e2e") {
				t.Errorf("tool_call of memory__create_entities answered %q", got)
			}
			if mem := readMemory(t, up.memoryFile); !strings.Contains(mem, "written through toolshed by Gemini CLI") {
				t.Errorf("the memory server's file holds %q, want the entity", mem)
			}
			if got := geminiResponse(bodies[3], "mcp_toolshed_tool_call"); !strings.Contains(got, "Echo: hello from gemini") {
				t.Errorf("tool_call of everything__echo answered %q", got)
			}
			if got := geminiResponse(bodies[4], "mcp_toolshed_tool_call"); !strings.Contains(got, "hello from gemini to 2026-07-28") {
				t.Errorf("tool_call of modern__echo (an MCP 2026-07-28 server) answered %q", got)
			}
			if !strings.Contains(out, "All three steps are done.") {
				t.Errorf("gemini -p printed:\n%s", out)
			}
		})
	}
}

// TestGeminiLongNames lists two servers whose qualified names are long and differ only in
// the middle, with tool search off. Gemini CLI calls their tools mcp_toolshed_SERVER__TOOL
// and cuts names over 63 characters to their first and last 30, which makes the two
// create_entities (and every other pair) one name, and Gemini CLI keeps one tool of each
// pair. With --max-name-length 50 (the docs' block) every tool keeps a name of its own,
// and a call through a shortened name reaches the right server.
func TestGeminiLongNames(t *testing.T) {
	mcmd, margsA := testupstream.Memory(t)
	_, margsB := testupstream.Memory(t)
	const a, b = "knowledge-graph-memory-a-primary-store", "knowledge-graph-memory-b-primary-store"
	config := writeConfigFile(t, map[string]any{"mcpServers": map[string]any{
		a: map[string]any{"command": mcmd, "args": margsA},
		b: map[string]any{"command": mcmd, "args": margsB},
	}})
	fileA := strings.TrimPrefix(margsA[0], "MEMORY_FILE_PATH=")
	fileB := strings.TrimPrefix(margsB[0], "MEMORY_FILE_PATH=")
	settings := docConfig(t, "gemini-long-names", config, "")

	// First run: learn the names Gemini CLI declares.
	probe := fakellm.NewGemini(fakellm.Say("listed"))
	runGemini(t, settings, probe, "List your tools.")
	var names []string
	for _, n := range geminiDeclarations(probe.Bodies()[0]) {
		if strings.HasPrefix(n, "mcp_toolshed_") {
			names = append(names, n)
		}
	}
	if len(names) != 18 {
		t.Fatalf("Gemini CLI declares %d toolshed tools, want the 18 of the two memory servers: %v", len(names), names)
	}
	for _, n := range names {
		if len(n) > 63 || strings.Contains(n, "...") {
			t.Errorf("%q was cut by Gemini CLI (%d characters)", n, len(n))
		}
	}

	// Second run: call both create_entities; each entity must land in its own server's
	// file (which name is whose only the gateway knows, so either way round passes).
	var creates []string
	for _, n := range names {
		if strings.HasSuffix(n, "__create_entities") {
			creates = append(creates, n)
		}
	}
	if len(creates) != 2 {
		t.Fatalf("create_entities is declared as %v, want two names", creates)
	}
	model := fakellm.NewGemini(
		fakellm.Call("", "", creates[0], `{"entities":[{"name":"first","entityType":"test","observations":["via `+creates[0]+`"]}]}`),
		fakellm.Call("", "", creates[1], `{"entities":[{"name":"second","entityType":"test","observations":["via `+creates[1]+`"]}]}`),
		fakellm.Say("Both written."),
	)
	runGemini(t, settings, model, "Write both entities.")
	memA, memB := readMemory(t, fileA), readMemory(t, fileB)
	if !(strings.Contains(memA, "first") && strings.Contains(memB, "second")) && !(strings.Contains(memA, "second") && strings.Contains(memB, "first")) {
		t.Errorf("the two calls did not reach the two servers:\n%s: %q\n%s: %q", a, memA, b, memB)
	}
	for _, body := range model.Bodies()[1:] {
		for _, n := range creates {
			if got := geminiResponse(body, n); strings.Contains(got, "not found") {
				t.Errorf("%s: %s", n, got)
			}
		}
	}
}

// geminiDeclarations returns the names of the function declarations of a request.
func geminiDeclarations(body map[string]any) []string {
	var names []string
	tools, _ := body["tools"].([]any)
	for _, x := range tools {
		decls, _ := x.(map[string]any)["functionDeclarations"].([]any)
		for _, d := range decls {
			n, _ := d.(map[string]any)["name"].(string)
			names = append(names, n)
		}
	}
	return names
}

// geminiResponse returns the last functionResponse for the function name in a request's
// contents, as JSON.
func geminiResponse(body map[string]any, name string) string {
	found := ""
	contents, _ := body["contents"].([]any)
	for _, c := range contents {
		parts, _ := c.(map[string]any)["parts"].([]any)
		for _, p := range parts {
			fr, ok := p.(map[string]any)["functionResponse"].(map[string]any)
			if ok && fr["name"] == name {
				b, _ := json.Marshal(fr["response"])
				found = string(b)
			}
		}
	}
	return found
}
