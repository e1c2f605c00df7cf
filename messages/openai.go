package messages

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image sizes for CountTokens
	_ "image/jpeg" // image sizes for CountTokens
	_ "image/png"  // image sizes for CountTokens
	"io"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/toolshed/toolshed/tokens"
)

// OpenAI is an Upstream speaking the Chat Completions API: OpenAI itself, vLLM, Ollama,
// the llama.cpp server and the many servers that copy it.
//
// The translation both ways is done by ToOpenAI, FromOpenAI, NewOpenAIStream and
// OpenAIError; see them for what maps to what and what is dropped. None of the client's
// headers are forwarded (the anthropic-* headers and the client's key mean nothing
// upstream): requests carry Content-Type, Accept and, when APIKey is set,
// Authorization: Bearer.
//
// max_tokens goes out as max_completion_tokens (what OpenAI wants, and the only one its
// reasoning models accept) and also as max_tokens (what Ollama, older llama.cpp and
// LM Studio read; they ignore max_completion_tokens). To OpenAI's own API
// (api.openai.com, *.openai.azure.com) only max_completion_tokens is sent, and any
// server that answers 400 "unsupported parameter max_tokens" is asked again at once
// without it, and from then on.
type OpenAI struct {
	BaseURL string       // e.g. http://localhost:11434/v1 (empty means DefaultOpenAIURL); requests go to BaseURL + "/chat/completions"
	APIKey  string       // sent as Authorization: Bearer; may be empty (local servers)
	Client  *http.Client // nil means http.DefaultClient
	// Model, when set, replaces the request's model (clients send Claude model names).
	Model string

	// noMaxTokens is set once the upstream rejected max_tokens.
	noMaxTokens atomic.Bool
}

var _ Upstream = (*OpenAI)(nil)

// DefaultOpenAIURL is OpenAI's API.
const DefaultOpenAIURL = "https://api.openai.com/v1"

func (o *OpenAI) baseURL() string {
	if o.BaseURL == "" {
		return DefaultOpenAIURL
	}
	return strings.TrimRight(o.BaseURL, "/")
}

// oaMaxBody bounds what is read of an upstream answer that is not a stream.
const oaMaxBody = 64 << 20

// Create sends the request to /chat/completions without streaming and translates the
// answer with FromOpenAI. The response carries the request's model name, not the
// upstream's.
func (o *OpenAI) Create(ctx context.Context, req *Request, h http.Header) (*Response, error) {
	r := *req
	r.Stream = false
	resp, err := o.post(ctx, &r)
	if err != nil {
		return nil, err
	}
	return o.completion(resp, req.Model)
}

// completion reads and translates a whole chat.completion answer.
func (o *OpenAI) completion(resp *http.Response, model string) (*Response, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, oaMaxBody))
	if err != nil {
		return nil, fmt.Errorf("openai upstream: reading response: %w", err)
	}
	out, err := FromOpenAI(body, model)
	if err != nil {
		return nil, o.redactErr(err)
	}
	return out, nil
}

// Stream sends the request with stream: true (and stream_options.include_usage) and
// translates the chunks with NewOpenAIStream. A server that answers with a whole
// chat.completion instead of a stream is translated too, into the events the API would
// have sent for that response.
func (o *OpenAI) Stream(ctx context.Context, req *Request, h http.Header) (EventStream, error) {
	r := *req
	r.Stream = true
	resp, err := o.post(ctx, &r)
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		out, err := o.completion(resp, req.Model)
		if err != nil {
			return nil, err
		}
		return &oaEventList{events: oaResponseEvents(out)}, nil
	}
	return NewOpenAIStream(resp.Body, req.Model), nil
}

// CountTokens counts locally: Chat Completions has no token counting endpoint. It is
// tokens.Count (o200k_base) of the JSON of the translated request's messages plus that of
// its tools, with each image counted as the API prices it (width×height/750 tokens after
// scaling to at most 1568 px and 1.15 megapixels; 1,600 when its size cannot be read, as
// for URL images) instead of as the text of its data: URL.
func (o *OpenAI) CountTokens(ctx context.Context, req *Request, h http.Header) (int, error) {
	oreq, err := toOAIRequest(req, o.model(req))
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range oreq.Messages {
		parts, ok := oreq.Messages[i].Content.([]any)
		if !ok {
			continue
		}
		counted := make([]any, len(parts))
		for j, p := range parts {
			if img, ok := p.(oaImagePart); ok {
				n += oaImageTokens(img.ImageURL.URL)
				p = oaImagePart{Type: img.Type, ImageURL: oaImageURL{URL: "image"}}
			}
			counted[j] = p
		}
		oreq.Messages[i].Content = counted
	}
	msgs, err := oaMarshal(oreq.Messages)
	if err != nil {
		return 0, err
	}
	n += tokens.Count(string(msgs))
	if len(oreq.Tools) > 0 {
		tools, err := oaMarshal(oreq.Tools)
		if err != nil {
			return 0, err
		}
		n += tokens.Count(string(tools))
	}
	return n, nil
}

// oaImageTokens estimates an image's cost the way Anthropic documents it.
func oaImageTokens(u string) int {
	const unknown = 1600
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return unknown
	}
	_, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return unknown
	}
	cfg, _, err := image.DecodeConfig(base64.NewDecoder(base64.StdEncoding, strings.NewReader(data)))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return unknown
	}
	w, h := float64(cfg.Width), float64(cfg.Height)
	if m := max(w, h); m > 1568 {
		w, h = w*1568/m, h*1568/m
	}
	if px := w * h; px > 1_150_000 {
		s := math.Sqrt(1_150_000 / px)
		w, h = w*s, h*s
	}
	return min(int((w*h+749)/750), unknown)
}

func (o *OpenAI) model(req *Request) string {
	if o.Model != "" {
		return o.Model
	}
	return req.Model
}

// sendsMaxTokens reports whether the legacy max_tokens goes out beside
// max_completion_tokens.
func (o *OpenAI) sendsMaxTokens() bool {
	if o.noMaxTokens.Load() {
		return false
	}
	u, err := url.Parse(o.baseURL())
	if err != nil {
		return true
	}
	host := strings.ToLower(u.Hostname())
	return host != "api.openai.com" && !strings.HasSuffix(host, ".openai.azure.com")
}

// post sends req and returns a 2xx answer; any other status is an *APIError.
func (o *OpenAI) post(ctx context.Context, req *Request) (*http.Response, error) {
	oreq, err := toOAIRequest(req, o.model(req))
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if !o.sendsMaxTokens() {
			oreq.MaxTokens = 0
		}
		body, err := oaMarshal(oreq)
		if err != nil {
			return nil, err
		}
		resp, err := o.do(ctx, body, req.Stream)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if attempt == 0 && oreq.MaxTokens != 0 && oaRejectsMaxTokens(resp.StatusCode, data) {
			o.noMaxTokens.Store(true)
			continue
		}
		return nil, o.redact(OpenAIError(resp.StatusCode, data))
	}
}

func (o *OpenAI) do(ctx context.Context, body []byte, stream bool) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, o.baseURL()+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("openai upstream: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if o.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	c := o.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(hreq)
	if err != nil {
		// url.Error names the URL, never the key; keep the chain for errors.Is.
		return nil, fmt.Errorf("openai upstream: %w", err)
	}
	return resp, nil
}

// oaRejectsMaxTokens recognizes OpenAI's answer to max_tokens on models that only take
// max_completion_tokens.
func oaRejectsMaxTokens(status int, body []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	e, ok := parseOpenAIError(body)
	if !ok {
		return false
	}
	return e.Param == "max_tokens" || (strings.Contains(e.Message, "max_tokens") && strings.Contains(e.Message, "max_completion_tokens"))
}

// redact removes the configured key from an error message, should an upstream echo it.
func (o *OpenAI) redact(e *APIError) *APIError {
	if len(o.APIKey) >= 4 {
		e.Message = strings.ReplaceAll(e.Message, o.APIKey, "[redacted]")
	}
	return e
}

func (o *OpenAI) redactErr(err error) error {
	var ae *APIError
	if errors.As(err, &ae) {
		o.redact(ae)
	}
	return err
}

// ---- request ----

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
// model given (req.Model when model is empty).
//
//   - system (a string, or text blocks joined with a blank line) becomes a leading system
//     message.
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
//   - Custom tools become function tools (name, description, input_schema as
//     parameters); other tools (server tools, Anthropic-defined client tools) have no
//     Chat Completions form and are left out. tool_choice auto, any, tool and none
//     become "auto", "required", a named function and "none";
//     disable_parallel_tool_use becomes parallel_tool_calls: false. Both are sent only
//     with tools, which OpenAI requires.
//   - max_tokens becomes max_completion_tokens and also max_tokens (see OpenAI);
//     temperature and top_p are passed as they are, stop_sequences as stop,
//     metadata.user_id as user, stream as stream with stream_options.include_usage.
//     Other members (top_k, thinking, service_tier, ...) are dropped: strict servers
//     reject members they do not know.
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
			out.User = md.UserID
		}
	}
	if req.Stream {
		out.Stream = true
		out.StreamOptions = &oaStreamOptions{IncludeUsage: true}
	}
	return out, nil
}

// oaSystemText reads system: a string or a list of text blocks.
func oaSystemText(raw json.RawMessage) (string, error) {
	blocks, err := decodeContent(raw)
	if err != nil {
		return "", invalid("system: %v", err)
	}
	var texts []string
	for _, b := range blocks {
		if b.Type != "text" {
			return "", invalid("system: blocks must be text, not %q", b.Type)
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

// ---- response ----

type oaCompletion struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Choices []oaChoice      `json:"choices"`
	Usage   *oaUsage        `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type oaChoice struct {
	Index        int             `json:"index"`
	Message      oaOutMessage    `json:"message"`
	Delta        oaOutMessage    `json:"delta"`
	FinishReason string          `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason"` // vLLM: the stop string matched
}

type oaOutMessage struct {
	Content      json.RawMessage `json:"content"`
	Refusal      string          `json:"refusal"`
	ToolCalls    []oaOutToolCall `json:"tool_calls"`
	FunctionCall *oaOutFunction  `json:"function_call"`
}

type oaOutToolCall struct {
	Index    *int          `json:"index"`
	ID       string        `json:"id"`
	Function oaOutFunction `json:"function"`
}

type oaOutFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // a string; some servers send an object
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// usage converts usage. OpenAI's prompt_tokens include the cached tokens; the Messages
// API's input_tokens do not (input + cache reads + cache writes is the whole prompt).
func (u *oaUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > 0 {
		out.CacheReadInputTokens = u.PromptTokensDetails.CachedTokens
		out.InputTokens = max(0, u.PromptTokens-u.PromptTokensDetails.CachedTokens)
	}
	return out
}

// oaContentText reads a message's content: a string, null, or text parts.
func oaContentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		return oaString(raw)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var sb strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			sb.WriteString(p.Text)
		}
	}
	return sb.String()
}

// oaArguments is a tool call's arguments as the JSON text the model wrote.
func oaArguments(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		return oaString(raw)
	}
	return string(raw) // an object sent as is
}

// oaToolInput parses tool call arguments into a tool_use input. Empty arguments are {}.
// Arguments that are a JSON string holding an object (encoded twice) are unwrapped.
// Invalid JSON, or JSON that is not an object, becomes {}: the API promises an object,
// and a client's tool should see no arguments rather than a malformed value; the tool's
// own validation then tells the model what is missing.
func oaToolInput(args string) json.RawMessage {
	s := strings.TrimSpace(args)
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if s[0] == '"' {
		var inner string
		if json.Unmarshal([]byte(s), &inner) == nil {
			s = strings.TrimSpace(inner)
		}
	}
	if len(s) == 0 || s[0] != '{' || !json.Valid([]byte(s)) {
		return json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(s)) != nil {
		return json.RawMessage(`{}`)
	}
	return buf.Bytes()
}

func oaToolUseBlock(id, name string, input json.RawMessage) Block {
	raw, _ := oaMarshal(struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}{"tool_use", id, name, input})
	return Block{Type: "tool_use", ID: id, Name: name, Input: input, Raw: raw}
}

// oaStopReason maps a finish_reason: stop → end_turn (stop_sequence when vLLM names the
// stop string matched), length → max_tokens, tool_calls and function_call → tool_use,
// content_filter → refusal. Tool calls with a finish_reason of stop (some servers) are
// tool_use too. Anything else is end_turn.
func oaStopReason(finish string, vllmStop json.RawMessage, toolCalls, refusal bool) (reason string, seq *string) {
	switch finish {
	case "length":
		return "max_tokens", nil
	case "tool_calls", "function_call":
		return "tool_use", nil
	case "content_filter":
		return "refusal", nil
	}
	if toolCalls {
		return "tool_use", nil
	}
	if refusal {
		return "refusal", nil
	}
	if finish == "stop" && len(vllmStop) > 0 && vllmStop[0] == '"' {
		if s := oaString(vllmStop); s != "" {
			return "stop_sequence", &s
		}
	}
	return "end_turn", nil
}

// FromOpenAI translates a chat.completion into a Messages API response for the model
// given (the client's model name; the upstream's when model is empty).
//
// The message's content becomes a text block (a refusal too, with stop_reason refusal),
// its tool_calls tool_use blocks with the upstream's ids kept and the arguments parsed
// (see oaToolInput: empty or invalid arguments become {}). reasoning_content is dropped.
// finish_reason maps as oaStopReason says. prompt_tokens less the cached tokens are
// input_tokens, prompt_tokens_details.cached_tokens cache_read_input_tokens,
// completion_tokens output_tokens. The id is the upstream's prefixed with "msg_"
// (msg_chatcmpl-...), so it looks like the API's and still finds the upstream's logs.
// A body with an error member is returned as an *APIError.
func FromOpenAI(body []byte, model string) (*Response, error) {
	var c oaCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: "the upstream model's response is not valid JSON: " + err.Error()}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return nil, oaErrorInBody(body)
	}
	if len(c.Choices) == 0 {
		return nil, &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: "the upstream model returned no choices"}
	}
	if model == "" {
		model = c.Model
	}
	ch := c.Choices[0]
	out := &Response{ID: oaMessageID(c.ID), Type: "message", Role: "assistant", Model: model, Content: []Block{}, Usage: c.Usage.usage()}
	text := oaContentText(ch.Message.Content)
	refusal := false
	if text == "" && ch.Message.Refusal != "" {
		text, refusal = ch.Message.Refusal, true
	}
	if text != "" {
		raw, _ := oaMarshal(oaTextPart{Type: "text", Text: text})
		out.Content = append(out.Content, Block{Type: "text", Text: text, Raw: raw})
	}
	calls := ch.Message.ToolCalls
	if len(calls) == 0 && ch.Message.FunctionCall != nil {
		calls = []oaOutToolCall{{Function: *ch.Message.FunctionCall}}
	}
	for _, tc := range calls {
		id := tc.ID
		if id == "" {
			id = oaNewID("toolu_")
		}
		out.Content = append(out.Content, oaToolUseBlock(id, tc.Function.Name, oaToolInput(oaArguments(tc.Function.Arguments))))
	}
	reason, seq := oaStopReason(ch.FinishReason, ch.StopReason, len(calls) > 0, refusal)
	out.StopReason, out.StopSequence = &reason, seq
	return out, nil
}

func oaMessageID(upstream string) string {
	switch {
	case upstream == "":
		return oaNewID("msg_")
	case strings.HasPrefix(upstream, "msg_"):
		return upstream
	}
	return "msg_" + upstream
}

func oaNewID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// ---- errors ----

type oaErrorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   string          `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// parseOpenAIError reads the error bodies of OpenAI and its imitators:
// {"error":{"message","type","param","code"}} (OpenAI, Ollama, llama.cpp, vLLM),
// {"error":"message"}, {"object":"error","message",...} (older vLLM) and FastAPI's
// {"detail": "..." or [{"loc","msg"}]}.
func parseOpenAIError(body []byte) (oaErrorObject, bool) {
	var w struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
		oaErrorObject
	}
	if json.Unmarshal(body, &w) != nil {
		return oaErrorObject{}, false
	}
	if e := bytes.TrimSpace(w.Error); len(e) > 0 && string(e) != "null" {
		if e[0] == '"' {
			return oaErrorObject{Message: oaString(e)}, true
		}
		var o oaErrorObject
		if json.Unmarshal(e, &o) == nil && o.Message != "" {
			return o, true
		}
	}
	if w.Message != "" {
		return w.oaErrorObject, true
	}
	if d := bytes.TrimSpace(w.Detail); len(d) > 0 {
		if d[0] == '"' {
			return oaErrorObject{Message: oaString(d)}, true
		}
		var items []struct {
			Loc []any  `json:"loc"`
			Msg string `json:"msg"`
		}
		if json.Unmarshal(d, &items) == nil && len(items) > 0 {
			var msgs []string
			for _, it := range items {
				var loc []string
				for _, l := range it.Loc {
					loc = append(loc, fmt.Sprint(l))
				}
				msgs = append(msgs, strings.Join(loc, ".")+": "+it.Msg)
			}
			return oaErrorObject{Message: strings.Join(msgs, "; ")}, true
		}
	}
	return oaErrorObject{}, false
}

var oaKeyPattern = regexp.MustCompile(`(?i)\b(?:sk|rk|pk)-[A-Za-z0-9_*.\-]{4,}|(?i)\bbearer\s+[^\s"',]+`)

// oaRedactKeys hides anything in a message that looks like an API key, masked or not.
func oaRedactKeys(s string) string { return oaKeyPattern.ReplaceAllString(s, "[redacted]") }

// OpenAIError maps an upstream error answer to the Messages API error of its status
// (ErrorFromStatus: 400 and 422 invalid_request_error, 401 authentication_error, 403
// permission_error, 404 not_found_error, 429 rate_limit_error, 503 overloaded_error, other
// 5xx api_error). The message is the upstream's own, from any of the error shapes
// parseOpenAIError knows, else the body's text, else the status text, with anything that
// looks like an API key (OpenAI's 401 quotes a masked key) replaced by [redacted].
func OpenAIError(status int, body []byte) *APIError {
	msg := ""
	if e, ok := parseOpenAIError(body); ok {
		msg = e.Message
	} else if t := strings.TrimSpace(string(body)); t != "" && !strings.HasPrefix(t, "<") && !strings.HasPrefix(t, "{") {
		msg = t
	}
	if len(msg) > 2000 {
		msg = msg[:2000] + "..."
	}
	if msg == "" {
		msg = http.StatusText(status)
		if msg == "" {
			msg = "upstream error " + strconv.Itoa(status)
		}
	}
	return ErrorFromStatus(status, oaRedactKeys(msg))
}

// oaErrorInBody maps an error sent with a 200 status (in a body or mid-stream) to an
// APIError, taking the status from its code, else from its type.
func oaErrorInBody(body []byte) *APIError {
	e, _ := parseOpenAIError(body)
	status := http.StatusInternalServerError
	code := strings.Trim(string(e.Code), `"`)
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
		status = n
	} else {
		switch strings.ToLower(e.Type) {
		case "invalid_request_error", "badrequesterror", "invalid_request":
			status = http.StatusBadRequest
		case "authentication_error", "authenticationerror":
			status = http.StatusUnauthorized
		case "permission_error", "permissiondeniederror":
			status = http.StatusForbidden
		case "not_found_error", "notfounderror":
			status = http.StatusNotFound
		case "rate_limit_error", "ratelimiterror", "insufficient_quota", "tokens":
			status = http.StatusTooManyRequests
		case "overloaded_error", "server_overloaded":
			status = http.StatusServiceUnavailable
		}
	}
	if e.Message == "" {
		e.Message = "the upstream model reported an error"
	}
	return ErrorFromStatus(status, oaRedactKeys(e.Message))
}

// ---- events ----

func oaMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func oaEvent(name string, v any) Event {
	data, err := oaMarshal(v)
	if err != nil {
		panic("messages: event " + name + ": " + err.Error()) // only fixed shapes are marshaled
	}
	return Event{Name: name, Data: data}
}

type oaEvUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

func oaToEvUsage(u Usage) oaEvUsage {
	return oaEvUsage{u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens}
}

func oaMessageStart(id, model string, u Usage) Event {
	type msg struct {
		ID           string     `json:"id"`
		Type         string     `json:"type"`
		Role         string     `json:"role"`
		Content      []struct{} `json:"content"`
		Model        string     `json:"model"`
		StopReason   *string    `json:"stop_reason"`
		StopSequence *string    `json:"stop_sequence"`
		Usage        oaEvUsage  `json:"usage"`
	}
	return oaEvent("message_start", struct {
		Type    string `json:"type"`
		Message msg    `json:"message"`
	}{"message_start", msg{ID: id, Type: "message", Role: "assistant", Content: []struct{}{}, Model: model, Usage: oaToEvUsage(u)}})
}

func oaTextStart(index int) Event {
	return oaEvent("content_block_start", struct {
		Type         string     `json:"type"`
		Index        int        `json:"index"`
		ContentBlock oaTextPart `json:"content_block"`
	}{"content_block_start", index, oaTextPart{Type: "text"}})
}

func oaToolStart(index int, id, name string) Event {
	type block struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	return oaEvent("content_block_start", struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock block  `json:"content_block"`
	}{"content_block_start", index, block{"tool_use", id, name, json.RawMessage(`{}`)}})
}

func oaTextDelta(index int, text string) Event {
	return oaEvent("content_block_delta", struct {
		Type  string     `json:"type"`
		Index int        `json:"index"`
		Delta oaTextPart `json:"delta"`
	}{"content_block_delta", index, oaTextPart{Type: "text_delta", Text: text}})
}

func oaJSONDelta(index int, partial string) Event {
	type delta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	return oaEvent("content_block_delta", struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
		Delta delta  `json:"delta"`
	}{"content_block_delta", index, delta{"input_json_delta", partial}})
}

func oaBlockStop(index int) Event {
	return oaEvent("content_block_stop", struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}{"content_block_stop", index})
}

func oaMessageDelta(reason string, seq *string, u Usage) Event {
	type delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	return oaEvent("message_delta", struct {
		Type  string    `json:"type"`
		Delta delta     `json:"delta"`
		Usage oaEvUsage `json:"usage"`
	}{"message_delta", delta{reason, seq}, oaToEvUsage(u)})
}

func oaMessageStop() Event {
	return oaEvent("message_stop", struct {
		Type string `json:"type"`
	}{"message_stop"})
}

// oaResponseEvents are the events the API streams for a whole response: input tokens in
// message_start, each block in one delta, the output tokens in message_delta.
func oaResponseEvents(r *Response) []Event {
	start := r.Usage
	start.OutputTokens = 0
	evs := []Event{oaMessageStart(r.ID, r.Model, start)}
	for i, b := range r.Content {
		switch b.Type {
		case "text":
			evs = append(evs, oaTextStart(i), oaTextDelta(i, b.Text), oaBlockStop(i))
		case "tool_use":
			evs = append(evs, oaToolStart(i, b.ID, b.Name), oaJSONDelta(i, string(b.Input)), oaBlockStop(i))
		}
	}
	reason := "end_turn"
	if r.StopReason != nil {
		reason = *r.StopReason
	}
	return append(evs, oaMessageDelta(reason, r.StopSequence, r.Usage), oaMessageStop())
}

// oaEventList is an EventStream over events already made.
type oaEventList struct {
	events []Event
	closed bool
}

func (l *oaEventList) Next() (Event, error) {
	if l.closed || len(l.events) == 0 {
		return Event{}, io.EOF
	}
	ev := l.events[0]
	l.events = l.events[1:]
	return ev, nil
}

func (l *oaEventList) Close() error { l.closed = true; return nil }

// ---- stream ----

// NewOpenAIStream translates a Chat Completions stream (data: {chat.completion.chunk}
// lines ending with data: [DONE]) into Messages API events, shaped as the API sends them:
//
//	message_start          {"type":"message_start","message":{"id":"msg_chatcmpl-…","type":"message","role":"assistant","content":[],"model":…,"stop_reason":null,"stop_sequence":null,"usage":{…}}}
//	content_block_start    {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}
//	content_block_delta    {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}
//	content_block_stop     {"type":"content_block_stop","index":0}
//	content_block_start    {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_…","name":"f","input":{}}}
//	content_block_delta    {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}
//	…
//	message_delta          {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{…}}
//	message_stop           {"type":"message_stop"}
//
// A block starts whenever the kind of content changes or a new tool call index starts.
// OpenAI sends usage last, after the finish_reason, so message_start carries zero tokens
// and message_delta the real counts (input, cache read and output tokens); no ping is
// sent. Blocks are never interleaved: should an upstream interleave the argument deltas
// of parallel tool calls, a later call's arguments are held back until the one streaming
// is a complete JSON object, then sent. reasoning deltas are dropped. An error chunk
// ({"error":{...}}) ends the stream with an *APIError; a stream that ends before [DONE]
// and before any finish_reason ends with io.ErrUnexpectedEOF. model is the model name
// the events carry.
func NewOpenAIStream(r io.ReadCloser, model string) EventStream {
	return &openAIStream{body: r, br: bufio.NewReaderSize(r, 64<<10), model: model, text: -1, tools: map[int]*oaStreamTool{}}
}

type oaStreamTool struct {
	id, name string
	args     strings.Builder // everything received
	unsent   int             // bytes of args not yet sent
	block    int             // block index, -1 until started
	closed   bool
}

type openAIStream struct {
	body  io.ReadCloser
	br    *bufio.Reader
	model string

	queue    []Event
	err      error
	finished bool
	closed   bool

	started bool
	next    int           // next block index
	text    int           // index of the open text block, -1 if none
	open    *oaStreamTool // the tool block open, if any
	tools   map[int]*oaStreamTool
	order   []*oaStreamTool // tool calls by first appearance
	anyTool bool

	finish   string
	vllmStop json.RawMessage
	refusal  bool
	usage    Usage
}

func (s *openAIStream) Next() (Event, error) {
	if s.closed {
		return Event{}, errors.New("openai upstream: stream closed")
	}
	for len(s.queue) == 0 {
		switch {
		case s.err != nil:
			return Event{}, s.err
		case s.finished:
			return Event{}, io.EOF
		}
		s.err = s.step()
	}
	ev := s.queue[0]
	s.queue = s.queue[1:]
	return ev, nil
}

func (s *openAIStream) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.body.Close()
}

func (s *openAIStream) emit(evs ...Event) { s.queue = append(s.queue, evs...) }

// step reads one line of the stream and translates it.
func (s *openAIStream) step() error {
	line, err := s.br.ReadBytes('\n')
	if len(line) == 0 && err != nil {
		if err == io.EOF {
			if s.finish != "" {
				s.end()
				return nil
			}
			return fmt.Errorf("openai upstream: stream ended before [DONE]: %w", io.ErrUnexpectedEOF)
		}
		return fmt.Errorf("openai upstream: reading stream: %w", err)
	}
	line = bytes.TrimRight(line, "\r\n")
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil // blank line, comment, oaEvent:, id:, retry:
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if string(data) == "[DONE]" {
		s.end()
		return nil
	}
	var c oaCompletion
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("openai upstream: bad chunk %.200q: %w", data, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return oaErrorInBody(data)
	}
	if !s.started {
		s.started = true
		s.emit(oaMessageStart(oaMessageID(c.ID), s.modelOr(c.Model), Usage{}))
	}
	if c.Usage != nil {
		s.usage = c.Usage.usage()
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if err := s.delta(ch.Delta); err != nil {
			return err
		}
		if ch.FinishReason != "" {
			s.finish, s.vllmStop = ch.FinishReason, ch.StopReason
			s.closeBlocks()
		}
	}
	return nil
}

func (s *openAIStream) modelOr(upstream string) string {
	if s.model != "" {
		return s.model
	}
	return upstream
}

func (s *openAIStream) delta(d oaOutMessage) error {
	if t := oaContentText(d.Content); t != "" {
		s.textDelta(t)
	}
	if d.Refusal != "" {
		s.refusal = true
		s.textDelta(d.Refusal)
	}
	calls := d.ToolCalls
	if d.FunctionCall != nil {
		calls = append(calls, oaOutToolCall{Function: *d.FunctionCall})
	}
	for _, tc := range calls {
		idx := 0
		if tc.Index != nil {
			idx = *tc.Index
		}
		if err := s.toolDelta(idx, tc.ID, tc.Function.Name, oaArguments(tc.Function.Arguments)); err != nil {
			return err
		}
	}
	return nil
}

func (s *openAIStream) textDelta(t string) {
	if s.text < 0 {
		s.closeBlocks()
		s.text = s.next
		s.next++
		s.emit(oaTextStart(s.text))
	}
	s.emit(oaTextDelta(s.text, t))
}

func (s *openAIStream) toolDelta(idx int, id, name, args string) error {
	t := s.tools[idx]
	if t == nil {
		t = &oaStreamTool{block: -1}
		s.tools[idx] = t
		s.order = append(s.order, t)
		s.anyTool = true
	}
	if t.closed {
		if strings.TrimSpace(args) == "" {
			return nil
		}
		return &APIError{Status: http.StatusInternalServerError, Type: APIErrorType, Message: "the upstream model sent arguments for a tool call that had already ended"}
	}
	if t.id == "" {
		t.id = id
	}
	if t.name == "" {
		t.name = name
	}
	t.args.WriteString(args)
	t.unsent += len(args)
	if s.text >= 0 {
		s.emit(oaBlockStop(s.text))
		s.text = -1
	}
	s.pump()
	return nil
}

// pump sends what can be sent of the tool calls: the open one's new arguments, and, once
// its arguments are a complete object, the next call waiting.
func (s *openAIStream) pump() {
	for {
		if s.open != nil {
			s.sendArgs(s.open)
			waiting := s.waitingTool()
			if waiting == nil || !oaCompleteObject(s.open.args.String()) {
				return
			}
			s.closeTool()
		}
		w := s.waitingTool()
		if w == nil {
			return
		}
		s.startTool(w)
	}
}

func (s *openAIStream) waitingTool() *oaStreamTool {
	for _, t := range s.order {
		if t.block < 0 {
			return t
		}
	}
	return nil
}

func (s *openAIStream) startTool(t *oaStreamTool) {
	if t.id == "" {
		t.id = oaNewID("toolu_")
	}
	t.block = s.next
	s.next++
	s.open = t
	s.emit(oaToolStart(t.block, t.id, t.name))
}

func (s *openAIStream) sendArgs(t *oaStreamTool) {
	if t.unsent == 0 {
		return
	}
	all := t.args.String()
	s.emit(oaJSONDelta(t.block, all[len(all)-t.unsent:]))
	t.unsent = 0
}

func (s *openAIStream) closeTool() {
	s.open.closed = true
	s.emit(oaBlockStop(s.open.block))
	s.open = nil
}

// closeBlocks ends the open block and sends every tool call still waiting.
func (s *openAIStream) closeBlocks() {
	if s.text >= 0 {
		s.emit(oaBlockStop(s.text))
		s.text = -1
	}
	for {
		if s.open != nil {
			s.sendArgs(s.open)
			s.closeTool()
		}
		w := s.waitingTool()
		if w == nil {
			return
		}
		s.startTool(w)
	}
}

func oaCompleteObject(s string) bool {
	s = strings.TrimSpace(s)
	return len(s) > 0 && s[0] == '{' && json.Valid([]byte(s))
}

// end closes the message: message_delta with the stop reason and usage, message_stop.
func (s *openAIStream) end() {
	if !s.started {
		s.started = true
		s.emit(oaMessageStart(oaNewID("msg_"), s.model, Usage{}))
	}
	s.closeBlocks()
	reason, seq := oaStopReason(s.finish, s.vllmStop, s.anyTool, s.refusal)
	s.emit(oaMessageDelta(reason, seq, s.usage), oaMessageStop())
	s.finished = true
}
