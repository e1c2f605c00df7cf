package gateway_test

import (
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// TestMaxNameLen lists long qualified names under short, unique names that still
// reach their tools, and leaves short names alone.
func TestMaxNameLen(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{
		testServer("knowledge-graph-memory-a-primary-store", "many:3"),
		testServer("knowledge-graph-memory-b-primary-store", "many:3"),
		testServer("short", "basic"),
	}}
	const limit = 40
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off, MaxNameLen: limit})
	cs := h.client("", nil)
	names := toolNames(t, cs)
	seen := map[string]bool{}
	var long []string
	for _, n := range names {
		if len(n) > limit {
			t.Errorf("%q is %d characters, over the limit of %d", n, len(n), limit)
		}
		if seen[n] {
			t.Errorf("%q is listed twice", n)
		}
		seen[n] = true
		if strings.HasPrefix(n, "knowledge-graph") {
			long = append(long, n)
		}
	}
	if len(long) != 6 {
		t.Fatalf("listed %d of the 6 long-named tools: %v", len(long), names)
	}
	if !has(names, "short__echo") {
		t.Errorf("a name under the limit changed: %v", names)
	}
	for _, n := range long {
		server, tool, _ := strings.Cut(n, "__")
		if !strings.HasPrefix(tool, "tool_0000") || !strings.HasPrefix(server, "knowledge-graph") {
			t.Errorf("%q lost its tool name or the start of its server name", n)
		}
		if got := resultText(call(t, cs, n, map[string]any{})); got != tool {
			t.Errorf("calling %s answered %q, want %q", n, got, tool)
		}
	}

	// The same catalog lists the same names on every connection and every start.
	h2 := startGateway(t, cfg, gateway.Options{Mode: policy.Off, MaxNameLen: limit})
	again := toolNames(t, h2.client("", nil))
	if strings.Join(again, ",") != strings.Join(names, ",") {
		t.Errorf("names changed across starts:\n%v\n%v", names, again)
	}

	if _, err := gateway.New(cfg, gateway.Options{MaxNameLen: 10}); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("MaxNameLen 10: err = %v", err)
	}
}
