package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolshed/toolshed/tokens"
)

// Gemini serves a script of replies over the Gemini API (generativelanguage, v1beta), as
// Gemini CLI uses it when GOOGLE_GEMINI_BASE_URL points at it:
//
//	POST /v1beta/models/MODEL:generateContent             one GenerateContentResponse
//	POST /v1beta/models/MODEL:streamGenerateContent?alt=sse  server-sent chunks ("data: ...\r\n\r\n")
//	POST /v1beta/models/MODEL:streamGenerateContent       the same chunks as one JSON array
//	POST /v1beta/models/MODEL:countTokens                 {"totalTokens": N}
//
// Text blocks of a reply become text parts (streamed in words), tool_use blocks become
// functionCall parts {"name", "args"} (the API gives no call ids; the block's id is
// dropped). Stop reasons become finish reasons: STOP (also for function calls, as the
// API does) or MAX_TOKENS. Errors are the API's {"error": {"code", "message", "status"}}.
type Gemini struct{ script }

// NewGemini returns a model that gives these replies in order.
func NewGemini(replies ...Reply) *Gemini { return &Gemini{script{replies: replies}} }

// GeminiPromptTokens counts what a generateContent request puts before the model: its
// system instruction, contents and tools, as JSON, with o200k_base.
func GeminiPromptTokens(body []byte) int {
	return countMembers(body, "systemInstruction", "contents", "tools")
}

// geminiFinishReasons maps the Messages API's stop reasons to Gemini's finish reasons.
var geminiFinishReasons = map[string]string{"end_turn": "STOP", "tool_use": "STOP", "stop_sequence": "STOP", "max_tokens": "MAX_TOKENS"}

// geminiStatuses maps the Messages API's error types to Google's status codes.
var geminiStatuses = map[string]string{
	"invalid_request_error": "INVALID_ARGUMENT", "authentication_error": "UNAUTHENTICATED",
	"permission_error": "PERMISSION_DENIED", "not_found_error": "NOT_FOUND",
	"rate_limit_error": "RESOURCE_EXHAUSTED", "overloaded_error": "UNAVAILABLE", "api_error": "INTERNAL",
}

// geminiHTTPStatus maps the Messages API's error types to the HTTP status Google answers
// them with.
var geminiHTTPStatus = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403, "not_found_error": 404,
	"rate_limit_error": 429, "overloaded_error": 503, "api_error": 500,
}

// geminiUsage is a response's usageMetadata.
type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

// geminiPart is one part of a candidate's content: text or a function call.
type geminiPart struct {
	Text         string              `json:"text,omitempty"`
	FunctionCall *geminiFunctionCall `json:"functionCall,omitempty"`
}

type geminiFunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

func (g *Gemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.record(r, body)
	model, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	if r.Method != http.MethodPost || !ok || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
		geminiError(w, http.StatusNotFound, "NOT_FOUND", "no route "+r.Method+" "+r.URL.Path)
		return
	}
	if !json.Valid(body) {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	switch method {
	case "countTokens":
		writeJSON(w, map[string]int{"totalTokens": GeminiPromptTokens(body)})
		return
	case "generateContent", "streamGenerateContent":
	default:
		geminiError(w, http.StatusNotFound, "NOT_FOUND", "no method "+method+" on models/"+model)
		return
	}
	reply, n, ok := g.take(func(status int, typ, msg string) { geminiError(w, status, geminiStatuses[typ], msg) })
	if !ok {
		return
	}
	text, toolCalls := splitContent(reply.Content)
	var calls []geminiPart
	for _, c := range toolCalls {
		calls = append(calls, geminiPart{FunctionCall: &geminiFunctionCall{Name: c.Name, Args: c.Input}})
	}
	out, _ := json.Marshal(reply.Content)
	u := geminiUsage{PromptTokenCount: GeminiPromptTokens(body), CandidatesTokenCount: tokens.Count(string(out))}
	u.TotalTokenCount = u.PromptTokenCount + u.CandidatesTokenCount
	if reply.StreamError == "" {
		g.report(u.PromptTokenCount, u.CandidatesTokenCount)
	}
	responseID := fmt.Sprintf("fake-gemini-%02d", n)
	chunk := func(parts []geminiPart, finish string, usage *geminiUsage) map[string]any {
		cand := map[string]any{"content": map[string]any{"parts": parts, "role": "model"}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		c := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": responseID}
		if usage != nil {
			c["usageMetadata"] = usage
		}
		return c
	}
	finish := geminiFinishReasons[reply.StopReason]
	if finish == "" {
		finish = "STOP"
	}
	var parts []geminiPart
	if text != "" {
		parts = append(parts, geminiPart{Text: text})
	}
	parts = append(parts, calls...)
	if parts == nil {
		parts = []geminiPart{{Text: ""}}
	}
	if method == "generateContent" {
		writeJSON(w, chunk(parts, finish, &u))
		return
	}

	// A stream: the text in words, then the function calls whole, the last chunk with
	// the finish reason and the usage (earlier chunks carry the prompt count only).
	var chunks []map[string]any
	pieces := splitKeep(text, " ")
	prompt := &geminiUsage{PromptTokenCount: u.PromptTokenCount, TotalTokenCount: u.PromptTokenCount}
	for i, p := range pieces {
		if i == len(pieces)-1 && len(calls) == 0 {
			break
		}
		chunks = append(chunks, chunk([]geminiPart{{Text: p}}, "", prompt))
	}
	var last []geminiPart
	if len(calls) == 0 && len(pieces) > 0 {
		last = []geminiPart{{Text: pieces[len(pieces)-1]}}
	}
	last = append(last, calls...)
	if last == nil {
		last = []geminiPart{{Text: ""}}
	}
	if reply.StreamError != "" {
		chunks = append(chunks, chunk(last, "", prompt))
	} else {
		chunks = append(chunks, chunk(last, finish, &u))
	}

	if r.URL.Query().Get("alt") != "sse" {
		// Without alt=sse the API streams one JSON array of the chunks.
		if reply.StreamError != "" {
			geminiError(w, geminiHTTPStatus[reply.StreamError], geminiStatuses[reply.StreamError], "scripted "+reply.StreamError)
			return
		}
		writeJSON(w, chunks)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, c := range chunks {
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	if reply.StreamError != "" {
		// The API ends a failed stream with an error object as the last event.
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": geminiHTTPStatus[reply.StreamError], "message": "scripted " + reply.StreamError, "status": geminiStatuses[reply.StreamError]}})
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	}
}

// geminiError writes Google's error body.
func geminiError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": status, "message": msg, "status": code}})
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	w.Write(b)
}
