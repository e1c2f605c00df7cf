package toolsearch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/toolsearch"
)

const exampleCatalog = `{"servers": [
  {"name": "github", "tools": [
    {"name": "create_issue", "description": "Create a new issue in a GitHub repository.",
     "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}, "title": {"type": "string"}}, "required": ["repo", "title"]}},
    {"name": "search_code", "description": "Search code.", "inputSchema": {"type": "object"}, "_meta": {"anthropic/alwaysLoad": true}}
  ]},
  {"name": "slack", "tools": [
    {"name": "post_message", "description": "Post a message to a Slack channel.",
     "inputSchema": {"type": "object", "properties": {"channel": {"type": "string"}, "text": {"type": "string"}}, "required": ["channel", "text"]}},
    {"name": "delete_channel", "description": "Delete a Slack channel.", "inputSchema": {"type": "object"}}
  ]}
]}`

func exampleSnapshot() *catalog.Snapshot {
	sources, _ := catalog.Parse([]byte(exampleCatalog), "example", "default")
	snap, _ := catalog.Build(sources)
	return snap
}

func enabled(b bool) *bool { return &b }

// Defer every tool but the pinned one, leave slack's delete_channel out, and let the API
// search the deferred tools with BM25.
func ExampleTools() {
	tools, err := toolsearch.Tools(exampleSnapshot(), toolsearch.Options{
		DeferByDefault: true,
		Search:         toolsearch.SearchBM25,
		Servers: map[string]policy.ServerRules{
			"slack": {Configs: map[string]policy.ToolConfig{"delete_channel": {Enabled: enabled(false)}}},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		b, _ := json.Marshal(t)
		fmt.Println(string(b))
	}
	// Output:
	// {"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}
	// {"input_schema":{"type":"object","properties":{"repo":{"type":"string"},"title":{"type":"string"}},"required":["repo","title"]},"name":"github__create_issue","defer_loading":true,"description":"Create a new issue in a GitHub repository."}
	// {"input_schema":{"type":"object"},"name":"github__search_code","description":"Search code."}
	// {"input_schema":{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"}},"required":["channel","text"]},"name":"slack__post_message","defer_loading":true,"description":"Post a message to a Slack channel."}
}

// Without a search tool the model could load none of the deferred tools.
func ExampleTools_allDeferred() {
	_, err := toolsearch.Tools(exampleSnapshot(), toolsearch.Options{
		DeferByDefault: true,
		Scope:          policy.Scope{Servers: []string{"slack"}},
	})
	fmt.Println(errors.Is(err, toolsearch.ErrAllDeferred))
	fmt.Println(err)
	// Output:
	// true
	// every tool is deferred: all 2 tools would be deferred and there is no search tool, so the model could load none of them (the Messages API rejects this); set Options.Search, or set defer_loading false for at least one tool
}

// A client-side search: the request carries the Searcher's search_tools tool, and the
// application answers the model's call of it with tool_reference blocks.
func ExampleSearcher() {
	snap := exampleSnapshot()
	opts := toolsearch.Options{DeferByDefault: true, Search: toolsearch.SearchClient}
	searcher, err := toolsearch.NewSearcher(snap, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	tools, _ := toolsearch.Tools(snap, opts) // tools[0] is searcher.Definition()
	fmt.Println(tools[0].OfTool.Name+":", tools[0].OfTool.Description.Value)

	// The model's response calls the search tool...
	var msg anthropic.Message
	_ = json.Unmarshal([]byte(`{"role": "assistant", "content": [
	  {"type": "tool_use", "id": "toolu_01", "name": "search_tools", "input": {"query": "open an issue on github", "limit": 1}}
	]}`), &msg)

	// ... and the next user message answers it.
	result := searcher.Handle(msg.Content[0].AsToolUse())
	b, _ := json.Marshal(result)
	fmt.Println(string(b))

	bad := searcher.HandleInput("toolu_02", json.RawMessage(`{"query": ""}`))
	fmt.Println(bad.IsError.Value, bad.Content[0].OfText.Text)
	// Output:
	// search_tools: Search 3 tools that are not loaded yet (servers: github, slack). Describe the action you need in a few words, or give a tool's name. The best matches are loaded so you can call them directly.
	// {"tool_use_id":"toolu_01","content":[{"tool_name":"github__create_issue","type":"tool_reference"}],"type":"tool_result"}
	// true invalid_tool_input: empty tool search query: the query is empty; describe the tool you need in a few words, such as "create github issue"
}

func ExampleSearcher_Find() {
	searcher, _ := toolsearch.NewSearcher(exampleSnapshot(), toolsearch.Options{DeferByDefault: true})
	tools, _ := searcher.Find("slack", 5)
	for _, t := range tools {
		fmt.Println(t.Qualified, "is", t.Name, "of", t.Server)
	}
	// Output:
	// slack__delete_channel is delete_channel of slack
	// slack__post_message is post_message of slack
}

func ExampleCheckQuery() {
	fmt.Println(toolsearch.CheckQuery(toolsearch.KindRegex, "github.*issue"))
	fmt.Println(toolsearch.CheckQuery(toolsearch.KindRegex, "(?=github)issue"))
	err := toolsearch.CheckQuery(toolsearch.KindBM25, strings.Repeat("word ", 101))
	fmt.Println(errors.Is(err, toolsearch.ErrQueryTooLong))
	fmt.Println(err)
	// Output:
	// <nil>
	// invalid tool search pattern: the pattern uses a lookahead `(?=...)`, which this regular-expression engine (RE2, linear-time) does not support; rewrite the pattern without it
	// true
	// tool search query too long: the query is 505 characters and the limit is 500; keep only the words that describe the tool, or shorten it with Shorten(q, 500)
}

func ExampleShorten() {
	q := "Could you please find me the tool that creates a new issue in the GitHub repository of my team"
	fmt.Println(toolsearch.Shorten(q, 60))
	// Output: find tool creates new issue GitHub repository team
}

func ExampleTruncate() {
	q := strings.Repeat("find the tool that creates issues ", 20)
	if errors.Is(toolsearch.CheckQuery(toolsearch.KindBM25, q), toolsearch.ErrQueryTooLong) {
		q = toolsearch.Truncate(q, toolsearch.MaxQueryLen)
	}
	fmt.Println(len(q), toolsearch.CheckQuery(toolsearch.KindBM25, q))
	// Output: 494 <nil>
}

func ExampleRetryPolicy_Next() {
	p := toolsearch.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Second, MaxDelay: 5 * time.Second}
	for _, code := range []string{"unavailable", "too_many_requests", "invalid_tool_input", "not_found_error"} {
		fmt.Printf("%s:", code)
		for attempt := range 5 {
			if retry, delay := p.Next(code, attempt); retry {
				fmt.Printf(" %v", delay)
			} else {
				fmt.Print(" stop")
				break
			}
		}
		fmt.Println()
	}
	// Output:
	// unavailable: 1s 2s 4s 5s stop
	// too_many_requests: 4s 5s 5s 5s stop
	// invalid_tool_input: 0s 0s stop
	// not_found_error: stop
}

func ExampleErrorCode() {
	var msg anthropic.Message
	_ = json.Unmarshal([]byte(`{"role": "assistant", "content": [
	  {"type": "server_tool_use", "id": "srvtoolu_01ABC", "name": "tool_search_tool_regex", "input": {"pattern": "weather"}},
	  {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01ABC",
	   "content": {"type": "tool_search_tool_result_error", "error_code": "unavailable", "error_message": "try again"}}
	]}`), &msg)
	code := toolsearch.ErrorCode(msg.Content[1].AsToolSearchToolResult())
	retry, delay := toolsearch.DefaultRetryPolicy.Next(code, 0)
	fmt.Println(code, retry, delay)
	fmt.Println(toolsearch.MessageErrorCode(&msg))
	// Output:
	// unavailable true 500ms
	// unavailable
}

// The tools of a live MCP server, here one served in memory by the go-sdk.
func ExampleToolsFromMCP() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	for _, name := range []string{"get_forecast", "get_alerts"} {
		server.AddTool(&mcp.Tool{Name: name, Description: "Weather " + name[4:] + ".", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	tools, err := toolsearch.ToolsFromMCP(ctx, "weather", cs, toolsearch.Options{DeferByDefault: true, Search: toolsearch.SearchRegex})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		b, _ := json.Marshal(t)
		fmt.Println(string(b))
	}
	// Output:
	// {"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}
	// {"input_schema":{"type":"object"},"name":"weather__get_alerts","defer_loading":true,"description":"Weather alerts."}
	// {"input_schema":{"type":"object"},"name":"weather__get_forecast","defer_loading":true,"description":"Weather forecast."}
}
