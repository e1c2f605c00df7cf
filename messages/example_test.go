package messages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/messages"
)

// A request whose tools are deferred behind a BM25 search tool, answered by a model
// that has no tool search of its own (here a script: it searches, then calls the tool
// it found). The response is what the Anthropic API would return: the search as a
// server_tool_use and its tool_search_tool_result, then the call.
func ExampleProxy_Create() {
	model := httptest.NewServer(fakellm.NewAnthropic(
		fakellm.Call("", "toolu_1", "tool_search_tool_bm25", `{"query":"current weather"}`),
		fakellm.Call("", "toolu_2", "get_weather", `{"city":"Paris"}`),
	))
	defer model.Close()
	p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: model.URL}}

	var req messages.Request
	err := json.Unmarshal([]byte(`{
	  "model": "any-model", "max_tokens": 1024,
	  "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
	  "tools": [
	    {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
	    {"name": "get_weather", "description": "Get the current weather in a city",
	     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}, "defer_loading": true},
	    {"name": "send_email", "description": "Send an email",
	     "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}}, "defer_loading": true}
	  ]}`), &req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := p.Create(context.Background(), &req, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range resp.Content {
		switch b.Type {
		case "tool_search_tool_result":
			fmt.Println(b.Type, string(b.Content))
		default:
			fmt.Println(b.Type, b.Name, string(b.Input))
		}
	}
	fmt.Println(*resp.StopReason, "searches:", resp.Usage.ServerToolUse.ToolSearchRequests)
	// Output:
	// server_tool_use tool_search_tool_bm25 {"query":"current weather"}
	// tool_search_tool_result {"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}
	// tool_use get_weather {"city":"Paris"}
	// tool_use searches: 1
}

// A client that searches on its own side, as Claude Code does with its ToolSearch:
// no server search tool, and the search's tool_result names the tool found with a
// tool_reference. The model gets that tool in full, without defer_loading, and the
// deferred tools it was not given stay out.
func ExampleProxy_Create_clientSideSearch() {
	model := fakellm.NewAnthropic(fakellm.Call("", "toolu_2", "get_weather", `{"city":"Paris"}`))
	srv := httptest.NewServer(model)
	defer srv.Close()
	p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: srv.URL}}

	var req messages.Request
	err := json.Unmarshal([]byte(`{
	  "model": "any-model", "max_tokens": 1024,
	  "messages": [
	    {"role": "user", "content": "What's the weather in Paris?"},
	    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "weather"}}]},
	    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
	      "content": [{"type": "tool_reference", "tool_name": "get_weather"}]}, {"type": "text", "text": "Tool loaded."}]}],
	  "tools": [
	    {"name": "ToolSearch", "description": "Find deferred tools", "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}},
	    {"name": "get_weather", "description": "Get the current weather in a city",
	     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}, "defer_loading": true},
	    {"name": "send_email", "description": "Send an email",
	     "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}}, "defer_loading": true}
	  ]}`), &req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := p.Create(context.Background(), &req, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var sent struct {
		Tools []json.RawMessage `json:"tools"`
	}
	json.Unmarshal(model.Requests()[0].Body, &sent)
	for _, t := range sent.Tools {
		fmt.Println("the model got", string(t))
	}
	fmt.Println(resp.Content[0].Type, resp.Content[0].Name, string(resp.Content[0].Input))
	// Output:
	// the model got {"name": "ToolSearch", "description": "Find deferred tools", "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
	// the model got {"name":"get_weather","description":"Get the current weather in a city","input_schema":{"type": "object", "properties": {"city": {"type": "string"}}}}
	// tool_use get_weather {"city":"Paris"}
}

// Invalid requests are refused before anything reaches the model, with the API's
// error type and a message that says what to fix.
func ExampleProxy_Create_invalid() {
	p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: "http://127.0.0.1:1"}}
	var req messages.Request
	json.Unmarshal([]byte(`{"model": "m", "max_tokens": 10,
	  "messages": [{"role": "user", "content": "hi"}],
	  "tools": [{"name": "get_weather", "input_schema": {"type": "object"}, "defer_loading": true}]}`), &req)
	_, err := p.Create(context.Background(), &req, nil)
	fmt.Println(err)
	// Output:
	// 400 invalid_request_error: At least one tool must have defer_loading=false. All tools cannot be deferred.
}

// Serving the Messages API in front of an OpenAI-compatible server (here a local
// Ollama): point any Anthropic client at http://127.0.0.1:8787.
func ExampleProxy_Handler() {
	p := &messages.Proxy{
		Upstream: &messages.OpenAI{BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen3:8b"},
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	if err := http.ListenAndServe("127.0.0.1:8787", p.Handler()); err != nil {
		fmt.Println(err)
	}
}
