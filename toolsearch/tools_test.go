package toolsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/policy"
)

// toolsCase is a request built from testdata/catalog.json, with what it must carry.
type toolsCase struct {
	name   string
	opts   Options
	search string   // the exact wire form of the search tool, "" for none
	loaded []string // tools sent without defer_loading, in order
	defer_ []string // tools sent with defer_loading: true, in order
}

var toolsCases = []toolsCase{
	{
		name:   "bm25_defer_by_default",
		opts:   Options{DeferByDefault: true, Search: SearchBM25},
		search: `{"type":"tool_search_tool_bm25_20251119","name":"tool_search_tool_bm25"}`,
		// search_code is pinned by _meta, clock by its server's alwaysLoad.
		loaded: []string{"github__search_code", "clock__now"},
		defer_: []string{"github__create_issue", "github__list_issues", "slack__post_message", "slack__list_channels", "slack__ping"},
	},
	{
		name: "regex_server_rules",
		opts: Options{
			Search: SearchRegex,
			Servers: map[string]policy.ServerRules{
				"github": {
					DefaultConfig: policy.ToolConfig{DeferLoading: ptr(true)},
					Configs: map[string]policy.ToolConfig{
						"list_issues": {DeferLoading: ptr(false)},
						"search_code": {DeferLoading: ptr(true)}, // pinned all the same
					},
				},
				"slack": {Configs: map[string]policy.ToolConfig{
					"list_channels": {Enabled: ptr(false)},
					"ping":          {DeferLoading: ptr(true)},
				}},
				"clock":   {DefaultConfig: policy.ToolConfig{DeferLoading: ptr(true)}}, // pinned all the same
				"unknown": {DefaultConfig: policy.ToolConfig{Enabled: ptr(false)}},
			},
		},
		search: `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`,
		loaded: []string{"github__search_code", "github__list_issues", "slack__post_message", "clock__now"},
		defer_: []string{"github__create_issue", "slack__ping"},
	},
	{
		name: "client_scope",
		opts: Options{
			DeferByDefault: true,
			Search:         SearchClient,
			Scope:          policy.Scope{Servers: []string{"slack"}, Tools: []string{"github__create_*"}},
		},
		search: "client",
		defer_: []string{"github__create_issue", "slack__post_message", "slack__list_channels", "slack__ping"},
	},
	{
		name:   "zero_options",
		loaded: []string{"github__create_issue", "github__search_code", "github__list_issues", "slack__post_message", "slack__list_channels", "slack__ping", "clock__now"},
	},
	{
		// Nothing is deferred, so the search tool would have nothing to find.
		name:   "nothing_deferred",
		opts:   Options{DeferByDefault: true, Search: SearchBM25, Scope: policy.Scope{Servers: []string{"clock"}}},
		loaded: []string{"clock__now"},
	},
}

// TestToolsGolden checks the whole encoding of each request's tools against
// testdata/tools_<case>.golden.json.
func TestToolsGolden(t *testing.T) {
	snap := testSnapshot(t)
	for _, tc := range toolsCases {
		t.Run(tc.name, func(t *testing.T) {
			tools, err := Tools(snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "tools_"+tc.name+".golden.json"), indented(t, tools))
		})
	}
}

// TestToolsWire decodes the encoded tools and checks every field of every tool against
// the catalog: the names, descriptions and schemas byte for byte, defer_loading, and
// the search tool's exact form.
func TestToolsWire(t *testing.T) {
	snap := testSnapshot(t)
	for _, tc := range toolsCases {
		t.Run(tc.name, func(t *testing.T) {
			tools, err := Tools(snap, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(tools)
			if err != nil {
				t.Fatal(err)
			}
			var wire []json.RawMessage
			if err := json.Unmarshal(data, &wire); err != nil {
				t.Fatal(err)
			}
			switch tc.search {
			case "":
			case "client":
				s, err := NewSearcher(snap, tc.opts)
				if err != nil {
					t.Fatal(err)
				}
				def, _ := json.Marshal(s.Definition())
				if !bytes.Equal(wire[0], def) {
					t.Errorf("search tool\n got %s\nwant %s", wire[0], def)
				}
				wire = wire[1:]
			default:
				if string(wire[0]) != tc.search {
					t.Errorf("search tool\n got %s\nwant %s", wire[0], tc.search)
				}
				wire = wire[1:]
			}
			var loaded, deferred []string
			for _, raw := range wire {
				var fields map[string]json.RawMessage
				if err := json.Unmarshal(raw, &fields); err != nil {
					t.Fatal(err)
				}
				var name string
				_ = json.Unmarshal(fields["name"], &name)
				tool, err := snap.Lookup(name, nil)
				if err != nil || tool.Qualified != name {
					t.Fatalf("tool %s: not a qualified name of the catalog (%v)", raw, err)
				}
				for k := range fields {
					if !slices.Contains([]string{"name", "description", "input_schema", "defer_loading"}, k) {
						t.Errorf("%s: unexpected field %q", name, k)
					}
				}
				var desc string
				if d, ok := fields["description"]; ok {
					_ = json.Unmarshal(d, &desc)
				} else if tool.Description != "" {
					t.Errorf("%s: no description", name)
				}
				if desc != tool.Description {
					t.Errorf("%s: description %q, want %q", name, desc, tool.Description)
				}
				// The schema is the catalog's bytes, compacted; the SDK escapes <, > and &
				// in strings as encoding/json does, which is the same JSON.
				want := []byte(`{"type":"object"}`)
				if len(tool.InputSchema) > 0 {
					var c, e bytes.Buffer
					_ = json.Compact(&c, tool.InputSchema)
					json.HTMLEscape(&e, c.Bytes())
					want = e.Bytes()
				}
				if !bytes.Equal(fields["input_schema"], want) {
					t.Errorf("%s: input_schema\n got %s\nwant %s", name, fields["input_schema"], want)
				}
				switch d, ok := fields["defer_loading"]; {
				case !ok:
					loaded = append(loaded, name)
				case string(d) == "true":
					deferred = append(deferred, name)
				default:
					t.Errorf("%s: defer_loading is %s; it is true or absent", name, d)
				}
			}
			if !slices.Equal(loaded, tc.loaded) {
				t.Errorf("loaded tools %v, want %v", loaded, tc.loaded)
			}
			if !slices.Equal(deferred, tc.defer_) {
				t.Errorf("deferred tools %v, want %v", deferred, tc.defer_)
			}
		})
	}
}

// manyTools builds a catalog of n plain tools on server "many" plus one pinned tool.
func manyTools(t testing.TB, n int) *catalog.Snapshot {
	t.Helper()
	tools := make([]json.RawMessage, 0, n+1)
	for i := range n {
		tools = append(tools, json.RawMessage(fmt.Sprintf(`{"name":"tool_%d","description":"Tool number %d.","inputSchema":{"type":"object"}}`, i, i)))
	}
	tools = append(tools, json.RawMessage(`{"name":"pinned","inputSchema":{"type":"object"},"_meta":{"anthropic/alwaysLoad":true}}`))
	snap, problems := catalog.Build([]catalog.Source{{Server: "many", Tools: tools}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return snap
}

func TestToolsErrors(t *testing.T) {
	snap := testSnapshot(t)
	tests := []struct {
		name string
		snap *catalog.Snapshot
		opts Options
		want error
		say  string // part of the message
	}{
		{"all deferred without a search tool", snap, Options{DeferByDefault: true, Scope: policy.Scope{Servers: []string{"slack"}}}, ErrAllDeferred, "set Options.Search"},
		{"unknown search kind", snap, Options{Search: "fuzzy"}, ErrOptions, "SearchBM25"},
		{"bad scope pattern", snap, Options{Scope: policy.Scope{Tools: []string{"github__["}}}, ErrOptions, "not a valid glob"},
		{"nil snapshot", nil, Options{}, ErrOptions, "catalog.Build"},
		{"10,001 deferred", manyTools(t, MaxDeferred+1), Options{DeferByDefault: true, Search: SearchBM25}, ErrTooManyDeferred, "at most 10000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools, err := Tools(tc.snap, tc.opts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Tools = %d tools, %v; want %v", len(tools), err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.say) {
				t.Errorf("error %q does not say %q", err, tc.say)
			}
		})
	}
}

func TestToolsLimits(t *testing.T) {
	// Exactly MaxDeferred deferred tools are accepted.
	snap := manyTools(t, MaxDeferred)
	tools, err := Tools(snap, Options{DeferByDefault: true, Search: SearchRegex})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != MaxDeferred+2 {
		t.Errorf("%d tools, want %d", len(tools), MaxDeferred+2)
	}
	// One loaded tool is enough for the API: no search tool is needed.
	snap = testSnapshot(t)
	tools, err = Tools(snap, Options{DeferByDefault: true, Scope: policy.Scope{Servers: []string{"slack", "clock"}}})
	if err != nil {
		t.Fatalf("one pinned tool and no search tool: %v", err)
	}
	if len(tools) != 4 || tools[3].OfTool.Name != "clock__now" || tools[3].OfTool.DeferLoading.Valid() {
		t.Errorf("tools = %+v", tools)
	}
}

// mcpSession serves tools from an in-memory go-sdk MCP server, one per page.
func mcpSession(t *testing.T, tools ...*mcp.Tool) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "1.0.0"}, &mcp.ServerOptions{PageSize: 1})
	for _, tool := range tools {
		server.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolsearch-test", Version: "1.0.0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestToolsFromMCP(t *testing.T) {
	cs := mcpSession(t,
		&mcp.Tool{Name: "echo", Description: "Echo the text back.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		&mcp.Tool{Name: "status", Description: "Report the service status.", InputSchema: json.RawMessage(`{"type":"object"}`), Meta: mcp.Meta{"anthropic/alwaysLoad": true}},
		&mcp.Tool{Name: "add", Description: "Add two numbers.", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`)},
	)
	ctx := context.Background()
	tools, err := ToolsFromMCP(ctx, "demo", cs, Options{DeferByDefault: true, Search: SearchBM25, Servers: map[string]policy.ServerRules{
		"demo": {Configs: map[string]policy.ToolConfig{"add": {DeferLoading: ptr(false)}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range tools {
		switch {
		case u.OfToolSearchToolBm25_20251119 != nil:
			got = append(got, "bm25")
		case u.OfTool.DeferLoading.Value:
			got = append(got, u.OfTool.Name+" deferred")
		default:
			got = append(got, u.OfTool.Name)
		}
	}
	// The server lists tools in name order.
	want := []string{"bm25", "demo__add", "demo__echo deferred", "demo__status"}
	if !slices.Equal(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	b, _ := json.Marshal(tools[2])
	if want := `{"input_schema":{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"},"name":"demo__echo","defer_loading":true,"description":"Echo the text back."}`; string(b) != want {
		t.Errorf("echo\n got %s\nwant %s", b, want)
	}

	// SourceFromMCP reads every page.
	src, err := SourceFromMCP(ctx, "demo", cs)
	if err != nil || len(src.Tools) != 3 || src.Server != "demo" {
		t.Errorf("SourceFromMCP = %+v, %v", src, err)
	}
}

func TestSourceFromMCPErrors(t *testing.T) {
	ctx := context.Background()
	cs := mcpSession(t)
	if _, err := SourceFromMCP(ctx, "", cs); !errors.Is(err, ErrOptions) || !errors.Is(err, catalog.ErrServerName) {
		t.Errorf("empty server name: %v", err)
	}
	if _, err := SourceFromMCP(ctx, "demo", nil); !errors.Is(err, ErrOptions) {
		t.Errorf("nil session: %v", err)
	}
	_ = cs.Close()
	if _, err := ToolsFromMCP(ctx, "demo", cs, Options{}); err == nil || !strings.Contains(err.Error(), `listing the tools of MCP server "demo"`) {
		t.Errorf("closed session: %v", err)
	}
	// A server without tools gives a request without tools.
	tools, err := ToolsFromMCP(ctx, "empty", mcpSession(t), Options{DeferByDefault: true, Search: SearchBM25})
	if err != nil || len(tools) != 0 {
		t.Errorf("no tools: %v, %v", tools, err)
	}
}

// TestDecideAgreesWithPolicy checks the package's defer rules against policy.Decide,
// whose global default is "deferred", for the cases that defer by default.
func TestDecideAgreesWithPolicy(t *testing.T) {
	snaps := map[string]*catalog.Snapshot{"test": testSnapshot(t), "builtin": builtinSnapshot(t)}
	rules := map[string]policy.ServerRules{
		"github":     {DefaultConfig: policy.ToolConfig{DeferLoading: ptr(false)}, Configs: map[string]policy.ToolConfig{"create_issue": {DeferLoading: ptr(true)}, "list_issues": {Enabled: ptr(false)}}},
		"slack":      {Configs: map[string]policy.ToolConfig{"ping": {DeferLoading: ptr(false)}}},
		"playwright": {DefaultConfig: policy.ToolConfig{Enabled: ptr(false)}, Configs: map[string]policy.ToolConfig{"browser_close": {Enabled: ptr(true)}}},
		"clock":      {DefaultConfig: policy.ToolConfig{DeferLoading: ptr(true)}},
	}
	scopes := []policy.Scope{{}, {Servers: []string{"slack", "play*"}, Tools: []string{"github__*issue*"}}}
	names := func(tools []*catalog.Tool) []string {
		out := []string{}
		for _, t := range tools {
			out = append(out, t.Qualified)
		}
		return out
	}
	for name, snap := range snaps {
		for i, scope := range scopes {
			for _, servers := range []map[string]policy.ServerRules{nil, rules} {
				p, err := decide(snap, Options{DeferByDefault: true, Servers: servers, Scope: scope})
				if err != nil {
					t.Fatal(err)
				}
				want := policy.Decide(snap, policy.Input{Config: policy.Config{Enabled: policy.On}, Servers: servers, Scope: scope})
				if !slices.Equal(names(p.visible), names(want.Visible)) || !slices.Equal(names(p.deferred), names(want.Deferred)) {
					t.Errorf("%s catalog, scope %d, rules %v: loaded %v deferred %v; policy.Decide: %v, %v",
						name, i, servers != nil, names(p.visible), names(p.deferred), names(want.Visible), names(want.Deferred))
				}
			}
		}
	}
}

// TestToolsInRequest checks that a request the SDK encodes carries the tools exactly as
// they encode on their own: compact, schemas as the catalog has them.
func TestToolsInRequest(t *testing.T) {
	tools, err := Tools(testSnapshot(t), Options{DeferByDefault: true, Search: SearchRegex})
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(anthropic.MessageNewParams{Model: anthropic.ModelClaudeOpus4_5, MaxTokens: 1024, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Tools) != len(tools) {
		t.Fatalf("%d tools in the request, want %d", len(req.Tools), len(tools))
	}
	for i, tool := range tools {
		want, _ := json.Marshal(tool)
		if !bytes.Equal(req.Tools[i], want) {
			t.Errorf("tool %d in the request\n got %s\nwant %s", i, req.Tools[i], want)
		}
		if bytes.ContainsAny(req.Tools[i], "\n\t") {
			t.Errorf("tool %d is not compact: %s", i, req.Tools[i])
		}
	}
}
