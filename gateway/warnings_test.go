package gateway_test

import (
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// TestCatalogWarningsOncePerChange runs a real server whose tool list has two problems
// (a tool without a name, a schema with a $ref to nowhere) through what reassembles the
// catalog many times without changing its list: another server crashing and
// restarting, list_changed with the same list, the server itself restarting. Each
// warning is printed once; a change of the server's list prints them once more.
func TestCatalogWarningsOncePerChange(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("odd", "odd"), testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	cs := h.client("", nil)
	warnings := []string{
		`upstream odd: server "odd": tool #`,
		`upstream odd: server "odd": tool "dangling": its input schema cannot be compiled (json-pointer in "#/$defs/Item" not found)`,
	}
	check := func(when string, want int) {
		t.Helper()
		waitFor(t, "the schema checks", h.g.SchemasChecked)
		for _, w := range warnings {
			if got := strings.Count(h.log.String(), w); got != want {
				t.Errorf("%s: %q printed %d times, want %d", when, w, got, want)
			}
		}
	}
	check("at start", 1)

	restarted := func(name string, restarts int) func() bool {
		return func() bool { st := status(h, name); return st.State == gateway.Ready && st.Restarts >= restarts }
	}
	call(t, cs, "alpha__crash", map[string]any{})
	waitFor(t, "alpha to restart", restarted("alpha", 1))
	for range 3 {
		if res := call(t, cs, "odd__relist", map[string]any{}); resultText(res) != "relisted" {
			t.Fatalf("relist = %s", resultText(res))
		}
	}
	call(t, cs, "odd__crash", map[string]any{})
	waitFor(t, "odd to restart", restarted("odd", 1))
	waitFor(t, "odd's tools to be back", func() bool { return has(toolNames(t, cs), "odd__echo") })
	check("after restarts and list_changed without a change", 1)

	if res := call(t, cs, "odd__grow", map[string]any{"n": 1}); resultText(res) != "added extra_1" {
		t.Fatalf("grow = %s", resultText(res))
	}
	waitFor(t, "odd__extra_1 to be listed", func() bool { return has(toolNames(t, cs), "odd__extra_1") })
	check("after odd's list changed", 2)
	// The dangling schema's tool is still callable: its server has the last word.
	if res := call(t, cs, "odd__dangling", map[string]any{"item": 1}); res.IsError || resultText(res) != "done" {
		t.Errorf("odd__dangling = %s", resultText(res))
	}
}
