package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// A draining gateway: /readyz answers 503 draining, a request that would start a session
// gets 503 with Retry-After, the open session is still served, and Drain returns as
// soon as the last call in flight ends (here the client cancels it), not at the drain
// timeout; with a call that never ends, it returns at the drain timeout, counting it,
// and the stop then cancels it with a result that says why.
func TestDrain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		drain  time.Duration
		cancel bool // the client cancels its call while the gateway drains
		left   int
	}{
		{"call ends", 10 * time.Minute, true, 0},
		{"call outlives the drain", 500 * time.Millisecond, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off, DrainTimeout: tc.drain})
			base := serveHTTP(t, h, gateway.HTTPOptions{})
			opts, progressed := progressSignal()
			cs := httpClient(t, base+"/mcp", nil, opts, "")
			callCtx, cancelCall := context.WithCancel(context.Background())
			defer cancelCall()
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "alpha__slow", Arguments: map[string]any{"steps": 1_000_000}, Meta: mcp.Meta{"progressToken": "slow"}})
				done <- answer{res, err}
			}()
			select {
			case <-progressed:
			case a := <-done:
				t.Fatalf("the slow call ended before it progressed: %+v", a)
			case <-time.After(time.Minute):
				t.Fatal("the slow call reported no progress within a minute")
			}
			if resp, err := http.Get(base + "/readyz"); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /readyz before the drain: %v %v", resp, err)
			}

			left := make(chan int, 1)
			go func() { left <- h.g.Drain(context.Background()) }()
			waitFor(t, "the drain to start", h.g.Draining)
			resp, err := http.Get(base + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "draining") {
				t.Errorf("GET /readyz while draining: %s %s, want 503 draining", resp.Status, body)
			}
			req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Mcp-Session-Id") != "" {
				t.Errorf("a new initialize while draining: %s, Retry-After %q, session %q: %s; want 503 with Retry-After and no session",
					resp.Status, resp.Header.Get("Retry-After"), resp.Header.Get("Mcp-Session-Id"), body)
			}
			if res := call(t, cs, "alpha__echo", map[string]any{"text": "still served"}); resultText(res) != "still served" {
				t.Errorf("the open session's call while draining = %q", resultText(res))
			}
			if tc.cancel {
				cancelCall()
			}
			select {
			case n := <-left:
				if n != tc.left {
					t.Errorf("Drain left %d calls running, want %d", n, tc.left)
				}
			case <-time.After(2 * time.Minute):
				t.Fatal("Drain did not return once no call was in flight")
			}
			if tc.cancel {
				return
			}
			h.stop() // what serve does once Drain returns: the calls left are cancelled
			a := <-done
			if a.err != nil || !a.res.IsError || !strings.Contains(resultText(a.res), "shutting down") || !strings.Contains(resultText(a.res), "--drain-timeout") {
				t.Errorf("the call left at the drain timeout ended with %v %q, want a result saying toolshed is shutting down and the drain time ran out", a.err, resultText(a.res))
			}
		})
	}
}
