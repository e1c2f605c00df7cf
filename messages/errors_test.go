package messages_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/messages"
)

// Requests the proxy refuses, upstream errors, and search errors.

func TestValidation(t *testing.T) {
	deferred := func(name string) string {
		return `{"name":"` + name + `","description":"d","input_schema":{"type":"object"},"defer_loading":true}`
	}
	search := `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`
	custom := `{"name":"ToolSearch","description":"Fetches deferred tools","input_schema":{"type":"object","properties":{"query":{"type":"string"}}}}`
	user := `[{"role":"user","content":"hi"}]`
	var many []string
	for i := range messages.MaxDeferredTools + 1 {
		many = append(many, deferred(fmt.Sprintf("t%d", i)))
	}
	cases := []struct {
		name, tools, messages, want string
	}{
		{"all deferred", deferred("a") + "," + deferred("b"), user, "At least one tool must have defer_loading=false. All tools cannot be deferred."},
		{"unknown reference in tool_result", search + "," + deferred("a"),
			`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"tool_search_tool_regex","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"nope"}]}]}]`,
			"Tool reference 'nope' not found in available tools"},
		{"unknown reference in search result", search + "," + deferred("a"),
			`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_regex","input":{"pattern":"x"}},{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"gone"}]}}]}]`,
			"Tool reference 'gone' not found in available tools"},
		{"defer_loading with cache_control", search + `,{"name":"a","input_schema":{"type":"object"},"defer_loading":true,"cache_control":{"type":"ephemeral"}}`, user, "both defer_loading=true and cache_control"},
		{"too many deferred", search + "," + strings.Join(many, ","), user, "10001 tools have defer_loading=true; at most 10000 can be deferred"},
		{"deferred search tool", `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25","defer_loading":true},{"name":"x","input_schema":{"type":"object"}}`, user, "cannot have defer_loading=true"},
		{"no input_schema", search + `,{"name":"a","defer_loading":true}`, user, "tools.1.input_schema: a custom tool needs an input_schema"},
		{"schema not an object", search + `,{"name":"a","input_schema":{"type":"string"}}`, user, `the root type must be "object"`},
		{"bad tool name", search + `,{"name":"get weather","input_schema":{"type":"object"}}`, user, `"get weather" must match`},
		{"duplicate name", search + "," + deferred("a") + "," + deferred("a"), user, `"a" appears more than once`},
		// The same checks when the client searches with a tool of its own.
		{"all deferred, client-side search", deferred("ToolSearch") + "," + deferred("a"), user, "At least one tool must have defer_loading=false. All tools cannot be deferred."},
		{"unknown reference, client-side search", custom + "," + deferred("a"),
			`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"ToolSearch","input":{"query":"x"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"tool_reference","tool_name":"nope"},{"type":"text","text":"Tool loaded."}]}]}]`,
			"Tool reference 'nope' not found in available tools"},
		{"defer_loading with cache_control, client-side search", custom + `,{"name":"a","input_schema":{"type":"object"},"defer_loading":true,"cache_control":{"type":"ephemeral"}}`, user, "both defer_loading=true and cache_control"},
		{"too many deferred, client-side search", custom + "," + strings.Join(many, ","), user, "10001 tools have defer_loading=true; at most 10000 can be deferred"},
		{"tool_result for a server tool use", search + "," + deferred("a"),
			`[{"role":"user","content":[{"type":"tool_result","tool_use_id":"srvtoolu_01","content":"x"}]}]`, "cannot answer the server tool use"},
		{"tools not a list", `"x"`, user, "not a valid Messages API request"},
		{"mcp_toolset", search + `,{"type":"mcp_toolset","mcp_server_name":"github","default_config":{"defer_loading":true}}`, user, "mcp_toolset needs Anthropic's MCP connector"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			body := `{"model":"m","max_tokens":10,"tools":[` + c.tools + `],"messages":` + c.messages + `}`
			for _, stream := range []bool{false, true} {
				b := body
				if stream {
					b = strings.Replace(body, `"max_tokens":10`, `"max_tokens":10,"stream":true`, 1)
				}
				var raw json.RawMessage = []byte(b)
				_, err := h.client.Messages.New(context.Background(), anthropic.MessageNewParams{}, option.WithRequestBody("application/json", []byte(raw)))
				var ae *anthropic.Error
				if !errors.As(err, &ae) {
					t.Fatalf("stream=%v: got %v, want an API error", stream, err)
				}
				if ae.StatusCode != 400 || ae.Type() != "invalid_request_error" || !strings.Contains(ae.Message, c.want) {
					t.Errorf("stream=%v: got %d %s %q, want 400 invalid_request_error containing %q", stream, ae.StatusCode, ae.Type(), ae.Message, c.want)
				}
			}
			if n := len(h.model.Requests()); n != 0 {
				t.Errorf("an invalid request reached the model (%d requests)", n)
			}
		})
	}
}

func TestUpstreamErrors(t *testing.T) {
	cases := []struct {
		name   string
		reply  fakellm.Reply
		status int
		typ    string
	}{
		{"rate limit", fakellm.Fail(429, "rate_limit_error"), 429, "rate_limit_error"},
		{"overloaded", fakellm.Fail(529, "overloaded_error"), 529, "overloaded_error"},
		{"bad key", fakellm.Fail(401, "authentication_error"), 401, "authentication_error"},
		{"server error", fakellm.Fail(500, "api_error"), 500, "api_error"},
	}
	for _, c := range cases {
		for _, kind := range []string{"anthropic", "openai"} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s %s stream=%v", c.name, kind, stream), func(t *testing.T) {
					h := newHarnessFor(t, kind, c.reply)
					_, err := h.send(t, stream, params("bm25", ask("hi")))
					var ae *anthropic.Error
					if !errors.As(err, &ae) {
						t.Fatalf("got %v, want an API error", err)
					}
					if ae.StatusCode != c.status || string(ae.Type()) != c.typ {
						t.Errorf("got %d %s, want %d %s", ae.StatusCode, ae.Type(), c.status, c.typ)
					}
				})
			}
		}
	}
	// An error after the search, in the second upstream call, of a stream that has
	// begun: an error event.
	t.Run("mid-stream", func(t *testing.T) {
		h := newHarness(t, fakellm.Call("", "toolu_1", "tool_search_tool_bm25", `{"query":"weather"}`), fakellm.Fail(529, "overloaded_error"))
		_, err := h.send(t, true, params("bm25", ask("hi")))
		if err == nil || !strings.Contains(err.Error(), "overloaded_error") {
			t.Errorf("got %v, want the overloaded_error event", err)
		}
	})
	for _, kind := range []string{"anthropic", "openai"} {
		t.Run("upstream error event "+kind, func(t *testing.T) {
			h := newHarnessFor(t, kind, fakellm.Reply{Content: []json.RawMessage{fakellm.Text("partial")}, StreamError: "overloaded_error"})
			_, err := h.send(t, true, params("bm25", ask("hi")))
			if err == nil || !strings.Contains(err.Error(), "overloaded_error") {
				t.Errorf("got %v, want the overloaded_error event", err)
			}
			if resp := h.front.exchanges()[0].response; strings.Count(string(resp), "event: error") != 1 {
				t.Errorf("want exactly one error event:\n%s", resp)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: "http://127.0.0.1:1", APIKey: "sk-secret"}}
		srv := httptest.NewServer(p.Handler())
		defer srv.Close()
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 500 || !strings.Contains(string(body), `"type":"api_error"`) || !strings.Contains(string(body), "could not reach the upstream") {
			t.Errorf("got %d %s", resp.StatusCode, body)
		}
		if strings.Contains(string(body), "sk-secret") {
			t.Errorf("the key leaked into the error: %s", body)
		}
	})
	// An upstream (a gateway in front of the API, say) whose error quotes the key it
	// was sent: the client and the proxy's log see the error without the key.
	for _, tc := range []struct{ name, answer string }{
		{"upstream echoes the key", `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-api03-echoed-secret-0123"}}`},
		{"upstream echoes the key, not JSON", `invalid x-api-key sk-ant-api03-echoed-secret-0123`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, tc.answer)
			}))
			defer up.Close()
			var log strings.Builder
			p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: up.URL, APIKey: "sk-ant-api03-echoed-secret-0123"}, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))}
			srv := httptest.NewServer(p.Handler())
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 401 || !strings.Contains(string(body), "invalid x-api-key xxxxx") {
				t.Errorf("got %d %s; want the upstream's 401 with the key as xxxxx", resp.StatusCode, body)
			}
			srv.Close() // the handler has returned: the log is complete
			if strings.Contains(string(body), "echoed-secret") || strings.Contains(log.String(), "echoed-secret") {
				t.Errorf("the key leaked: body %s, log %s", body, log.String())
			}
		})
	}
}

// TestStreamErrorEventRedacted checks that an Anthropic upstream's stream whose error
// event quotes the key it was sent reaches neither the client nor the proxy's log with
// the key: before message_start the error is the answer's status and body, after it
// the stream's error event.
func TestStreamErrorEventRedacted(t *testing.T) {
	const key = "sk-ant-api03-echoed-secret-0123"
	errorEvent := "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key " + key + "\"}}\n\n"
	start := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n"
	for _, tc := range []struct {
		name, answer string
		status       int
		want         string // in the client's body
	}{
		{"error event first", errorEvent, 401, `"message":"invalid x-api-key xxxxx"`},
		{"error event after message_start", start + errorEvent, 200, "event: error\ndata: {\"error\":{\"message\":\"invalid x-api-key xxxxx\",\"type\":\"authentication_error\"},\"type\":\"error\"}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tc.answer)
			}))
			defer up.Close()
			var log strings.Builder
			p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: up.URL, APIKey: key}, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))}
			srv := httptest.NewServer(p.Handler())
			defer srv.Close()
			resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
				t.Errorf("got %d %s\nwant %d with %s", resp.StatusCode, body, tc.status, tc.want)
			}
			srv.Close() // the handler has returned: the log is complete
			if !strings.Contains(log.String(), "invalid x-api-key xxxxx") {
				t.Errorf("the log does not have the upstream's error: %s", log.String())
			}
			if strings.Contains(string(body), "echoed-secret") || strings.Contains(log.String(), "echoed-secret") {
				t.Errorf("the key leaked: body %s, log %s", body, log.String())
			}
		})
	}
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestSearchBudget checks that searches past MaxSearches answer too_many_requests.
func TestSearchBudget(t *testing.T) {
	h := newHarness(t,
		fakellm.Call("", "toolu_1", "tool_search_tool_bm25", `{"query":"weather"}`),
		fakellm.Call("", "toolu_2", "tool_search_tool_bm25", `{"query":"email"}`),
		fakellm.Say("ok"))
	h.proxy.MaxSearches = 1
	msg, err := h.send(t, false, params("bm25", ask("hi")))
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(t, msg); !equal(got, []string{`server_tool_use(tool_search_tool_bm25 {"query":"weather"})`, "result(get_weather,get_forecast)",
		`server_tool_use(tool_search_tool_bm25 {"query":"email"})`, "result!too_many_requests", "text"}) {
		t.Errorf("got %q", got)
	}
}

func TestSearchInputErrors(t *testing.T) {
	cases := []struct{ kind, input, code string }{
		{"regex", `{"pattern":"` + strings.Repeat("a", 201) + `"}`, "invalid_tool_input"},
		{"bm25", `{"query":"` + strings.Repeat("a ", 251) + `"}`, "invalid_tool_input"},
		{"regex", `{"query":"weather"}`, "invalid_tool_input"},
		{"bm25", `{"query":"weather","limit":0}`, "invalid_tool_input"},
		{"bm25", `{"query":"weather","limit":10001}`, "invalid_tool_input"},
		{"bm25", `{"query":"weather","limit":2.5}`, "invalid_tool_input"},
		{"regex", `{"pattern":"(?<=a)b"}`, "invalid_tool_input"},
	}
	for _, c := range cases {
		h := newHarness(t, fakellm.Call("", "toolu_1", "tool_search_tool_"+c.kind, c.input), fakellm.Say("ok"))
		msg, err := h.send(t, false, params(c.kind, ask("hi")))
		if err != nil {
			t.Fatal(err)
		}
		if got := shape(t, msg); len(got) != 3 || got[1] != "result!"+c.code {
			t.Errorf("%s %s: got %q, want result!%s", c.kind, c.input, got, c.code)
		}
		// The model was told what went wrong, as an error tool_result.
		msgs := h.model.Bodies()[1]["messages"].([]any)
		last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
		if last["type"] != "tool_result" || last["is_error"] != true {
			t.Errorf("%s: the model got %v, want an error tool_result", c.input, last)
		}
	}
}

// TestSearchTimeout checks that a regex search past Proxy.RegexBudget answers
// execution_time_exceeded, and the model is told so. The pattern has no literal text to
// narrow the tools down by and matches none, so every field of every tool is tried.
func TestSearchTimeout(t *testing.T) {
	h := newHarness(t, fakellm.Call("", "toolu_1", "tool_search_tool_regex", `{"pattern":"(a|b)*[\\x{E000}-\\x{E0FF}]"}`), fakellm.Say("ok"))
	h.proxy.RegexBudget = time.Nanosecond
	tools := tools("regex")
	for i := range 500 {
		tools = append(tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: fmt.Sprintf("tool_%d", i), Description: anthropic.String(strings.Repeat("ab", 200)),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{}}, DeferLoading: anthropic.Bool(true),
		}})
	}
	msg, err := h.client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "m", MaxTokens: 10, Tools: tools, Messages: []anthropic.MessageParam{ask("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(t, msg); len(got) != 3 || got[1] != "result!execution_time_exceeded" {
		t.Errorf("got %q, want an execution_time_exceeded result", got)
	}
}
