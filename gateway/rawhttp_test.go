package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// rawSession opens an MCP session on a Streamable HTTP endpoint with plain HTTP
// requests and returns a function that POSTs one JSON-RPC message in it.
func rawSession(t *testing.T, endpoint string) func(ctx context.Context, body string) *http.Response {
	t.Helper()
	return rawSessionWith(t, endpoint, `{}`, new(string))
}

// rawSessionID is rawSession that also sets *session to the session's id.
func rawSessionID(t *testing.T, endpoint string, session *string) func(ctx context.Context, body string) *http.Response {
	t.Helper()
	return rawSessionWith(t, endpoint, `{}`, session)
}

// rawSessionWith is rawSessionID for a client that declares capabilities (JSON).
func rawSessionWith(t *testing.T, endpoint, capabilities string, session *string) func(ctx context.Context, body string) *http.Response {
	t.Helper()
	post := func(ctx context.Context, body string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
		// (Called from one goroutine at a time.)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if *session != "" {
			req.Header.Set("Mcp-Session-Id", *session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return &http.Response{Body: io.NopCloser(strings.NewReader(""))}
		}
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			*session = s
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

// basicHTTPSession serves a gateway in front of the test upstream "alpha" (tool search
// off) over HTTP and opens a raw session on it: the endpoint, the session's id (set
// once the session is initialized) and a function that POSTs a message in it.
func basicHTTPSession(t *testing.T) (string, *string, func(ctx context.Context, body string) *http.Response) {
	t.Helper()
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	session := new(string)
	return endpoint, session, rawSessionID(t, endpoint, session)
}
