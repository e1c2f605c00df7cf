package catalog_test

import (
	"errors"
	"fmt"

	"github.com/toolshed/toolshed/catalog"
)

func ExampleParse() {
	doc := []byte(`{"jsonrpc": "2.0", "id": 1, "result": {"tools": [
		{"name": "get_forecast", "description": "Get the weather forecast"},
		{"name": "get_alerts", "description": "Get weather alerts"}
	]}}`)
	sources, problems := catalog.Parse(doc, "weather.json", "weather")
	fmt.Println(len(problems), "problems")
	for _, s := range sources {
		fmt.Println(s.Server, len(s.Tools), "tools")
	}
	_, problems = catalog.Parse([]byte(`{"tools": "none"}`), "bad.json", "bad")
	fmt.Println(errors.Is(problems[0], catalog.ErrFormat))
	fmt.Println(problems[0])
	// Output:
	// 0 problems
	// weather 2 tools
	// true
	// bad.json: not a tool list: "tools" must be an array, got a string
}

func ExampleBuild() {
	sources, _ := catalog.Parse([]byte(`{"servers": [
		{"name": "My Server", "tools": [
			{"name": "math.add", "description": "Add two numbers", "inputSchema": {"type": "object"}},
			{"name": "broken", "inputSchema": {"type": "string"}}
		]},
		{"name": "files", "alwaysLoad": true, "tools": [{"name": "read_file"}]}
	]}`), "catalog.json", "")
	snap, problems := catalog.Build(sources)
	for _, t := range snap.Tools() {
		fmt.Println(t.Qualified, "pinned:", t.Pinned)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	// Output:
	// My-Server__math_add pinned: false
	// files__read_file pinned: true
	// catalog.json: server "My-Server": tool "broken": invalid schema: "inputSchema" must describe an object ("type": "object"), got "type": "string"
}

func ExampleSnapshot_Lookup() {
	sources, _ := catalog.Parse([]byte(`{"servers": [
		{"name": "github", "tools": [{"name": "create_issue"}, {"name": "search_code"}]},
		{"name": "gitlab", "tools": [{"name": "create_issue"}]}
	]}`), "catalog.json", "")
	snap, _ := catalog.Build(sources)

	t, _ := snap.Lookup("search_code", nil)
	fmt.Println(t.Qualified)
	t, _ = snap.Lookup("gitlab__create_issue", nil)
	fmt.Println(t.Qualified)
	_, err := snap.Lookup("create_issue", nil)
	fmt.Println(err)
	onlyGitHub := func(t *catalog.Tool) bool { return t.Server == "github" }
	t, _ = snap.Lookup("create_issue", onlyGitHub)
	fmt.Println(t.Qualified)
	_, err = snap.Lookup("gitlab__create_issue", onlyGitHub)
	fmt.Println(errors.Is(err, catalog.ErrUnknownTool))
	// Output:
	// github__search_code
	// gitlab__create_issue
	// ambiguous tool name: "create_issue" is offered by 2 servers; use one of github__create_issue, gitlab__create_issue
	// github__create_issue
	// true
}
