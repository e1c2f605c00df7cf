package gateway_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// getStream opens a GET on endpoint for session, with Last-Event-ID last if set.
func getStream(t *testing.T, ctx context.Context, endpoint, session, last string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// bodyWithin reads resp's body to its end, failing the test when it does not end
// within 30 s (a POST that never ends).
func bodyWithin(t *testing.T, what string, resp *http.Response) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	select {
	case b := <-got:
		return b
	case <-time.After(30 * time.Second):
		resp.Body.Close()
		t.Fatalf("%s did not end within 30s", what)
	}
	return ""
}

// endWithin reads events until their stream ends, failing the test when it does not
// end within 30 s.
func endWithin(t *testing.T, what string, events <-chan string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("%s did not end within 30s", what)
		}
	}
}

// send sends a request of a Streamable HTTP client (MCP-Protocol-Version version with
// a session), or fails the test (t.Errorf, for other goroutines) and returns nil.
func send(t *testing.T, method, endpoint, session, version, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s: %v", method, err)
		return nil
	}
	return resp
}

// hangingCall opens a session on a gateway with alpha, its GET stream, and a POST of a
// call that alpha never answers, once the call runs.
func hangingCall(t *testing.T) (h *harness, endpoint, session string, get *http.Response, call <-chan string, post func(context.Context, string) *http.Response) {
	h = startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint = serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	post = rawSessionID(t, endpoint, &session)
	get = getStream(t, context.Background(), endpoint, session, "")
	t.Cleanup(func() { get.Body.Close() })
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
	t.Cleanup(func() { resp.Body.Close() })
	events := sseEvents(resp.Body)
	nextEvent(t, events) // priming: the call runs
	return h, endpoint, session, get, events, post
}

var primeID = regexp.MustCompile(`(?m)^id: (\w+)_0$`)

// Opening and ending many sessions (and sessionless probes) leaves no goroutine behind.
func TestHTTPSessionsLeaveNoGoroutines(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessionsPerToken: 4}) + "/mcp"
	cycle := func() {
		session := ""
		post := rawSessionID(t, endpoint, &session)
		r := post(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":1}}}`)
		bodyWithin(t, "a call", r)
		r.Body.Close()
		ctx, cancel := context.WithCancel(context.Background())
		g := getStream(t, ctx, endpoint, session, "")
		resp := send(t, http.MethodDelete, endpoint, session, "2025-11-25", "")
		if resp == nil {
			t.FailNow()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d", resp.StatusCode)
		}
		bodyWithin(t, "the GET stream of a deleted session", g)
		g.Body.Close()
		cancel()
		// A probe without a session: its session ends with the POST.
		if resp = send(t, http.MethodPost, endpoint, "", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp == nil {
			t.FailNow()
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cycle()
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(500 * time.Millisecond)
	before := runtime.NumGoroutine()
	for range 30 {
		cycle()
	}
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(20 * time.Second)
	for runtime.NumGoroutine() > before+5 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("%d goroutines before 30 sessions, %d after:\n%s", before, n, buf)
	}
}

// Odd but well-formed POSTs each end, with an answer for every request in them.
func TestHTTPOddPOSTsEnd(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	for _, tc := range []struct{ name, body string }{
		{"notification method with an id", `{"jsonrpc":"2.0","id":3,"method":"notifications/initialized"}`},
		{"cancelled with an id", `{"jsonrpc":"2.0","id":4,"method":"notifications/cancelled","params":{"requestId":4}}`},
		{"initialize again", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"nope/nope"}`},
		{"string id", `{"jsonrpc":"2.0","id":"x","method":"ping"}`},
		{"params not an object", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}`},
		{"response to nothing", `{"jsonrpc":"2.0","id":"nothing","result":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			session := ""
			post := rawSessionID(t, endpoint, &session)
			resp := post(context.Background(), tc.body)
			defer resp.Body.Close()
			b := bodyWithin(t, "the POST", resp)
			t.Logf("%d %s", resp.StatusCode, strings.TrimSpace(b))
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
}

// A batch (2025-03-26) mixing requests, notifications and a cancellation of one of its
// own requests ends, with the answers of the requests not cancelled.
func TestHTTPMixedBatchEnds(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	post := func(session, body string) *http.Response {
		resp := send(t, http.MethodPost, endpoint, session, "2025-03-26", body)
		if resp == nil {
			t.FailNow()
		}
		return resp
	}
	r := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	bodyWithin(t, "initialize", r)
	session := r.Header.Get("Mcp-Session-Id")
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	r = post(session, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}},{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"four"}}}]`)
	b := bodyWithin(t, "the batch", r)
	if !strings.Contains(b, `"id":2,"result":{}`) || !strings.Contains(b, `"four"`) {
		t.Errorf("the batch's answers: %s", b)
	}
}

// The gateway stopping ends a POST whose call the upstream never answers, and the
// session's GET stream.
func TestHTTPStopEndsStreams(t *testing.T) {
	h, _, _, get, call, _ := hangingCall(t)
	go h.stopped(30 * time.Second)
	bodyWithin(t, "the GET stream", get)
	endWithin(t, "the hanging call's POST", call)
}

// A sessionless probe (such as server/discover or ping before initialize) gives back its
// session slot with its answer: a client at its cap of one session that probes and then
// initializes is not refused.
func TestHTTPProbeFreesSlot(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessionsPerToken: 1}) + "/mcp"
	do := func(method, session, body string) *http.Response {
		resp := send(t, method, endpoint, session, "2025-11-25", body)
		if resp == nil {
			t.FailNow()
		}
		return resp
	}
	for i := range 300 {
		r := do(http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		bodyWithin(t, "the probe", r)
		r = do(http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		b := bodyWithin(t, "initialize", r)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("round %d: initialize after a probe got %d %s", i, r.StatusCode, b)
		}
		d := do(http.MethodDelete, r.Header.Get("Mcp-Session-Id"), "")
		d.Body.Close()
	}
}

// Another profile's client cannot resume a session's stream with its id and an event id.
func TestHTTPResumeHijack(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, Profiles: map[string]config.Profile{"p1": {}, "p2": {}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	base := serveHTTP(t, h, gateway.HTTPOptions{})
	session := ""
	post := rawSessionID(t, base+"/mcp/p1", &session)
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":2}}}`)
	b := bodyWithin(t, "the call", resp)
	m := primeID.FindStringSubmatch(b)
	if m == nil {
		t.Fatalf("no priming event: %s", b)
	}
	for _, path := range []string{"/mcp/p2", "/mcp"} {
		g := getStream(t, context.Background(), base+path, session, m[1]+"_0")
		body := bodyWithin(t, "the hijacking GET", g)
		if g.StatusCode != http.StatusNotFound || strings.Contains(body, "done 2 steps") {
			t.Errorf("GET %s with p1's session and event id: %d %s", path, g.StatusCode, body)
		}
	}
	g := getStream(t, context.Background(), base+"/mcp/p1", session, m[1]+"_0")
	if body := bodyWithin(t, "the owner's resumption", g); !strings.Contains(body, "done 2 steps") {
		t.Errorf("the owner's resumption: %d %s", g.StatusCode, body)
	}
}

// DELETE in the middle of a call the upstream never answers: the DELETE is answered,
// the call's POST and the GET stream end, and the session is gone.
func TestHTTPDeleteMidCall(t *testing.T) {
	_, endpoint, session, get, call, post := hangingCall(t)
	deleted := make(chan int, 1)
	go func() {
		code := 0
		if r := send(t, http.MethodDelete, endpoint, session, "2025-11-25", ""); r != nil {
			r.Body.Close()
			code = r.StatusCode
		}
		deleted <- code
	}()
	select {
	case code := <-deleted:
		if code != http.StatusNoContent {
			t.Errorf("DELETE: %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("DELETE did not end within 30s")
	}
	bodyWithin(t, "the GET stream", get)
	endWithin(t, "the call's POST", call)
	r := post(context.Background(), `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	r.Body.Close()
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("a POST after DELETE got %d, want 404", r.StatusCode)
	}
}

// Sessions that end every way a session ends (DELETE, a lost stream, a cancelled
// call, a client gone mid-call, a call the session's end interrupts) leave nothing in
// relatedStreams, the process-wide map of requests in flight.
func TestHTTPNoRelatedStreamsLeft(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	for i := range 10 {
		session := ""
		post := rawSessionID(t, endpoint, &session)
		// A call answered, one whose client goes away, one cancelled, one that never ends.
		r := post(context.Background(), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":1}}}`)
		bodyWithin(t, "a call", r)
		ctx, cancel := context.WithCancel(context.Background())
		lost := post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"q"},"name":"alpha__slow","arguments":{"steps":3}}}`)
		nextEvent(t, sseEvents(lost.Body))
		cancel()
		lost.Body.Close()
		hang := post(context.Background(), `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
		hangEvents := sseEvents(hang.Body)
		nextEvent(t, hangEvents)
		post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`).Body.Close()
		endWithin(t, "the cancelled call", hangEvents)
		hang.Body.Close()
		never := post(context.Background(), `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
		neverEvents := sseEvents(never.Body)
		nextEvent(t, neverEvents)
		if i%2 == 0 {
			if d := send(t, http.MethodDelete, endpoint, session, "2025-11-25", ""); d != nil {
				d.Body.Close()
			}
		}
		never.Body.Close()
	}
	h.stopped(30 * time.Second)
	waitFor(t, "relatedStreams to empty", func() bool { return gateway.RelatedStreams() == 0 })
}
