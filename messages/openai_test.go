package messages

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/toolshed/toolshed/internal/golden"
)

// The golden files under testdata/openai are rewritten with go test -run OpenAI -update.
const oaTestdata = "testdata/openai"

// checkGolden compares got with the golden file under testdata/openai.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join(oaTestdata, path), got)
}

func readTestdata(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(oaTestdata, path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readOARequest(t *testing.T, name string) *Request {
	t.Helper()
	var req Request
	if err := json.Unmarshal(readTestdata(t, "requests/"+name+".json"), &req); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &req
}

func indented(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// sseText writes events as the front sends them.
func sseText(evs []Event) []byte {
	var buf bytes.Buffer
	for _, ev := range evs {
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", ev.Name, ev.Data)
	}
	return buf.Bytes()
}

func drain(t *testing.T, s EventStream) ([]Event, error) {
	t.Helper()
	var evs []Event
	for {
		ev, err := s.Next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
		if len(evs) > 10000 {
			t.Fatal("endless stream")
		}
	}
}

// checkProtocol checks a stream against the API's rules: message_start first, blocks
// numbered from 0 and never interleaved, every delta of the block open and of its kind,
// tool inputs that are JSON objects once assembled, message_delta then message_stop
// last; every Data a JSON object whose type is the event's name.
func checkProtocol(t *testing.T, evs []Event) {
	t.Helper()
	if len(evs) < 3 || evs[0].Name != "message_start" || evs[len(evs)-2].Name != "message_delta" || evs[len(evs)-1].Name != "message_stop" {
		t.Fatalf("stream shape: %s", sseText(evs))
	}
	open, next := -1, 0
	kind := ""
	var input strings.Builder
	for i, ev := range evs {
		var e struct {
			Type         string `json:"type"`
			Index        *int   `json:"index"`
			ContentBlock *struct {
				Type  string          `json:"type"`
				Input json.RawMessage `json:"input"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if e.Type != ev.Name {
			t.Fatalf("event %d: name %s, type %s", i, ev.Name, e.Type)
		}
		switch ev.Name {
		case "content_block_start":
			if open >= 0 || e.Index == nil || *e.Index != next {
				t.Fatalf("event %d: block start %s while %d open, next %d", i, ev.Data, open, next)
			}
			open, next, kind = *e.Index, next+1, e.ContentBlock.Type
			input.Reset()
		case "content_block_delta":
			if e.Index == nil || *e.Index != open {
				t.Fatalf("event %d: delta for %v while %d open", i, e.Index, open)
			}
			want := map[string]string{"text": "text_delta", "tool_use": "input_json_delta"}[kind]
			if e.Delta.Type != want {
				t.Fatalf("event %d: %s in a %s block", i, e.Delta.Type, kind)
			}
			input.WriteString(e.Delta.PartialJSON)
		case "content_block_stop":
			if e.Index == nil || *e.Index != open {
				t.Fatalf("event %d: stop for %v while %d open", i, e.Index, open)
			}
			if kind == "tool_use" && input.Len() > 0 && !oaCompleteObject(input.String()) {
				t.Fatalf("event %d: tool input %q is not a JSON object", i, input.String())
			}
			open = -1
		case "message_start", "message_delta", "message_stop":
			if i != 0 && ev.Name == "message_start" {
				t.Fatalf("event %d: second message_start", i)
			}
			if open >= 0 && ev.Name != "message_start" {
				t.Fatalf("event %d: %s with block %d open", i, ev.Name, open)
			}
		default:
			t.Fatalf("event %d: unexpected %s", i, ev.Name)
		}
	}
}

// ---- request ----

func TestOpenAIRequestGolden(t *testing.T) {
	for _, tc := range []struct {
		name, model, golden string
	}{
		{"system_string", "", "system_string"},
		{"system_blocks", "", "system_blocks"},
		{"multi_turn_tools", "gpt-4.1", "multi_turn_tools"},
		{"images", "gpt-4o", "images"},
		{"extra_params", "llama3.2", "extra_params"},
		{"other_blocks", "", "other_blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := readOARequest(t, tc.name)
			body, err := ToOpenAI(req, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, body); err != nil || !bytes.Equal(compact.Bytes(), body) {
				t.Fatalf("body is not compact JSON (%v): %s", err, body)
			}
			checkGolden(t, "requests/"+tc.golden+".golden", indented(t, body))
		})
	}
}

func TestOpenAIRequestTranslation(t *testing.T) {
	// Spot checks of the goldens' meaning, so that a careless -update cannot bless a bug.
	decode := func(t *testing.T, name, model string) map[string]any {
		body, err := ToOpenAI(readOARequest(t, name), model)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	roles := func(m map[string]any) string {
		var rs []string
		for _, msg := range m["messages"].([]any) {
			rs = append(rs, msg.(map[string]any)["role"].(string))
		}
		return strings.Join(rs, ",")
	}

	m := decode(t, "system_string", "")
	if m["model"] != "claude-sonnet-4-5" || m["max_completion_tokens"] != 1024.0 || m["max_tokens"] != 1024.0 {
		t.Errorf("system_string: %v", m)
	}
	if got := m["messages"].([]any)[0]; !reflect.DeepEqual(got, map[string]any{"role": "system", "content": "You are terse. Answer in <= 10 words & no markdown."}) {
		t.Errorf("system message: %v", got)
	}
	if _, ok := m["stream"]; ok {
		t.Error("stream sent for a request that does not stream")
	}

	m = decode(t, "system_blocks", "")
	msgs := m["messages"].([]any)
	if msgs[0].(map[string]any)["content"] != "You are a careful assistant.\n\nToday is 2025-11-19." {
		t.Errorf("system blocks: %v", msgs[0])
	}
	if parts, ok := msgs[1].(map[string]any)["content"].([]any); !ok || len(parts) != 2 {
		t.Errorf("two text blocks should be two parts: %v", msgs[1])
	}

	m = decode(t, "multi_turn_tools", "gpt-4.1")
	if got := roles(m); got != "user,assistant,tool,tool,tool,user,assistant,tool" {
		t.Errorf("roles: %s", got)
	}
	if m["model"] != "gpt-4.1" || m["tool_choice"] != "auto" || len(m["tools"].([]any)) != 3 {
		t.Errorf("model, tool_choice or tools: %v %v %v", m["model"], m["tool_choice"], m["tools"])
	}
	msgs = m["messages"].([]any)
	asst := msgs[1].(map[string]any)
	if asst["content"] != "I'll look both up." || len(asst["tool_calls"].([]any)) != 3 {
		t.Errorf("assistant: %v", asst)
	}
	if args := asst["tool_calls"].([]any)[1].(map[string]any)["function"].(map[string]any)["arguments"]; args != `{"timezone":"Asia/Tokyo"}` {
		t.Errorf("arguments: %q", args)
	}
	if c := msgs[3].(map[string]any)["content"]; c != "Error: unknown timezone\ntry an IANA name" {
		t.Errorf("error tool result: %q", c)
	}
	if c := msgs[6].(map[string]any)["content"]; c != nil {
		t.Errorf("assistant with only tool calls: content %v, want null", c)
	}

	m = decode(t, "images", "")
	msgs = m["messages"].([]any)
	parts := msgs[0].(map[string]any)["content"].([]any)
	if u := parts[0].(map[string]any)["image_url"].(map[string]any)["url"].(string); !strings.HasPrefix(u, "data:image/png;base64,iVBOR") {
		t.Errorf("base64 image: %s", u)
	}
	if got := roles(m); got != "user,assistant,tool,user" {
		t.Errorf("roles: %s", got)
	}
	last := msgs[3].(map[string]any)["content"].([]any)
	if len(last) != 3 || last[1].(map[string]any)["type"] != "image_url" || last[2].(map[string]any)["text"] != "And this one?" {
		t.Errorf("tool result image should lead the next user message: %v", last)
	}

	m = decode(t, "extra_params", "")
	for k, want := range map[string]any{"temperature": 0.2, "top_p": 0.9, "user": "13803d75-b4b5-4c3e-b2a2-6f21399b021b", "stream": true} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if !reflect.DeepEqual(m["stop"], []any{"\n\nHuman:", "END"}) || !reflect.DeepEqual(m["stream_options"], map[string]any{"include_usage": true}) {
		t.Errorf("stop or stream_options: %v %v", m["stop"], m["stream_options"])
	}
	for _, k := range []string{"top_k", "thinking", "service_tier", "metadata", "stop_sequences"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s sent upstream", k)
		}
	}
}

func TestOpenAIToolChoice(t *testing.T) {
	tools := `[{"name":"get_weather","input_schema":{"type":"object"}}]`
	for _, tc := range []struct {
		choice, tools string
		want          string // tool_choice and parallel_tool_calls as sent, "" when absent
	}{
		{`{"type":"auto"}`, tools, `"auto" -`},
		{`{"type":"any"}`, tools, `"required" -`},
		{`{"type":"none"}`, tools, `"none" -`},
		{`{"type":"tool","name":"get_weather"}`, tools, `{"type":"function","function":{"name":"get_weather"}} -`},
		{`{"type":"auto","disable_parallel_tool_use":true}`, tools, `"auto" false`},
		{`{"type":"any","disable_parallel_tool_use":true}`, tools, `"required" false`},
		{`{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}`, tools, `{"type":"function","function":{"name":"get_weather"}} false`},
		{`{"type":"auto","disable_parallel_tool_use":false}`, tools, `"auto" -`},
		{``, tools, `- -`},
		{`{"type":"any","disable_parallel_tool_use":true}`, `[]`, `- -`},                   // OpenAI rejects tool_choice without tools
		{`{"type":"auto"}`, `[{"type":"web_search_20250305","name":"web_search"}]`, `- -`}, // no custom tool left
	} {
		raw := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":` + tc.tools
		if tc.choice != "" {
			raw += `,"tool_choice":` + tc.choice
		}
		var req Request
		if err := json.Unmarshal([]byte(raw+"}"), &req); err != nil {
			t.Fatal(err)
		}
		body, err := ToOpenAI(&req, "")
		if err != nil {
			t.Fatalf("%s: %v", tc.choice, err)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(body, &m)
		got := func(k string) string {
			if v, ok := m[k]; ok {
				return string(v)
			}
			return "-"
		}
		if s := got("tool_choice") + " " + got("parallel_tool_calls"); s != tc.want {
			t.Errorf("%s with %s: got %s, want %s", tc.choice, tc.tools, s, tc.want)
		}
	}
}

func TestOpenAIRequestErrors(t *testing.T) {
	for _, raw := range []string{
		`{"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f"}],"tool_choice":{"type":"sometimes"}}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"f"}],"tool_choice":{"type":"tool"}}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}],"stop_sequences":"END"}`,
		`{"model":"m","max_tokens":1,"system":[{"type":"image","source":{"type":"url","url":"u"}}],"messages":[]}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"telepathy"}}]}]}`,
	} {
		var req Request
		if err := json.Unmarshal([]byte(raw), &req); err != nil {
			t.Fatal(err)
		}
		_, err := ToOpenAI(&req, "")
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Type != InvalidRequest {
			t.Errorf("%s: got %v, want a 400 invalid_request_error", raw, err)
		}
	}
}

// ---- response ----

func TestOpenAIResponseGolden(t *testing.T) {
	for _, name := range []string{"text", "tool_calls", "text_and_tool", "invalid_arguments", "refusal", "vllm_stop_sequence"} {
		t.Run(name, func(t *testing.T) {
			resp, err := FromOpenAI(readTestdata(t, "responses/"+name+".json"), "claude-sonnet-4-5")
			if err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(resp)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "responses/"+name+".golden", indented(t, out))
		})
	}
}

func TestOpenAIResponseTranslation(t *testing.T) {
	resp, err := FromOpenAI(readTestdata(t, "responses/text.json"), "claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	if resp.ID != "msg_chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG" || resp.Type != "message" || resp.Role != "assistant" || resp.Model != "claude-sonnet-4-5" {
		t.Errorf("header: %+v", resp)
	}
	if want := (Usage{InputTokens: 93, OutputTokens: 46, CacheReadInputTokens: 1024}); !reflect.DeepEqual(resp.Usage, want) {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
	if len(resp.Content) != 1 || resp.Content[0].Text != "Paris. It's <b>lovely</b> & old." || *resp.StopReason != "end_turn" || resp.StopSequence != nil {
		t.Errorf("content %+v stop %v", resp.Content, *resp.StopReason)
	}

	resp, err = FromOpenAI(readTestdata(t, "responses/tool_calls.json"), "claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Content) != 2 || resp.Content[0].ID != "call_kQ2mYF0xYj3iY1b7cE9oZ3vD" || string(resp.Content[0].Input) != `{"location":"Paris, France","unit":"celsius"}` || string(resp.Content[1].Input) != `{}` || *resp.StopReason != "tool_use" {
		t.Errorf("tool calls: %+v", resp.Content)
	}

	resp, err = FromOpenAI(readTestdata(t, "responses/invalid_arguments.json"), "m")
	if err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, b := range resp.Content {
		inputs = append(inputs, string(b.Input))
	}
	if want := []string{`{}`, `{"location":"Oslo"}`, `{"location":"Rome"}`, `{}`}; !reflect.DeepEqual(inputs, want) || *resp.StopReason != "max_tokens" {
		t.Errorf("inputs %q stop %s, want %q max_tokens", inputs, *resp.StopReason, want)
	}
}

func TestOpenAIFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		finish, extra, message string
		want, seq              string
	}{
		{`"stop"`, ``, `{"content":"hi"}`, "end_turn", ""},
		{`"length"`, ``, `{"content":"hi"}`, "max_tokens", ""},
		{`"tool_calls"`, ``, `{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`, "tool_use", ""},
		{`"function_call"`, ``, `{"function_call":{"name":"f","arguments":"{\"a\":1}"}}`, "tool_use", ""},
		{`"content_filter"`, ``, `{"content":""}`, "refusal", ""},
		{`null`, ``, `{"content":"hi"}`, "end_turn", ""},
		{`"eos"`, ``, `{"content":"hi"}`, "end_turn", ""},
		{`"stop"`, ``, `{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`, "tool_use", ""}, // Ollama, some vLLM parsers
		{`"length"`, ``, `{"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"a"}}]}`, "max_tokens", ""},
		{`"stop"`, `,"stop_reason":"END"`, `{"content":"1 2 3"}`, "stop_sequence", "END"},
		{`"stop"`, `,"stop_reason":128009`, `{"content":"1 2 3"}`, "end_turn", ""}, // vLLM: a stop token id
		{`"stop"`, ``, `{"content":null,"refusal":"no"}`, "refusal", ""},
	} {
		body := `{"id":"x","choices":[{"index":0,"message":` + tc.message + `,"finish_reason":` + tc.finish + tc.extra + `}]}`
		resp, err := FromOpenAI([]byte(body), "m")
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		seq := ""
		if resp.StopSequence != nil {
			seq = *resp.StopSequence
		}
		if *resp.StopReason != tc.want || seq != tc.seq {
			t.Errorf("%s: stop_reason %s %q, want %s %q", body, *resp.StopReason, seq, tc.want, tc.seq)
		}
	}
}

func TestOpenAIResponseErrors(t *testing.T) {
	for _, tc := range []struct {
		body   string
		status int
		typ    string
	}{
		{`{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, 429, RateLimit},
		{`{"error":{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}}`, 400, InvalidRequest},
		{`{"id":"x","choices":[]}`, 500, APIErrorType},
		{`not json`, 500, APIErrorType},
	} {
		_, err := FromOpenAI([]byte(tc.body), "m")
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != tc.status || ae.Type != tc.typ {
			t.Errorf("%s: got %v, want %d %s", tc.body, err, tc.status, tc.typ)
		}
	}
}

// ---- stream ----

func TestOpenAIStreamGolden(t *testing.T) {
	for _, name := range []string{"text", "text_tools", "interleaved_tools", "ollama_tools"} {
		t.Run(name, func(t *testing.T) {
			s := NewOpenAIStream(io.NopCloser(bytes.NewReader(readTestdata(t, "streams/"+name+".sse"))), "claude-sonnet-4-5")
			evs, err := drain(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			checkProtocol(t, evs)
			checkGolden(t, "streams/"+name+".golden", sseText(evs))
		})
	}
}

func TestOpenAIStreamTranslation(t *testing.T) {
	// The documented shapes, byte for byte.
	s := NewOpenAIStream(io.NopCloser(bytes.NewReader(readTestdata(t, "streams/text_tools.sse"))), "claude-sonnet-4-5")
	evs, err := drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		got = append(got, ev.Name+" "+string(ev.Data))
	}
	want := []string{
		`message_start {"type":"message_start","message":{"id":"msg_chatcmpl-C3kNa1b2c3d4e5f6g7h8i9j0kLmNo","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`,
		`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking"}}`,
		`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" both cities."}}`,
		`content_block_stop {"type":"content_block_stop","index":0}`,
		`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","name":"get_weather","input":{}}}`,
		`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"lo"}}`,
		`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"cation\": \"Pa"}}`,
		`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris, France\"}"}}`,
		`content_block_stop {"type":"content_block_stop","index":1}`,
		`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_Q5vT2mWx8Lr4Nk7Jp1Hs9GbZ","name":"get_weather","input":{}}}`,
		`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"location\": "}}`,
		`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"Tokyo, Japan\"}"}}`,
		`content_block_stop {"type":"content_block_stop","index":2}`,
		`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":286,"cache_creation_input_tokens":0,"cache_read_input_tokens":1920,"output_tokens":63}}`,
		`message_stop {"type":"message_stop"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOpenAIStreamEdgeCases(t *testing.T) {
	chunk := func(delta, finish string) string {
		if finish == "" {
			finish = "null"
		}
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	for _, tc := range []struct {
		name, in string
		names    string // event names, by first letters
		err      string
	}{
		{"done only", "data: [DONE]\n\n", "message_start message_delta message_stop", ""},
		{"no [DONE] after finish", chunk(`{"content":"a"}`, `"stop"`), "message_start content_block_start content_block_delta content_block_stop message_delta message_stop", ""},
		{"cut off", chunk(`{"content":"a"}`, ""), "message_start content_block_start content_block_delta", "unexpected EOF"},
		{"crlf and no space", strings.ReplaceAll(strings.ReplaceAll(chunk(`{"content":"a"}`, `"stop"`)+"data: [DONE]\n\n", "data: ", "data:"), "\n", "\r\n"), "message_start content_block_start content_block_delta content_block_stop message_delta message_stop", ""},
		{"comments and events", ": keep-alive\n\nevent: message\nid: 7\n" + chunk(`{"content":"a"}`, `"stop"`) + "data: [DONE]", "message_start content_block_start content_block_delta content_block_stop message_delta message_stop", ""},
		{"error mid-stream", chunk(`{"content":"a"}`, "") + `data: {"error":{"message":"Rate limit reached for gpt-4o","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}` + "\n\n", "message_start content_block_start content_block_delta", "429 rate_limit_error: Rate limit reached for gpt-4o"},
		{"vllm error mid-stream", chunk(`{"content":"a"}`, "") + `data: {"error": {"object": "error", "message": "The model ran out of memory", "type": "InternalServerError", "param": null, "code": 500}}` + "\n\n", "message_start content_block_start content_block_delta", "500 api_error: The model ran out of memory"},
		{"bad chunk", "data: {nope\n\n", "", "bad chunk"},
		{"text after tools", chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, "") + chunk(`{"content":"done"}`, `"stop"`) + "data: [DONE]\n\n",
			"message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop", ""},
		{"late arguments", chunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, "") + chunk(`{"tool_calls":[{"index":1,"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}`, "") + chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"x"}}]}`, ""),
			"message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta", "already ended"},
		{"legacy function_call", chunk(`{"function_call":{"name":"f","arguments":""}}`, "") + chunk(`{"function_call":{"arguments":"{\"a\":1}"}}`, `"function_call"`) + "data: [DONE]\n\n",
			"message_start content_block_start content_block_delta content_block_stop message_delta message_stop", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := drain(t, NewOpenAIStream(io.NopCloser(strings.NewReader(tc.in)), "claude-x"))
			var names []string
			for _, ev := range evs {
				names = append(names, ev.Name)
			}
			if got := strings.Join(names, " "); got != tc.names {
				t.Errorf("events %q, want %q", got, tc.names)
			}
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkProtocol(t, evs)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
		})
	}
	// A cut-off stream is io.ErrUnexpectedEOF.
	_, err := drain(t, NewOpenAIStream(io.NopCloser(strings.NewReader(chunk(`{"content":"a"}`, ""))), "m"))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut off: %v", err)
	}
}

func TestOpenAIStreamClose(t *testing.T) {
	closed := false
	s := NewOpenAIStream(readCloser{strings.NewReader("data: [DONE]\n\n"), func() { closed = true }}, "m")
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil || !closed {
		t.Fatalf("close: %v %v", err, closed)
	}
	if _, err := s.Next(); err == nil || err == io.EOF {
		t.Errorf("Next after Close: %v", err)
	}
}

type readCloser struct {
	io.Reader
	close func()
}

func (r readCloser) Close() error { r.close(); return nil }

// ---- errors ----

func TestOpenAIError(t *testing.T) {
	for _, tc := range []struct {
		status     int
		body       string
		wantStatus int
		wantType   string
		wantMsg    string
	}{
		{400, `{"error":{"message":"Invalid value for 'messages[1].role'.","type":"invalid_request_error","param":"messages[1].role","code":"invalid_value"}}`, 400, InvalidRequest, "Invalid value for 'messages[1].role'."},
		{422, `{"detail":[{"type":"missing","loc":["body","messages"],"msg":"Field required","input":{}}]}`, 400, InvalidRequest, "body.messages: Field required"},
		{401, `{"error":{"message":"Incorrect API key provided: sk-proj-********************************************Xy9Z. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, 401, Authentication, "Incorrect API key provided: [redacted] You can find your API key at https://platform.openai.com/account/api-keys."},
		{403, `{"error":{"message":"Project proj_abc does not have access to model gpt-5","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, 403, Permission, "Project proj_abc does not have access to model gpt-5"},
		{404, `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`, 404, NotFound, `model "llama9" not found, try pulling it first`},
		{404, `{"error":"model 'qwen' not found"}`, 404, NotFound, "model 'qwen' not found"},
		{429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, 429, RateLimit, "You exceeded your current quota, please check your plan and billing details."},
		{500, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`, 500, APIErrorType, "The server had an error while processing your request. Sorry about that!"},
		{502, `<html><body>Bad Gateway</body></html>`, 500, APIErrorType, "Bad Gateway"},
		{503, `{"object":"error","message":"The server is overloaded","type":"ServiceUnavailableError","param":null,"code":503}`, 529, Overloaded, "The server is overloaded"},
		{500, `{"error":{"code":500,"message":"Bearer abc.def-123 rejected by the proxy","type":"server_error"}}`, 500, APIErrorType, "[redacted] rejected by the proxy"},
		{400, `plain text error`, 400, InvalidRequest, "plain text error"},
		{500, ``, 500, APIErrorType, "Internal Server Error"},
	} {
		e := OpenAIError(tc.status, []byte(tc.body))
		if e.Status != tc.wantStatus || e.Type != tc.wantType || e.Message != tc.wantMsg {
			t.Errorf("%d %s:\n got %d %s %q\nwant %d %s %q", tc.status, tc.body, e.Status, e.Type, e.Message, tc.wantStatus, tc.wantType, tc.wantMsg)
		}
	}
}

// ---- end to end ----

// oaServer is an OpenAI-compatible server that records what it receives.
type oaServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	paths    []string
	respond  func(w http.ResponseWriter, body []byte, n int)
	requests int
}

func newOAServer(t *testing.T, respond func(w http.ResponseWriter, body []byte, n int)) *oaServer {
	s := &oaServer{respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		n := s.requests
		s.requests++
		s.mu.Unlock()
		s.respond(w, body, n)
	}))
	t.Cleanup(s.Close)
	return s
}

// clientHeaders are what a Messages API client sends; none of it may reach the upstream.
func clientHeaders() http.Header {
	h := http.Header{}
	h.Set("x-api-key", "sk-ant-api03-client-key")
	h.Set("Authorization", "Bearer client-token")
	h.Set("anthropic-version", "2023-06-01")
	h.Set("anthropic-beta", "advanced-tool-use-2025-11-20")
	h.Set("X-Custom", "1")
	return h
}

func checkUpstreamHeaders(t *testing.T, h http.Header, accept string) {
	t.Helper()
	want := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer sk-test-123", "Accept": accept}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, h.Get(k), v)
		}
	}
	for k := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "anthropic-") || lk == "x-api-key" || lk == "x-custom" {
			t.Errorf("client header %s forwarded", k)
		}
	}
	for k := range h {
		switch k {
		case "Content-Type", "Authorization", "Accept", "Accept-Encoding", "User-Agent", "Content-Length":
		default:
			t.Errorf("unexpected header %s: %q", k, h.Get(k))
		}
	}
}

func TestOpenAIEndToEndCreate(t *testing.T) {
	completion := readTestdata(t, "responses/tool_calls.json")
	srv := newOAServer(t, func(w http.ResponseWriter, body []byte, n int) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(completion)
	})
	up := &OpenAI{BaseURL: srv.URL + "/v1/", APIKey: "sk-test-123", Model: "gpt-4.1"}
	req := readOARequest(t, "multi_turn_tools")
	req.Stream = true // Create must not stream, whatever the request says

	resp, err := up.Create(context.Background(), req, clientHeaders())
	if err != nil {
		t.Fatal(err)
	}
	if srv.paths[0] != "POST /v1/chat/completions" {
		t.Errorf("request line %s", srv.paths[0])
	}
	checkUpstreamHeaders(t, srv.headers[0], "application/json")
	plain := *req
	plain.Stream = false
	want, _ := ToOpenAI(&plain, "gpt-4.1")
	if !bytes.Equal(srv.bodies[0], want) {
		t.Errorf("body:\n%s\nwant:\n%s", srv.bodies[0], want)
	}
	checkGolden(t, "e2e_create_request.golden", indented(t, srv.bodies[0]))

	out, _ := json.Marshal(resp)
	checkGolden(t, "e2e_create_response.golden", indented(t, out))
	if resp.Model != "claude-opus-4-1" || *resp.StopReason != "tool_use" || len(resp.Content) != 2 {
		t.Errorf("response %s", out)
	}
}

func TestOpenAIEndToEndStream(t *testing.T) {
	sse := readTestdata(t, "streams/text_tools.sse")
	srv := newOAServer(t, func(w http.ResponseWriter, body []byte, n int) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		// Send the recording in pieces that split lines, as a network does.
		for i := 0; i < len(sse); i += 97 {
			w.Write(sse[i:min(i+97, len(sse))])
			w.(http.Flusher).Flush()
		}
	})
	up := &OpenAI{BaseURL: srv.URL + "/v1", APIKey: "sk-test-123"}
	req := readOARequest(t, "system_string")

	st, err := up.Stream(context.Background(), req, clientHeaders())
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	checkUpstreamHeaders(t, srv.headers[0], "text/event-stream")
	streamed := *req
	streamed.Stream = true
	want, _ := ToOpenAI(&streamed, "")
	if !bytes.Equal(srv.bodies[0], want) {
		t.Errorf("body:\n%s\nwant:\n%s", srv.bodies[0], want)
	}
	checkGolden(t, "e2e_stream_request.golden", indented(t, srv.bodies[0]))
	checkProtocol(t, evs)
	checkGolden(t, "e2e_stream_events.golden", sseText(evs))
	if !bytes.Contains(evs[0].Data, []byte(`"model":"claude-sonnet-4-5"`)) {
		t.Errorf("message_start %s", evs[0].Data)
	}
}

func TestOpenAIStreamAnsweredWithJSON(t *testing.T) {
	completion := readTestdata(t, "responses/text_and_tool.json")
	srv := newOAServer(t, func(w http.ResponseWriter, body []byte, n int) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(completion)
	})
	st, err := (&OpenAI{BaseURL: srv.URL}).Stream(context.Background(), readOARequest(t, "system_string"), nil)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := drain(t, st)
	if err != nil {
		t.Fatal(err)
	}
	checkProtocol(t, evs)
	checkGolden(t, "e2e_stream_json_events.golden", sseText(evs))
	if h := srv.headers[0].Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
}

func TestOpenAIUpstreamErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-test-123. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			"401 authentication_error: Incorrect API key provided: [redacted] You can find your API key at https://platform.openai.com/account/api-keys."},
		{429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "429 rate_limit_error: Rate limit reached"},
		{503, `upstream connect error`, "529 overloaded_error: upstream connect error"},
		{500, `{"error":{"message":"key my-local-key-42 is wrong","type":"server_error"}}`, "500 api_error: key [redacted] is wrong"},
	} {
		srv := newOAServer(t, func(w http.ResponseWriter, body []byte, n int) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		})
		key := "sk-test-123"
		if tc.status == 500 {
			key = "my-local-key-42"
		}
		up := &OpenAI{BaseURL: srv.URL, APIKey: key}
		_, err := up.Create(context.Background(), readOARequest(t, "system_string"), nil)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Error() != tc.want {
			t.Errorf("Create: %v, want %s", err, tc.want)
		}
		_, err = up.Stream(context.Background(), readOARequest(t, "system_string"), nil)
		if !errors.As(err, &ae) || ae.Error() != tc.want {
			t.Errorf("Stream: %v, want %s", err, tc.want)
		}
	}
}

func TestOpenAITransportErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := (&OpenAI{BaseURL: url, APIKey: "sk-secret-key-1"}).Create(context.Background(), readOARequest(t, "system_string"), nil)
	if err == nil || !strings.Contains(err.Error(), "openai upstream") || strings.Contains(err.Error(), "sk-secret") {
		t.Errorf("closed server: %v", err)
	}
	var ue interface{ Timeout() bool }
	if !errors.As(err, &ue) {
		t.Errorf("the transport error is not wrapped: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = (&OpenAI{BaseURL: "http://127.0.0.1:1"}).Stream(ctx, readOARequest(t, "system_string"), nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
}

func TestOpenAIMaxTokensRetry(t *testing.T) {
	reject := `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`
	completion := readTestdata(t, "responses/text.json")
	srv := newOAServer(t, func(w http.ResponseWriter, body []byte, n int) {
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(body, []byte(`"max_tokens"`)) {
			w.WriteHeader(400)
			io.WriteString(w, reject)
			return
		}
		w.Write(completion)
	})
	up := &OpenAI{BaseURL: srv.URL}
	for i := 0; i < 2; i++ {
		if _, err := up.Create(context.Background(), readOARequest(t, "system_string"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if srv.requests != 3 {
		t.Errorf("%d requests, want 3 (one rejected, then without max_tokens from then on)", srv.requests)
	}
	for i, b := range srv.bodies[1:] {
		if bytes.Contains(b, []byte(`"max_tokens"`)) || !bytes.Contains(b, []byte(`"max_completion_tokens":1024`)) {
			t.Errorf("request %d: %s", i+1, b)
		}
	}
	// OpenAI's own API never gets max_tokens.
	for _, base := range []string{"https://api.openai.com/v1", "https://myres.openai.azure.com/openai/deployments/x"} {
		if (&OpenAI{BaseURL: base}).sendsMaxTokens() {
			t.Errorf("%s gets max_tokens", base)
		}
	}
	if !(&OpenAI{BaseURL: "http://localhost:11434/v1"}).sendsMaxTokens() {
		t.Error("Ollama does not get max_tokens")
	}
}

func TestOpenAICountTokens(t *testing.T) {
	up := &OpenAI{BaseURL: "http://127.0.0.1:1"} // never called
	text := readOARequest(t, "system_string")
	n, err := up.CountTokens(context.Background(), text, nil)
	if err != nil || n < 10 || n > 100 {
		t.Fatalf("count %d, %v", n, err)
	}

	// A 300×150 PNG costs 300*150/750 = 60 tokens, not the text of its data: URL.
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 300, 150)))
	data := base64.StdEncoding.EncodeToString(append(buf.Bytes(), bytes.Repeat([]byte{0}, 20000)...))
	raw := `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + data + `"}}]}]}`
	var req Request
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		t.Fatal(err)
	}
	withImage, err := up.CountTokens(context.Background(), &req, nil)
	if err != nil || withImage < 60 || withImage > 90 {
		t.Errorf("image request counts %d, %v; want about 60", withImage, err)
	}

	tools := readOARequest(t, "multi_turn_tools")
	withTools, err := up.CountTokens(context.Background(), tools, nil)
	tools.Tools = nil
	without, err2 := up.CountTokens(context.Background(), tools, nil)
	if err != nil || err2 != nil || withTools <= without+50 {
		t.Errorf("tools count: %d with, %d without (%v %v)", withTools, without, err, err2)
	}
	if got := oaImageTokens("https://example.com/a.png"); got != 1600 {
		t.Errorf("URL image: %d", got)
	}
	if got := oaImageTokens("data:image/png;base64," + base64.StdEncoding.EncodeToString(pngOf(4000, 3000))); got != 1534 {
		t.Errorf("large image: %d, want the 1.15 MP cap", got)
	}
}

func pngOf(w, h int) []byte {
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h)))
	return buf.Bytes()
}
