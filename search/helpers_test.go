package search_test

import (
	"encoding/json"
	"testing"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/search"
)

// smallCatalog is a hand-made catalog of a few servers whose tools a person can rank by
// eye.
const smallCatalog = `{"servers": [
 {"name": "github", "tools": [
  {"name": "create_issue", "description": "Create a new issue in a GitHub repository.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string", "description": "Repository owner"}, "repo": {"type": "string", "description": "Repository name"}, "title": {"type": "string", "description": "Issue title"}, "body": {"type": "string", "description": "Issue body"}}, "required": ["owner", "repo", "title"]}},
  {"name": "list_issues", "description": "List issues in a GitHub repository, filtered by state and labels.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "state": {"type": "string", "description": "open or closed"}}}},
  {"name": "get_file_contents", "description": "Get the contents of a file or directory from a GitHub repository.",
   "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "Path to the file"}}}},
  {"name": "create_pull_request", "description": "Open a new pull request to merge a branch.",
   "inputSchema": {"type": "object", "properties": {"head": {"type": "string"}, "base": {"type": "string"}}}}
 ]},
 {"name": "slack", "tools": [
  {"name": "send_message", "description": "Send a message to a Slack channel.",
   "inputSchema": {"type": "object", "properties": {"channel_id": {"type": "string", "description": "The channel to post to"}, "text": {"type": "string", "description": "Message text"}}}},
  {"name": "list_channels", "description": "List the public channels of the workspace.",
   "inputSchema": {"type": "object", "properties": {}}}
 ]},
 {"name": "weather", "tools": [
  {"name": "get_forecast", "title": "Weather Forecast", "description": "Get the weather forecast for a location.",
   "inputSchema": {"type": "object", "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}}}},
  {"name": "get_alerts", "description": "Get active weather alerts for a US state.",
   "inputSchema": {"type": "object", "properties": {"state": {"type": "string", "description": "Two-letter US state code"}}}}
 ]},
 {"name": "files", "tools": [
  {"name": "read_file", "description": "Read the complete contents of a file from the file system.",
   "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
  {"name": "write_file", "description": "Create a new file or completely overwrite an existing file with new content.",
   "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}},
  {"name": "screenshot_capture", "description": "Capture an image of the screen.",
   "inputSchema": {"type": "object", "properties": {}}}
 ]},
 {"name": "gitlab", "tools": [
  {"name": "create_issue", "description": "Create a new issue in a GitLab project.",
   "inputSchema": {"type": "object", "properties": {"project_id": {"type": "string"}, "title": {"type": "string"}}}}
 ]},
 {"name": "calc", "tools": [
  {"name": "solve.quadratic_equation", "description": "Solve a quadratic equation a*x^2 + b*x + c = 0.",
   "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "c": {"type": "number"}}}}
 ]}
]}`

func smallIndex(t testing.TB) *search.Index {
	t.Helper()
	return search.NewIndex(catalogtest.Snapshot(t, smallCatalog))
}

func builtinIndex(t testing.TB) *search.Index {
	t.Helper()
	snap, problems := builtin.Snapshot()
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	return search.NewIndex(snap)
}

// names lists the qualified names of results, in order.
func names(results []search.Result) []string {
	out := []string{}
	for _, r := range results {
		out = append(out, r.Tool.Qualified)
	}
	return out
}

// toolDoc is one tool as JSON, for building catalogs in tests.
func toolDoc(t testing.TB, name, description string) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"name": name, "description": description, "inputSchema": map[string]any{"type": "object"}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// setOf returns the set of the snapshot's tools whose qualified names are given.
func setOf(t testing.TB, snap *catalog.Snapshot, qualified ...string) *catalog.Set {
	t.Helper()
	set := catalog.NewSet(snap)
	for _, q := range qualified {
		tl, err := snap.Lookup(q, nil)
		if err != nil {
			t.Fatal(err)
		}
		set.Add(tl.Index)
	}
	return set
}
