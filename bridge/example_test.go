package bridge_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

const exampleCatalog = `{"servers": [
  {"name": "github", "tools": [
    {"name": "create_issue", "description": "Create a new issue in a GitHub repository.",
     "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}, "title": {"type": "string"}}, "required": ["repo", "title"]}},
    {"name": "search_code", "description": "Search code.", "_meta": {"anthropic/alwaysLoad": true}}
  ]},
  {"name": "slack", "tools": [
    {"name": "post_message", "description": "Post a message to a Slack channel.",
     "inputSchema": {"type": "object", "properties": {"channel": {"type": "string"}, "text": {"type": "string"}}, "required": ["channel", "text"]}}
  ]}
]}`

func exampleBridge() *bridge.Bridge {
	sources, _ := catalog.Parse([]byte(exampleCatalog), "example", "default")
	snap, _ := catalog.Build(sources)
	cfg := policy.DefaultConfig()
	cfg.Enabled = policy.On
	return &bridge.Bridge{Plan: policy.Decide(snap, policy.Input{Config: cfg}), Index: search.NewIndex(snap)}
}

func ExampleDefinitions() {
	b := exampleBridge()
	for _, t := range b.Plan.Visible {
		fmt.Println("listed:", t.Qualified)
	}
	for _, d := range bridge.Definitions(b.Plan) {
		fmt.Printf("%s: %s\n", d.Name, d.Description)
	}
	// Output:
	// listed: github__search_code
	// tool_search: Search 2 more tools that are not listed, from 2 servers: github (1 tool: issue), slack (1 tool: message). Returns the best matches with their required parameters. Call tool_describe for a match's full schema, then tool_call to run it.
	// tool_describe: Get the full definition and input schema of a tool found by tool_search.
	// tool_call: Call a tool found by tool_search with arguments that match its input schema.
}

// A model searches, reads the schema of what it found, and calls it; the front then
// calls the real tool with the checked arguments.
func ExampleBridge() {
	b := exampleBridge()

	found := b.Handle(bridge.SearchTool, json.RawMessage(`{"query": "open an issue on github", "limit": 1}`))
	fmt.Println(found.Text)

	schema := b.Handle(bridge.DescribeTool, json.RawMessage(`{"name": "github__create_issue"}`))
	fmt.Println(string(schema.Structured.(bridge.Description).InputSchema))

	_, _, bad := b.ResolveCall(json.RawMessage(`{"name": "github__create_issue", "arguments": {"repo": "toolshed"}}`))
	fmt.Println(bad.Code)

	tool, args, _ := b.ResolveCall(json.RawMessage(`{"name": "github__create_issue", "arguments": {"repo": "toolshed", "title": "Hello"}}`))
	fmt.Println(tool.Server, tool.Name, string(args))
	// Output:
	// {"matches":[{"name":"github__create_issue","server":"github","description":"Create a new issue in a GitHub repository.","required":["repo","title"]}],"searched":2}
	// {"type": "object", "properties": {"repo": {"type": "string"}, "title": {"type": "string"}}, "required": ["repo", "title"]}
	// invalid_tool_input
	// github create_issue {"repo": "toolshed", "title": "Hello"}
}

func ExampleSnippet() {
	fmt.Println(bridge.Snippet("Post a message to a Slack channel, as the bot user.\n\nRequires chat:write.", 30))
	// Output: Post a message to a Slack…
}
