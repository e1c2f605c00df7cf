package bridge_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/search"
)

func names(ms []bridge.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// TestSearchSeveralQueries: query and queries are answered each on its own, in order,
// with their own matches; duplicates are asked once; past MaxQueries, or with a bad
// query among them, the call fails saying which, and nothing is answered.
func TestSearchSeveralQueries(t *testing.T) {
	b := newTestBridge(t)
	r := b.Search(json.RawMessage(`{"query": "post a slack message", "queries": ["create jira issue", "post a slack message"]}`))
	if r.IsError {
		t.Fatal(r.Text)
	}
	multi, ok := r.Structured.(bridge.MultiSearchResult)
	if !ok {
		t.Fatalf("Structured is %T", r.Structured)
	}
	var fromText bridge.MultiSearchResult
	if err := json.Unmarshal([]byte(r.Text), &fromText); err != nil || len(fromText.Searches) != len(multi.Searches) {
		t.Fatalf("text %s: %v", r.Text, err)
	}
	if len(multi.Searches) != 2 || multi.Searches[0].Query != "post a slack message" || multi.Searches[1].Query != "create jira issue" {
		t.Fatalf("searches %+v", multi.Searches)
	}
	if got := names(multi.Searches[0].Matches); len(got) == 0 || got[0] != "slack__post_message" {
		t.Errorf("first query's matches %v", got)
	}
	if got := names(multi.Searches[1].Matches); len(got) == 0 || got[0] != "jira__create_issue" {
		t.Errorf("second query's matches %v", got)
	}
	for _, tc := range []struct{ args, want string }{
		{`{"query": "a", "queries": ["b", "c", "d", "e", "f"]}`, "at most 5 queries"},
		{`{"query": "issue", "queries": [""]}`, ""}, // a blank extra query is no query
		{`{"query": "issue", "queries": ["[unclosed"]}`, ""},
		{`{"queries": ["issue"]}`, ""},
		{`{"limit": 2}`, "needs a \"query\""},
	} {
		r := b.Search(json.RawMessage(tc.args))
		switch {
		case tc.want == "" && r.IsError:
			t.Errorf("%s: %s", tc.args, r.Text)
		case tc.want != "" && (!r.IsError || r.Code != search.InvalidToolInput || !strings.Contains(r.Text, tc.want)):
			t.Errorf("%s: %q (code %q), want an invalid_tool_input error saying %q", tc.args, r.Text, r.Code, tc.want)
		}
	}
}

// TestSearchSelect: "select:" returns the named tools, in order, by qualified or bare
// name when that is unique, says which names are none, and is bounded.
func TestSearchSelect(t *testing.T) {
	b := newTestBridge(t)
	res := searchResult(t, b.Search(json.RawMessage(`{"query": "select: slack__post_message, jira__create_issue,post_message,no_such_tool,secret__obliterate_everything"}`)))
	if got := strings.Join(names(res.Matches), " "); got != "slack__post_message jira__create_issue" {
		t.Errorf("selected %s", got)
	}
	if !strings.Contains(res.Hint, `"no_such_tool"`) || !strings.Contains(res.Hint, `"secret__obliterate_everything"`) {
		t.Errorf("hint %q does not name the missing tools (an out-of-scope one must look missing too)", res.Hint)
	}
	many := "select:" + strings.Repeat("a,", bridge.MaxSelect) + "a"
	if r := b.Search(json.RawMessage(mustJSON(map[string]any{"query": many}))); !r.IsError || !strings.Contains(r.Text, "at most") {
		t.Errorf("select of %d names: %s", bridge.MaxSelect+1, r.Text)
	}
	if r := b.Search(json.RawMessage(`{"query": "select: , "}`)); !r.IsError {
		t.Errorf("select of no name: %s", r.Text)
	}
}

// TestSearchConfidence: a search whose matches share less than half of the query's
// words says it is unsure and names the servers searched; one that fits does not, nor
// one that names its tool.
func TestSearchConfidence(t *testing.T) {
	b := newTestBridge(t)
	for _, tc := range []struct {
		query string
		low   bool
	}{
		{"create a github issue", false},
		{"post_message", false},
		{"book a flight to paris and pay with a credit card issue", true},
		{"issues of the", false},
	} {
		res := searchResult(t, b.Search(json.RawMessage(mustJSON(map[string]any{"query": tc.query}))))
		if len(res.Matches) == 0 {
			t.Errorf("%q found nothing", tc.query)
			continue
		}
		if low := res.Confidence == bridge.LowConfidence; low != tc.low {
			t.Errorf("%q: confidence %q, hint %q; want low %v", tc.query, res.Confidence, res.Hint, tc.low)
		}
		if tc.low && (!strings.Contains(res.Hint, "weak") || !strings.Contains(res.Hint, "github (7)")) {
			t.Errorf("%q: hint %q", tc.query, res.Hint)
		}
	}
	// Down servers are named with an unsure answer even when the page is full.
	b.Unsearched = []bridge.Unsearched{{Server: "linear", State: bridge.NeedsSignIn}}
	res := searchResult(t, b.Search(json.RawMessage(`{"query": "book a flight to paris and pay with a credit card issue", "limit": 1}`)))
	if res.Confidence != bridge.LowConfidence || len(res.Unavailable) != 1 || !strings.Contains(res.Hint, "linear") {
		t.Errorf("unsure with a server down: %+v", res)
	}
}

// TestDescribeSeveral: name and names describe each tool, in order, once; a name that
// is no tool fails the call naming it; past MaxDescribe it fails.
func TestDescribeSeveral(t *testing.T) {
	b := newTestBridge(t)
	r := b.Describe(json.RawMessage(`{"name": "slack__post_message", "names": ["jira__create_issue", "slack__post_message"]}`))
	var out struct {
		Tools []bridge.Description `json:"tools"`
	}
	if r.IsError || json.Unmarshal([]byte(r.Text), &out) != nil || len(out.Tools) != 2 || out.Tools[0].Name != "slack__post_message" || out.Tools[1].Name != "jira__create_issue" {
		t.Fatalf("described %s", r.Text)
	}
	if r := b.Describe(json.RawMessage(`{"name": "slack__post_message", "names": ["secret__obliterate_everything"]}`)); !r.IsError || !strings.Contains(r.Text, "secret__obliterate_everything") {
		t.Errorf("an out-of-scope name among names: %s", r.Text)
	}
	many := make([]string, bridge.MaxDescribe)
	for i := range many {
		many[i] = "t" + string(rune('a'+i))
	}
	if r := b.Describe(json.RawMessage(mustJSON(map[string]any{"name": "x", "names": many}))); !r.IsError || !strings.Contains(r.Text, "at most") {
		t.Errorf("describe of %d names: %s", bridge.MaxDescribe+1, r.Text)
	}
	// One name keeps the single answer's shape.
	if r := b.Describe(json.RawMessage(`{"name": "slack__post_message", "names": ["slack__post_message"]}`)); r.IsError || !strings.HasPrefix(r.Text, `{"name":"slack__post_message"`) {
		t.Errorf("one name twice: %s", r.Text)
	}
}
