package fakellm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// sseEvents reads a text/event-stream body into (event name, data) pairs.
func sseEvents(t *testing.T, body string) (names []string, data []map[string]any) {
	t.Helper()
	for _, block := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var name string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				var m map[string]any
				if err := json.Unmarshal([]byte(v), &m); err != nil {
					t.Fatalf("event data is not JSON: %v: %s", err, v)
				}
				data = append(data, m)
				names = append(names, name)
			}
		}
	}
	return names, data
}

func post(t *testing.T, h http.Handler, path, body string) (*http.Response, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestResponsesStreamsFunctionCallsAndText(t *testing.T) {
	m := NewResponses(
		CallIn("call_1", "mcp__toolshed", "tool_search", `{"query":"echo things"}`),
		Say("all done here"),
	)
	resp, body := post(t, m, "/v1/responses", `{"model":"m","stream":true,"input":[]}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type = %q", ct)
	}
	names, data := sseEvents(t, body)
	want := []string{"response.created", "response.in_progress", "response.output_item.added"}
	if !slices.Equal(names[:3], want) || names[len(names)-1] != "response.completed" {
		t.Fatalf("events = %v", names)
	}
	for i, d := range data {
		if d["type"] != names[i] || d["sequence_number"] != float64(i) {
			t.Fatalf("event %d: type %v, sequence_number %v", i, d["type"], d["sequence_number"])
		}
	}
	var args strings.Builder
	var done map[string]any
	for i, n := range names {
		switch n {
		case "response.function_call_arguments.delta":
			args.WriteString(data[i]["delta"].(string))
		case "response.output_item.done":
			done = data[i]["item"].(map[string]any)
		}
	}
	if args.String() != `{"query":"echo things"}` {
		t.Errorf("argument deltas join to %q", args.String())
	}
	if done["type"] != "function_call" || done["call_id"] != "call_1" || done["name"] != "tool_search" ||
		done["namespace"] != "mcp__toolshed" || done["arguments"] != `{"query":"echo things"}` || done["status"] != "completed" {
		t.Errorf("output_item.done item = %v", done)
	}
	usage := data[len(data)-1]["response"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"].(float64) <= 0 || usage["total_tokens"] != usage["input_tokens"].(float64)+usage["output_tokens"].(float64) {
		t.Errorf("usage = %v", usage)
	}

	_, body = post(t, m, "/v1/responses", `{"model":"m","stream":true,"input":[]}`)
	names, data = sseEvents(t, body)
	var text strings.Builder
	for i, n := range names {
		if n == "response.output_text.delta" {
			text.WriteString(data[i]["delta"].(string))
		}
	}
	if text.String() != "all done here" || !slices.Contains(names, "response.content_part.done") {
		t.Errorf("text deltas %q, events %v", text.String(), names)
	}
	if got := len(m.Requests()); got != 2 {
		t.Errorf("recorded %d requests, want 2", got)
	}
}

func TestResponsesNotStreamedAndErrors(t *testing.T) {
	m := NewResponses(Call("", "call_9", "get_weather", `{"city":"Paris"}`), Fail(429, "rate_limit_error"))
	_, body := post(t, m, "/v1/responses", `{"model":"m","input":"hi"}`)
	var r struct {
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Type, CallID, Name, Arguments string
		} `json:"output"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if r.Object != "response" || r.Status != "completed" || len(r.Output) != 1 || r.Output[0].Type != "function_call" {
		t.Fatalf("response = %s", body)
	}
	resp, body := post(t, m, "/v1/responses", `{"model":"m","input":"hi"}`)
	if resp.StatusCode != 429 || !strings.Contains(body, `"type":"rate_limit_exceeded"`) {
		t.Errorf("scripted failure: %d %s", resp.StatusCode, body)
	}
	resp, body = post(t, m, "/v1/responses", `{"model":"m","input":"hi"}`)
	if resp.StatusCode != 500 || !strings.Contains(body, "no more replies") {
		t.Errorf("past the script: %d %s", resp.StatusCode, body)
	}
	if resp, _ := post(t, m, "/v1/chat/completions", `{}`); resp.StatusCode != 404 {
		t.Errorf("wrong route: %d", resp.StatusCode)
	}
}

func TestResponsesStreamError(t *testing.T) {
	m := NewResponses(Reply{Content: []json.RawMessage{Text("partial")}, StreamError: "overloaded_error"})
	_, body := post(t, m, "/v1/responses", `{"model":"m","stream":true}`)
	names, data := sseEvents(t, body)
	last := data[len(data)-1]
	if names[len(names)-1] != "response.failed" || last["response"].(map[string]any)["status"] != "failed" {
		t.Errorf("events %v, last %v", names, last)
	}
	if in, out := m.Usage(); in != 0 || out != 0 {
		t.Errorf("a failed stream reported usage %d/%d", in, out)
	}
}
