package gateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	ready := make(chan struct{})
	close(ready)
	inner := &scriptedConn{in: make(chan jsonrpc.Message, 10)}
	c := &stdioConn{Connection: inner, ready: ready, cancelled: map[jsonrpc.ID]bool{}}
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

// The handshake is read at once; any other request waits until the upstreams are
// ready (or the read is cancelled).
func TestStdioConnHoldsRequestsUntilReady(t *testing.T) {
	ready := make(chan struct{})
	inner := &scriptedConn{in: make(chan jsonrpc.Message, 10)}
	c := &stdioConn{Connection: inner, ready: ready, cancelled: map[jsonrpc.ID]bool{}}
	ctx := context.Background()
	for _, m := range []jsonrpc.Message{
		request(t, nil, "notifications/initialized", nil),
		request(t, float64(0), "server/discover", nil),
		request(t, float64(1), "initialize", map[string]any{"protocolVersion": "2025-11-25"}),
		request(t, float64(2), "ping", nil),
	} {
		inner.in <- m
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}

	inner.in <- request(t, float64(3), "tools/list", nil)
	got := make(chan jsonrpc.Message, 1)
	go func() {
		m, _ := c.Read(ctx)
		got <- m
	}()
	select {
	case m := <-got:
		t.Fatalf("tools/list was read before the upstreams were ready: %v", m)
	case <-time.After(50 * time.Millisecond):
	}
	close(ready)
	if m := <-got; m.(*jsonrpc.Request).Method != "tools/list" {
		t.Fatalf("read %v, want tools/list", m)
	}

	held := &stdioConn{Connection: &scriptedConn{in: make(chan jsonrpc.Message, 1)}, ready: make(chan struct{}), cancelled: map[jsonrpc.ID]bool{}}
	held.Connection.(*scriptedConn).in <- request(t, float64(4), "tools/call", nil)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := held.Read(cctx); err == nil {
		t.Fatal("a held read whose context is cancelled returned no error")
	}
}
