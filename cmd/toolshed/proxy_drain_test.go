package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/frontdoor"
	"github.com/toolshed/toolshed/messages"
)

// gatedModel is fakellm's Messages API behind a gate: a request arrives, and (for a
// stream, after its message_start when startFirst is set) waits until the test opens
// the gate.
type gatedModel struct {
	arrived    chan struct{}
	gate       chan struct{}
	arriveOnce sync.Once
	openOnce   sync.Once
	startFirst bool
	model      *fakellm.Anthropic
}

func (m *gatedModel) open() { m.openOnce.Do(func() { close(m.gate) }) }

func (m *gatedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	started := m.startFirst && strings.Contains(string(body), `"stream":true`)
	if started {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n")
		w.(http.Flusher).Flush()
	}
	m.arriveOnce.Do(func() { close(m.arrived) })
	select {
	case <-m.gate:
	case <-r.Context().Done():
		return
	}
	if started { // the rest of the stream its message_start began
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"the whole answer\"}}\n\n"+
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n"+
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		return
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	m.model.ServeHTTP(w, r)
}

// drainingProxy serves a Proxy in front of a gated model with serveDrain, as toolshed
// proxy does, and sends one request (streamed or not) that reaches the model. stop
// begins the drain; done gets what serveDrain returned, answers the client's reply.
func drainingProxy(t *testing.T, drain time.Duration, stream, startFirst bool) (model *gatedModel, addr string, stop func(), done <-chan error, answers <-chan drainReply) {
	t.Helper()
	model = &gatedModel{arrived: make(chan struct{}), gate: make(chan struct{}), startFirst: startFirst, model: fakellm.NewAnthropic(fakellm.Say("the whole answer"))}
	up := httptest.NewServer(model)
	t.Cleanup(up.Close)
	t.Cleanup(model.open)
	p := &messages.Proxy{Upstream: &messages.Anthropic{BaseURL: up.URL}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	served := make(chan error, 1)
	go func() {
		served <- serveDrain(ctx, ln, p.Handler(), frontdoor.Limits{}, drain, "the drain timeout", p.Stop)
	}()
	replies := make(chan drainReply, 1)
	go func() {
		body := fmt.Sprintf(`{"model":"m","max_tokens":100,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
		resp, err := http.Post("http://"+ln.Addr().String()+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			replies <- drainReply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		replies <- drainReply{status: resp.StatusCode, body: string(b), err: err}
	}()
	select {
	case <-model.arrived:
	case r := <-replies:
		t.Fatalf("the request ended before it reached the model: %+v", r)
	case <-time.After(time.Minute):
		t.Fatal("the request never reached the model")
	}
	return model, ln.Addr().String(), cancel, served, replies
}

type drainReply struct {
	status int
	body   string
	err    error
}

// waitRefused waits until addr refuses connections: the drain has begun.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the proxy still accepts connections a minute into its drain")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A request running when the drain begins gets its whole answer, streamed or not, and
// the drain ends cleanly.
func TestProxyDrainAnswersRequestsInFlight(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			model, addr, stop, done, replies := drainingProxy(t, time.Minute, stream, true)
			stop()
			waitRefused(t, addr)
			model.open()
			var r drainReply
			select {
			case r = <-replies:
			case <-time.After(time.Minute):
				t.Fatal("the request in flight got no answer")
			}
			if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "the whole answer") {
				t.Errorf("the request in flight: status %d, error %v, body %.400s", r.status, r.err, r.body)
			}
			if stream && !strings.HasSuffix(strings.TrimSpace(r.body), `data: {"type":"message_stop"}`) {
				t.Errorf("the stream does not end with message_stop: %.400s", r.body)
			}
			if err := <-done; err != nil {
				t.Errorf("the drain: %v", err)
			}
		})
	}
}

// A request still running at the drain timeout is answered, not cut: 529
// overloaded_error (an error event once its stream has begun) saying the proxy is
// stopping, which clients retry; and the drain reports that requests were cut.
func TestProxyDrainTimeoutAnswersRequests(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			_, _, stop, done, replies := drainingProxy(t, time.Second, stream, true)
			stop()
			var r drainReply
			select {
			case r = <-replies:
			case <-time.After(time.Minute):
				t.Fatal("the request cut at the drain timeout got no answer")
			}
			if r.err != nil {
				t.Fatalf("the request cut at the drain timeout got no answer: %v (body %.300q)", r.err, r.body)
			}
			errBody := r.body
			if stream {
				i := strings.LastIndex(r.body, "event: error\ndata: ")
				if r.status != http.StatusOK || !strings.HasPrefix(r.body, "event: message_start") || i < 0 {
					t.Fatalf("want a stream that began and ends with an error event, got status %d: %.400s", r.status, r.body)
				}
				errBody = r.body[i+len("event: error\ndata: "):]
			} else if r.status != 529 {
				t.Errorf("status %d, want 529", r.status)
			}
			var e struct {
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal([]byte(strings.TrimSpace(errBody)), &e); err != nil {
				t.Fatalf("not an error body: %v: %.300s", err, errBody)
			}
			if e.Error.Type != messages.Overloaded || !strings.Contains(e.Error.Message, "--drain-timeout") || !strings.Contains(e.Error.Message, "retry") {
				t.Errorf("error %q: %q, want overloaded_error saying the proxy is stopping", e.Error.Type, e.Error.Message)
			}
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "answered 529 overloaded_error") {
					t.Errorf("the drain returned %v, want it to say requests were answered 529", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the drain never ended")
			}
		})
	}
}
