package gateway_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// searchFor runs tool_search for query and returns its structured answer.
func searchFor(t *testing.T, cs *mcp.ClientSession, query string) bridge.SearchResult {
	t.Helper()
	res := call(t, cs, bridge.SearchTool, map[string]any{"query": query})
	var out bridge.SearchResult
	if err := json.Unmarshal([]byte(resultText(res)), &out); err != nil || res.IsError {
		t.Fatalf("tool_search %q gave %s", query, resultText(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var structured bridge.SearchResult
	if err := json.Unmarshal(b, &structured); err != nil || !reflect.DeepEqual(structured, out) {
		t.Fatalf("tool_search's structured content %s is not its text %s", b, resultText(res))
	}
	return out
}

func found(res bridge.SearchResult, name string) bool {
	for _, m := range res.Matches {
		if m.Name == name {
			return true
		}
	}
	return false
}

// A search that finds nothing while the real server that has the tool is down (npm
// server-memory, SIGKILLed, waiting to restart) says so, in its hint and structured
// content, with when it restarts; a profile that may not use that server is told
// nothing of it.
func TestSearchSaysServerIsDown(t *testing.T) {
	mcmd, margs := testupstream.Memory(t)
	memory, pidFile := pidWrapped(t, "memory", mcmd, margs)
	cfg := &config.Config{
		Servers:  []config.Server{testServer("alpha", "basic"), memory},
		Profiles: map[string]config.Profile{"alphaonly": {Scope: policy.Scope{Servers: []string{"alpha"}}}},
	}
	// A minute's backoff keeps memory down for the test.
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On, BackoffMin: time.Minute, BackoffMax: time.Minute})
	cs := h.client("", nil)
	other := h.client("alphaonly", nil)
	const query = "create entities in the knowledge graph"
	if res := searchFor(t, cs, query); !found(res, "memory__create_entities") || len(res.Unavailable) > 0 {
		t.Fatalf("with memory up, the search gave %+v", res)
	}

	killServer(t, pidFile)
	waitFor(t, "memory to be down", func() bool { return status(h, "memory").State == gateway.Failed })

	res := searchFor(t, cs, query)
	if found(res, "memory__create_entities") || len(res.Unavailable) != 1 {
		t.Fatalf("with memory down, the search gave %+v", res)
	}
	down := res.Unavailable[0]
	if down.Server != "memory" || down.State != bridge.Restarting || down.RetryIn < 1 || down.RetryIn > 60 {
		t.Errorf("memory is given as %+v, want restarting within a minute", down)
	}
	if !strings.Contains(res.Hint, "1 server is down: memory (restarting in ") || !strings.Contains(res.Hint, "its tools cannot be searched until it is back") {
		t.Errorf("the hint %q does not say memory is down", res.Hint)
	}
	if len(res.Matches) == 0 && !strings.HasPrefix(res.Hint, "no tool matched; ") {
		t.Errorf("the hint %q does not say nothing matched", res.Hint)
	}
	if got := call(t, other, bridge.SearchTool, map[string]any{"query": query}); strings.Contains(resultText(got), "memory") || strings.Contains(resultText(got), "unavailable") {
		t.Errorf("a profile without memory is told of it: %s", resultText(got))
	}
}
