package messages

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

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
