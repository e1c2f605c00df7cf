//go:build e2e && unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// What Claude Code 2.1.332 sends, read from its requests (captured against a scripted
// model) and from its bundle:
//
//   - It posts to /v1/messages?beta=true and /v1/messages/count_tokens?beta=true, with
//     anthropic-version, anthropic-beta (claude-code-20250219, interleaved-thinking,
//     context-management, advanced-tool-use-2025-11-20, effort, ...; count_tokens adds
//     token-counting-2024-11-01), x-api-key, User-Agent claude-cli/2.1.332, x-app,
//     X-Claude-Code-Session-Id, X-Stainless-*, anthropic-dangerous-direct-browser-access
//     and Accept-Encoding: gzip, deflate, br, zstd.
//   - Bodies carry model, messages, system (text blocks, cache_control), tools, metadata
//     (user_id: a JSON object of about 150 characters), max_tokens (128000 for its
//     default model, claude-opus-5-5), thinking ({"type":"adaptive"} or "enabled" with a
//     budget), context_management (clear_thinking_20251015), output_config ({"effort"}),
//     stream: true.
//   - With its default model and any model name that is not a known Claude model (a
//     local model's, say), it puts "role": "system" messages inside messages: its
//     environment notes after the first user message, the last message of the first
//     request. With claude-sonnet-4-5 or claude-haiku-4-5 it does not.
//   - It searches for tools on its side: a ToolSearch tool ("select:NAME" or keywords,
//     max_results), and, since 2.1.332, the deferred MCP tools are named in a system
//     message and only a DeferredToolPlaceholder tool (defer_loading: true) stands for
//     them in tools until found. A search is answered with a tool_result of
//     tool_reference blocks, followed by a "Tool loaded." text block; the tools found
//     are in tools from then on, with defer_loading: true. It never sends a
//     tool_search_tool_* server tool. When a request that declares deferred tools is
//     refused with a 400 or 422, it sends it again without deferring (every tool in
//     full), which is how a proxy that rejects deferral costs it every token it saves.
//
// When it uses tool search (its function Vie and the checks before it): never for a
// model name containing claude-3-*, nor with CLAUDE_CODE_DISABLE_EXPERIMENTAL_BETAS.
// Otherwise ENABLE_TOOL_SEARCH decides: unset or true (the default), always; false,
// never; auto or auto:N, when the tools' tokens reach N% (default 10) of the context
// window, which it learns by calling count_tokens with every MCP and deferrable built-in
// tool in full (516 in this test) and a one-message conversation ("foo"); auto:0 always and
// auto:100 never. The tests run with its default and with ENABLE_TOOL_SEARCH=auto, in
// which count_tokens decides for search.

// ccProxyWire records what Claude Code sends to toolshed proxy and what it gets back:
// a reverse proxy between them.
type ccProxyWire struct {
	mu        sync.Mutex
	exchanges []ccProxyExchange
}

type ccProxyExchange struct {
	method, path, query string
	body                []byte
	status              int
	response            []byte // count_tokens answers only
}

func (w *ccProxyWire) record(e ccProxyExchange) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.exchanges = append(w.exchanges, e)
	return len(w.exchanges) - 1
}

func (w *ccProxyWire) all() []ccProxyExchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.exchanges)
}

// handler forwards to target, recording each exchange.
func (w *ccProxyWire) handler(target *url.URL) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host },
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			i := resp.Request.Context().Value(ccProxySlot{}).(int)
			var body []byte
			if strings.HasSuffix(resp.Request.URL.Path, "/count_tokens") || resp.StatusCode != http.StatusOK {
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				resp.Body = io.NopCloser(bytes.NewReader(body))
			}
			w.mu.Lock()
			w.exchanges[i].status, w.exchanges[i].response = resp.StatusCode, body
			w.mu.Unlock()
			return nil
		},
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		i := w.record(ccProxyExchange{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, body: body})
		rp.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), ccProxySlot{}, i)))
	})
}

type ccProxySlot struct{}

// scriptedModel is a scripted model of either wire format, with what it was sent.
type scriptedModel interface {
	http.Handler
	Requests() []fakellm.Request
}

// startScriptedModel serves a model scripted with replies in kind's wire format
// (anthropic, or openai for Chat Completions) until the test ends, and returns it with
// the base URL toolshed proxy's --upstream-url takes for it.
func startScriptedModel(t *testing.T, kind string, replies ...fakellm.Reply) (scriptedModel, string) {
	t.Helper()
	var model scriptedModel = fakellm.NewAnthropic(replies...)
	if kind == "openai" {
		model = fakellm.NewOpenAI(replies...)
	}
	up := httptest.NewServer(model)
	t.Cleanup(up.Close)
	if kind == "openai" {
		return model, up.URL + "/v1"
	}
	return model, up.URL
}

// startToolshedProxy runs `toolshed proxy` in front of the upstream at upstreamURL, of
// kind anthropic or openai, on a free loopback port, with more flags args, and returns
// its base URL and its stderr. It is stopped, by its process id, when the test ends.
func startToolshedProxy(t *testing.T, kind, upstreamURL string, args ...string) (string, *testupstream.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(toolshedBin, append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream-kind", kind, "--upstream-url", upstreamURL}, args...)...)
	testupstream.OwnGraceful(t, cmd)
	cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=upstream-key-e2e", "OPENAI_API_KEY=upstream-key-e2e", "TOOLSHED_TOKEN=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting toolshed proxy: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	log := &testupstream.SyncBuffer{}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		at := regexp.MustCompile(`with tool search at (http://\S+)/v1/messages`)
		for sc.Scan() {
			fmt.Fprintln(log, sc.Text())
			if m := at.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case u, ok := <-addr:
		if !ok {
			t.Fatalf("toolshed proxy exited before it listened:\n%s", log)
		}
		return u, log
	case <-time.After(2 * time.Minute):
		t.Fatalf("toolshed proxy did not say where it listens within 2 minutes:\n%s", log)
	}
	return "", nil
}

// ccResult is Claude Code's --output-format json result.
type ccResult struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	IsError        bool   `json:"is_error"`
	Result         string `json:"result"`
	NumTurns       int    `json:"num_turns"`
	APIErrorStatus any    `json:"api_error_status"`
	// Dir is the working directory Claude Code ran in, which it gives MCP servers as
	// its root.
	Dir string `json:"-"`
}

// runClaudeCode runs Claude Code in print mode against baseURL with the MCP servers of
// mcpConfig, with env (KEY=VALUE) added to its environment, and returns its result.
func runClaudeCode(t *testing.T, baseURL, mcpConfig, prompt string, env, extraArgs []string) ccResult {
	t.Helper()
	return runClaudeCodeExit(t, false, baseURL, mcpConfig, prompt, env, extraArgs)
}

// runClaudeCodeExit is runClaudeCode for a run that may end in an error: with mayFail,
// only a run without a JSON result fails the test.
func runClaudeCodeExit(t *testing.T, mayFail bool, baseURL, mcpConfig, prompt string, env, extraArgs []string) ccResult {
	t.Helper()
	work := t.TempDir()
	debug := filepath.Join(work, "claude-debug.log")
	args := append([]string{"-p", prompt, "--mcp-config", mcpConfig, "--strict-mcp-config",
		"--dangerously-skip-permissions", "--output-format", "json", "--no-session-persistence",
		"--debug-file", debug}, extraArgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testupstream.ClaudeCode(t), args...)
	cmd.Dir = work
	cmd.Env = testupstream.ClientEnv(t, append([]string{
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=sk-ant-client-e2e",
		// The machine is shared and the npm servers start slowly under load.
		"MCP_TIMEOUT=180000", "MCP_CONNECT_TIMEOUT_MS=180000", "MCP_TOOL_TIMEOUT=180000",
		"API_TIMEOUT_MS=300000", "CLAUDE_CODE_MAX_RETRIES=2"}, env...)...)
	// Claude Code and the MCP servers it starts form one process group, ended
	// together should the test time out.
	testupstream.Own(t, cmd)
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var res ccResult
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil && !mayFail || jerr != nil {
		tail, _ := os.ReadFile(debug)
		if len(tail) > 6000 {
			tail = tail[len(tail)-6000:]
		}
		t.Fatalf("Claude Code: %v %v\nstdout: %s\nstderr: %s\ndebug log (end):\n%s", err, jerr, stdout.Bytes(), stderr.Bytes(), tail)
	}
	res.Dir = work
	return res
}

// ccMCPConfig writes Claude Code's --mcp-config with 500+ MCP tools: toolshed serve on
// the built-in catalog without tool search (478 tools), and the real server-everything
// and server-memory. It returns the file and the memory server's graph file.
func ccMCPConfig(t *testing.T) (config, memoryFile string) {
	t.Helper()
	type server struct {
		Command string   `json:"command"`
		Args    []string `json:"args"`
	}
	evCmd, evArgs := testupstream.Everything(t)
	memCmd, memArgs := testupstream.Memory(t)
	memoryFile = strings.TrimPrefix(memArgs[0], "MEMORY_FILE_PATH=")
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]server{
		"catalog":    {toolshedBin, []string{"serve", "--tool-search", "off"}},
		"everything": {evCmd, evArgs},
		"memory":     {memCmd, memArgs},
	}}, "", "  ")
	config = filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(config, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return config, memoryFile
}

// upstreamTool is a tool as the upstream model got it, in either wire format.
type upstreamTool struct {
	name, description string
	schema            json.RawMessage
	deferLoading      bool
}

// upstreamCall is one /v1/messages (or /chat/completions) request the model got.
type upstreamCall struct {
	query    string
	tools    []upstreamTool
	messages []map[string]any
	raw      []byte
}

func (c upstreamCall) toolNames() []string {
	var out []string
	for _, t := range c.tools {
		out = append(out, t.name)
	}
	return out
}

func (c upstreamCall) tool(name string) *upstreamTool {
	for i := range c.tools {
		if c.tools[i].name == name {
			return &c.tools[i]
		}
	}
	return nil
}

// upstreamCalls decodes the model's requests for replies (not count_tokens).
func upstreamCalls(t *testing.T, reqs []fakellm.Request) []upstreamCall {
	t.Helper()
	var out []upstreamCall
	for _, r := range reqs {
		if strings.HasSuffix(r.Path, "/count_tokens") {
			continue
		}
		var body struct {
			Tools []struct {
				Name         string          `json:"name"`
				Description  string          `json:"description"`
				InputSchema  json.RawMessage `json:"input_schema"`
				DeferLoading *bool           `json:"defer_loading"`
				Function     *struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("the model got a body that is not JSON: %v", err)
		}
		c := upstreamCall{query: r.RawQuery, messages: body.Messages, raw: r.Body}
		for _, tl := range body.Tools {
			u := upstreamTool{name: tl.Name, description: tl.Description, schema: tl.InputSchema, deferLoading: tl.DeferLoading != nil}
			if tl.Function != nil {
				u = upstreamTool{name: tl.Function.Name, description: tl.Function.Description, schema: tl.Function.Parameters}
			}
			c.tools = append(c.tools, u)
		}
		out = append(out, c)
	}
	return out
}

// TestClaudeCodeProxy drives the real Claude Code through toolshed proxy, with an
// Anthropic and an OpenAI upstream (scripted models), and 502 MCP tools: the model
// searches with Claude Code's ToolSearch, calls the memory server's create_entities,
// which Claude Code runs, and answers. Each runs with Claude Code's default (tool search
// always on) and with ENABLE_TOOL_SEARCH=auto (count_tokens first).
//
//	go test -tags e2e ./internal/e2e -run TestClaudeCodeProxy -v
func TestClaudeCodeProxy(t *testing.T) {
	for _, c := range []struct {
		kind string
		args []string // Claude Code's own
	}{
		{"anthropic", nil}, // its default model, claude-opus-5-5
		{"openai", []string{"--model", "qwen3-coder"}}, // a local model's name
	} {
		for _, auto := range []bool{false, true} {
			name := c.kind
			if auto {
				name += "-auto"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				testClaudeCodeProxy(t, c.kind, auto, c.args)
			})
		}
	}
}

const ccProxyAnswer = "Done: I will remember that toolshed was tested with Claude Code."

func testClaudeCodeProxy(t *testing.T, kind string, auto bool, args []string) {
	entities := `{"entities":[{"name":"toolshed","entityType":"project","observations":["tested with Claude Code through toolshed proxy"]}]}`
	replies := []fakellm.Reply{
		fakellm.Call("Let me find a tool for the knowledge graph.", "toolu_e2e_01", "ToolSearch", `{"query":"memory create entities knowledge graph","max_results":3}`),
		fakellm.Call("", "toolu_e2e_02", "mcp__memory__create_entities", entities),
		fakellm.Say(ccProxyAnswer),
	}
	model, upstreamURL := startScriptedModel(t, kind, replies...)
	proxyURL, proxyLog := startToolshedProxy(t, kind, upstreamURL)
	target, _ := url.Parse(proxyURL)
	wire := &ccProxyWire{}
	front := httptest.NewServer(wire.handler(target))
	t.Cleanup(front.Close)

	config, memoryFile := ccMCPConfig(t)
	var env []string
	if auto {
		env = append(env, "ENABLE_TOOL_SEARCH=auto")
	}
	res := runClaudeCode(t, front.URL, config, "Remember that toolshed was tested with Claude Code.", env, args)
	defer func() {
		if t.Failed() {
			t.Logf("toolshed proxy's log:\n%s", proxyLog)
		}
	}()

	// The conversation completed.
	if res.Type != "result" || res.Subtype != "success" || res.IsError || res.Result != ccProxyAnswer || res.APIErrorStatus != nil {
		t.Errorf("Claude Code's result: %+v, want success with %q", res, ccProxyAnswer)
	}
	exchanges := wire.all()
	var counted, created int
	for _, e := range exchanges {
		if e.status != http.StatusOK {
			t.Errorf("%s %s?%s answered %d: %s", e.method, e.path, e.query, e.status, e.response)
		}
		if e.path == "/v1/messages/count_tokens" {
			var req struct {
				Tools []json.RawMessage `json:"tools"`
			}
			var resp struct {
				InputTokens int `json:"input_tokens"`
			}
			json.Unmarshal(e.body, &req)
			json.Unmarshal(e.response, &resp)
			if len(req.Tools) >= 500 && resp.InputTokens > 0 {
				counted++
			}
			t.Logf("count_tokens?%s with %d tools: %d %s", e.query, len(req.Tools), e.status, e.response)
		}
		if e.path == "/v1/messages" {
			created++
			if e.query != "beta=true" {
				t.Errorf("Claude Code posted to /v1/messages?%s, want ?beta=true", e.query)
			}
		}
	}
	if auto && counted == 0 {
		t.Errorf("no count_tokens request with 500+ tools was answered; Claude Code sent %d requests", len(exchanges))
	}
	// With no --config, the proxy knows the MCP tools' definitions only when Claude Code
	// shows them: in auto mode its count_tokens carries them all, and the search is
	// toolshed's; by default it names them alone, and the search stays Claude Code's.
	// The log is read as the proxy writes it: the line, when there is one, was written
	// while Claude Code waited for the answer, and is read within moments.
	left := false
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = strings.Contains(proxyLog.String(), "search is left to it")
		if left || auto || time.Now().After(deadline) {
			break
		}
	}
	if left == auto {
		t.Errorf("auto %v: the proxy left the search to Claude Code: %v; want %v", auto, left, !auto)
	}
	if created != len(replies) {
		t.Errorf("Claude Code made %d /v1/messages requests, want %d (one per scripted reply)", created, len(replies))
	}
	// Claude Code itself deferred tools: the first request names deferred tools.
	if first := firstMessagesBody(exchanges); !bytes.Contains(first, []byte(`"defer_loading":true`)) {
		t.Errorf("Claude Code's first request defers no tool; it did not use its tool search")
	}

	calls := upstreamCalls(t, model.Requests())
	if len(calls) != len(replies) {
		t.Fatalf("the model got %d requests, want %d", len(calls), len(replies))
	}
	if kind == "anthropic" && auto {
		// count_tokens reached the model too, with every tool.
		n := 0
		for _, r := range model.Requests() {
			if r.Path == "/v1/messages/count_tokens" && r.RawQuery == "beta=true" && bytes.Count(r.Body, []byte(`"name":"mcp__`)) >= 500 {
				n++
			}
		}
		if n == 0 {
			t.Errorf("the upstream got no count_tokens request with the 500+ MCP tools")
		}
	}
	if kind == "anthropic" {
		for i, c := range calls {
			if c.query != "beta=true" {
				t.Errorf("upstream request %d: query %q, want beta=true as the client sent it", i, c.query)
			}
		}
	}

	// First request: only the tools not deferred, ToolSearch among them; no MCP tool.
	first := calls[0]
	if first.tool("ToolSearch") == nil {
		t.Errorf("the first request lacks ToolSearch: %v", first.toolNames())
	}
	for _, tl := range first.tools {
		if strings.HasPrefix(tl.name, "mcp__") || tl.name == "DeferredToolPlaceholder" || tl.deferLoading {
			t.Errorf("the first request carries the deferred tool %s", tl.name)
		}
	}
	if !hasSystemMessage(first) {
		t.Errorf("the model did not get Claude Code's system message in the conversation")
	}

	// After the search: the tools found are loaded, in full, without defer_loading.
	second := calls[1]
	var loaded []string
	for _, name := range second.toolNames() {
		if first.tool(name) == nil {
			loaded = append(loaded, name)
		}
	}
	if !slices.Contains(loaded, "mcp__memory__create_entities") {
		t.Fatalf("after ToolSearch the model got no mcp__memory__create_entities; new tools: %v", loaded)
	}
	t.Logf("the model's first request had tools %v; ToolSearch loaded %v", first.toolNames(), loaded)
	for _, name := range loaded {
		tl := second.tool(name)
		if !strings.HasPrefix(name, "mcp__") || tl.description == "" || len(tl.schema) < 20 || tl.deferLoading {
			t.Errorf("loaded tool %s: description %q, schema %s, defer_loading %v; want its full definition", name, tl.description, tl.schema, tl.deferLoading)
		}
	}
	if ce := second.tool("mcp__memory__create_entities"); ce != nil && (!strings.Contains(ce.description, "entities") || !bytes.Contains(ce.schema, []byte(`"entities"`))) {
		t.Errorf("create_entities as the model got it: %q %s", ce.description, ce.schema)
	}
	if !bytes.Contains(second.raw, []byte("mcp__memory__create_entities is loaded")) {
		t.Errorf("the model was not told the tool was loaded")
	}
	// They stay loaded.
	for _, name := range loaded {
		if calls[2].tool(name) == nil {
			t.Errorf("%s was not loaded for the rest of the conversation", name)
		}
	}

	// Claude Code ran the MCP tool: the memory server wrote the entity, and the model
	// got its result.
	graph, err := os.ReadFile(memoryFile)
	if err != nil || !bytes.Contains(graph, []byte(`"name":"toolshed"`)) || !bytes.Contains(graph, []byte("tested with Claude Code through toolshed proxy")) {
		t.Errorf("the memory server's graph (%v): %s", err, graph)
	}
	if !toolResultContains(calls[2], kind, "toolu_e2e_02", "tested with Claude Code through toolshed proxy") {
		t.Errorf("the model did not get create_entities' result in its third request")
	}
}

func firstMessagesBody(exchanges []ccProxyExchange) []byte {
	for _, e := range exchanges {
		if e.path == "/v1/messages" {
			return e.body
		}
	}
	return nil
}

// hasSystemMessage reports a system message after the first user message.
func hasSystemMessage(c upstreamCall) bool {
	seenUser := false
	for _, m := range c.messages {
		switch m["role"] {
		case "user":
			seenUser = true
		case "system":
			if seenUser {
				return true
			}
		}
	}
	return false
}

// toolResultContains reports whether the call's conversation has the result of the
// tool call id containing text: a tool_result block (Messages API) or a tool message
// (Chat Completions).
func toolResultContains(c upstreamCall, kind, id, text string) bool {
	for _, m := range c.messages {
		if kind == "openai" {
			if m["role"] == "tool" && m["tool_call_id"] == id && strings.Contains(fmt.Sprint(m["content"]), text) {
				return true
			}
			continue
		}
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			blk, _ := b.(map[string]any)
			if blk["type"] == "tool_result" && blk["tool_use_id"] == id {
				raw, _ := json.Marshal(blk["content"])
				if strings.Contains(string(raw), text) {
					return true
				}
			}
		}
	}
	return false
}
