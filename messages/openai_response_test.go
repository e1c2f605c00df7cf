package messages

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

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
