package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// directFront is the transport of a client the gateway serves directly, not through its
// Streamable HTTP handler: its stdio client, or an in-process one (Gateway.Connect). It
// wraps the transport (the SDK's stdio transport, toolshed's own, an in-memory one) with
// two changes a client notices:
//
//   - It serves the protocol versions of ProtocolVersions, as the Streamable HTTP front
//     does (see ProtocolVersions): server/discover offers those.
//   - No response is written for a request the client cancelled
//     (notifications/cancelled): the MCP cancellation utility says a receiver should
//     not send one, the TypeScript SDK reports one as an error, and the Go SDK writes
//     one regardless (modelcontextprotocol/go-sdk#1235, #1259).
//
// The wrapped connection no longer gets the SDK's session updates, whose only use on
// stdio is refusing JSON-RPC batches from protocol 2025-06-18 on; such batches are
// now served.
type directFront struct {
	mcp.Transport
}

func (t *directFront) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stdioConn{Connection: conn, open: map[jsonrpc.ID]bool{}}, nil
}

// SupportsProtocolVersion reports the versions of ProtocolVersions that the wrapped
// transport serves (mcp.ProtocolVersionSupporter). The versions are narrowed here, per
// transport, rather than in the server's options: a server whose options leave out
// 2026-07-28 answers a 2026-07-28 client's server/discover probe with an error, which
// the AI SDK takes as a refusal, while a transport that leaves it out makes the probe
// offer the versions it serves, and the client falls back to initialize.
func (t *directFront) SupportsProtocolVersion(v string) bool {
	if !slices.Contains(protocolVersions, v) {
		return false
	}
	if s, ok := t.Transport.(mcp.ProtocolVersionSupporter); ok {
		return s.SupportsProtocolVersion(v)
	}
	return true
}

type stdioConn struct {
	mcp.Connection

	mu sync.Mutex
	// open holds the client's requests not answered yet, by id, and whether the client
	// cancelled them. A cancellation of a request already answered is forgotten.
	open map[jsonrpc.ID]bool
}

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
		if id, ok := cancelledRequest(req.Params); ok {
			c.mu.Lock()
			if _, ok := c.open[id]; ok {
				c.open[id] = true
			}
			c.mu.Unlock()
		}
	case req.IsCall():
		// A new request with an id cancelled before is not cancelled.
		c.mu.Lock()
		c.open[req.ID] = false
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		dropped := c.open[resp.ID]
		delete(c.open, resp.ID)
		c.mu.Unlock()
		if dropped {
			return nil
		}
	}
	return c.Connection.Write(ctx, msg)
}

// cancelledRequest returns the id of the request a notifications/cancelled names,
// false when its params name none.
func cancelledRequest(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil && id.IsValid()
}
