package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestTokensConfig: tokens --config counts what a gateway over the config serves, as
// lint --config lints it: the real memory server's tools, overrides applied (a hidden
// tool is not counted), decided with the config's tool search settings and context
// window; an entry that cannot be used is a warning and the others count. It printed
// the built-in catalog (478 tools on 21 servers) for any mcpServers file.
func TestTokensConfig(t *testing.T) {
	mcmd, margs := testupstream.Memory(t)
	memory := map[string]any{"command": mcmd, "args": margs}
	alone := jsonFile(t, map[string]any{"mcpServers": map[string]any{"memory": memory}})
	own := tokensOf(t, "--config", alone)
	if own.Servers != 1 || own.Tools < 5 || own.Mode != "auto" || own.ContextWindow != 200000 {
		t.Fatalf("tokens --config of the memory server alone: %d tools on %d servers, mode %s, window %d; want its own tools, and the defaults",
			own.Tools, own.Servers, own.Mode, own.ContextWindow)
	}
	if !slices.ContainsFunc(own.ToolCosts, func(c toolCost) bool { return c.Name == "memory__read_graph" }) {
		t.Fatalf("no memory__read_graph among %+v", own.ToolCosts)
	}

	cfg := jsonFile(t, map[string]any{
		"mcpServers":     map[string]any{"memory": memory, "broken": map[string]any{"command": 5}},
		"overrides":      []any{map[string]any{"tools": "memory__read_graph", "hide": true}},
		"tools":          map[string]any{"tool_search": map[string]any{"enabled": "on"}},
		"context_window": 50000,
	})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"tokens", "--json", "--config", cfg}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got tokensOutput
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Tools != own.Tools-1 || got.Servers != 1 || got.ServerCosts[0].Name != "memory" {
		t.Errorf("counted %d tools on %d servers (%+v), want the memory server's %d but the hidden one", got.Tools, got.Servers, got.ServerCosts, own.Tools)
	}
	if slices.ContainsFunc(got.ToolCosts, func(c toolCost) bool { return c.Name == "memory__read_graph" }) {
		t.Errorf("the hidden tool is counted")
	}
	if got.Mode != "on" || !got.Active || got.ContextWindow != 50000 {
		t.Errorf("mode %s active %v window %d, want the config's: on, active, 50000", got.Mode, got.Active, got.ContextWindow)
	}
	if !strings.Contains(stderr.String(), `mcpServers.broken.command: is the number 5`) {
		t.Errorf("no warning of the entry left out:\n%s", stderr.String())
	}

	// --context-window wins over the config's; the text says what it counted.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"tokens", "--config", cfg, "--context-window", "100000"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	first := strings.SplitN(stdout.String(), "\n", 3)
	if want := thousands(got.Tools) + " tools on 1 server cost " + thousands(got.TotalTokens) + " tokens"; !strings.HasPrefix(first[0], want) ||
		!strings.Contains(first[1], "of a 100,000-token context window") {
		t.Errorf("text starts\n%s\n%s\nwant %q and the window of the flag", first[0], first[1], want)
	}

	// A config with servers and --catalog: which to count is unclear, so neither is.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"tokens", "--config", cfg, "--catalog", "testdata/small.json"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "not both") {
		t.Errorf("--config with servers and --catalog: exit %d, stderr:\n%s", code, stderr.String())
	}
}

// tokensOf runs tokens --json with args, which must succeed.
func tokensOf(t *testing.T, args ...string) tokensOutput {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"tokens", "--json"}, args...), &stdout, &stderr); code != 0 {
		t.Fatalf("tokens %v: exit %d: %s", args, code, stderr.String())
	}
	var out tokensOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
