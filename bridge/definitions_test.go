package bridge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/catalogtest"
	"github.com/toolshed/toolshed/internal/golden"
	"github.com/toolshed/toolshed/policy"
)

// compileSchema compiles raw as a JSON Schema, failing the test when it is not one.
func compileSchema(t *testing.T, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("schema is not JSON: %v\n%s", err, raw)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem:schema.json", doc); err != nil {
		t.Fatalf("AddResource: %v", err)
	}
	s, err := c.Compile("mem:schema.json")
	if err != nil {
		t.Fatalf("not a valid JSON Schema: %v\n%s", err, raw)
	}
	return s
}

func valid(s *jsonschema.Schema, instance string) bool {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(instance))
	if err != nil {
		panic(err)
	}
	return s.Validate(doc) == nil
}

type schemaShape struct {
	Type       string                     `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

func TestDefinitions(t *testing.T) {
	snap := catalogtest.Snapshot(t, testCatalog)
	tests := []struct {
		name      string
		cfg       policy.Config
		wantLimit int
	}{
		{"small limits", testConfig(), 5},
		{"defaults with mode on", policy.Config{Enabled: policy.On, ThresholdPct: 10, SearchDefaultLimit: 5, MaxSearchLimit: 20}, 20},
		{"max_search_limit 1", policy.Config{Enabled: policy.On, ThresholdPct: 10, SearchDefaultLimit: 1, MaxSearchLimit: 1}, 1},
		{"max_search_limit 50", policy.Config{Enabled: policy.On, ThresholdPct: 10, SearchDefaultLimit: 7, MaxSearchLimit: 50}, 50},
	}
	wantRequired := map[string][]string{
		bridge.SearchTool:   {"query"},
		bridge.DescribeTool: {"name"},
		bridge.CallTool:     {"name", "arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := policy.Decide(snap, policy.Input{Config: tt.cfg, Scope: testScope})
			defs := bridge.Definitions(plan)
			var got []string
			for _, d := range defs {
				got = append(got, d.Name)
			}
			if want := []string{bridge.SearchTool, bridge.DescribeTool, bridge.CallTool}; !slices.Equal(got, want) {
				t.Fatalf("definitions = %v, want %v", got, want)
			}
			for _, d := range defs {
				if !bridge.IsBridge(d.Name) {
					t.Errorf("IsBridge(%q) = false", d.Name)
				}
				if strings.TrimSpace(d.Description) == "" {
					t.Errorf("%s has no description", d.Name)
				}
				compileSchema(t, d.InputSchema)
				var shape schemaShape
				if err := json.Unmarshal(d.InputSchema, &shape); err != nil {
					t.Fatalf("%s: %v", d.Name, err)
				}
				if shape.Type != "object" {
					t.Errorf("%s: type = %q, want object", d.Name, shape.Type)
				}
				if !slices.Equal(shape.Required, wantRequired[d.Name]) {
					t.Errorf("%s: required = %v, want %v", d.Name, shape.Required, wantRequired[d.Name])
				}
				for _, r := range shape.Required {
					if _, ok := shape.Properties[r]; !ok {
						t.Errorf("%s: required %q has no property", d.Name, r)
					}
				}
				// The definition renders as an MCP tool.
				var mcp map[string]json.RawMessage
				if err := json.Unmarshal([]byte(mustJSON(d)), &mcp); err != nil || mcp["inputSchema"] == nil || mcp["name"] == nil {
					t.Errorf("%s does not marshal as an MCP tool: %s", d.Name, mustJSON(d))
				}
			}

			var limit struct {
				Type    string `json:"type"`
				Minimum int    `json:"minimum"`
				Maximum int    `json:"maximum"`
			}
			var shape schemaShape
			if err := json.Unmarshal(defs[0].InputSchema, &shape); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(shape.Properties["limit"], &limit); err != nil {
				t.Fatalf("tool_search has no limit property: %v", err)
			}
			if limit.Type != "integer" || limit.Minimum != 1 || limit.Maximum != tt.wantLimit {
				t.Errorf("limit = %+v, want an integer from 1 to %d", limit, tt.wantLimit)
			}
			s := compileSchema(t, defs[0].InputSchema)
			for instance, want := range map[string]bool{
				`{"query": "x"}`: true,
				fmt.Sprintf(`{"query": "x", "limit": %d}`, tt.wantLimit):   true,
				fmt.Sprintf(`{"query": "x", "limit": %d}`, tt.wantLimit+1): false,
				`{"query": "x", "limit": 0}`:                               false,
				`{"limit": 1}`:                                             false,
			} {
				if got := valid(s, instance); got != want {
					t.Errorf("tool_search schema accepts %s: %t, want %t", instance, got, want)
				}
			}
			call := compileSchema(t, defs[2].InputSchema)
			if valid(call, `{"name": "x", "arguments": []}`) || !valid(call, `{"name": "x", "arguments": {}}`) {
				t.Errorf("tool_call schema must take an object of arguments")
			}
		})
	}
}

func TestDefinitionsDescribeTheDeferredTools(t *testing.T) {
	b := newTestBridge(t)
	desc := bridge.Definitions(b.Plan)[0].Description
	if n := len(b.Plan.Deferred); !strings.Contains(desc, strconv.Itoa(n)+" ") {
		t.Errorf("tool_search description %q does not give the deferred count %d", desc, n)
	}
	// Servers with deferred tools are named; a server whose tools are all pinned, and one
	// outside the scope, are not.
	for server, want := range map[string]bool{"github": true, "jira": true, "slack": true, "weird": true, "core": false, "secret": false} {
		if got := strings.Contains(desc, server); got != want {
			t.Errorf("description names %s: %t, want %t: %q", server, got, want, desc)
		}
	}
}

func TestDefinitionsTokenBudget(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"servers": [`)
	for i := range 200 {
		if i > 0 {
			many.WriteString(",")
		}
		name := fmt.Sprintf("server-%03d-%s", i, strings.Repeat("x", 60-11))
		fmt.Fprintf(&many, `{"name": %q, "tools": [{"name": "do_thing", "description": "Does a thing."}]}`, name)
	}
	many.WriteString(`]}`)
	synthetic := catalogtest.Snapshot(t, many.String())
	if got := len(synthetic.Servers()[0].Name); got != 60 {
		t.Fatalf("synthetic server names are %d characters, want 60", got)
	}
	on := policy.Config{Enabled: policy.On, ThresholdPct: 10, SearchDefaultLimit: 5, MaxSearchLimit: 20}
	tests := []struct {
		name    string
		snap    *catalog.Snapshot
		servers int
	}{
		{"built-in catalog", builtinSnapshot(t), len(builtinSnapshot(t).Servers())},
		{"200 servers with 60-character names", synthetic, 200},
		{"empty catalog", catalogtest.Snapshot(t, `{"servers": []}`), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := policy.Decide(tt.snap, policy.Input{Config: on})
			defs := bridge.Definitions(plan)
			total := bridge.Tokens(defs)
			if total <= 0 || total > 350 {
				t.Errorf("Tokens(Definitions) = %d, want 1..350", total)
			}
			// With the default listing, the servers' part stays within its budget.
			listed := policy.DefaultConfig()
			listed.Enabled = policy.On
			withListing := bridge.Tokens(bridge.Definitions(policy.Decide(tt.snap, policy.Input{Config: listed})))
			if withListing > total+listed.ListingTokens+20 {
				t.Errorf("with listing_tokens %d the definitions cost %d tokens, %d without", listed.ListingTokens, withListing, total)
			}
			sum := 0
			for _, d := range defs {
				sum += bridge.Tokens([]bridge.Definition{d})
			}
			if sum != total {
				t.Errorf("Tokens of the three definitions apart = %d, together = %d", sum, total)
			}
			desc := defs[0].Description
			if len(desc) > 600 {
				t.Errorf("tool_search description is %d bytes; the server list must stay bounded: %q", len(desc), desc)
			}
			if !strings.Contains(desc, strconv.Itoa(len(plan.Deferred))) {
				t.Errorf("description %q does not give the deferred count %d", desc, len(plan.Deferred))
			}
			named := 0
			for _, s := range tt.snap.Servers() {
				if strings.Contains(desc, s.Name) {
					named++
				}
			}
			if named < tt.servers {
				more := fmt.Sprintf("%d more", tt.servers-named)
				if !strings.Contains(desc, more) {
					t.Errorf("description names %d of %d servers but does not say %q: %q", named, tt.servers, more, desc)
				}
			}
			if tt.servers > 0 && named == 0 {
				t.Errorf("description names no server: %q", desc)
			}
		})
	}
}

// TestDefinitionsBuiltinGolden: the definitions a user gets by default over the
// built-in catalog (the defaults, tool search on).
func TestDefinitionsBuiltinGolden(t *testing.T) {
	cfg := policy.DefaultConfig()
	cfg.Enabled = policy.On
	plan := policy.Decide(builtinSnapshot(t), policy.Input{Config: cfg})
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(bridge.Definitions(plan)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "definitions_builtin.golden.json"), out.Bytes())
}

func TestIsBridge(t *testing.T) {
	for name, want := range map[string]bool{
		"tool_search": true, "tool_describe": true, "tool_call": true,
		"Tool_Search": false, "tool_search ": false, "tool": false, "": false, "github__tool_call": false,
	} {
		if got := bridge.IsBridge(name); got != want {
			t.Errorf("IsBridge(%q) = %t, want %t", name, got, want)
		}
	}
}

func TestHandle(t *testing.T) {
	b := newTestBridge(t)
	tests := []struct {
		tool  string
		args  string
		same  func(json.RawMessage) bridge.Result // the handler Handle must agree with
		isErr bool
	}{
		{bridge.SearchTool, `{"query": "issue"}`, b.Search, false},
		{bridge.SearchTool, `{}`, b.Search, true},
		{bridge.DescribeTool, `{"name": "jira__create_issue"}`, b.Describe, false},
		{bridge.DescribeTool, `{"name": "nope"}`, b.Describe, true},
		{bridge.CallTool, `{"name": "jira__create_issue", "arguments": {}}`, nil, true},
		{"github__create_issue", `{}`, nil, true},
		{"", `{}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			r := b.Handle(tt.tool, json.RawMessage(tt.args))
			if r.IsError != tt.isErr {
				t.Fatalf("IsError = %t, want %t: %s", r.IsError, tt.isErr, r.Text)
			}
			if tt.isErr {
				checkError(t, r, "invalid_tool_input")
			}
			if tt.same != nil {
				if want := tt.same(json.RawMessage(tt.args)); r.Text != want.Text || r.IsError != want.IsError {
					t.Errorf("Handle(%s) = %q, the handler gives %q", tt.tool, r.Text, want.Text)
				}
			}
		})
	}
}

// TestServerListing: tool_search's description names each server with its tool count
// and its tools' own subject words (not verbs, not the server's name), the largest
// servers first, within listing_tokens, then how many servers more; listing_tokens 0
// names servers only.
func TestServerListing(t *testing.T) {
	doc := `{"servers": [
	  {"name": "tracker", "tools": [{"name": "create_ticket"}, {"name": "close_ticket"}, {"name": "list_tickets"}, {"name": "get_ticket_comments"}, {"name": "add_comment"}]},
	  {"name": "mail", "tools": [{"name": "send_email"}]},
	  {"name": "maps", "tools": [{"name": "geocode_address"}, {"name": "get_directions"}]}
	]}`
	snap := catalogtest.Snapshot(t, doc)
	for _, tc := range []struct {
		budget int
		want   string
	}{
		{200, "from 3 servers: tracker (5 tools: ticket, comment), maps (2 tools: address, directions, geocode), mail (1 tool: email)."},
		{8, "from 3 servers: tracker (5 tools: ticket, comment) and 2 more."},
		{0, "(servers: tracker, mail, maps)."},
	} {
		cfg := policy.DefaultConfig()
		cfg.Enabled, cfg.ListingTokens = policy.On, tc.budget
		desc := bridge.Definitions(policy.Decide(snap, policy.Input{Config: cfg}))[0].Description
		if !strings.Contains(desc, tc.want) {
			t.Errorf("listing_tokens %d: %q, want it to hold %q", tc.budget, desc, tc.want)
		}
	}
}
