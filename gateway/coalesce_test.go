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

// rawSession opens an MCP session on a Streamable HTTP endpoint with plain HTTP
// requests and returns a function that POSTs one JSON-RPC message in it.
func rawSession(t *testing.T, endpoint string) func(ctx context.Context, body string) *http.Response {
	t.Helper()
	return rawSessionWith(t, endpoint, `{}`)
}

// rawSessionWith is rawSession for a client that declares capabilities (JSON).
func rawSessionWith(t *testing.T, endpoint, capabilities string) func(ctx context.Context, body string) *http.Response {
	t.Helper()
	session := ""
	post := func(ctx context.Context, body string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
		// (Called from one goroutine at a time.)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return &http.Response{Body: io.NopCloser(strings.NewReader(""))}
		}
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			session = s
		}
		return resp
	}
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+capabilities+`,"clientInfo":{"name":"raw","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	resp = post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	return post
}

// A call's response stream is the SDK's, event for event: a priming event, then the
// result, whatever toolshed does with the flushes.
func TestHTTPCallStream(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	post := rawSession(t, serveHTTP(t, h, gateway.HTTPOptions{})+"/mcp")
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"}}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := regexp.MustCompile(`^event: prime\nid: (\w+)_0\ndata: \n\nevent: message\nid: (\w+)_1\ndata: \{"jsonrpc":"2.0","id":2,"result":\{"content":\[\{"type":"text","text":"hi"\}\]\}\}\n\n$`)
	m := want.FindStringSubmatch(string(body))
	if m == nil || m[1] != m[2] {
		t.Errorf("the call's stream is\n%q\nwant a priming event and the result", body)
	}
}

// A call that takes long still gets its priming event (the ID a client resumes from)
// while it runs, not only with its result.
func TestHTTPPrimingWhileCallRuns(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	post := rawSession(t, serveHTTP(t, h, gateway.HTTPOptions{})+"/mcp")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Without the priming event flushed, even the response headers would not come:
	// everything, the request included, runs under the deadline below.
	lines := make(chan string)
	go func() {
		defer close(lines)
		resp := post(ctx, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__hang","arguments":{}}}`)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the stream ended without a priming event")
			}
			if l == "event: prime" {
				return
			}
			if strings.HasPrefix(l, "data: {") {
				t.Fatalf("a message before the priming event: %s", l)
			}
		case <-deadline:
			t.Fatal("no priming event within 30s while the call hangs")
		}
	}
}
