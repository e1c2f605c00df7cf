package messages

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
)

// The translation of a chat.completion into a Messages API response.

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
