package messages_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/fakellm"
)

// ccAnnounce is Claude Code 2.1.332's system message naming its deferred tools (cut
// short): its own WebFetch and two MCP tools, whose definitions it does not send.
const ccAnnounce = `{"role":"system","content":"# Environment\n - Platform: linux\n\nThe following deferred tools are now available via ToolSearch. Their schemas are NOT loaded — calling them directly will fail with InputValidationError. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:\nWebFetch\nmcp__memory__create_entities\nmcp__memory__read_graph\nmcp__everything__echo\n\nToday's date is 2026-12-07."}`

// ccTools2 are the tools Claude Code 2.1.332 sends before any is found.
const ccTools2 = `[` + ccRead + `,` + ccToolSearch + `,` + ccPlaceholder + `]`

// ccCatalog is the catalog of the MCP servers Claude Code has, as toolshed proxy
// --catalog reads it.
func ccCatalog(t *testing.T) *catalog.Snapshot {
	t.Helper()
	sources, problems := catalog.Parse([]byte(`{"servers":[
		{"name":"memory","tools":[
			{"name":"create_entities","description":"Create multiple new entities in the knowledge graph","inputSchema":{"type":"object","properties":{"entities":{"type":"array"}}}},
			{"name":"read_graph","description":"Read the entire knowledge graph","inputSchema":{"type":"object","properties":{}}}]},
		{"name":"everything","tools":[
			{"name":"echo","description":"Echoes back the input string","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]}]}`), "test", "")
	snap, more := catalog.Build(sources)
	if len(problems)+len(more) > 0 {
		t.Fatal(problems, more)
	}
	return snap
}

// searchCall is the model calling Claude Code's ToolSearch with input.
func searchCall(input string) fakellm.Reply {
	return fakellm.Call("", "toolu_01", "ToolSearch", input)
}

// toolUseInput returns the input of the response's tool_use block.
func toolUseInput(t *testing.T, msg *anthropic.Message) string {
	t.Helper()
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			var c bytes.Buffer
			json.Compact(&c, b.Input)
			return c.String()
		}
	}
	t.Fatalf("no tool_use in %v", shape(t, msg))
	return ""
}

// sentSearchInput returns the input of the ToolSearch call toolu_01 in the conversation
// the upstream got on its last call, in either wire format.
func sentSearchInput(t *testing.T, h *harness) string {
	t.Helper()
	bodies := h.model.Bodies()
	for _, m := range bodies[len(bodies)-1]["messages"].([]any) {
		msg := m.(map[string]any)
		for _, c := range asList(msg["tool_calls"]) { // Chat Completions
			f := c.(map[string]any)["function"].(map[string]any)
			if f["name"] == "ToolSearch" {
				return f["arguments"].(string)
			}
		}
		for _, c := range asList(msg["content"]) {
			if b, _ := c.(map[string]any); b["type"] == "tool_use" && b["id"] == "toolu_01" {
				in, _ := json.Marshal(b["input"])
				return string(in)
			}
		}
	}
	t.Fatal("the upstream got no ToolSearch call")
	return ""
}

// TestClientSearchRanked checks that the model's call of Claude Code's ToolSearch
// reaches the client as the exact selection of toolshed's best tools, streamed or not,
// from either upstream, and that the model reads its own words again on the next turn
// while another client sending the same call id does not.
func TestClientSearchRanked(t *testing.T) {
	const asked = `{"query":"echo back the input string","max_results":1}`
	const answered = `{"query":"select:mcp__everything__echo","max_results":1}`
	eachUpstream(t, "client-search-ranked", func(t *testing.T, kind string, stream bool, name string) {
		h := newHarnessFor(t, kind, searchCall(asked), fakellm.Say("Echoed."), fakellm.Say("Echoed."))
		msg, err := h.sendRaw(t, stream, ccBody(stream, ccTools, ccAsk))
		if err != nil {
			t.Fatal(err)
		}
		if got := toolUseInput(t, msg); got != answered {
			t.Fatalf("the client got ToolSearch input %s, want %s", got, answered)
		}
		// Claude Code sends the call back as it got it, with its answer.
		call := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_01","name":"ToolSearch","input":` + answered + `}]}`
		found := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"tool_reference","tool_name":"mcp__everything__echo"}]}]}`
		if _, err := h.sendRaw(t, stream, ccBody(stream, ccTools, ccAsk, call, found)); err != nil {
			t.Fatal(err)
		}
		if got := sentSearchInput(t, h); !sameJSON(got, asked) {
			t.Errorf("the model read its call as %s, want its own %s", got, asked)
		}
		other := h.client.Messages
		_, err = other.New(t.Context(), anthropic.MessageNewParams{}, option.WithAPIKey("another-client"),
			option.WithRequestBody("application/json", ccBody(false, ccTools, ccAsk, call, found)))
		if err != nil {
			t.Fatal(err)
		}
		if got := sentSearchInput(t, h); !sameJSON(got, answered) {
			t.Errorf("another client's request carried %s to the model, want the call as that client sent it", got)
		}
	})
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// TestClientSearchCases checks when the proxy answers Claude Code's ToolSearch and
// with what, for Claude Code 2.1.332's requests (deferred tools named in a system
// message, their definitions from the proxy's catalog).
func TestClientSearchCases(t *testing.T) {
	cases := []struct {
		name    string
		input   string
		catalog bool
		off     bool
		want    string // "" when the call must reach the client as the model made it
		warn    string
	}{
		{name: "ranked", input: `{"query":"echo the string back"}`, catalog: true, want: `{"query":"select:mcp__everything__echo"}`},
		{name: "max-results", input: `{"query":"knowledge graph entities","max_results":1}`, catalog: true, want: `{"query":"select:mcp__memory__create_entities","max_results":1}`},
		{name: "required-name-word", input: `{"query":"+memory graph"}`, catalog: true, want: `{"query":"select:mcp__memory__read_graph,mcp__memory__create_entities"}`},
		{name: "client-tool-by-name", input: `{"query":"web fetch a page","max_results":1}`, catalog: true, want: `{"query":"select:WebFetch","max_results":1}`},
		{name: "selection", input: `{"query":"select:mcp__everything__echo"}`, catalog: true},
		{name: "no-match", input: `{"query":"zzqx"}`, catalog: true},
		{name: "bad-max-results", input: `{"query":"echo","max_results":"five"}`, catalog: true},
		{name: "off", input: `{"query":"echo the string back"}`, catalog: true, off: true},
		{name: "no-definitions", input: `{"query":"echo the string back"}`, warn: "first=mcp__everything__echo"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, searchCall(c.input))
			var log strings.Builder
			h.proxy.Logger = slog.New(slog.NewTextHandler(&log, nil))
			if c.catalog {
				h.proxy.ClientTools = ccCatalog(t)
			}
			h.proxy.NoClientSearch = c.off
			msg, err := h.sendRaw(t, false, ccBody(false, ccTools2, ccAsk, ccAnnounce))
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if want == "" {
				want = c.input
			}
			if got := toolUseInput(t, msg); !sameJSON(got, want) {
				t.Errorf("the client got ToolSearch input %s, want %s", got, want)
			}
			if c.warn != "" && !strings.Contains(log.String(), c.warn) {
				t.Errorf("the log does not say which tool toolshed has no definition of (%s):\n%s", c.warn, log.String())
			}
		})
	}
}

// TestClientSearchServerNames checks that a catalog's tools are matched with Claude
// Code's names for them although toolshed writes server names its own way ("Ant Design
// Components" is Ant-Design-Components to toolshed, Ant_Design_Components to Claude
// Code, and "." in a tool name is "_" to Claude Code), and that the selection names them
// as Claude Code does.
func TestClientSearchServerNames(t *testing.T) {
	sources, _ := catalog.Parse([]byte(`{"servers":[{"name":"Ant Design Components","tools":[
		{"name":"get.component-changelog","description":"List the changelog of one component","inputSchema":{"type":"object"}},
		{"name":"list-components","description":"List every component","inputSchema":{"type":"object"}}]}]}`), "test", "")
	snap, problems := catalog.Build(sources)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	announce := `{"role":"system","content":"The following deferred tools are now available via ToolSearch. Use ToolSearch with query \"select:<name>[,<name>...]\" to load tool schemas before calling them:\nmcp__Ant_Design_Components__get_component-changelog\nmcp__Ant_Design_Components__list-components"}`
	h := newHarness(t, searchCall(`{"query":"component changelog"}`))
	h.proxy.ClientTools = snap
	msg, err := h.sendRaw(t, false, ccBody(false, ccTools2, ccAsk, announce))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"query":"select:mcp__Ant_Design_Components__get_component-changelog,mcp__Ant_Design_Components__list-components"}`
	if got := toolUseInput(t, msg); !sameJSON(got, want) {
		t.Errorf("the client got ToolSearch input %s, want %s", got, want)
	}
}

// TestClientSearchFewUnknown checks that a few deferred MCP tools toolshed has no
// definition of (a server lists some tools to some clients only) are ranked by their
// names, with the rest ranked in full, and the log says which.
func TestClientSearchFewUnknown(t *testing.T) {
	var tools, names []string
	for i := range 10 {
		tools = append(tools, fmt.Sprintf(`{"name":"tool%d","description":"Does thing number %d","inputSchema":{"type":"object"}}`, i, i))
		names = append(names, fmt.Sprintf("mcp__many__tool%d", i))
	}
	sources, _ := catalog.Parse([]byte(`{"servers":[{"name":"many","tools":[`+strings.Join(tools, ",")+`]}]}`), "test", "")
	snap, _ := catalog.Build(sources)
	announce := `{"role":"system","content":"The following deferred tools are now available via ToolSearch:\n` + strings.Join(names, `\n`) + `\nmcp__many__get-roots-list"}`
	h := newHarness(t, searchCall(`{"query":"list the roots","max_results":1}`))
	var log strings.Builder
	h.proxy.Logger = slog.New(slog.NewTextHandler(&log, nil))
	h.proxy.ClientTools = snap
	msg, err := h.sendRaw(t, false, ccBody(false, ccTools2, ccAsk, announce))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := toolUseInput(t, msg), `{"query":"select:mcp__many__get-roots-list","max_results":1}`; !sameJSON(got, want) {
		t.Errorf("the client got ToolSearch input %s, want %s", got, want)
	}
	if !strings.Contains(log.String(), "ranks them by their names") || !strings.Contains(log.String(), "first=mcp__many__get-roots-list") {
		t.Errorf("the log does not say which tool is ranked by name:\n%s", log.String())
	}
}

// TestClientSearchLearned checks that with no catalog the proxy ranks with the
// definitions the client's own earlier requests carried (Claude Code with
// ENABLE_TOOL_SEARCH=auto counts every tool in full with count_tokens first), and only
// for that client: another key's search is left to it.
func TestClientSearchLearned(t *testing.T) {
	full := `[` + ccRead + `,` + ccToolSearch + `,` +
		`{"name":"mcp__memory__create_entities","description":"Create multiple new entities in the knowledge graph","input_schema":{"type":"object","properties":{}}},` +
		`{"name":"mcp__memory__read_graph","description":"Read the entire knowledge graph","input_schema":{"type":"object","properties":{}}},` +
		`{"name":"mcp__everything__echo","description":"Echoes back the input string","input_schema":{"type":"object","properties":{"message":{"type":"string"}}}}]`
	h := newHarness(t, searchCall(`{"query":"echo the string back"}`), searchCall(`{"query":"echo the string back"}`))
	count := []byte(`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"foo"}],"tools":` + full + `}`)
	if _, err := h.client.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{}, option.WithRequestBody("application/json", count)); err != nil {
		t.Fatal(err)
	}
	msg, err := h.sendRaw(t, false, ccBody(false, ccTools2, ccAsk, ccAnnounce))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := toolUseInput(t, msg), `{"query":"select:mcp__everything__echo"}`; !sameJSON(got, want) {
		t.Errorf("the client got ToolSearch input %s, want %s", got, want)
	}
	other, err := h.client.Messages.New(t.Context(), anthropic.MessageNewParams{}, option.WithAPIKey("another-client"),
		option.WithRequestBody("application/json", ccBody(false, ccTools2, ccAsk, ccAnnounce)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := toolUseInput(t, other), `{"query":"echo the string back"}`; !sameJSON(got, want) {
		t.Errorf("another client got ToolSearch input %s, want the call as the model made it: the definitions were the first client's", got)
	}
}
