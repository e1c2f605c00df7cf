package messages_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/messages"
)

// hugeUpstream is a model API, of either wire format, that answers a request whose
// messages say "huge" with an answer of size bytes, sent in pieces: the first half of
// the bound, then, once released, the rest. Every other request gets fakellm's
// ordinary answer "fine".
type hugeUpstream struct {
	kind   string // "anthropic" or "openai"
	shape  string // "body", "body-length" (Content-Length set), "line" (one SSE line), "deltas" (many small SSE events)
	limit  int64
	size   int64
	half   chan struct{} // closed once the first half is sent
	resume chan struct{} // closed to send the rest
	once   sync.Once
	normal http.Handler
}

func (u *hugeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !bytes.Contains(body, []byte("huge")) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		u.normal.ServeHTTP(w, r)
		return
	}
	var head, piece, tail string
	filler := strings.Repeat("a", 4096)
	switch {
	case u.shape == "body" || u.shape == "body-length":
		w.Header().Set("Content-Type", "application/json")
		head, piece, tail = `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`, filler, `"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`
		if u.kind == "openai" {
			head, tail = `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`, `"},"finish_reason":"stop"}]}`
		}
		if u.shape == "body-length" {
			w.Header().Set("Content-Length", fmt.Sprint(u.size))
		}
	case u.kind == "anthropic":
		w.Header().Set("Content-Type", "text/event-stream")
		head = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		piece = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + filler + "\"}}\n\n"
		if u.shape == "line" {
			head += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\""
			piece = filler
		}
	default: // openai stream
		w.Header().Set("Content-Type", "text/event-stream")
		head = "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
		piece = "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + filler + "\"}}]}\n\n"
		if u.shape == "line" {
			head += "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\""
			piece = filler
		}
	}
	flusher := w.(http.Flusher)
	sent := int64(0)
	write := func(s string) bool {
		_, err := io.WriteString(w, s)
		sent += int64(len(s))
		return err == nil
	}
	if !write(head) {
		return
	}
	for sent < u.size-int64(len(tail)) {
		if sent >= u.limit/2 {
			flusher.Flush()
			u.once.Do(func() { close(u.half) })
			select {
			case <-u.resume:
			case <-r.Context().Done():
				return
			}
		}
		if !write(piece) {
			return // the proxy stopped reading: as it must
		}
	}
	write(tail)
}

// TestUpstreamAnswerBounded sends answers over the bound from an upstream of each wire
// format, streamed and not, while an ordinary request runs beside them: the request
// with the huge answer fails alone, with an api_error that says what was too large,
// the bound, and what to do (as an error event once the stream has started), and the
// ordinary request is answered.
func TestUpstreamAnswerBounded(t *testing.T) {
	const limit = 1 << 20
	cases := []struct {
		kind, shape string
		stream      bool
		started     bool // the client has had the stream's first events when the bound is passed
	}{
		{"anthropic", "body", false, false},
		{"anthropic", "body-length", false, false},
		{"anthropic", "line", true, true},
		{"anthropic", "deltas", true, true},
		{"openai", "body", false, false},
		{"openai", "body-length", false, false},
		{"openai", "line", true, true},
		{"openai", "deltas", true, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s", c.kind, c.shape), func(t *testing.T) {
			up := &hugeUpstream{kind: c.kind, shape: c.shape, limit: limit, size: 3 * limit,
				half: make(chan struct{}), resume: make(chan struct{})}
			var upstream messages.Upstream
			if c.kind == "openai" {
				up.normal = fakellm.NewOpenAI(fakellm.Say("fine"))
			} else {
				up.normal = fakellm.NewAnthropic(fakellm.Say("fine"))
			}
			upSrv := httptest.NewServer(up)
			t.Cleanup(upSrv.Close)
			t.Cleanup(func() { closeOnce(up.resume) })
			if c.kind == "openai" {
				upstream = &messages.OpenAI{BaseURL: upSrv.URL + "/v1", MaxAnswerBytes: limit}
			} else {
				upstream = &messages.Anthropic{BaseURL: upSrv.URL, MaxAnswerBytes: limit}
			}
			front := httptest.NewServer((&messages.Proxy{Upstream: upstream}).Handler())
			t.Cleanup(front.Close)

			huge := make(chan boundReply, 1)
			go func() { huge <- postText(front.URL, "huge", c.stream) }()
			if c.shape != "body-length" {
				select {
				case <-up.half:
				case r := <-huge:
					t.Fatalf("the huge answer ended before half of it was sent: %d %s", r.status, r.body)
				case <-time.After(time.Minute):
					t.Fatal("the upstream never sent half of the huge answer")
				}
			}
			// An ordinary request while the huge answer is under way.
			normal := postText(front.URL, "small", false)
			if normal.err != nil || normal.status != http.StatusOK || !strings.Contains(normal.body, `"fine"`) {
				t.Errorf("the ordinary request beside the huge answer: status %d, error %v, body %.300s", normal.status, normal.err, normal.body)
			}
			closeOnce(up.resume)
			var r boundReply
			select {
			case r = <-huge:
			case <-time.After(time.Minute):
				t.Fatal("the request with the huge answer got no answer")
			}
			if r.err != nil {
				t.Fatalf("the request with the huge answer: %v", r.err)
			}
			errBody := r.body
			if c.started {
				if r.status != http.StatusOK || !strings.HasPrefix(r.body, "event: message_start") {
					t.Fatalf("want a stream that started, got status %d: %.300s", r.status, r.body)
				}
				last := strings.LastIndex(r.body, "event: error\ndata: ")
				if last < 0 {
					t.Fatalf("the stream does not end with an error event: ...%s", tail(r.body, 300))
				}
				errBody = strings.TrimSpace(r.body[last+len("event: error\ndata: "):])
			} else if r.status != http.StatusInternalServerError {
				t.Errorf("status %d, want 500", r.status)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(errBody), &e); err != nil {
				t.Fatalf("the error is not an error body: %v: %.300s", err, errBody)
			}
			if e.Type != "error" || e.Error.Type != messages.APIErrorType {
				t.Errorf("error type %q/%q, want error/api_error", e.Type, e.Error.Type)
			}
			for _, want := range []string{"answer is over 1 MiB", "lower max_tokens", "--max-answer-mib"} {
				if !strings.Contains(e.Error.Message, want) {
					t.Errorf("the error message lacks %q: %s", want, e.Error.Message)
				}
			}
		})
	}
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

type boundReply struct {
	status int
	body   string
	err    error
}

// postText sends a Messages API request whose message is text to the proxy at base.
func postText(base, text string, stream bool) boundReply {
	body := fmt.Sprintf(`{"model":"m","max_tokens":100,"stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, text)
	resp, err := http.Post(base+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		return boundReply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return boundReply{status: resp.StatusCode, body: string(b), err: err}
}

// endless is an answer body that never ends, and counts what was read of it.
type endless struct {
	prefix string
	read   int64
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if e.read < int64(len(e.prefix)) {
			c := copy(p[n:], e.prefix[e.read:])
			n += c
			e.read += int64(c)
			continue
		}
		p[n] = 'a'
		n++
		e.read++
	}
	return n, nil
}

func (e *endless) Close() error { return nil }

type endlessTransport struct {
	body *endless
	ct   string
}

func (t endlessTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r.Body.Close()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {t.ct}}, Body: t.body, ContentLength: -1, Request: r}, nil
}

// TestUpstreamReadStopsAtBound gives each upstream an answer that never ends: every
// way of reading it stops at the bound (one byte past it, which tells an answer over
// the bound from one exactly at it), whatever the answer's shape.
func TestUpstreamReadStopsAtBound(t *testing.T) {
	const limit = 256 << 10
	req := &messages.Request{Model: "m", MaxTokens: 10, Messages: []messages.Message{{Role: "user", Content: []messages.Block{messages.TextBlock("hi")}}}}
	cases := []struct {
		name, ct, prefix string
		stream           bool
		up               func(c *http.Client) messages.Upstream
	}{
		{"anthropic body", "application/json", `{"content":[{"type":"text","text":"`, false,
			func(c *http.Client) messages.Upstream { return &messages.Anthropic{Client: c, MaxAnswerBytes: limit} }},
		{"anthropic line", "text/event-stream", "event: content_block_delta\ndata: {", true,
			func(c *http.Client) messages.Upstream { return &messages.Anthropic{Client: c, MaxAnswerBytes: limit} }},
		{"openai body", "application/json", `{"choices":[{"message":{"content":"`, false,
			func(c *http.Client) messages.Upstream { return &messages.OpenAI{Client: c, MaxAnswerBytes: limit} }},
		{"openai line", "text/event-stream", `data: {"choices":[{"delta":{"content":"`, true,
			func(c *http.Client) messages.Upstream { return &messages.OpenAI{Client: c, MaxAnswerBytes: limit} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := &endless{prefix: c.prefix}
			up := c.up(&http.Client{Transport: endlessTransport{body: body, ct: c.ct}})
			var err error
			if c.stream {
				var st messages.EventStream
				st, err = up.Stream(t.Context(), req, nil)
				if err == nil {
					defer st.Close()
					for err == nil {
						_, err = st.Next()
					}
				}
			} else {
				_, err = up.Create(t.Context(), req, nil)
			}
			if !errors.Is(err, messages.ErrAnswerTooLarge) {
				t.Fatalf("error %v, want ErrAnswerTooLarge", err)
			}
			if body.read > limit+1 {
				t.Errorf("read %d bytes of the answer, bound %d", body.read, limit)
			}
		})
	}
}
