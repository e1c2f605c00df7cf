package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolshed/toolshed/tokens"
)

// Responses serves a script of replies over OpenAI's Responses API, as Codex CLI uses
// it: POST /v1/responses answers a response object, or with "stream": true server-sent
// events (response.created, response.in_progress, for each output item
// response.output_item.added, its deltas and response.output_item.done, then
// response.completed, each with its sequence_number). Text blocks of a reply become one
// assistant message item with an output_text part; tool_use blocks become function_call
// items whose call_id is the block's id and whose arguments are its input as a string.
// A tool_use block with a "namespace" member (NamespacedToolUse) becomes a function_call
// in that namespace, as the API answers for tools declared inside a
// {"type": "namespace"} tool, which is how Codex declares each MCP server's tools.
type Responses struct{ script }

// NewResponses returns a model that gives these replies in order.
func NewResponses(replies ...Reply) *Responses { return &Responses{script{replies: replies}} }

// NamespacedToolUse is a tool_use block for a tool declared inside a namespace tool:
// Codex declares the tools of MCP server S in the namespace "mcp__S", and the model
// calls them by their own name in that namespace.
func NamespacedToolUse(id, namespace, name, input string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "namespace": namespace, "name": name, "input": json.RawMessage(input)})
	return b
}

// CallIn is a reply that calls one tool of a namespace.
func CallIn(id, namespace, name, input string) Reply {
	return Reply{Content: []json.RawMessage{NamespacedToolUse(id, namespace, name, input)}, StopReason: "tool_use"}
}

// ResponsesInputTokens counts what a Responses request puts before the model: its
// instructions, input items and tools, as JSON, with o200k_base.
func ResponsesInputTokens(body []byte) int {
	return countMembers(body, "instructions", "input", "tools")
}

// responsesUsage is the usage object of a response.
type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// outputItem is one item of a response's output: a message or a function call. Fields
// that belong to the other kind stay out of the JSON.
type outputItem struct {
	ID        string           `json:"id"`
	Type      string           `json:"type"`
	Status    string           `json:"status"`
	Content   []outputTextPart `json:"content,omitempty"`
	Role      string           `json:"role,omitempty"`
	Arguments *string          `json:"arguments,omitempty"`
	CallID    string           `json:"call_id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Namespace string           `json:"namespace,omitempty"`
	text      string           // the message's whole text, for streaming it
}

// outputTextPart is the output_text content part of a message.
type outputTextPart struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

func newTextPart(text string) outputTextPart {
	return outputTextPart{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: text}
}

// outputItems turns a reply's content blocks into output items: the text blocks into one
// message (first, where the model writes it), each tool_use block into a function call.
func outputItems(content []json.RawMessage, n int) []outputItem {
	text, calls := splitContent(content)
	var out []outputItem
	if text != "" {
		out = append(out, outputItem{ID: fmt.Sprintf("msg_fake%02d", n), Type: "message", Status: "completed", Role: "assistant",
			Content: []outputTextPart{newTextPart(text)}, text: text})
	}
	for i, c := range calls {
		args := string(c.Input)
		out = append(out, outputItem{ID: fmt.Sprintf("fc_fake%02d_%d", n, i), Type: "function_call", Status: "completed",
			Arguments: &args, CallID: c.ID, Name: c.Name, Namespace: c.Namespace})
	}
	return out
}

// responseObject is the response object of the API.
func responseObject(id, model, status string, output []outputItem, usage *responsesUsage) map[string]any {
	if output == nil {
		output = []outputItem{}
	}
	return map[string]any{
		"id": id, "object": "response", "created_at": 1764460800, "status": status, "background": false,
		"error": nil, "incomplete_details": nil, "instructions": nil, "max_output_tokens": nil, "model": model,
		"output": output, "parallel_tool_calls": true, "previous_response_id": nil,
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "store": false, "temperature": 1.0,
		"text": map[string]any{"format": map[string]string{"type": "text"}}, "tool_choice": "auto", "tools": []any{},
		"top_p": 1.0, "truncation": "disabled", "usage": usage, "user": nil, "metadata": map[string]any{},
	}
}

func (o *Responses) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	o.record(r, body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		openAIError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		openAIError(w, http.StatusBadRequest, "invalid_request_error", "body: "+err.Error())
		return
	}
	reply, n, ok := o.take(func(status int, typ, msg string) { openAIError(w, status, openAIErrorTypes[typ], msg) })
	if !ok {
		return
	}
	id := fmt.Sprintf("resp_fake%02d", n)
	items := outputItems(reply.Content, n)
	out, _ := json.Marshal(reply.Content)
	u := &responsesUsage{InputTokens: ResponsesInputTokens(body), OutputTokens: tokens.Count(string(out))}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	if reply.StreamError == "" {
		o.report(u.InputTokens, u.OutputTokens)
	}
	if !req.Stream {
		writeJSON(w, responseObject(id, req.Model, "completed", items, u))
		return
	}
	streamResponse(w, id, req.Model, items, u, reply.StreamError)
}

// streamResponse writes a response as the API streams it. Every event carries its type
// both as the SSE event name and in the data, and a sequence_number counting from 0.
func streamResponse(w http.ResponseWriter, id, model string, items []outputItem, u *responsesUsage, streamError string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	send := func(typ string, fields map[string]any) {
		ev := map[string]any{"type": typ, "sequence_number": seq}
		for k, v := range fields {
			ev[k] = v
		}
		seq++
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send("response.created", map[string]any{"response": responseObject(id, model, "in_progress", nil, nil)})
	send("response.in_progress", map[string]any{"response": responseObject(id, model, "in_progress", nil, nil)})
	for i, it := range items {
		added := it
		added.Status = "in_progress"
		switch it.Type {
		case "message":
			added.Content = []outputTextPart{}
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			send("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": newTextPart("")})
			for _, piece := range splitKeep(it.text, " ") {
				send("response.output_text.delta", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "delta": piece, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "text": it.text, "logprobs": []any{}})
			send("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "part": newTextPart(it.text)})
		case "function_call":
			empty := ""
			added.Arguments = &empty
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for args := *it.Arguments; len(args) > 0; {
				k := min(len(args), 7)
				send("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": i, "delta": args[:k]})
				args = args[k:]
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i, "arguments": *it.Arguments})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	if streamError != "" {
		failed := responseObject(id, model, "failed", items, nil)
		failed["error"] = map[string]string{"code": openAIErrorTypes[streamError], "message": "scripted " + streamError}
		send("response.failed", map[string]any{"response": failed})
		return
	}
	send("response.completed", map[string]any{"response": responseObject(id, model, "completed", items, u)})
}
