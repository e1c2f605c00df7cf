package fakellm

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestGeminiStreamsSSE(t *testing.T) {
	m := NewGemini(
		Call("", "ignored", "mcp_toolshed_tool_search", `{"query":"echo"}`),
		Say("the answer is here"),
	)
	const path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	resp, body := post(t, m, path, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || !strings.Contains(body, "\r\n\r\n") {
		t.Fatalf("Content-Type %q, body %q", ct, body)
	}
	_, data := sseEvents(t, body)
	if len(data) != 1 {
		t.Fatalf("a function call reply streams %d chunks, want 1: %s", len(data), body)
	}
	cand := data[0]["candidates"].([]any)[0].(map[string]any)
	part := cand["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)
	call := part["functionCall"].(map[string]any)
	if call["name"] != "mcp_toolshed_tool_search" || call["args"].(map[string]any)["query"] != "echo" || call["id"] != nil {
		t.Errorf("functionCall = %v", call)
	}
	if cand["finishReason"] != "STOP" || data[0]["usageMetadata"] == nil || data[0]["modelVersion"] != "gemini-2.5-flash" {
		t.Errorf("chunk = %v", data[0])
	}

	_, body = post(t, m, path, `{"contents":[]}`)
	_, data = sseEvents(t, body)
	var text strings.Builder
	for i, d := range data {
		cand := d["candidates"].([]any)[0].(map[string]any)
		text.WriteString(cand["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string))
		if _, has := cand["finishReason"]; has != (i == len(data)-1) {
			t.Errorf("chunk %d of %d: finishReason present = %v", i, len(data), has)
		}
	}
	if text.String() != "the answer is here" || len(data) != 4 {
		t.Errorf("streamed %q in %d chunks", text.String(), len(data))
	}
	if got := m.Requests(); len(got) != 2 || got[0].Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" {
		t.Errorf("recorded %v", got)
	}
}

func TestGeminiGenerateContentCountTokensAndErrors(t *testing.T) {
	m := NewGemini(Say(`{"complexity_score": 10}`), Fail(429, "rate_limit_error"))
	_, body := post(t, m, "/v1beta/models/flash-lite:generateContent", `{"contents":[{"role":"user","parts":[{"text":"route me"}]}]}`)
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string }
				Role  string
			}
			FinishReason string
		}
		UsageMetadata struct{ PromptTokenCount, TotalTokenCount int }
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Candidates) != 1 || r.Candidates[0].Content.Role != "model" || r.Candidates[0].Content.Parts[0].Text != `{"complexity_score": 10}` ||
		r.Candidates[0].FinishReason != "STOP" || r.UsageMetadata.PromptTokenCount <= 0 {
		t.Errorf("generateContent = %s", body)
	}
	resp, body := post(t, m, "/v1beta/models/m:countTokens", `{"contents":[{"parts":[{"text":"count me"}]}]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(body, `{"totalTokens":`) {
		t.Errorf("countTokens: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, m, "/v1beta/models/m:generateContent", `{}`)
	if resp.StatusCode != 429 || !strings.Contains(body, `"status":"RESOURCE_EXHAUSTED"`) {
		t.Errorf("scripted failure: %d %s", resp.StatusCode, body)
	}
	if resp, body := post(t, m, "/v1beta/models/m:generateContent", `{not json`); resp.StatusCode != 400 {
		t.Errorf("bad JSON: %d %s", resp.StatusCode, body)
	}
	if resp, _ := post(t, m, "/v1/chat/completions", `{}`); resp.StatusCode != 404 {
		t.Errorf("wrong route: %d", resp.StatusCode)
	}
}

func TestGeminiStreamWithoutSSEIsAnArray(t *testing.T) {
	m := NewGemini(Say("two words"))
	_, body := post(t, m, "/v1beta/models/m:streamGenerateContent", `{}`)
	var chunks []map[string]any
	if err := json.Unmarshal([]byte(body), &chunks); err != nil || len(chunks) != 2 {
		t.Errorf("body %s: %v", body, err)
	}
}
