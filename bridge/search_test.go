package bridge_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

// searchResult checks that r is a successful tool_search answer whose text and
// structured content agree, and returns it.
func searchResult(t *testing.T, r bridge.Result) bridge.SearchResult {
	t.Helper()
	if r.IsError || r.Code != "" {
		t.Fatalf("tool_search failed: %s (code %q)", r.Text, r.Code)
	}
	res, ok := r.Structured.(bridge.SearchResult)
	if !ok {
		t.Fatalf("Structured is %T, want bridge.SearchResult", r.Structured)
	}
	var fromText bridge.SearchResult
	if err := json.Unmarshal([]byte(r.Text), &fromText); err != nil {
		t.Fatalf("Text is not JSON: %v\n%s", err, r.Text)
	}
	if !reflect.DeepEqual(fromText, res) {
		t.Errorf("Text %s does not match Structured %+v", r.Text, res)
	}
	return res
}

// checkMatches checks every match against the plan and the catalog: only deferred tools
// are found, each described as the catalog has it.
func checkMatches(t *testing.T, b *bridge.Bridge, res bridge.SearchResult) {
	t.Helper()
	if res.Searched != len(b.Plan.Deferred) {
		t.Errorf("searched = %d, want the %d deferred tools", res.Searched, len(b.Plan.Deferred))
	}
	seen := map[string]bool{}
	for _, m := range res.Matches {
		if seen[m.Name] {
			t.Errorf("%s is listed twice", m.Name)
		}
		seen[m.Name] = true
		tool, err := b.Plan.Snapshot.Lookup(m.Name, nil)
		if err != nil {
			t.Errorf("match %q is not a qualified tool name: %v", m.Name, err)
			continue
		}
		if !slices.Contains(b.Plan.Deferred, tool) {
			t.Errorf("match %s is not a deferred tool of the plan (pinned %t, usable %t)", m.Name, tool.Pinned, b.Plan.Usable(tool))
		}
		if m.Server != tool.Server {
			t.Errorf("%s: server = %q, want %q", m.Name, m.Server, tool.Server)
		}
		if want := bridge.Snippet(tool.Description, 200); m.Description != want {
			t.Errorf("%s: description = %q, want the snippet %q", m.Name, m.Description, want)
		}
		if utf8.RuneCountInString(m.Description) > 200 {
			t.Errorf("%s: description snippet is %d characters", m.Name, utf8.RuneCountInString(m.Description))
		}
		if !slices.Equal(m.Required, tool.Required) {
			t.Errorf("%s: required = %v, want %v", m.Name, m.Required, tool.Required)
		}
	}
}

func TestSearchArguments(t *testing.T) {
	b := newTestBridge(t)
	cfg := b.Plan.Config
	issueTools := 0 // deferred tools with "issue" in their name
	for _, tool := range b.Plan.Deferred {
		if strings.Contains(tool.Name, "issue") {
			issueTools++
		}
	}
	if issueTools <= cfg.MaxSearchLimit {
		t.Fatalf("the test catalog needs more than %d deferred issue tools, has %d", cfg.MaxSearchLimit, issueTools)
	}
	tests := []struct {
		name string
		args string
		want int // number of matches
	}{
		{"no limit gives search_default_limit", `{"query": "issue"}`, cfg.SearchDefaultLimit},
		{"null limit gives search_default_limit", `{"query": "issue", "limit": null}`, cfg.SearchDefaultLimit},
		{"limit as a number", `{"query": "issue", "limit": 2}`, 2},
		{"limit as a numeric string", `{"query": "issue", "limit": "4"}`, 4},
		{"limit as a padded numeric string", `{"query": "issue", "limit": " 4 "}`, 4},
		{"limit as a whole float", `{"query": "issue", "limit": 3.0}`, 3},
		{"limit in exponent form", `{"query": "issue", "limit": 1e0}`, 1},
		{"limit at max_search_limit", `{"query": "issue", "limit": ` + strconv.Itoa(cfg.MaxSearchLimit) + `}`, cfg.MaxSearchLimit},
		{"limit above max_search_limit is clamped", `{"query": "issue", "limit": 50}`, cfg.MaxSearchLimit},
		{"huge limit is clamped", `{"query": "issue", "limit": 1000000}`, cfg.MaxSearchLimit},
		{"limit beyond int64 is clamped", `{"query": "issue", "limit": 1e20}`, cfg.MaxSearchLimit},
		{"limit far below zero gives one", `{"query": "issue", "limit": -1e20}`, 1},
		{"limit 0 gives one", `{"query": "issue", "limit": 0}`, 1},
		{"negative limit gives one", `{"query": "issue", "limit": -7}`, 1},
		{"a JSON string holding the object", strconv.Quote(`{"query": "issue", "limit": 2}`), 2},
		{"unknown members are ignored", `{"query": "issue", "page": 3}`, cfg.SearchDefaultLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := searchResult(t, b.Search(json.RawMessage(tt.args)))
			if len(res.Matches) != tt.want {
				t.Errorf("%d matches, want %d: %+v", len(res.Matches), tt.want, res.Matches)
			}
			if res.Hint != "" {
				t.Errorf("hint %q on a search with matches", res.Hint)
			}
			checkMatches(t, b, res)
		})
	}
}

func TestSearchInvalidArguments(t *testing.T) {
	b := newTestBridge(t)
	tests := []struct {
		name string
		args string
		in   string // text the message must contain
	}{
		{"absent arguments", ``, "query"},
		{"null arguments", `null`, "query"},
		{"empty object", `{}`, "query"},
		{"missing query", `{"limit": 3}`, "query"},
		{"array", `[1]`, "object"},
		{"string that holds no object", `"x"`, "object"},
		{"number", `42`, "object"},
		{"not JSON", `{"query": "issue"`, "tool_search"},
		{"query not a string", `{"query": 5}`, "tool_search"},
		{"empty query", `{"query": ""}`, "query"},
		{"blank query", `{"query": "  \t "}`, "query"},
		{"fractional limit", `{"query": "issue", "limit": 2.5}`, "limit"},
		{"non-numeric string limit", `{"query": "issue", "limit": "x"}`, "limit"},
		{"boolean limit", `{"query": "issue", "limit": true}`, "limit"},
		{"object limit", `{"query": "issue", "limit": {}}`, "limit"},
		{"query over the length limit", mustJSON(map[string]string{"query": strings.Repeat("issue ", search.MaxQueryLen/6+1)}), strconv.Itoa(search.MaxQueryLen)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := b.Search(json.RawMessage(tt.args))
			checkError(t, r, search.InvalidToolInput)
			if !strings.Contains(r.Text, tt.in) {
				t.Errorf("message %q does not mention %q", r.Text, tt.in)
			}
		})
	}
}

func TestSearchFindsOnlyDeferredToolsInScope(t *testing.T) {
	b := newTestBridge(t)
	tests := []struct {
		query     string
		mustFind  []string
		mustNotBe []string
	}{
		{"list issues", []string{"github__list_issues"}, []string{"secret__list_issues"}},
		{"secret__list_issues", nil, []string{"secret__list_issues"}},
		{"create issue", []string{"github__create_issue", "jira__create_issue"}, nil},
		{"search code", nil, []string{"github__search_code"}},
		{"search_code", nil, []string{"github__search_code"}},
		{"github__search_code", nil, []string{"github__search_code"}},
		{"echo text back", nil, []string{"core__echo"}},
		{"post message slack", []string{"slack__post_message"}, nil},
		{"café", []string{"weird__describe_me"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			res := searchResult(t, b.Search(json.RawMessage(mustJSON(map[string]any{"query": tt.query, "limit": 5}))))
			checkMatches(t, b, res)
			var got []string
			for _, m := range res.Matches {
				got = append(got, m.Name)
			}
			for _, name := range tt.mustFind {
				if !slices.Contains(got, name) {
					t.Errorf("matches %v do not include %s", got, name)
				}
			}
			for _, name := range tt.mustNotBe {
				if slices.Contains(got, name) {
					t.Errorf("matches %v include %s, which is not deferred in this session", got, name)
				}
			}
		})
	}
}

// A bridge whose index is not of its plan's catalog (a scoped plan over the scope's own
// catalog, searched with an index of every tool) refuses to search, rather than find
// tools by another catalog's numbering or let the tools outside the scope rank.
func TestSearchIndexOfAnotherCatalog(t *testing.T) {
	full := catalogtest.Snapshot(t, testCatalog)
	in := policy.Input{Config: testConfig(), Scope: testScope}
	b := &bridge.Bridge{Plan: policy.Decide(testScope.Catalog(full), in), Index: search.NewIndex(full)}
	r := b.Search(json.RawMessage(`{"query": "list issues"}`))
	checkError(t, r, search.Unavailable)
	if !strings.Contains(r.Text, "index is not of this session's catalog") {
		t.Errorf("the error %q does not say what is wrong", r.Text)
	}
}

func TestSearchNoMatchIsNotAnError(t *testing.T) {
	b := newTestBridge(t)
	off := newBridge(t, testCatalog, policy.Input{Config: policy.Config{Enabled: policy.Off, ThresholdPct: 10, SearchDefaultLimit: 3, MaxSearchLimit: 5}})
	tests := []struct {
		name  string
		b     *bridge.Bridge
		query string
	}{
		{"words no tool uses", b, "zebra quantum xylophone"},
		{"words only an out-of-scope tool uses", b, "obliterate everything"},
		{"exact name of an out-of-scope tool", b, "secret__obliterate_everything"},
		{"exact name of a pinned tool", b, "core__echo"},
		{"tool search off: nothing is deferred", off, "create issue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := searchResult(t, tt.b.Search(json.RawMessage(mustJSON(map[string]string{"query": tt.query}))))
			if res.Matches == nil || len(res.Matches) != 0 {
				t.Errorf("matches = %#v, want an empty list", res.Matches)
			}
			if strings.TrimSpace(res.Hint) == "" {
				t.Errorf("no hint on an empty result")
			}
			checkMatches(t, tt.b, res)
			if r := tt.b.Search(json.RawMessage(mustJSON(map[string]string{"query": tt.query}))); !strings.Contains(r.Text, `"matches":[]`) {
				t.Errorf("text %s does not hold an empty matches list", r.Text)
			}
		})
	}
}

func TestSearchMatchFields(t *testing.T) {
	b := newTestBridge(t)
	res := searchResult(t, b.Search(json.RawMessage(`{"query": "github__create_issue"}`)))
	if len(res.Matches) == 0 || res.Matches[0].Name != "github__create_issue" {
		t.Fatalf("an exact qualified name must come first; got %+v", res.Matches)
	}
	m := res.Matches[0]
	want := bridge.Match{
		Name:        "github__create_issue",
		Server:      "github",
		Description: bridge.Snippet(createIssueDesc, 200),
		Required:    []string{"owner", "repo", "title"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("match = %+v, want %+v", m, want)
	}
	if strings.Contains(m.Description, "Second paragraph") || strings.Contains(m.Description, "\n") {
		t.Errorf("snippet %q holds more than the first paragraph", m.Description)
	}
	if !strings.HasSuffix(m.Description, "…") {
		t.Errorf("snippet %q of a long paragraph does not end in an ellipsis", m.Description)
	}
}
