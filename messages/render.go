package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolshed/toolshed/internal/jsonscan"
)

// loadedTools returns the deferred tools a conversation has already loaded: those its
// tool_reference blocks name (in tool search results, server or client side) and those
// its assistant turns called. They are sent to the model again without a new search.
func (pr *prepared) loadedTools(msgs []Message) map[string]bool {
	loaded := map[string]bool{}
	add := func(name string) {
		if _, ok := pr.deferred[name]; ok {
			loaded[name] = true
		}
	}
	for _, m := range msgs {
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				add(b.Name)
			case "tool_search_tool_result":
				names, _, _ := searchResultRefs(b.Content)
				for _, n := range names {
					add(n)
				}
			case "tool_result":
				inner, _ := b.ResultBlocks()
				for _, ib := range inner {
					if ib.Type == "tool_reference" {
						add(ib.ToolName)
					}
				}
			case "tool_reference":
				add(b.ToolName)
			}
		}
	}
	return loaded
}

// render builds the request the upstream model sees: the tools not deferred, the loaded
// ones, and each search tool as an ordinary custom tool; and the conversation with the
// tool search blocks turned into ordinary tool_use / tool_result pairs.
func (pr *prepared) render(msgs []Message, loaded map[string]bool) *Request {
	out := *pr.req
	out.Tools = nil
	for _, t := range pr.req.Tools {
		switch {
		case t.SearchKind() != "":
			out.Tools = append(out.Tools, searchFunction(t))
		case t.DeferLoading && !loaded[t.Name]:
			// Not seen by the model until found.
		default:
			out.Tools = append(out.Tools, withoutDeferLoading(t))
		}
	}
	out.Messages = renderMessages(pr, msgs)
	return &out
}

// searchFunction is a tool search tool as an ordinary function the model can call.
func searchFunction(t Tool) Tool {
	var desc, schema string
	if t.SearchKind() == "regex" {
		desc = "Search the tools that are available but not yet loaded, with a regular expression (Python re syntax, " +
			"case-insensitive) matched against tool names, descriptions and argument names and descriptions. " +
			"The tools found are loaded and can be called right after."
		schema = `{"type":"object","properties":{"pattern":{"type":"string","description":"A regular expression, at most 200 characters, e.g. \"weather\" or \"github.*issue\""},"limit":{"type":"integer","minimum":1,"maximum":10000,"description":"Most tools to return (default 5)"}},"required":["pattern"]}`
	} else {
		desc = "Search the tools that are available but not yet loaded, by describing in a few words what the tool " +
			"should do. The tools found are loaded and can be called right after."
		schema = `{"type":"object","properties":{"query":{"type":"string","description":"What the tool does, at most 500 characters, e.g. \"create a github issue\""},"limit":{"type":"integer","minimum":1,"maximum":10000,"description":"Most tools to return (default 5)"}},"required":["query"]}`
	}
	return Tool{Name: t.Name, Description: desc, InputSchema: json.RawMessage(schema)}
}

// withoutDeferLoading returns t without its defer_loading member, which upstreams that
// have no tool search reject. The other members keep their bytes and order.
func withoutDeferLoading(t Tool) Tool {
	t.DeferLoading = false
	if !bytes.Contains(t.Raw, []byte(`"defer_loading"`)) {
		return t
	}
	t.Raw = withMember(t.Raw, "defer_loading", nil)
	return t
}

// withMember returns the JSON object obj with the value of its member key replaced by
// value, or the member removed when value is nil; the other members keep their bytes
// and order.
func withMember(obj []byte, key string, value []byte) []byte {
	out := make([]byte, 1, len(obj)+len(value))
	out[0] = '{'
	jsonscan.Members(obj, func(k string, v []byte) bool {
		if k == key {
			if value == nil {
				return true
			}
			v = value
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(appendString(out, k), ':')
		out = append(out, v...)
		return true
	})
	return append(out, '}')
}

// renderMessages rewrites the conversation for a model without tool search: in an
// assistant turn, a server_tool_use of the search tool becomes a tool_use, and its
// tool_search_tool_result becomes a user turn with the matching tool_result, after which
// the assistant turn goes on; a tool_reference in a client's tool_result becomes a line
// of text saying the tool is loaded. Consecutive user or assistant turns are merged;
// system messages stay where they are. A message with nothing to rewrite keeps its
// bytes.
func renderMessages(pr *prepared, msgs []Message) []Message {
	var out []Message
	push := func(m Message) {
		if len(m.Content) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role && m.Role != "system" {
			merged := append(append([]Block(nil), out[n-1].Content...), m.Content...)
			out[n-1] = Message{Role: m.Role, Content: merged}
			return
		}
		out = append(out, m)
	}
	for _, m := range msgs {
		var cur []Block
		changed := false
		searched := searchUseIDs(m)
		for _, b := range m.Content {
			switch {
			case m.Role == "assistant" && b.Type == "server_tool_use" && (pr.searchTool(b.Name) != nil || searched[b.ID]):
				cur = append(cur, Block{Type: "tool_use", ID: b.ID, Name: b.Name, Input: orEmptyObject(b.Input)})
				changed = true
			case m.Role == "assistant" && b.Type == "tool_search_tool_result":
				push(Message{Role: "assistant", Content: cur})
				cur = nil
				push(Message{Role: "user", Content: []Block{searchResultForModel(pr, b)}})
				changed = true
			case b.Type == "tool_result":
				r, ok := renderToolResult(b)
				changed = changed || ok
				cur = append(cur, r)
			default:
				cur = append(cur, b)
			}
		}
		if !changed {
			push(m)
			continue
		}
		push(Message{Role: m.Role, Content: cur})
	}
	return out
}

// searchUseIDs returns the ids of the server tool uses an assistant message's
// tool_search_tool_result blocks answer: tool searches, even when the request no
// longer has the search tool that ran them (its client searches on its side now).
func searchUseIDs(m Message) map[string]bool {
	if m.Role != "assistant" {
		return nil
	}
	var ids map[string]bool
	for _, b := range m.Content {
		if b.Type == "tool_search_tool_result" {
			if ids == nil {
				ids = map[string]bool{}
			}
			ids[b.ToolUseID] = true
		}
	}
	return ids
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	return raw
}

// renderToolResult replaces tool_reference blocks in a tool_result by text, and reports
// whether there were any. The result's other members (cache_control, is_error, ...)
// and other blocks keep their bytes.
func renderToolResult(b Block) (Block, bool) {
	if !bytes.Contains(b.Content, []byte(`"tool_reference"`)) {
		return b, false
	}
	inner, err := b.ResultBlocks()
	if err != nil {
		return b, false
	}
	changed := false
	for i, ib := range inner {
		if ib.Type == "tool_reference" {
			inner[i] = TextBlock(fmt.Sprintf("Tool %s is loaded and can be called now.", ib.ToolName))
			changed = true
		}
	}
	if !changed {
		return b, false
	}
	content := []byte{'['}
	for i, ib := range inner {
		if i > 0 {
			content = append(content, ',')
		}
		content, _ = ib.appendJSON(content)
	}
	content = append(content, ']')
	out := Block{Type: "tool_result", ToolUseID: b.ToolUseID, Content: content, IsError: b.IsError}
	if len(b.Raw) > 0 {
		out.Raw = withMember(b.Raw, "content", content)
	}
	return out, true
}

// searchResultForModel is the tool_result the model sees for a tool search: the tools
// found, with a line about each, or the error.
func searchResultForModel(pr *prepared, b Block) Block {
	names, code, _ := searchResultRefs(b.Content)
	var text string
	isError := false
	switch {
	case code != "":
		var c struct {
			Message string `json:"error_message"`
		}
		json.Unmarshal(b.Content, &c)
		text, isError = fmt.Sprintf("Tool search failed (%s): %s", code, c.Message), true
	case len(names) == 0:
		text = "No tools matched. Try other words (or a broader pattern)."
	default:
		var lines []string
		for _, n := range names {
			line := "- " + n
			if t, ok := pr.names[n]; ok && t.Description != "" {
				line += ": " + firstLine(t.Description)
			}
			lines = append(lines, line)
		}
		text = fmt.Sprintf("Found %d tools; they are loaded and can be called now:\n%s", len(names), strings.Join(lines, "\n"))
	}
	content := append(append([]byte{'['}, TextBlock(text).Raw...), ']')
	return Block{Type: "tool_result", ToolUseID: b.ToolUseID, Content: content, IsError: isError}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
