package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// statelessGateway serves the test upstream alpha over stateless Streamable HTTP.
func statelessGateway(t *testing.T) (*harness, string) {
	t.Helper()
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	return h, serveHTTP(t, h, gateway.HTTPOptions{Stateless: true}) + "/mcp"
}

// jsonPOST is a POST of one JSON-RPC body, with the Content-Type and Accept a
// Streamable HTTP client sends and the headers given.
func jsonPOST(ctx context.Context, endpoint, body string, headers map[string]string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}

// rawPOST sends one JSON-RPC body as a client of protocol version would, with the
// headers given, and returns the response with its body read.
func rawPOST(t *testing.T, ctx context.Context, endpoint, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(jsonPOST(ctx, endpoint, body, headers))
	if err != nil {
		t.Fatalf("POST %s: %v", body, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The go-sdk client against a stateless toolshed: initialize issues no session id, every
// request is served on its own, and a single request's answer is plain JSON.
func TestStatelessHTTPServesEachPOST(t *testing.T) {
	_, endpoint := statelessGateway(t)
	cs := httpClient(t, endpoint, nil, nil, "")
	if id := cs.ID(); id != "" {
		t.Errorf("a stateless toolshed issued session id %q", id)
	}
	res := call(t, cs, "alpha__echo", map[string]any{"text": "one"})
	if got := resultText(res); got != "one" {
		t.Errorf("echo through the go-sdk client: got %q, want one", got)
	}

	// A request with no initialize before it is served as a default client's, and a
	// session id the client sends is ignored, as the go-sdk's stateless handler does.
	for _, headers := range []map[string]string{
		{"Mcp-Protocol-Version": "2025-11-25"},
		{"Mcp-Protocol-Version": "2025-06-18", "Mcp-Session-Id": "no-such-session"},
		{},
	} {
		resp, body := rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"alone"}}}`, headers)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"alone"`) || !strings.Contains(body, `"id":7`) {
			t.Errorf("a tools/call with headers %v: %d %s", headers, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("a single request's answer is %q, want application/json (plain JSON when nothing else is sent)", ct)
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			t.Errorf("a stateless answer carries Mcp-Session-Id %q", id)
		}
	}
	resp, body := rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"protocolVersion":"2025-06-18"`) || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("initialize: %d, session id %q, %s", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body)
	}
	resp, body = rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("a notification: %d %s, want 202", resp.StatusCode, body)
	}
}

// GET (the standalone stream) and DELETE have no session to serve: 405, with Allow.
func TestStatelessHTTPRefusesGETAndDELETE(t *testing.T) {
	_, endpoint := statelessGateway(t)
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, endpoint, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", "anything")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" || !strings.Contains(string(b), "--stateless") {
			t.Errorf("%s: %d, Allow %q, %q; want 405, Allow POST and why", method, resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	}
}

// What goes with a request still reaches its client: a call's progress comes on its
// POST's event stream, before its result.
func TestStatelessHTTPStreamsProgress(t *testing.T) {
	_, endpoint := statelessGateway(t)
	resp, body := rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"alpha__slow","arguments":{"steps":3}}}`, map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("a call with progress answered %q: %s", ct, body)
	}
	progress, result := strings.Index(body, "notifications/progress"), strings.Index(body, "done 3 steps")
	if progress < 0 || result < progress {
		t.Errorf("want progress, then the result, on the POST's stream:\n%s", body)
	}
	if strings.Contains(body, "event: prime") {
		t.Errorf("a stateless stream cannot be resumed, yet it starts with a priming event:\n%s", body)
	}
}

// A server-to-client request (sampling) has no client session to go to: the call ends
// with an error saying so, rather than hanging, and the upstreams are never told that
// a stateless client samples (it declared sampling in a POST of its own).
func TestStatelessHTTPHasNoServerRequests(t *testing.T) {
	h, endpoint := statelessGateway(t)
	declared := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__declared","arguments":{}}}`
	_, before := rawPOST(t, context.Background(), endpoint, declared, nil)
	rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{},"roots":{}},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, body := rawPOST(t, ctx, endpoint, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__sample","arguments":{}}}`, nil)
	if ctx.Err() != nil || !strings.Contains(body, `"isError":true`) {
		t.Errorf("a sampling call over stateless HTTP: want an error result within 30s, got %s", body)
	}
	if !strings.Contains(body, "stateless") {
		t.Errorf("the sampling call's error does not say why (stateless): %s", body)
	}
	if _, after := rawPOST(t, ctx, endpoint, declared, nil); after != before || strings.Contains(after, "sampling") {
		t.Errorf("the upstream was told of a stateless client's capabilities: before %s, after %s", before, after)
	}
	if joined, _ := h.g.ClientCounts(); joined != 0 {
		t.Errorf("%d stateless sessions joined the clients toolshed declares for", joined)
	}
}

// Thousands of stateless requests, some of whose clients leave in the middle of a call,
// leave no session, goroutine or stream behind.
func TestStatelessHTTPLeavesNothingBehind(t *testing.T) {
	h, endpoint := statelessGateway(t)
	rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"warm"}}}`, nil)
	time.Sleep(200 * time.Millisecond)
	before := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"w%d-%d"}}}`, i, w, i)
				resp, got := rawPOST(t, context.Background(), endpoint, body, nil)
				if want := fmt.Sprintf(`"w%d-%d"`, w, i); resp.StatusCode != http.StatusOK || !strings.Contains(got, want) {
					t.Errorf("request %d of worker %d: %d %s", i, w, resp.StatusCode, got)
					return
				}
			}
		}()
	}
	// Clients that give up on calls that never answer.
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`, i)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	http.DefaultClient.CloseIdleConnections()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		joined, stateless := h.g.ClientCounts()
		streams, goroutines := gateway.RelatedStreams(), runtime.NumGoroutine()
		if joined == 0 && stateless == 0 && streams == 0 && goroutines <= before+5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after 2,020 stateless requests: %d sessions joined, %d stateless sessions alive, %d related streams, %d goroutines (%d before)", joined, stateless, streams, goroutines, before)
		}
	}
}

// A rate limit per session applies to a stateless client as a whole (its token and
// profile): each of its POSTs is a session of its own, which would start with a full
// bucket.
func TestStatelessHTTPRateLimitsPerClient(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, RateLimit: config.RateLimit{CallsPerMinute: 1, Burst: 2}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true}) + "/mcp"
	var bodies []string
	for i := range 3 {
		_, body := rawPOST(t, context.Background(), endpoint, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"call %d"}}}`, i, i), nil)
		bodies = append(bodies, body)
	}
	if strings.Contains(bodies[0], "rate limit") || strings.Contains(bodies[1], "rate limit") {
		t.Errorf("the first two calls (the burst) were refused: %v", bodies[:2])
	}
	if !strings.Contains(bodies[2], "rate limit") {
		t.Errorf("the third call within the minute was not refused for the rate limit: %s", bodies[2])
	}
}
