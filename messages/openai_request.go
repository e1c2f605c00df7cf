package messages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The translation of a Messages API request into a Chat Completions request.

type oaRequest struct {
	Model               string           `json:"model"`
	Messages            []oaMessage      `json:"messages"`
	Tools               []oaTool         `json:"tools,omitempty"`
	ToolChoice          any              `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool            `json:"parallel_tool_calls,omitempty"`
	MaxCompletionTokens int              `json:"max_completion_tokens,omitempty"`
	MaxTokens           int              `json:"max_tokens,omitempty"`
	Temperature         json.RawMessage  `json:"temperature,omitempty"`
	TopP                json.RawMessage  `json:"top_p,omitempty"`
	Stop                []string         `json:"stop,omitempty"`
	User                string           `json:"user,omitempty"`
	Stream              bool             `json:"stream,omitempty"`
	StreamOptions       *oaStreamOptions `json:"stream_options,omitempty"`
}

type oaStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaMessage struct {
	Role       string       `json:"role"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Content    any          `json:"content"` // string, []any of parts, or nil (null)
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
}

type oaTextPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type oaImagePart struct {
	Type     string     `json:"type"`
	ImageURL oaImageURL `json:"image_url"`
}

type oaImageURL struct {
	URL string `json:"url"`
}

type oaToolCall struct {
	ID       string         `json:"id"`
	Type     string         `json:"type"`
	Function oaFunctionCall `json:"function"`
}

type oaFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaTool struct {
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type oaNamedChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// ToOpenAI returns the Chat Completions request body for a Messages API request, for the
// model given (req.Model when model is empty). The members map as this table says; a
// member it does not name is dropped and the request goes on without it, since strict
// servers reject members they do not know:
//
//	Messages API                           Chat Completions
//	model                                  model (the model given, when there is one)
//	max_tokens                             max_completion_tokens, and max_tokens (see OpenAI)
//	system                                 a first system message (text blocks joined by a blank line)
//	messages: role "system"                a system message in its place (Claude Code sends these)
//	messages: role "user"                  its tool_results as tool messages, then one user message
//	messages: role "assistant"             one assistant message: its text, and tool_use as tool_calls
//	tools (custom tools)                   function tools; server and Anthropic-defined tools left out
//	tool_choice auto, any, tool, none      "auto", "required", the named function, "none" (with tools)
//	tool_choice.disable_parallel_tool_use  parallel_tool_calls: false (with tools)
//	temperature, top_p                     temperature, top_p, as they are
//	stop_sequences                         stop
//	metadata.user_id                       user; its SHA-256 in hex past 64 characters, OpenAI's limit
//	stream                                 stream, and stream_options.include_usage
//	top_k                                  dropped: Chat Completions has none
//	thinking, output_config (effort)       dropped: reasoning_effort fails on models that do not reason
//	context_management, mcp_servers,       dropped: Anthropic's server features
//	container, service_tier, speed, ...
//
// Within messages:
//
//   - A user message's text blocks become its content: a string for a single text block,
//     content parts otherwise. Image blocks become image_url parts (a data: URL for a
//     base64 source, the URL itself for a url source). Plain-text documents (text or
//     content source) are sent as text headed "Document: TITLE"; other documents (PDF,
//     url, file) and images by file_id cannot be sent and are replaced by a text part
//     saying what was dropped. search_result blocks become text.
//   - tool_result blocks become role "tool" messages (tool_call_id, content a string:
//     text blocks joined with a newline), in order and before the rest of that user
//     message. is_error: true prefixes the content with "Error: ", since Chat Completions
//     has no error flag. Images in a tool result cannot go in a tool message: they follow
//     in the next user message, after a text part naming the tool call, and the tool
//     message says so.
//   - An assistant message becomes one message: its text blocks (joined with a blank
//     line; null when there are none) and its tool_use blocks as tool_calls, arguments
//     the compact JSON of the input. thinking, redacted_thinking and server tool blocks
//     are dropped.
//   - A system message's text blocks are joined with a blank line; other blocks in a
//     system prompt are a 400, as in the top-level system.
//   - cache_control members are dropped everywhere: OpenAI caches prompt prefixes by
//     itself.
func ToOpenAI(req *Request, model string) ([]byte, error) {
	oreq, err := toOAIRequest(req, model)
	if err != nil {
		return nil, err
	}
	return oaMarshal(oreq)
}

func toOAIRequest(req *Request, model string) (*oaRequest, error) {
	if model == "" {
		model = req.Model
	}
	out := &oaRequest{Model: model, Messages: []oaMessage{}, MaxCompletionTokens: req.MaxTokens, MaxTokens: req.MaxTokens}

	if sys, err := oaSystemText(req.System); err != nil {
		return nil, err
	} else if sys != "" {
		out.Messages = append(out.Messages, oaMessage{Role: "system", Content: sys})
	}
	for i, m := range req.Messages {
		var msgs []oaMessage
		var err error
		switch m.Role {
		case "user":
			msgs, err = oaUserMessages(m.Content)
		case "assistant":
			msgs, err = oaAssistantMessage(m.Content)
		case "system":
			// In place, as Chat Completions takes system messages anywhere.
			var text string
			if text, err = oaSystemBlocks(m.Content); err == nil {
				msgs = []oaMessage{{Role: "system", Content: text}}
			}
		default:
			err = fmt.Errorf("unexpected role %q", m.Role)
		}
		if err != nil {
			return nil, invalid("messages.%d: %v", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}

	for _, t := range req.Tools {
		if !t.IsCustom() {
			continue
		}
		params := t.InputSchema
		if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, oaTool{Type: "function", Function: oaFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		var tc struct {
			Type                   string `json:"type"`
			Name                   string `json:"name"`
			DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
		}
		if err := json.Unmarshal(req.ToolChoice, &tc); err != nil {
			return nil, invalid("tool_choice: %v", err)
		}
		var choice any
		switch tc.Type {
		case "auto":
			choice = "auto"
		case "any":
			choice = "required"
		case "none":
			choice = "none"
		case "tool":
			if tc.Name == "" {
				return nil, invalid("tool_choice.name: Field required")
			}
			named := oaNamedChoice{Type: "function"}
			named.Function.Name = tc.Name
			choice = named
		default:
			return nil, invalid("tool_choice.type: unknown type %q", tc.Type)
		}
		if len(out.Tools) > 0 {
			out.ToolChoice = choice
			if tc.DisableParallelToolUse && tc.Type != "none" {
				f := false
				out.ParallelToolCalls = &f
			}
		}
	}

	if v, ok := req.Extra["temperature"]; ok && string(v) != "null" {
		out.Temperature = v
	}
	if v, ok := req.Extra["top_p"]; ok && string(v) != "null" {
		out.TopP = v
	}
	if v, ok := req.Extra["stop_sequences"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &out.Stop); err != nil {
			return nil, invalid("stop_sequences: %v", err)
		}
	}
	if v, ok := req.Extra["metadata"]; ok {
		var md struct {
			UserID string `json:"user_id"`
		}
		if json.Unmarshal(v, &md) == nil {
			out.User = oaUser(md.UserID)
		}
	}
	if req.Stream {
		out.Stream = true
		out.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	}
	return out, nil
}

// oaMaxUser is the longest user OpenAI takes: past it, it answers 400 "Invalid 'user':
// string too long. Expected a string with maximum length 64".
const oaMaxUser = 64

// oaUser is metadata.user_id as Chat Completions' user: as it is when OpenAI takes it,
// else its SHA-256 in hex, 64 characters, which stays one stable id for one user id.
// Claude Code sends a JSON object of about 150 characters there.
func oaUser(id string) string {
	if len(id) <= oaMaxUser {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// oaSystemText reads system: a string or a list of text blocks.
func oaSystemText(raw json.RawMessage) (string, error) {
	blocks, err := decodeContent(raw)
	if err != nil {
		return "", invalid("system: %v", err)
	}
	text, err := oaSystemBlocks(blocks)
	if err != nil {
		return "", invalid("system: %v", err)
	}
	return text, nil
}

// oaSystemBlocks joins the text blocks of a system prompt or system message with a
// blank line.
func oaSystemBlocks(blocks []Block) (string, error) {
	var texts []string
	for _, b := range blocks {
		if b.Type != "text" {
			return "", fmt.Errorf("blocks of a system prompt must be text, not %q", b.Type)
		}
		texts = append(texts, b.Text)
	}
	return strings.Join(texts, "\n\n"), nil
}

// oaBlockRaw is a block's JSON, for the members Block does not decode.
func oaBlockRaw(b Block) json.RawMessage {
	if len(b.Raw) > 0 {
		return b.Raw
	}
	raw, _ := json.Marshal(b)
	return raw
}

type oaMediaSource struct {
	Type      string          `json:"type"`
	MediaType string          `json:"media_type"`
	Data      json.RawMessage `json:"data"`
	URL       string          `json:"url"`
	FileID    string          `json:"file_id"`
	Content   json.RawMessage `json:"content"`
}

type oaMediaBlock struct {
	Source  oaMediaSource `json:"-"`
	Title   string        `json:"title"`
	Context string        `json:"context"`
	// search_result
	Content   json.RawMessage `json:"content"`
	SourceRaw json.RawMessage `json:"source"` // an object; a string in search_result
}

// oaDecodeMedia reads the members of image, document and search_result blocks.
func oaDecodeMedia(b Block) (oaMediaBlock, error) {
	var m oaMediaBlock
	if err := json.Unmarshal(oaBlockRaw(b), &m); err != nil {
		return m, err
	}
	if src := bytes.TrimSpace(m.SourceRaw); len(src) > 0 && src[0] == '{' {
		if err := json.Unmarshal(src, &m.Source); err != nil {
			return m, fmt.Errorf("source: %v", err)
		}
	}
	return m, nil
}

func oaString(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// oaImage translates an image block, or says why it cannot.
func oaImage(b Block) (any, error) {
	m, err := oaDecodeMedia(b)
	if err != nil {
		return nil, err
	}
	switch m.Source.Type {
	case "base64":
		return oaImagePart{Type: "image_url", ImageURL: oaImageURL{URL: "data:" + m.Source.MediaType + ";base64," + oaString(m.Source.Data)}}, nil
	case "url":
		return oaImagePart{Type: "image_url", ImageURL: oaImageURL{URL: m.Source.URL}}, nil
	case "file":
		return oaTextPart{Type: "text", Text: fmt.Sprintf("[image %s omitted: files cannot be sent to this model]", m.Source.FileID)}, nil
	}
	return nil, fmt.Errorf("image source type %q is not supported", m.Source.Type)
}

// oaDocumentText translates a document block to text: its text when it is plain text, a
// note saying what was dropped otherwise.
func oaDocumentText(b Block) (string, error) {
	m, err := oaDecodeMedia(b)
	if err != nil {
		return "", err
	}
	head := "Document"
	if m.Title != "" {
		head += ": " + m.Title
	}
	if m.Context != "" {
		head += "\n" + m.Context
	}
	switch m.Source.Type {
	case "text":
		return head + "\n\n" + oaString(m.Source.Data), nil
	case "content":
		inner, err := decodeContent(m.Source.Content)
		if err != nil {
			return "", err
		}
		var texts []string
		for _, ib := range inner {
			if ib.Type == "text" {
				texts = append(texts, ib.Text)
			} else {
				texts = append(texts, fmt.Sprintf("[%s block omitted]", ib.Type))
			}
		}
		return head + "\n\n" + strings.Join(texts, "\n"), nil
	}
	what := m.Source.MediaType
	switch m.Source.Type {
	case "url":
		what = m.Source.URL
	case "file":
		what = "file " + m.Source.FileID
	}
	if what == "" {
		what = m.Source.Type
	}
	name := ""
	if m.Title != "" {
		name = " " + strconv.Quote(m.Title)
	}
	return fmt.Sprintf("[document%s (%s) omitted: this model cannot read documents]", name, what), nil
}

func oaSearchResultText(b Block) (string, error) {
	m, err := oaDecodeMedia(b)
	if err != nil {
		return "", err
	}
	inner, err := decodeContent(m.Content)
	if err != nil {
		return "", err
	}
	var texts []string
	for _, ib := range inner {
		if ib.Type == "text" {
			texts = append(texts, ib.Text)
		}
	}
	return fmt.Sprintf("Search result: %s (%s)\n%s", m.Title, oaString(m.SourceRaw), strings.Join(texts, "\n")), nil
}

// oaUserMessages translates a user message: its tool results first, as tool messages,
// then the rest as one user message.
func oaUserMessages(blocks []Block) ([]oaMessage, error) {
	var out []oaMessage
	var parts []any
	var toolImages []any
	for i, b := range blocks {
		switch b.Type {
		case "tool_result":
			content, images, err := oaToolResultContent(b)
			if err != nil {
				return nil, fmt.Errorf("content.%d: %v", i, err)
			}
			if len(images) > 0 {
				toolImages = append(toolImages, oaTextPart{Type: "text", Text: "Images returned by tool call " + b.ToolUseID + ":"})
				toolImages = append(toolImages, images...)
			}
			out = append(out, oaMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: content})
		case "text":
			parts = append(parts, oaTextPart{Type: "text", Text: b.Text})
		case "image":
			p, err := oaImage(b)
			if err != nil {
				return nil, fmt.Errorf("content.%d: %v", i, err)
			}
			parts = append(parts, p)
		case "document":
			t, err := oaDocumentText(b)
			if err != nil {
				return nil, fmt.Errorf("content.%d: %v", i, err)
			}
			parts = append(parts, oaTextPart{Type: "text", Text: t})
		case "search_result":
			t, err := oaSearchResultText(b)
			if err != nil {
				return nil, fmt.Errorf("content.%d: %v", i, err)
			}
			parts = append(parts, oaTextPart{Type: "text", Text: t})
		default:
			parts = append(parts, oaTextPart{Type: "text", Text: fmt.Sprintf("[%s block omitted]", b.Type)})
		}
	}
	parts = append(toolImages, parts...)
	switch {
	case len(parts) == 1:
		if t, ok := parts[0].(oaTextPart); ok {
			out = append(out, oaMessage{Role: "user", Content: t.Text})
		} else {
			out = append(out, oaMessage{Role: "user", Content: parts})
		}
	case len(parts) > 1:
		out = append(out, oaMessage{Role: "user", Content: parts})
	case len(out) == 0:
		out = append(out, oaMessage{Role: "user", Content: ""})
	}
	return out, nil
}

// oaToolResultContent is a tool_result's content as a string, and the images it held.
func oaToolResultContent(b Block) (string, []any, error) {
	inner, err := b.ResultBlocks()
	if err != nil {
		return "", nil, err
	}
	var texts []string
	var images []any
	for _, ib := range inner {
		switch ib.Type {
		case "text":
			texts = append(texts, ib.Text)
		case "image":
			p, err := oaImage(ib)
			if err != nil {
				return "", nil, err
			}
			if t, ok := p.(oaTextPart); ok {
				texts = append(texts, t.Text)
				continue
			}
			images = append(images, p)
			texts = append(texts, "[image: see the next user message]")
		case "document":
			t, err := oaDocumentText(ib)
			if err != nil {
				return "", nil, err
			}
			texts = append(texts, t)
		case "search_result":
			t, err := oaSearchResultText(ib)
			if err != nil {
				return "", nil, err
			}
			texts = append(texts, t)
		case "tool_reference":
			texts = append(texts, "Tool available: "+ib.ToolName)
		default:
			texts = append(texts, fmt.Sprintf("[%s block omitted]", ib.Type))
		}
	}
	s := strings.Join(texts, "\n")
	if b.IsError {
		s = "Error: " + s
	}
	return s, images, nil
}

func oaAssistantMessage(blocks []Block) ([]oaMessage, error) {
	var texts []string
	var calls []oaToolCall
	for i, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			args := "{}"
			if in := bytes.TrimSpace(b.Input); len(in) > 0 && string(in) != "null" {
				var buf bytes.Buffer
				if err := json.Compact(&buf, in); err != nil {
					return nil, fmt.Errorf("content.%d.input: %v", i, err)
				}
				args = buf.String()
			}
			calls = append(calls, oaToolCall{ID: b.ID, Type: "function", Function: oaFunctionCall{Name: b.Name, Arguments: args}})
		}
		// thinking, redacted_thinking and server tool blocks have no Chat Completions form.
	}
	m := oaMessage{Role: "assistant", ToolCalls: calls}
	if len(texts) > 0 {
		m.Content = strings.Join(texts, "\n\n")
	} else if len(calls) == 0 {
		m.Content = ""
	}
	return []oaMessage{m}, nil
}
