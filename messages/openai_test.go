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

// End to end: the OpenAI upstream against a server that records what it gets.

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
			"401 authentication_error: Incorrect API key provided: xxxxx. You can find your API key at https://platform.openai.com/account/api-keys."},
		{429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "429 rate_limit_error: Rate limit reached"},
		{503, `upstream connect error`, "529 overloaded_error: upstream connect error"},
		{500, `{"error":{"message":"key my-local-key-42 is wrong","type":"server_error"}}`, "500 api_error: key xxxxx is wrong"},
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
