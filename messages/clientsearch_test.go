package messages_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/internal/fakellm"
)

// Claude Code (2.1.3xx) searches for tools on the client side, as Anthropic documents
// for custom search tools: its own ToolSearch tool, the MCP tools marked
// defer_loading: true (or, since 2.1.332, only a DeferredToolPlaceholder until tools
// are found, the others named in a system message), and each search answered with a
// tool_result whose content is tool_reference blocks, followed by a text block. It
// never sends a tool_search_tool_* server tool. The tools below are its shapes, cut
// short.
const (
	ccRead        = `{"name":"Read","description":"Reads a file from the local filesystem.","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"],"additionalProperties":false}}`
	ccToolSearch  = `{"name":"ToolSearch","description":"Fetches full schema definitions for deferred tools so they can be called.","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"query":{"description":"Query to find deferred tools. Use \"select:<tool_name>\" for direct selection, or keywords to search.","type":"string"},"max_results":{"description":"Maximum number of results to return (default: 5)","default":5,"type":"number"}},"required":["query"],"additionalProperties":false}}`
	ccPlaceholder = `{"name":"DeferredToolPlaceholder","description":"Reserved placeholder that keeps deferred tool loading active; never call this tool.","input_schema":{"type":"object","properties":{}},"defer_loading":true}`
	ccCreate      = `{"name":"mcp__memory__create_entities","description":"Create multiple new entities in the knowledge graph","input_schema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object"}}},"required":["entities"]},"defer_loading":true}`
	ccEcho        = `{"name":"mcp__everything__echo","description":"Echoes back the input string","input_schema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]},"defer_loading":true}`
	ccTools       = `[` + ccRead + `,` + ccToolSearch + `,` + ccPlaceholder + `,` + ccCreate + `,` + ccEcho + `]`

	ccAsk      = `{"role":"user","content":[{"type":"text","text":"Remember that toolshed was tested with Claude Code."}]}`
	ccSearch   = `{"role":"assistant","content":[{"type":"text","text":"Searching."},{"type":"tool_use","id":"toolu_01","name":"ToolSearch","input":{"query":"select:mcp__memory__create_entities"}}]}`
	ccFound    = `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"tool_reference","tool_name":"mcp__memory__create_entities"}]},{"type":"text","text":"Tool loaded.","cache_control":{"type":"ephemeral"}}]}`
	ccCall     = `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_02","name":"mcp__memory__create_entities","input":{"entities":[{"name":"toolshed","entityType":"project","observations":["tested with Claude Code"]}]}}]}`
	ccCallDone = `{"role":"user","content":[{"tool_use_id":"toolu_02","type":"tool_result","content":"{\"entities\":[{\"name\":\"toolshed\"}]}"}]}`

	// A turn of an earlier request that had a server search tool, which this one has
	// not: its search result still loads the tools it names.
	ccServerSearch = `{"role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_01","name":"tool_search_tool_regex","input":{"pattern":"entities"}},{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_01","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"mcp__memory__create_entities"}]}}]}`
	ccGoOn         = `{"role":"user","content":"Go on."}`
)

// ccBody is a Messages API request in Claude Code's shape.
func ccBody(stream bool, tools string, msgs ...string) []byte {
	s := ""
	if stream {
		s = `,"stream":true`
	}
	return []byte(`{"model":"claude-opus-5-5","max_tokens":32000,"messages":[` + strings.Join(msgs, ",") + `],"tools":` + tools + s + `}`)
}

// sendRaw sends body as it is through the SDK, streamed or not, and returns the
// message as the SDK decoded it.
func (h *harness) sendRaw(t *testing.T, stream bool, body []byte) (*anthropic.Message, error) {
	t.Helper()
	return h.send(t, stream, anthropic.MessageNewParams{}, option.WithRequestBody("application/json", body))
}

// sendCC sends a request in Claude Code's shape with msgs to a model scripted with
// replies, and checks the shape of the response.
func sendCC(t *testing.T, kind string, stream bool, msgs []string, replies []fakellm.Reply, want []string) (*harness, *anthropic.Message) {
	t.Helper()
	h := newHarnessFor(t, kind, replies...)
	msg, err := h.sendRaw(t, stream, ccBody(stream, ccTools, msgs...))
	if err != nil {
		t.Fatal(err)
	}
	if got := shape(t, msg); !equal(got, want) {
		t.Errorf("content:\n got %q\nwant %q", got, want)
	}
	return h, msg
}

// deferLoadingSent lists the tools the upstream got with a defer_loading member.
func deferLoadingSent(h *harness) []string {
	var out []string
	for _, b := range h.model.Bodies() {
		tools, _ := b["tools"].([]any)
		for _, t := range tools {
			tool := t.(map[string]any)
			if f, ok := tool["function"].(map[string]any); ok {
				tool = f
			}
			if _, ok := tool["defer_loading"]; ok {
				out = append(out, fmt.Sprint(tool["name"]))
			}
		}
	}
	return out
}

// checkToolPairs checks that every tool result the upstream got answers a tool call
// made before it in the conversation, as both APIs require: a tool_result block's
// tool_use_id (Messages API), or a tool message's tool_call_id (Chat Completions).
func checkToolPairs(bodies []map[string]any) error {
	for i, b := range bodies {
		called := map[string]bool{}
		msgs, _ := b["messages"].([]any)
		for j, m := range msgs {
			msg := m.(map[string]any)
			if id, ok := msg["tool_call_id"].(string); ok && !called[id] {
				return fmt.Errorf("upstream call %d, message %d: a tool message answers %q, which no tool call made", i+1, j, id)
			}
			for _, c := range asList(msg["tool_calls"]) {
				called[fmt.Sprint(c.(map[string]any)["id"])] = true
			}
			for _, c := range asList(msg["content"]) {
				blk, _ := c.(map[string]any)
				switch blk["type"] {
				case "tool_use":
					called[fmt.Sprint(blk["id"])] = true
				case "tool_result":
					if id := fmt.Sprint(blk["tool_use_id"]); !called[id] {
						return fmt.Errorf("upstream call %d, message %d: a tool_result answers %q, which no tool_use made", i+1, j, id)
					}
				}
			}
		}
	}
	return nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestClientSideSearch checks requests whose deferred tools are found by the client's
// own search tool, with no tool_search_tool_* server tool: the Anthropic API accepts
// them, and a tool_reference in a tool_result loads the tool it names for the rest of
// the conversation. The upstream model sees the tools not deferred and the loaded ones
// in full, without defer_loading; the client's search tool is an ordinary tool whose
// calls go back to the client.
func TestClientSideSearch(t *testing.T) {
	firstTurn := []string{"Read", "ToolSearch"}
	loaded := []string{"Read", "ToolSearch", "mcp__memory__create_entities"}
	cases := []struct {
		name    string
		msgs    []string
		replies []fakellm.Reply
		shape   []string
		stop    string
		seen    [][]string
	}{{
		name:    "client-search-first-turn",
		msgs:    []string{ccAsk},
		replies: []fakellm.Reply{fakellm.Call("Searching.", "toolu_01", "ToolSearch", `{"query":"select:mcp__memory__create_entities"}`)},
		shape:   []string{"text", "tool_use(ToolSearch)"},
		stop:    "tool_use",
		seen:    [][]string{firstTurn},
	}, {
		// The search's tool_result names the tool: the model gets its definition.
		name:    "client-search-loaded",
		msgs:    []string{ccAsk, ccSearch, ccFound},
		replies: []fakellm.Reply{fakellm.Call("", "toolu_02", "mcp__memory__create_entities", `{"entities":[{"name":"toolshed","entityType":"project","observations":["tested with Claude Code"]}]}`)},
		shape:   []string{"tool_use(mcp__memory__create_entities)"},
		stop:    "tool_use",
		seen:    [][]string{loaded},
	}, {
		// Later turns keep it loaded.
		name:    "client-search-later-turn",
		msgs:    []string{ccAsk, ccSearch, ccFound, ccCall, ccCallDone},
		replies: []fakellm.Reply{fakellm.Say("Remembered.")},
		shape:   []string{"text"},
		stop:    "end_turn",
		seen:    [][]string{loaded},
	}, {
		// A server search from an earlier turn: the model sees it as a call of the
		// search and its result, and the tool it found is loaded.
		name:    "client-search-server-history",
		msgs:    []string{ccAsk, ccServerSearch, ccGoOn},
		replies: []fakellm.Reply{fakellm.Call("", "toolu_02", "mcp__memory__create_entities", `{"entities":[]}`)},
		shape:   []string{"tool_use(mcp__memory__create_entities)"},
		stop:    "tool_use",
		seen:    [][]string{loaded},
	}, {
		// The model names a deferred tool it never loaded. With no server search tool
		// the proxy has no search to run for it, and the API never returns a search the
		// client did not offer: the call goes to the client, whose tool it is (Claude
		// Code answers it with an error that says to load the tool with ToolSearch
		// first).
		name:    "client-search-unloaded-call",
		msgs:    []string{ccAsk},
		replies: []fakellm.Reply{fakellm.Call("", "toolu_01", "mcp__everything__echo", `{"message":"hi"}`)},
		shape:   []string{"tool_use(mcp__everything__echo)"},
		stop:    "tool_use",
		seen:    [][]string{firstTurn},
	}}
	for _, c := range cases {
		eachUpstream(t, c.name, func(t *testing.T, kind string, stream bool, name string) {
			h, msg := sendCC(t, kind, stream, c.msgs, c.replies, c.shape)
			if string(msg.StopReason) != c.stop {
				t.Errorf("stop_reason %q, want %q", msg.StopReason, c.stop)
			}
			if got := upstreamTools(h); fmt.Sprint(got) != fmt.Sprint(c.seen) {
				t.Errorf("tools the model saw:\n got %v\nwant %v", got, c.seen)
			}
			if got := deferLoadingSent(h); len(got) > 0 {
				t.Errorf("tools sent upstream with defer_loading: %v", got)
			}
			if err := checkToolPairs(h.model.Bodies()); err != nil {
				t.Error(err)
			}
			if got := searchRequests(msg); got != 0 {
				t.Errorf("usage.server_tool_use.tool_search_requests %d, want 0: the client searched", got)
			}
			checkExchange(t, name, h)
		})
	}
}

// TestClientSideSearchCountTokens checks count_tokens for a request in Claude Code's
// shape: it counts what the upstream would receive, the loaded tool in and the
// deferred ones out.
func TestClientSideSearchCountTokens(t *testing.T) {
	h := newHarness(t)
	body := []byte(`{"model":"claude-opus-5-5","messages":[` + ccAsk + `,` + ccSearch + `,` + ccFound + `],"tools":` + ccTools + `}`)
	n, err := h.client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{}, option.WithRequestBody("application/json", body))
	if err != nil {
		t.Fatal(err)
	}
	got := h.model.Requests()[0].Body
	var sent struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	json.Unmarshal(got, &sent)
	var names []string
	for _, tool := range sent.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"Read", "ToolSearch", "mcp__memory__create_entities"}; !equal(names, want) {
		t.Errorf("count_tokens counted tools %v, want %v", names, want)
	}
	if want := int64(fakellm.InputTokens(got)); n.InputTokens != want {
		t.Errorf("input_tokens %d, want the upstream's %d", n.InputTokens, want)
	}
}

// ccCatalogTools are 538 real MCP tools (the built-in catalog's 478 and LiveMCPBench's
// first 60) as Claude Code sends MCP tools (mcp__SERVER__TOOL, input_schema as the
// server gave it), after ccRead and ccToolSearch: with ENABLE_TOOL_SEARCH=auto, Claude
// Code counts them all with count_tokens, none deferred, to decide whether to search;
// with deferred, each MCP tool has defer_loading: true, as in its requests.
func ccCatalogTools(t *testing.T, deferred bool) string {
	t.Helper()
	all := catalogs(t)
	parts := []string{ccRead, ccToolSearch}
	var tools []*catalog.Tool
	tools = append(tools, all["builtin"].Tools()...)
	tools = append(tools, all["livemcpbench"].Tools()[:60]...)
	for i, tool := range tools {
		schema := tool.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		server := "catalog"
		if i >= all["builtin"].Len() {
			server = "bench"
		}
		b, _ := json.Marshal(map[string]any{"name": "mcp__" + server + "__" + tool.Qualified, "description": tool.Description, "input_schema": schema})
		if deferred {
			b = append(b[:len(b)-1], `,"defer_loading":true}`...)
		}
		parts = append(parts, string(b))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestCountTokensClaudeCode checks count_tokens with 540 tools in Claude Code's shape:
// it is answered, an Anthropic upstream counts the tools as the client sent them, byte
// for byte, and with the tools deferred only those the upstream would see are counted.
func TestCountTokensClaudeCode(t *testing.T) {
	all := ccCatalogTools(t, false)
	deferred := ccCatalogTools(t, true)
	if n := strings.Count(all, `"name":"mcp__`); n < 530 {
		t.Fatalf("%d MCP tools, want Claude Code's 530 or more", n)
	}
	for _, kind := range []string{"anthropic", "openai"} {
		count := func(tools string) (int64, *harness) {
			h := newHarnessFor(t, kind)
			body := []byte(`{"model":"claude-opus-5-5","messages":[{"role":"user","content":"foo"}],"tools":` + tools + `}`)
			n, err := h.client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{}, option.WithRequestBody("application/json", body))
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			return n.InputTokens, h
		}
		nAll, h := count(all)
		nDeferred, _ := count(deferred)
		if kind == "anthropic" {
			up := h.model.Requests()[0]
			if !bytes.Equal(members(t, up.Body)["tools"], []byte(all)) {
				t.Errorf("the upstream did not get the client's tools as they were")
			}
			if want := int64(fakellm.InputTokens(up.Body)); nAll != want {
				t.Errorf("input_tokens %d, want the upstream's %d", nAll, want)
			}
		}
		// Deferred, only Read and ToolSearch are counted: a few hundred tokens.
		if nAll < 100_000 || nDeferred > 1000 {
			t.Errorf("%s: input_tokens %d for every tool, %d with them deferred", kind, nAll, nDeferred)
		}
	}
}
