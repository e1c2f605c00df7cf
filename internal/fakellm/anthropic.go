// Package fakellm is a scripted model behind the Anthropic Messages API's wire format,
// for tests and benchmarks: no LLM can run here, so the upstream model of toolshed's
// proxy is a script of replies, served byte for byte as the API serves them (JSON
// messages, server-sent event streams, error bodies) and recording every request it got.
package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/toolshed/toolshed/tokens"
)

// Reply is one scripted answer of the model.
type Reply struct {
	// Content is the message's content blocks, as JSON objects.
	Content []json.RawMessage
	// StopReason is "end_turn", "tool_use", "max_tokens", ...
	StopReason string

	// Status, when not 0 or 200, makes the reply an error response with this status and
	// the API's error body of type ErrorType.
	Status    int
	ErrorType string
	// StreamError, for a streamed reply, ends the stream with an error event of this
	// type after the content instead of message_delta and message_stop.
	StreamError string
}

// Text is a text block.
func Text(s string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
	return b
}

// ToolUse is a tool_use block with input given as JSON.
func ToolUse(id, name, input string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": name, "input": json.RawMessage(input)})
	return b
}

// Say is a reply that ends the turn with text.
func Say(s string) Reply { return Reply{Content: []json.RawMessage{Text(s)}, StopReason: "end_turn"} }

// Call is a reply that calls one tool, after an optional sentence.
func Call(text, id, name, input string) Reply {
	r := Reply{StopReason: "tool_use"}
	if text != "" {
		r.Content = append(r.Content, Text(text))
	}
	r.Content = append(r.Content, ToolUse(id, name, input))
	return r
}

// Fail is an error reply.
func Fail(status int, errorType string) Reply { return Reply{Status: status, ErrorType: errorType} }

// Request is a request the model got.
type Request struct {
	Path string
	// RawQuery is the query of the request's URL, without '?' (Claude Code posts to
	// /v1/messages?beta=true).
	RawQuery string
	Header   http.Header
	Body     json.RawMessage
}

// script is the replies of a model and what it was asked.
type script struct {
	mu       sync.Mutex
	replies  []Reply
	requests []Request
	n        int
	usage    [2]int // input and output tokens reported so far
}

// record keeps a request.
func (s *script) record(r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
}

// next takes the next reply and its number (from 1), or reports the script is over.
func (s *script) next() (Reply, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n >= len(s.replies) {
		return Reply{}, 0, false
	}
	s.n++
	return s.replies[s.n-1], s.n, true
}

func (s *script) report(in, out int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage[0] += in
	s.usage[1] += out
}

// Requests returns the requests the model got so far.
func (s *script) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Usage returns the input and output tokens the model reported, summed over its
// replies.
func (s *script) Usage() (in, out int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage[0], s.usage[1]
}

// Bodies decodes the bodies of the requests the model got for replies (not token
// counts).
func (s *script) Bodies() []map[string]any {
	var out []map[string]any
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, "/count_tokens") {
			continue
		}
		var m map[string]any
		json.Unmarshal(r.Body, &m)
		out = append(out, m)
	}
	return out
}

// Anthropic serves a script of replies over the Messages API. Each POST /v1/messages
// takes the next reply; POST /v1/messages/count_tokens counts the request's tokens
// with o200k_base (a stand-in for the model's own tokenizer).
type Anthropic struct{ script }

// NewAnthropic returns a model that gives these replies in order.
func NewAnthropic(replies ...Reply) *Anthropic { return &Anthropic{script{replies: replies}} }

// InputTokens counts what a request puts before the model: its system prompt, messages
// and tools, as JSON, with o200k_base.
func InputTokens(body []byte) int {
	var r struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	json.Unmarshal(body, &r)
	return tokens.Count(string(r.System)) + tokens.Count(string(r.Messages)) + tokens.Count(string(r.Tools))
}

func (a *Anthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.record(r, body)
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "body: "+err.Error())
		return
	}
	switch r.URL.Path {
	case "/v1/messages/count_tokens":
		writeJSON(w, map[string]int{"input_tokens": InputTokens(body)})
		return
	case "/v1/messages":
	default:
		writeError(w, http.StatusNotFound, "not_found_error", "no route "+r.URL.Path)
		return
	}
	reply, n, ok := a.next()
	if !ok {
		writeError(w, http.StatusInternalServerError, "api_error", "the script has no more replies")
		return
	}
	id := fmt.Sprintf("msg_fake%02d", n)

	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.ErrorType, "scripted "+reply.ErrorType)
		return
	}
	content := reply.Content
	if content == nil {
		content = []json.RawMessage{}
	}
	cb, _ := json.Marshal(content)
	usage := usage{InputTokens: InputTokens(body), OutputTokens: tokens.Count(string(cb))}
	if reply.StreamError == "" {
		a.report(usage.InputTokens, usage.OutputTokens)
	}
	if !req.Stream {
		writeJSON(w, message{ID: id, Type: "message", Role: "assistant", Model: req.Model, Content: content, StopReason: &reply.StopReason, Usage: usage})
		return
	}
	stream(w, id, req.Model, reply, usage)
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

type message struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Role         string            `json:"role"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        usage             `json:"usage"`
}

// stream writes a reply as the API streams it: message_start, ping, each block's start,
// deltas (text in words, tool input in short pieces) and stop, message_delta and
// message_stop.
func stream(w http.ResponseWriter, id, model string, reply Reply, u usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	start := u
	start.OutputTokens = 1
	send("message_start", map[string]any{"type": "message_start", "message": message{ID: id, Type: "message", Role: "assistant", Model: model, Content: []json.RawMessage{}, Usage: start}})
	send("ping", map[string]string{"type": "ping"})
	for i, raw := range reply.Content {
		var b map[string]json.RawMessage
		json.Unmarshal(raw, &b)
		var typ string
		json.Unmarshal(b["type"], &typ)
		switch typ {
		case "text":
			var text string
			json.Unmarshal(b["text"], &text)
			b["text"] = json.RawMessage(`""`)
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b})
			for _, piece := range splitKeep(text, " ") {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "text_delta", "text": piece}})
			}
		case "tool_use", "server_tool_use":
			input := string(b["input"])
			b["input"] = json.RawMessage(`{}`)
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "input_json_delta", "partial_json": ""}})
			for len(input) > 0 {
				n := min(len(input), 7)
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]string{"type": "input_json_delta", "partial_json": input[:n]}})
				input = input[n:]
			}
		default:
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	if reply.StreamError != "" {
		send("error", map[string]any{"type": "error", "error": map[string]string{"type": reply.StreamError, "message": "scripted " + reply.StreamError}})
		return
	}
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": reply.StopReason, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": u.OutputTokens}})
	send("message_stop", map[string]string{"type": "message_stop"})
}

// splitKeep splits s after each sep, keeping it: "a b" → "a ", "b".
func splitKeep(s, sep string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(s, sep)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// writeError writes the API's error body.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
