package bridge_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/bridge"
)

// A search that finds fewer tools than it asked for names the servers whose tools could
// not be searched, in its hint and as structured content; one that fills its page, or
// that has no such server, says nothing of them.
func TestSearchNamesUnsearchedServers(t *testing.T) {
	github := bridge.Unsearched{Server: "github", State: bridge.Restarting, RetryIn: 4}
	jira := bridge.Unsearched{Server: "jira", State: bridge.Restarting}
	memory := bridge.Unsearched{Server: "memory", State: bridge.Starting}
	for _, tc := range []struct {
		name       string
		query      string
		limit      int
		unsearched []bridge.Unsearched
		hint       string
	}{
		{"nothing found, one server down", "zebra quantum xylophone", 0, []bridge.Unsearched{github},
			"no tool matched; 1 server is down: github (restarting in 4s); its tools cannot be searched until it is back. Search again then, or try other words for what the tool does"},
		{"nothing found, one server starting", "zebra quantum xylophone", 0, []bridge.Unsearched{memory},
			"no tool matched; 1 server is still starting: memory; its tools cannot be searched until it is up. Search again then, or try other words for what the tool does"},
		{"nothing found, servers down and starting", "zebra quantum xylophone", 0, []bridge.Unsearched{github, jira, memory},
			"no tool matched; 2 servers are down: github (restarting in 4s), jira (restarting now); 1 server is still starting: memory; their tools cannot be searched until they are up. Search again then, or try other words for what the tool does"},
		{"fewer found than asked", "post a slack message", 3, []bridge.Unsearched{github},
			"1 server is down: github (restarting in 4s); its tools cannot be searched until it is back"},
		{"a full page found", "issue", 1, []bridge.Unsearched{github}, ""},
		{"nothing found, one server needs sign-in", "zebra quantum xylophone", 0, []bridge.Unsearched{{Server: "linear", State: bridge.NeedsSignIn}},
			"no tool matched; 1 server needs sign-in: linear (run `toolshed auth login linear`); its tools cannot be searched until it is signed in. Search again then, or try other words for what the tool does"},
		{"nothing found, one down and one needs sign-in", "zebra quantum xylophone", 0, []bridge.Unsearched{github, {Server: "linear", State: bridge.NeedsSignIn}},
			"no tool matched; 1 server is down: github (restarting in 4s); 1 server needs sign-in: linear (run `toolshed auth login linear`); their tools cannot be searched until they are back. Search again then, or try other words for what the tool does"},
		{"nothing found, every server up", "zebra quantum xylophone", 0, nil, "no tool matched; try other words for what the tool does, or fewer of them. The servers searched, with their tool counts: github (7), jira (1), slack (1), weird (1)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTestBridge(t)
			b.Unsearched = tc.unsearched
			args := map[string]any{"query": tc.query}
			if tc.limit > 0 {
				args["limit"] = tc.limit
			}
			res := searchResult(t, b.Search(json.RawMessage(mustJSON(args))))
			checkMatches(t, b, res)
			if res.Hint != tc.hint {
				t.Errorf("hint %q, want %q", res.Hint, tc.hint)
			}
			want := tc.unsearched
			if tc.name == "a full page found" {
				want = nil
			}
			if !reflect.DeepEqual(res.Unavailable, want) {
				t.Errorf("unavailable = %+v, want %+v", res.Unavailable, want)
			}
		})
	}
}

// While servers are still in their first start, tool_search's description names them
// and says their tools are coming; without any, it is Definitions' own.
func TestDefinitionsNameStartingServers(t *testing.T) {
	b := newTestBridge(t)
	desc := bridge.DefinitionsStarting(b.Plan, []string{"memory", "filesystem"})[0].Description
	if !strings.Contains(desc, "not listed (servers: github, jira, slack, weird). 2 servers still starting: memory, filesystem; their tools appear when they are up. Returns") {
		t.Errorf("tool_search description while memory and filesystem start: %q", desc)
	}
	if one := bridge.DefinitionsStarting(b.Plan, []string{"memory"})[0].Description; !strings.Contains(one, "1 server still starting: memory;") {
		t.Errorf("tool_search description while memory starts: %q", one)
	}
	if got, want := bridge.DefinitionsStarting(b.Plan, nil), bridge.Definitions(b.Plan); !reflect.DeepEqual(got, want) {
		t.Errorf("with no server starting the definitions are %+v, want %+v", got, want)
	}
}
