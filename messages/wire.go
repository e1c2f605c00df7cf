// Package messages is toolshed's Anthropic Messages API front: it gives any model the tool
// search of Anthropic's API. Requests whose tools carry defer_loading: true and a
// tool_search_tool_regex / tool_search_tool_bm25 tool are validated as the API validates
// them; the upstream model sees only the tools not deferred plus the search tool, as an
// ordinary function; when it calls the search tool, toolshed searches, adds the
// server_tool_use and tool_search_tool_result blocks to the response, loads the tools
// found, and asks the model again, until it answers or calls a real tool. Requests whose
// client searches on its own side (a custom search tool answered with tool_reference
// blocks in a tool_result, as Claude Code's ToolSearch does) need no server search tool:
// each tool_reference loads the deferred tool it names for the rest of the conversation,
// and the search tool's calls go to the client like any other. Upstreams are an
// Anthropic-compatible API or an OpenAI-compatible Chat Completions API.
package messages

import (
	"encoding/json"
)

// Request is a Messages API request. Members toolshed does not interpret (temperature,
// metadata, thinking, ...) are kept in Extra and sent upstream as they came.
type Request struct {
	Model      string          `json:"model"`
	MaxTokens  int             `json:"max_tokens"`
	System     json.RawMessage `json:"system,omitempty"`
	Messages   []Message       `json:"messages"`
	Tools      []Tool          `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	Stream     bool            `json:"stream,omitempty"`
	// Extra holds every other member of the request, as received.
	Extra map[string]json.RawMessage `json:"-"`
	// RawQuery is the query of the client's request URL, without '?', which an
	// Anthropic upstream adds to its own (Claude Code posts to /v1/messages?beta=true).
	// It is not part of the body.
	RawQuery string `json:"-"`

	// countTokens marks a request decoded from a count_tokens body, whose members are
	// all count_tokens members: an Anthropic upstream sends every one of them.
	countTokens bool
	// client identifies who sent the request (see clientOf), and session names its
	// conversation in the search log (see sessionOf).
	client  [16]byte
	session string

	// toolsRaw is the tools array as received, when the Proxy decoded the request;
	// toolSet is its validated form, when the Proxy had seen these tools before.
	toolsRaw []byte
	toolSet  *toolSet
}

// Message is one turn: role "user" or "assistant", or "system" for instructions in the
// conversation (Claude Code sends those). Content is always a list of blocks: a string
// content is read as one text block.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`

	// Raw is the whole message as received, and is what goes out unless the message
	// was made or changed here; set it to nil after changing Role or Content.
	Raw json.RawMessage `json:"-"`
}

// Block is a content block. The fields toolshed reads are decoded; Raw is the whole block
// as received, and is what goes back out unless the block was made or changed here.
type Block struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use and server_tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result and tool_search_tool_result
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Content of a tool_result (string or blocks) or of a tool_search_tool_result (an
	// object).
	Content json.RawMessage `json:"content,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
	// tool_reference
	ToolName string `json:"tool_name,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// TextBlock returns a text block.
func TextBlock(s string) Block {
	raw := append(appendString([]byte(`{"type":"text","text":`), s), '}')
	return Block{Type: "text", Text: s, Raw: raw}
}

// ResultBlocks decodes a tool_result's content: a string is one text block.
func (b Block) ResultBlocks() ([]Block, error) { return decodeContent(b.Content) }

// Tool is one entry of a request's tools: a custom tool (name, description,
// input_schema), a tool search tool (type tool_search_tool_regex_20251119 or
// tool_search_tool_bm25_20251119, or their undated aliases), or another server tool,
// which toolshed passes through only to an Anthropic upstream.
type Tool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	DeferLoading bool            `json:"defer_loading,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// Search tool types, dated and undated.
const (
	RegexToolType      = "tool_search_tool_regex_20251119"
	BM25ToolType       = "tool_search_tool_bm25_20251119"
	RegexToolTypeAlias = "tool_search_tool_regex"
	BM25ToolTypeAlias  = "tool_search_tool_bm25"
)

// SearchKind returns "regex" or "bm25" for a tool search tool, "" for any other tool.
func (t Tool) SearchKind() string {
	switch t.Type {
	case RegexToolType, RegexToolTypeAlias:
		return "regex"
	case BM25ToolType, BM25ToolTypeAlias:
		return "bm25"
	}
	return ""
}

// IsCustom reports a client tool (no type, or type "custom").
func (t Tool) IsCustom() bool { return t.Type == "" || t.Type == "custom" }

// Response is a Messages API response.
type Response struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []Block `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        Usage   `json:"usage"`
	// Extra holds other members of the upstream's response, passed on as they came.
	Extra map[string]json.RawMessage `json:"-"`
}

var responseKnown = map[string]bool{"id": true, "type": true, "role": true, "model": true, "content": true, "stop_reason": true, "stop_sequence": true, "usage": true}

func (r *Response) UnmarshalJSON(b []byte) error {
	type plain Response
	if err := json.Unmarshal(b, (*plain)(r)); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k, v := range all {
		if !responseKnown[k] {
			if r.Extra == nil {
				r.Extra = map[string]json.RawMessage{}
			}
			r.Extra[k] = v
		}
	}
	return nil
}

func (r Response) MarshalJSON() ([]byte, error) {
	type plain Response
	b, err := json.Marshal(plain(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	return mergeObject(b, r.Extra)
}

// Usage counts tokens. Amounts of several upstream calls add up (see Add).
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	// ServerToolUse counts server tool requests; toolshed's searches are reported as
	// tool_search_requests.
	ServerToolUse *ServerToolUse `json:"server_tool_use,omitempty"`
}

// ServerToolUse counts the server tools a response used.
type ServerToolUse struct {
	WebSearchRequests  int `json:"web_search_requests"`
	WebFetchRequests   int `json:"web_fetch_requests"`
	ToolSearchRequests int `json:"tool_search_requests"`
}

// Add sums o into u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheCreationInputTokens += o.CacheCreationInputTokens
	u.CacheReadInputTokens += o.CacheReadInputTokens
	if o.ServerToolUse != nil {
		if u.ServerToolUse == nil {
			u.ServerToolUse = &ServerToolUse{}
		}
		u.ServerToolUse.WebSearchRequests += o.ServerToolUse.WebSearchRequests
		u.ServerToolUse.WebFetchRequests += o.ServerToolUse.WebFetchRequests
		u.ServerToolUse.ToolSearchRequests += o.ServerToolUse.ToolSearchRequests
	}
}

// Event is one server-sent event of a streamed response: its name and its data.
type Event struct {
	Name string
	Data json.RawMessage
}

// mergeObject adds extra members to the JSON object b.
func mergeObject(b []byte, extra map[string]json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return json.Marshal(m)
}
