package gateway_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// Claude Code defers every MCP tool whose _meta lacks "anthropic/alwaysLoad": true. The
// gateway marks the bridge tools and every tool its plan pins, in every mode, and keeps
// each tool's own _meta members; other tools stay as their server listed them.
func TestAlwaysLoadMarking(t *testing.T) {
	alpha := testServer("alpha", "basic")
	alpha.Rules = policy.ServerRules{Configs: map[string]policy.ToolConfig{"echo": {DeferLoading: ptr(false)}}}
	cat := catalog.Source{Server: "cat", Tools: []json.RawMessage{
		json.RawMessage(`{"name": "own_pin", "description": "Pinned by its own _meta.", "inputSchema": {"type": "object"}, "_meta": {"anthropic/alwaysLoad": true, "example.com/color": "blue"}}`),
		json.RawMessage(`{"name": "plain_meta", "description": "Carries _meta but no pin.", "inputSchema": {"type": "object"}, "_meta": {"example.com/color": "red"}}`),
		json.RawMessage(`{"name": "plain", "description": "Nothing special.", "inputSchema": {"type": "object"}}`),
	}}
	pinnedServer := catalog.Source{Server: "core", AlwaysLoad: true, Tools: []json.RawMessage{
		json.RawMessage(`{"name": "status", "description": "Pinned by its server.", "inputSchema": {"type": "object"}, "_meta": {"example.com/color": "green"}}`),
	}}
	pinned := map[string]mcp.Meta{
		"alpha__echo":  {"anthropic/alwaysLoad": true},
		"cat__own_pin": {"anthropic/alwaysLoad": true, "example.com/color": "blue"},
		"core__status": {"anthropic/alwaysLoad": true, "example.com/color": "green"},
	}
	unmarked := map[string]mcp.Meta{
		"cat__plain_meta": {"example.com/color": "red"},
		"cat__plain":      nil,
		"alpha__add":      nil,
	}
	bridgeTools := map[string]mcp.Meta{
		"tool_search":   {"anthropic/alwaysLoad": true},
		"tool_describe": {"anthropic/alwaysLoad": true},
		"tool_call":     {"anthropic/alwaysLoad": true},
	}
	for _, mode := range []policy.Mode{policy.On, policy.Off} {
		t.Run(string(mode), func(t *testing.T) {
			h := startGateway(t, &config.Config{Servers: []config.Server{alpha}}, gateway.Options{Mode: mode, Catalogs: []catalog.Source{cat, pinnedServer}})
			got := map[string]mcp.Meta{}
			for tool, err := range h.client("", nil).Tools(context.Background(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				got[tool.Name] = tool.Meta
			}
			want := map[string]mcp.Meta{}
			for name, m := range pinned {
				want[name] = m
			}
			if mode == policy.On {
				for name, m := range bridgeTools {
					want[name] = m
				}
			} else {
				for name, m := range unmarked {
					want[name] = m
				}
			}
			for name, w := range want {
				g, listed := got[name]
				if !listed {
					t.Errorf("%s is not listed", name)
					continue
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("%s: _meta = %v, want %v", name, g, w)
				}
			}
			for name := range unmarked {
				if _, listed := got[name]; listed && mode == policy.On {
					t.Errorf("%s is listed with tool search on", name)
				}
			}
		})
	}
}
