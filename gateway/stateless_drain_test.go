package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// A draining stateless gateway refuses a new client's initialize with 503 and
// Retry-After, still serves a request without one (it is no new session), and Drain
// waits for a stateless call in flight.
func TestStatelessDrain(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off, DrainTimeout: 10 * time.Minute})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true}) + "/mcp"
	slow := make(chan string, 1)
	go func() {
		_, body := rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"alpha__slow","arguments":{"steps":20}}}`, nil)
		slow <- body
	}()
	waitFor(t, "the slow call to start", func() bool { return h.g.CallsRunning() > 0 })
	drained := make(chan int, 1)
	go func() { drained <- h.g.Drain(context.Background()) }()
	waitFor(t, "the drain to start", h.g.Draining)
	resp, body := rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("initialize while draining: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	resp, body = rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"still"}}}`, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "still") {
		t.Errorf("a call while draining: %d %s", resp.StatusCode, body)
	}
	if got := <-slow; strings.Contains(got, `"isError":true`) {
		t.Errorf("the slow call in flight did not finish: %s", got)
	}
	if left := <-drained; left != 0 {
		t.Errorf("Drain left %d calls", left)
	}
}
