package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolshed/toolshed/tokens"
)

// OpenAI serves a script of replies over the Chat Completions API, as OpenAI and the
// servers that copy it (vLLM, Ollama, llama.cpp) do: POST /v1/chat/completions answers
// a chat.completion, or with "stream": true server-sent chat.completion.chunk events
// ending in data: [DONE], with a final usage chunk when stream_options.include_usage
// asks for one. Text blocks of a reply become the message content, tool_use blocks its
// tool_calls (their ids kept), and stop reasons finish reasons.
type OpenAI struct{ script }

// NewOpenAI returns a model that gives these replies in order.
func NewOpenAI(replies ...Reply) *OpenAI { return &OpenAI{script{replies: replies}} }

// PromptTokens counts what a chat request puts before the model: its messages and
// tools, as JSON, with o200k_base.
func PromptTokens(body []byte) int {
	var r struct {
		Messages json.RawMessage `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	json.Unmarshal(body, &r)
	return tokens.Count(string(r.Messages)) + tokens.Count(string(r.Tools))
}

// finishReasons maps the Messages API's stop reasons to Chat Completions'.
var finishReasons = map[string]string{"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "stop_sequence": "stop"}

// openAIErrorTypes maps the Messages API's error types to OpenAI's.
var openAIErrorTypes = map[string]string{
	"invalid_request_error": "invalid_request_error", "authentication_error": "invalid_api_key",
	"permission_error": "insufficient_permissions", "not_found_error": "not_found",
	"rate_limit_error": "rate_limit_exceeded", "overloaded_error": "server_error", "api_error": "server_error",
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (o *OpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	o.record(r, body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		openAIError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
		return
	}
	var req struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "body: "+err.Error())
		return
	}
	reply, n, ok := o.take(func(status int, errorType, msg string) {
		openAIError(w, status, openAIErrorTypes[errorType], msg)
	})
	if !ok {
		return
	}
	id := fmt.Sprintf("chatcmpl-fake%02d", n)
	text, uses := splitContent(reply.Content)
	calls := make([]chatToolCall, len(uses))
	for i, u := range uses {
		c := &calls[i]
		c.ID, c.Type, c.Function.Name, c.Function.Arguments = u.ID, "function", u.Name, string(u.Input)
	}
	out, _ := json.Marshal(reply.Content)
	u := chatUsage{PromptTokens: PromptTokens(body), CompletionTokens: tokens.Count(string(out))}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if reply.StreamError == "" {
		o.report(u.PromptTokens, u.CompletionTokens)
	}
	finish := finishReasons[reply.StopReason]
	if !req.Stream {
		var content any
		if text != "" {
			content = text
		}
		message := map[string]any{"role": "assistant", "content": content, "refusal": nil}
		if len(calls) > 0 {
			message["tool_calls"] = calls
		}
		writeJSON(w, map[string]any{
			"id": id, "object": "chat.completion", "created": 1764460800, "model": req.Model,
			"choices":            []any{map[string]any{"index": 0, "message": message, "logprobs": nil, "finish_reason": finish}},
			"usage":              u,
			"system_fingerprint": "fp_fake",
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta any, finish any) {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1764460800, "model": req.Model, "system_fingerprint": "fp_fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
	for _, piece := range splitKeep(text, " ") {
		chunk(map[string]any{"content": piece}, nil)
	}
	for i, c := range calls {
		first := c
		first.Index, first.Function.Arguments = &i, ""
		chunk(map[string]any{"tool_calls": []chatToolCall{first}}, nil)
		for args := c.Function.Arguments; len(args) > 0; {
			k := min(len(args), 7)
			var part chatToolCall
			part.Index, part.Function.Arguments = &i, args[:k]
			chunk(map[string]any{"tool_calls": []chatToolCall{part}}, nil)
			args = args[k:]
		}
	}
	if reply.StreamError != "" {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "scripted " + reply.StreamError, "type": openAIErrorTypes[reply.StreamError], "param": nil, "code": nil}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		return
	}
	chunk(map[string]any{}, finish)
	if req.StreamOptions.IncludeUsage {
		b, _ := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1764460800, "model": req.Model, "system_fingerprint": "fp_fake",
			"choices": []any{}, "usage": u,
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// openAIError writes OpenAI's error body.
func openAIError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": typ}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
