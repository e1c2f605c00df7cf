package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// sseEvents reads server-sent events from r and sends each as its lines joined by "\n"
// (without the blank line that ends it), until r ends.
func sseEvents(r io.Reader) <-chan string {
	out := make(chan string, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		var ev []string
		for sc.Scan() {
			if l := sc.Text(); l != "" {
				if !strings.HasPrefix(l, ":") { // a comment
					ev = append(ev, l)
				}
				continue
			}
			if len(ev) > 0 {
				out <- strings.Join(ev, "\n")
				ev = nil
			}
		}
	}()
	return out
}

// nextEvent returns the next event, failing the test when none comes within 30 s or
// the stream ends.
func nextEvent(t *testing.T, events <-chan string) string {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
	}
	return ""
}

// A call answered at once is answered as one JSON object: no event stream, no
// priming event, the upstream's result byte for byte.
func TestHTTPCallAnsweredAsJSON(t *testing.T) {
	defer gateway.SetPrimeDelay(time.Minute)() // "at once", however loaded the machine
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	post := rawSession(t, serveHTTP(t, h, gateway.HTTPOptions{})+"/mcp")
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"}}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if want := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`; string(body) != want {
		t.Errorf("the answer is\n%s\nwant\n%s", body, want)
	}
}

// A call that reports progress is answered with an event stream on its own POST: a
// priming event (whose ID the client resumes from), the progress, then the result.
func TestHTTPProgressOnTheCallsStream(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	post := rawSession(t, serveHTTP(t, h, gateway.HTTPOptions{})+"/mcp")
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":2}}}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	events := sseEvents(resp.Body)
	prime := nextEvent(t, events)
	m := regexp.MustCompile(`^event: prime\nid: (\w+)_0\ndata: $`).FindStringSubmatch(prime)
	if m == nil {
		t.Fatalf("first event %q, want a priming event", prime)
	}
	for i, want := range []string{
		`"method":"notifications/progress","params":{"progressToken":"p","message":"step 1","progress":1,"total":2}`,
		`"method":"notifications/progress","params":{"progressToken":"p","message":"step 2","progress":2,"total":2}`,
		`"id":"c","result":{"content":[{"type":"text","text":"done 2 steps"}]}`,
	} {
		ev := nextEvent(t, events)
		if !strings.HasPrefix(ev, "event: message\nid: "+m[1]+"_") || !strings.Contains(ev, want) {
			t.Errorf("event %d is\n%s\nwant one with id %s_N and %s", i+1, ev, m[1], want)
		}
	}
	if ev, ok := <-events; ok {
		t.Errorf("an event after the result: %s", ev)
	}
}

// A client that loses a call's stream gets the rest of it, result included, by asking
// for what followed the last event it got (GET with Last-Event-ID).
func TestHTTPResumeLostStream(t *testing.T) {
	endpoint, session, post := basicHTTPSession(t)
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":6}}}`)
	events := sseEvents(resp.Body)
	nextEvent(t, events) // priming
	first := nextEvent(t, events)
	id := regexp.MustCompile(`(?m)^id: (\S+)$`).FindStringSubmatch(first)
	if id == nil {
		t.Fatalf("event without an id: %s", first)
	}
	cancel() // the connection is lost after the first progress event
	resp.Body.Close()

	req, _ := http.NewRequest(http.MethodGet, endpoint, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", *session)
	req.Header.Set("Last-Event-ID", id[1])
	resumed, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Body.Close()
	if resumed.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resumed.Body)
		t.Fatalf("resuming: %d %s", resumed.StatusCode, b)
	}
	rest := sseEvents(resumed.Body)
	var got []string
	for ev := range rest {
		got = append(got, ev)
	}
	if len(got) != 6 { // progress 2 to 6, then the result
		t.Fatalf("resumed %d events, want 6:\n%s", len(got), strings.Join(got, "\n\n"))
	}
	if !strings.Contains(got[0], `"progress":2,`) || !strings.Contains(got[5], `"id":7,"result":{"content":[{"type":"text","text":"done 6 steps"}]}`) {
		t.Errorf("resumed events:\n%s\nwant progress 2 first and the result last", strings.Join(got, "\n\n"))
	}
}

// A request the client cancels gets no response (MCP's cancellation says the receiver
// should not send one): its POST's stream ends without it.
func TestHTTPCancelledRequestNotAnswered(t *testing.T) {
	_, _, post := basicHTTPSession(t)
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"alpha__slow","arguments":{"steps":1000000}}}`)
	defer resp.Body.Close()
	events := sseEvents(resp.Body)
	nextEvent(t, events) // priming: the call is running
	c := post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"user"}}`)
	c.Body.Close()
	if c.StatusCode != http.StatusAccepted {
		t.Fatalf("the cancellation got %d, want 202", c.StatusCode)
	}
	select {
	case ev, ok := <-events:
		if ok {
			t.Errorf("the cancelled call's stream carried %s", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call's stream did not end within 30s")
	}
}

// A message that belongs to no request in flight (here a server's sampling request
// made after its call ended) waits for the client's GET stream, which gets it when it
// opens; the client's answer, POSTed, reaches the server. A second GET stream is
// refused as the SDK refuses it.
func TestHTTPMessageHeldForGETStream(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	session := ""
	post := rawSessionWith(t, endpoint, `{"sampling":{}}`, &session)
	call := func(id int, body string) string {
		resp := post(context.Background(), body)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(b)
	}
	if got := call(3, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__sample_detached","arguments":{"ms":50}}}`); !strings.Contains(got, `"asked"`) {
		t.Fatalf("sample_detached: %s", got)
	}
	time.Sleep(500 * time.Millisecond) // the request is sent while no GET stream is open

	get := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, endpoint, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	standing := get()
	defer standing.Body.Close()
	events := sseEvents(standing.Body)
	ev := nextEvent(t, events)
	m := regexp.MustCompile(`"id":("?[\w-]+"?),"method":"sampling/createMessage"`).FindStringSubmatch(ev)
	if m == nil {
		t.Fatalf("the GET stream's first event is %s, want the sampling request", ev)
	}
	second := get()
	second.Body.Close()
	if second.StatusCode != http.StatusConflict {
		t.Errorf("a second GET stream got %d, want 409", second.StatusCode)
	}
	answer := post(context.Background(), `{"jsonrpc":"2.0","id":`+m[1]+`,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"held-model"}}`)
	answer.Body.Close()
	if answer.StatusCode != http.StatusAccepted {
		t.Errorf("the answer got %d, want 202", answer.StatusCode)
	}
	if got := call(4, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__detached_model","arguments":{"ms":20000}}}`); !strings.Contains(got, "model held-model") {
		t.Errorf("the server got %s, want the client's answer", got)
	}
}

// Requests the transport cannot serve get the SDK handler's answers.
func TestHTTPTransportRefusals(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	session := ""
	rawSessionID(t, endpoint, &session)
	for _, tc := range []struct {
		name, method, body string
		headers            map[string]string
		status             int
		text               string
	}{
		{"accept", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Accept": "application/json", "Mcp-Session-Id": session}, 400, "Accept must contain both"},
		{"empty", "POST", ``, map[string]string{"Mcp-Session-Id": session}, 400, "POST requires a non-empty body"},
		{"malformed", "POST", `{"jsonrpc":`, map[string]string{"Mcp-Session-Id": session}, 400, "malformed payload"},
		{"batch", "POST", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}, 400, "batching is not supported"},
		{"version", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "1999-01-01"}, 400, "Unsupported protocol version"},
		{"unknown session", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Session-Id": "nope"}, 404, "session not found"},
		{"last-event-id on POST", "POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Session-Id": session, "Last-Event-ID": "1_1"}, 400, "can't send Last-Event-ID"},
		{"GET without session", "GET", ``, map[string]string{"Accept": "text/event-stream"}, 400, "GET requires an Mcp-Session-Id"},
		{"GET replay of nothing", "GET", ``, map[string]string{"Accept": "text/event-stream", "Mcp-Session-Id": session, "Last-Event-ID": "99_1"}, 400, "failed to replay events"},
		{"DELETE without session", "DELETE", ``, nil, 400, "DELETE requires an Mcp-Session-Id"},
		{"PUT", "PUT", ``, map[string]string{"Mcp-Session-Id": session}, 405, "Method Not Allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, endpoint, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.text) {
				t.Errorf("%d %q, want %d with %q", resp.StatusCode, b, tc.status, tc.text)
			}
		})
	}
	// The session survived all of it.
	post := rawSessionID(t, endpoint, new(string))
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"jsonrpc":"2.0","id":5,"result":{}}` {
		t.Errorf("ping after the refusals: %s", b)
	}
}
