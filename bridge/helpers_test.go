package bridge_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

// Unusual but valid schema bytes: spacing, key order that is not alphabetical, \u escapes
// and HTML characters. tool_describe must hand them on exactly as the server sent them.
const (
	weirdInput = `{"type": "object",
      "properties": {"zeta": {"type": "string", "description": "caf\u00e9 \u2014 <b>bold</b> & more"},
                     "alpha": {"type": "integer"}},
      "required": ["zeta"]}`
	weirdOutput      = `{"type":"object","properties":{"ok":{"type":"boolean"}} , "x-order":[3,1,2]}`
	weirdAnnotations = `{"title": "Weird \u00e9", "readOnlyHint": true, "zzz": 1, "aaa": 2}`
)

const createIssueDesc = "Create a new issue in a GitHub repository. Use this when the user wants to report a bug, " +
	"request a feature or track a task; the issue is opened in the given owner's repository with the title " +
	"and body given, and can carry labels and assignees.\n\nSecond paragraph: never shown in search results."

// testCatalog is the bridge tests' catalog. In the scope of newTestBridge, github, jira,
// slack and weird are deferred, core is pinned by alwaysLoad, github__search_code by its
// _meta, and secret is out of scope.
var testCatalog = `{"servers": [
  {"name": "github", "tools": [
    {"name": "create_issue", "description": ` + mustJSON(createIssueDesc) + `,
     "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"}, "body": {"type": "string"}}, "required": ["owner", "repo", "title"]}},
    {"name": "list_issues", "description": "List the issues of a repository.",
     "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}}}},
    {"name": "get_issue", "description": "Get one issue of a repository by number.",
     "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "number": {"type": "integer"}}, "required": ["owner", "repo", "number"]}},
    {"name": "update_issue", "description": "Update an issue: its state, title or body.",
     "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "number": {"type": "integer"}, "state": {"type": "string", "enum": ["open", "closed"]}}, "required": ["owner", "repo", "number"], "additionalProperties": false}},
    {"name": "close_issue", "description": "Close an issue.",
     "inputSchema": {"type": "object", "properties": {"number": {"type": "integer"}}, "required": ["number"]}},
    {"name": "comment_on_issue", "description": "Add a comment to an issue.",
     "inputSchema": {"type": "object", "properties": {"number": {"type": "integer"}, "body": {"type": "string"}}, "required": ["number", "body"]}},
    {"name": "search_issues", "description": "Search issues and pull requests.",
     "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
    {"name": "search_code", "description": "Search code across repositories.",
     "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
     "_meta": {"anthropic/alwaysLoad": true}}
  ]},
  {"name": "jira", "tools": [
    {"name": "create_issue", "description": "Create a Jira issue in a project.",
     "inputSchema": {"type": "object", "properties": {"project": {"type": "string"}, "summary": {"type": "string"}}, "required": ["project", "summary"]}}
  ]},
  {"name": "slack", "tools": [
    {"name": "post_message", "description": "Post a message to a Slack channel."}
  ]},
  {"name": "weird", "tools": [
    {"name": "describe_me", "description": "A tool with unusual schema bytes.",
     "inputSchema": ` + weirdInput + `,
     "outputSchema": ` + weirdOutput + `,
     "annotations": ` + weirdAnnotations + `}
  ]},
  {"name": "core", "alwaysLoad": true, "tools": [
    {"name": "echo", "description": "Echo the text back.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
  ]},
  {"name": "secret", "tools": [
    {"name": "obliterate_everything", "description": "Obliterate every resource in the account."},
    {"name": "list_issues", "description": "List the issues of the secret tracker."}
  ]}
]}`

// testScope excludes the secret server.
var testScope = policy.Scope{Servers: []string{"github", "jira", "slack", "weird", "core"}}

// testConfig is mode on with small limits, so defaults and clamping show.
func testConfig() policy.Config {
	return policy.Config{Enabled: policy.On, ThresholdPct: 10, SearchDefaultLimit: 3, MaxSearchLimit: 5}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func newBridge(t testing.TB, doc string, in policy.Input) *bridge.Bridge {
	t.Helper()
	snap := in.Scope.Catalog(catalogtest.Snapshot(t, doc))
	return &bridge.Bridge{Plan: policy.Decide(snap, in), Index: search.NewIndex(snap)}
}

func newTestBridge(t testing.TB) *bridge.Bridge {
	t.Helper()
	return newBridge(t, testCatalog, policy.Input{Config: testConfig(), Scope: testScope})
}

var builtinSnap = sync.OnceValues(builtin.Snapshot)

func builtinSnapshot(t testing.TB) *catalog.Snapshot {
	t.Helper()
	snap, problems := builtinSnap()
	if len(problems) > 0 {
		t.Fatalf("built-in catalog has problems: %v", problems)
	}
	return snap
}

// checkError checks that r is a failure of code with a message, and that its structured
// content is {"error": code, "message": text}.
func checkError(t *testing.T, r bridge.Result, code search.Code) {
	t.Helper()
	if !r.IsError {
		t.Fatalf("IsError = false, want an error result (got %q)", r.Text)
	}
	if r.Code != code {
		t.Errorf("Code = %q, want %q (message %q)", r.Code, code, r.Text)
	}
	if strings.TrimSpace(r.Text) == "" {
		t.Errorf("error result has no message")
	}
	want := map[string]string{"error": string(code), "message": r.Text}
	if !reflect.DeepEqual(r.Structured, want) {
		t.Errorf("Structured = %#v, want %#v", r.Structured, want)
	}
}

// sameModuloName reports whether two messages are the same once the names they quote are
// replaced by a placeholder.
func sameModuloName(msgA, nameA, msgB, nameB string) (string, string, bool) {
	a := strings.ReplaceAll(msgA, nameA, "NAME")
	b := strings.ReplaceAll(msgB, nameB, "NAME")
	return a, b, a == b
}
