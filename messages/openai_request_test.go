package messages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

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
		// Claude Code's members, system messages in the conversation among them.
		{"claude_code", "", "claude_code"},
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

	// Claude Code: its system messages stay in place; its metadata.user_id, a JSON
	// object of about 150 characters, goes as its SHA-256 (OpenAI rejects a user over
	// 64 characters); thinking, context_management and output_config have no Chat
	// Completions form.
	m = decode(t, "claude_code", "")
	if got := roles(m); got != "system,user,system,assistant,tool,user,system" {
		t.Errorf("roles: %s", got)
	}
	sum := sha256.Sum256([]byte(`{"device_id":"1c9ebbbc412b09168a60abf7953c7d5f27e886dc6992c24095e84881a9d3a47e","account_uuid":"","session_id":"93b7e80e-0f8e-4b85-829c-e77b17f53c5f"}`))
	if m["user"] != hex.EncodeToString(sum[:]) {
		t.Errorf("user %v, want the SHA-256 of metadata.user_id in hex", m["user"])
	}
	for _, k := range []string{"thinking", "context_management", "output_config", "metadata"} {
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
		`{"model":"m","max_tokens":1,"messages":[{"role":"developer","content":"x"}]}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"system","content":[{"type":"image","source":{"type":"url","url":"u"}}]}]}`,
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
