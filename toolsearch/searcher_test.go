package toolsearch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

// references returns the tool names of a successful result's tool_reference blocks; it
// fails the test on anything else.
func references(t *testing.T, r anthropic.ToolResultBlockParam) []string {
	t.Helper()
	if r.IsError.Value {
		t.Fatalf("is_error result: %s", resultText(r))
	}
	names := []string{}
	for _, c := range r.Content {
		if c.OfToolReference == nil {
			t.Fatalf("content block %+v is not a tool_reference", c)
		}
		names = append(names, c.OfToolReference.ToolName)
	}
	return names
}

// resultText returns the text of an is_error result.
func resultText(r anthropic.ToolResultBlockParam) string {
	var b strings.Builder
	for _, c := range r.Content {
		if c.OfText != nil {
			b.WriteString(c.OfText.Text)
		}
	}
	return b.String()
}

// wireShape is the documented JSON of a client-side search result.
func wireShape(id string, names ...string) []byte {
	refs := make([]map[string]string, len(names))
	for i, n := range names {
		refs[i] = map[string]string{"type": "tool_reference", "tool_name": n}
	}
	b, _ := json.Marshal(map[string]any{"type": "tool_result", "tool_use_id": id, "content": refs})
	return b
}

func TestSearcherBuiltin(t *testing.T) {
	snap := builtinSnapshot(t)
	opts := Options{DeferByDefault: true, Search: SearchClient}
	s, err := NewSearcher(snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := Tools(snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	deferred := map[string]bool{}
	for _, u := range tools {
		if u.OfTool != nil && u.OfTool.DeferLoading.Value {
			deferred[u.OfTool.Name] = true
		}
	}
	if len(deferred) != len(s.Deferred()) || len(deferred) < 400 {
		t.Fatalf("%d deferred tools in the request, %d in the Searcher", len(deferred), len(s.Deferred()))
	}

	tests := []struct {
		query string
		want  string // a tool among the results
		first bool   // ... in first place
	}{
		{"create a github issue", "github__create_issue", false},
		{"github__create_issue", "github__create_issue", true},
		{"take a screenshot of the web page", "playwright__browser_take_screenshot", false},
		{"post a message to a slack channel", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			in, _ := json.Marshal(map[string]string{"query": tc.query})
			r := s.HandleInput("toolu_01", in)
			names := references(t, r)
			if len(names) == 0 || len(names) > DefaultSearchLimit {
				t.Fatalf("%d results, want 1 to %d", len(names), DefaultSearchLimit)
			}
			for _, n := range names {
				// Every referenced tool must be one of the request's deferred tools.
				if !deferred[n] {
					t.Errorf("%s is not a deferred tool of the request", n)
				}
			}
			if tc.want != "" && !slices.Contains(names, tc.want) {
				t.Errorf("results %v do not include %s", names, tc.want)
			}
			if tc.first && names[0] != tc.want {
				t.Errorf("results %v do not start with %s", names, tc.want)
			}
			got, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if want := wireShape("toolu_01", names...); !jsonEqual(t, got, want) {
				t.Errorf("wire shape\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestSearcherHandle answers a tool_use block decoded by the SDK from a response.
func TestSearcherHandle(t *testing.T) {
	s, err := NewSearcher(builtinSnapshot(t), Options{DeferByDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	var msg anthropic.Message
	if err := json.Unmarshal([]byte(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-opus-4-5",
		"content":[{"type":"text","text":"Let me find the tool."},
		           {"type":"tool_use","id":"toolu_01","name":"search_tools","input":{"query":"create a github issue","limit":3}}],
		"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":10}}`), &msg); err != nil {
		t.Fatal(err)
	}
	r := s.Handle(msg.Content[1].AsToolUse())
	names := references(t, r)
	if len(names) != 3 || names[0] != "github__create_issue" {
		t.Errorf("results %v, want 3 starting with github__create_issue", names)
	}
	if r.ToolUseID != "toolu_01" {
		t.Errorf("tool_use_id %q", r.ToolUseID)
	}
	// The result goes back in the next user message as it is.
	next := anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfToolResult: &r})
	b, _ := json.Marshal(next)
	if want := `{"content":[{"tool_use_id":"toolu_01","content":[{"tool_name":"github__create_issue","type":"tool_reference"}`; !strings.HasPrefix(string(b), want) {
		t.Errorf("user message %s", b)
	}

	other := s.Handle(anthropic.ToolUseBlock{ID: "toolu_02", Name: "get_weather", Input: json.RawMessage(`{"query":"x"}`)})
	if !other.IsError.Value || !strings.Contains(resultText(other), "get_weather") {
		t.Errorf("a call of another tool: %+v", other)
	}
}

func TestSearcherInputs(t *testing.T) {
	s, err := NewSearcher(testSnapshot(t), Options{DeferByDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		input string
		want  []string // tool references; nil for an is_error result
		err   string   // part of the is_error text
	}{
		{"match", `{"query": "post a message to slack"}`, []string{"slack__post_message", "slack__list_channels", "slack__ping"}, ""},
		{"limit", `{"query": "list", "limit": 1}`, []string{"github__list_issues"}, ""},
		{"limit as a string", `{"query": "list", "limit": "2"}`, []string{"github__list_issues", "slack__list_channels"}, ""},
		{"limit 0 is clamped to 1", `{"query": "list", "limit": 0}`, []string{"github__list_issues"}, ""},
		{"limit over the maximum is clamped", `{"query": "list", "limit": 1000}`, []string{"github__list_issues", "slack__list_channels"}, ""},
		{"null limit", `{"query": "list", "limit": null}`, []string{"github__list_issues", "slack__list_channels"}, ""},
		{"no match", `{"query": "kubernetes pod logs"}`, []string{}, ""},
		{"pinned tools are not searched", `{"query": "search_code"}`, []string{}, ""},
		{"loaded by alwaysLoad", `{"query": "current time"}`, []string{}, ""},
		{"exactly 500 characters", fmt.Sprintf(`{"query": %q}`, "ping "+strings.Repeat("x", 495)), []string{"slack__ping"}, ""},
		{"501 characters", fmt.Sprintf(`{"query": %q}`, strings.Repeat("x", 501)), nil, "the query is 501 characters and the limit is 500"},
		{"empty query", `{"query": "  "}`, nil, "invalid_tool_input: empty tool search query"},
		{"no query", `{"limit": 3}`, nil, `"query" is missing`},
		{"query not a string", `{"query": 3}`, nil, "must be a JSON object such as"},
		{"fractional limit", `{"query": "list", "limit": 1.5}`, nil, `"limit" must be a whole number`},
		{"limit not a number", `{"query": "list", "limit": "many"}`, nil, `"limit" must be a whole number`},
		{"not an object", `["list"]`, nil, "must be a JSON object"},
		{"no input", ``, nil, `"query" is missing`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.HandleInput("toolu_07", json.RawMessage(tc.input))
			if r.ToolUseID != "toolu_07" {
				t.Errorf("tool_use_id %q", r.ToolUseID)
			}
			got, _ := json.Marshal(r)
			if tc.want == nil {
				if !r.IsError.Value || !strings.Contains(resultText(r), tc.err) {
					t.Fatalf("result %s; want an is_error result saying %q", got, tc.err)
				}
				return
			}
			if names := references(t, r); !slices.Equal(names, tc.want) {
				t.Errorf("results %v, want %v", names, tc.want)
			}
			// No match is an empty list, not an error and not an absent content.
			if want := wireShape("toolu_07", tc.want...); !jsonEqual(t, got, want) {
				t.Errorf("wire shape\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestSearcherScope(t *testing.T) {
	snap := testSnapshot(t)
	s, err := NewSearcher(snap, Options{
		DeferByDefault: true,
		Scope:          policy.Scope{Servers: []string{"slack"}},
		Servers:        map[string]policy.ServerRules{"slack": {Configs: map[string]policy.ToolConfig{"ping": {Enabled: ptr(false)}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string][]string{
		"create github issue":  {}, // out of scope
		"ping":                 {}, // disabled
		"slack channel":        {"slack__list_channels", "slack__post_message"},
		"github__create_issue": {},
	} {
		tools, err := s.Find(query, 10)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools {
			names = append(names, tool.Qualified)
		}
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("Find(%q) = %v, want %v", query, names, want)
		}
	}
	if got := len(s.Deferred()); got != 2 {
		t.Errorf("%d deferred tools, want 2", got)
	}
}

func TestSearcherFindErrors(t *testing.T) {
	s, err := NewSearcher(testSnapshot(t), Options{DeferByDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Find("", 0); !errors.Is(err, ErrEmptyQuery) || !errors.Is(err, search.ErrInvalidToolInput) {
		t.Errorf("empty query: %v", err)
	}
	if _, err := s.Find(strings.Repeat("é", 501), 0); !errors.Is(err, ErrQueryTooLong) {
		t.Errorf("long query: %v", err)
	}
	if _, err := NewSearcher(nil, Options{}); !errors.Is(err, ErrOptions) {
		t.Errorf("nil snapshot: %v", err)
	}
	if _, err := NewSearcher(testSnapshot(t), Options{Scope: policy.Scope{Servers: []string{"["}}}); !errors.Is(err, ErrOptions) {
		t.Errorf("bad scope: %v", err)
	}
}

func TestSearcherDefinition(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"test catalog", Options{DeferByDefault: true}},
		{"built-in catalog", Options{DeferByDefault: true}},
		{"nothing deferred", Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := testSnapshot(t)
			if tc.name == "built-in catalog" {
				snap = builtinSnapshot(t)
			}
			s, err := NewSearcher(snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			def := s.Definition()
			if def.Name != ClientToolName || def.DeferLoading.Valid() {
				t.Errorf("name %q, defer_loading %v", def.Name, def.DeferLoading)
			}
			if words := len(strings.Fields(def.Description.Value)); words > 60 {
				t.Errorf("the description has %d words, over 60: %s", words, def.Description.Value)
			}
			if want := fmt.Sprintf("Search %d tools", len(s.Deferred())); !strings.HasPrefix(def.Description.Value, want) {
				t.Errorf("description %q does not start %q", def.Description.Value, want)
			}
		})
	}
	s, _ := NewSearcher(testSnapshot(t), Options{DeferByDefault: true})
	golden.Check(t, filepath.Join("testdata", "search_tools.golden.json"), indented(t, s.Definition()))
}

func TestSearcherConcurrent(t *testing.T) {
	s, err := NewSearcher(builtinSnapshot(t), Options{DeferByDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				r := s.HandleInput(fmt.Sprint("toolu_", i), json.RawMessage(`{"query":"create a github issue"}`))
				if len(r.Content) == 0 || r.IsError.Value {
					t.Error("no result")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A scoped Searcher answers exactly as a Searcher over a snapshot of only the scope's
// tools: what it finds and in which order for words of tools in and out of scope,
// their misspellings, parts and exact names, and the definition it gives the model.
func TestSearcherScopeSeesOnlyItsTools(t *testing.T) {
	sources, problems := builtin.Sources()
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	scope := policy.Scope{Servers: []string{"slack", "memory"}, Tools: []string{"github__create_*", "github__list_issues"}}
	full, _ := catalog.Build(sources)
	var kept []catalog.Source
	for _, src := range sources {
		src.Tools = slices.DeleteFunc(slices.Clone(src.Tools), func(raw json.RawMessage) bool {
			var tool struct{ Name string }
			json.Unmarshal(raw, &tool)
			return !scope.Allows(&catalog.Tool{Server: src.Server, Qualified: catalog.Qualify(src.Server, tool.Name)})
		})
		kept = append(kept, src)
	}
	only, _ := catalog.Build(kept)
	if full.Len() < 300 || only.Len() < 10 || only.Len() > full.Len()/4 {
		t.Fatalf("%d tools in all, %d in scope: the test needs many of each", full.Len(), only.Len())
	}
	scoped, err := NewSearcher(full, Options{DeferByDefault: true, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := NewSearcher(only, Options{DeferByDefault: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := indented(t, scoped.Definition()), indented(t, alone.Definition()); !bytes.Equal(got, want) {
		t.Errorf("definition\n%s\nwant\n%s", got, want)
	}
	for _, q := range []string{
		"post a message to a channel", "create an issue", "create entities in the knowledge graph",
		"list pull requests", "merge a pull request", "search the web", "take a screenshot", "read a file",
		"githb isue", "pul reqest", "knowlege grpah", "screnshot", "issu", "pull", "entit", "brows",
		"github__merge_pull_request", "merge_pull_request", "create_issue", "please call list_commits",
		"readFile then write_file", "create.*issue", "the", "グラフ",
	} {
		for _, limit := range []string{"", `, "limit": 20`} {
			input := json.RawMessage(`{"query": ` + strconv.Quote(q) + limit + `}`)
			got, want := indented(t, scoped.HandleInput("toolu_1", input)), indented(t, alone.HandleInput("toolu_1", input))
			if !bytes.Equal(got, want) {
				t.Errorf("%s:\nthe scoped searcher gave\n%s\na searcher of only the scope's tools\n%s", input, got, want)
			}
		}
	}
}
