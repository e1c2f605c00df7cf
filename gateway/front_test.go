package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptedConn is a connection whose Read returns messages as the test sends them and
// whose Write records what was written.
type scriptedConn struct {
	in      chan jsonrpc.Message
	written []jsonrpc.Message
}

func (c *scriptedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *scriptedConn) Write(_ context.Context, m jsonrpc.Message) error {
	c.written = append(c.written, m)
	return nil
}

func (c *scriptedConn) Close() error      { return nil }
func (c *scriptedConn) SessionID() string { return "" }

func request(t *testing.T, id any, method string, params any) *jsonrpc.Request {
	t.Helper()
	req := &jsonrpc.Request{Method: method}
	if id != nil {
		var err error
		if req.ID, err = jsonrpc.MakeID(id); err != nil {
			t.Fatal(err)
		}
	}
	if params != nil {
		req.Params, _ = json.Marshal(params)
	}
	return req
}

func response(t *testing.T, id any) *jsonrpc.Response {
	t.Helper()
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		t.Fatal(err)
	}
	return &jsonrpc.Response{ID: rid, Result: json.RawMessage(`{}`)}
}

// The stdio connection writes no response for a request the client cancelled, and
// writes every other one, including a later request's that reuses the id.
func TestStdioConnDropsCancelledResponses(t *testing.T) {
	inner := &scriptedConn{in: make(chan jsonrpc.Message, 10)}
	c := &stdioConn{Connection: inner, open: map[jsonrpc.ID]bool{}}
	ctx := context.Background()
	read := func(m jsonrpc.Message) {
		t.Helper()
		inner.in <- m
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	read(request(t, float64(1), "tools/call", map[string]any{"name": "slow"}))
	read(request(t, "a", "tools/call", map[string]any{"name": "slow"}))
	read(request(t, float64(2), "tools/call", map[string]any{"name": "fast"}))
	read(request(t, nil, "notifications/cancelled", map[string]any{"requestId": 1, "reason": "user"}))
	read(request(t, nil, "notifications/cancelled", map[string]any{"requestId": "a"}))
	for _, id := range []any{float64(2), float64(1), "a"} {
		if err := c.Write(ctx, response(t, id)); err != nil {
			t.Fatal(err)
		}
	}
	// The id is used again for a new request: its response is written.
	read(request(t, float64(1), "tools/call", map[string]any{"name": "fast"}))
	c.Write(ctx, response(t, float64(1)))
	// Notifications and requests the gateway sends pass as they are.
	c.Write(ctx, request(t, nil, "notifications/progress", map[string]any{"progressToken": 1, "progress": 1}))
	// A cancellation that comes after the answer, or names no request, is forgotten.
	read(request(t, nil, "notifications/cancelled", map[string]any{"requestId": 2}))
	read(request(t, nil, "notifications/cancelled", map[string]any{"requestId": 99}))
	if len(c.open) != 0 {
		t.Errorf("the connection still holds %v after every request was answered", c.open)
	}

	var got []string
	for _, m := range inner.written {
		switch m := m.(type) {
		case *jsonrpc.Response:
			b, _ := json.Marshal(m.ID.Raw())
			got = append(got, "response "+string(b))
		case *jsonrpc.Request:
			got = append(got, m.Method)
		}
	}
	want := []string{"response 2", "response 1", "notifications/progress"}
	if len(got) != len(want) {
		t.Fatalf("written %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("written %q, want %q", got, want)
		}
	}
}

// The stdio front serves the versions the HTTP front does, 2026-07-28 included, and
// nothing the transport it wraps cannot.
func TestStdioFrontProtocolVersions(t *testing.T) {
	front := &directFront{Transport: stdioTransport{}}
	for _, v := range mcp.SupportedProtocolVersions() {
		if got, want := front.SupportsProtocolVersion(v), slices.Contains(ProtocolVersions(), v); got != want {
			t.Errorf("SupportsProtocolVersion(%s) = %v, want %v", v, got, want)
		}
	}
	if !front.SupportsProtocolVersion("2026-07-28") {
		t.Error("the stdio front does not offer 2026-07-28, which the Streamable HTTP front serves")
	}
	narrow := &directFront{Transport: versionsTransport{"2025-06-18"}}
	if narrow.SupportsProtocolVersion(UpstreamProtocol) || !narrow.SupportsProtocolVersion("2025-06-18") {
		t.Error("the stdio front does not pass on the wrapped transport's own limits")
	}
}

// versionsTransport is a transport that serves only some protocol versions.
type versionsTransport []string

func (versionsTransport) Connect(context.Context) (mcp.Connection, error) { return nil, nil }
func (v versionsTransport) SupportsProtocolVersion(s string) bool         { return slices.Contains(v, s) }
