package gateway

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioReadyWait bounds how long ServeStdio holds a client's requests while upstreams
// are still starting.
const StdioReadyWait = 5 * time.Second

// stdioFront is the transport of the gateway's stdio client (Transport, the SDK's stdio
// transport or another over stdin and stdout) with two changes a client notices:
//
//   - The handshake (initialize, server/discover, ping) is answered at once, but the
//     requests after it wait until every upstream has started or failed (at most
//     StdioReadyWait), so that the client's first tools/list has every tool that could
//     start. A client that probes with server/discover gives up on it within a second
//     (the AI SDK does, then sends initialize, which the SDK refuses as a duplicate once
//     the probe is answered), so the gateway must read stdin at once.
//   - No response is written for a request the client cancelled
//     (notifications/cancelled): the MCP cancellation utility says a receiver should
//     not send one, the TypeScript SDK reports one as an error, and the Go SDK writes
//     one regardless (modelcontextprotocol/go-sdk#1235, #1259).
//
// The wrapped connection no longer gets the SDK's session updates, whose only use on
// stdio is refusing JSON-RPC batches from protocol 2025-06-18 on; such batches are
// now served.
type stdioFront struct {
	mcp.Transport
	ready <-chan struct{}
}

func (t *stdioFront) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stdioConn{Connection: conn, ready: t.ready, cancelled: map[jsonrpc.ID]bool{}}, nil
}

// SupportsProtocolVersion passes on the answer of the wrapped transport, if it gives one
// (mcp.ProtocolVersionSupporter): server/discover offers what it can serve.
func (t *stdioFront) SupportsProtocolVersion(v string) bool {
	if s, ok := t.Transport.(mcp.ProtocolVersionSupporter); ok {
		return s.SupportsProtocolVersion(v)
	}
	return true
}

type stdioConn struct {
	mcp.Connection
	ready <-chan struct{}

	mu        sync.Mutex
	cancelled map[jsonrpc.ID]bool // requests the client cancelled, not yet answered
}

// handshake holds the methods answered before upstreams are ready.
var handshake = map[string]bool{"initialize": true, "server/discover": true, "ping": true}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg, nil
	}
	switch {
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
				c.mu.Lock()
				c.cancelled[id] = true
				c.mu.Unlock()
			}
		}
	case req.IsCall():
		// A new request with an id cancelled before is not cancelled.
		c.mu.Lock()
		delete(c.cancelled, req.ID)
		c.mu.Unlock()
		if !handshake[req.Method] {
			select {
			case <-c.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return msg, nil
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		dropped := c.cancelled[resp.ID]
		delete(c.cancelled, resp.ID)
		c.mu.Unlock()
		if dropped {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}
