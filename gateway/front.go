package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
// stdio is refusing JSON-RPC batches from protocol 2025-06-18 on by ending the
// connection: toolshed's own line connection answers a batch with an array where the
// session's protocol version has batches, and refuses each of its requests with an
// error otherwise (see lineConn.readBatch).
type directFront struct {
	mcp.Transport
	// conn is the connection Connect made, for serve.
	conn *stdioConn
}

func (t *directFront) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	life, end := context.WithCancel(ctx)
	t.conn = &stdioConn{Connection: conn, open: map[jsonrpc.ID]bool{}, fast: map[jsonrpc.ID]context.CancelFunc{}, life: life, end: end}
	if lc, ok := conn.(*lineConn); ok && lc.route == nil {
		lc.route, t.conn.lc = t.conn.observe, lc
		lc.pace = func() bool { return t.conn.waitOpen(MaxOpenRequests, nil) }
		lc.batching = t.conn.batching
	}
	return t.conn, nil
}

// connect connects a session of profile's server over t, whose connection then serves
// ordinary tools/call requests itself (see fastcall.go).
func (g *Gateway) connect(ctx context.Context, t mcp.Transport, profile string) (*mcp.ServerSession, error) {
	front := &directFront{Transport: t}
	ss, err := g.mcpServerFor(profile).Connect(ctx, front, nil)
	if err != nil {
		return nil, err
	}
	front.conn.serveFast(g, profile, ss)
	return ss, nil
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
	// fast holds the cancel function of each request served by the fast path
	// (fastcall.go) and not answered yet; life ends them all when the connection
	// closes or its reading fails, as the SDK ends its own requests.
	fast      map[jsonrpc.ID]context.CancelFunc
	life      context.Context
	end       context.CancelFunc
	fastCalls atomic.Pointer[fastSession]
	// lc, when set, is the wrapped connection, which calls observe as it reads (see
	// lineConn.route).
	lc *lineConn
	// fewer, when not nil, is closed (and cleared) when a request is answered: what
	// waits for fewer requests open (see waitOpen) waits for it.
	fewer chan struct{}
	// writing counts the answers being written (see answered).
	writing int
	// version is the protocol version the client asked for in its initialize (see
	// batching).
	version string
	// listens holds the ids of the client's subscriptions/listen requests not
	// answered yet, at most MaxStdioListens (see streamable_listen.go).
	listens map[jsonrpc.ID]bool
}

// MaxOpenRequests bounds the requests a client served directly (over stdio, or in
// process) may have open, read and not answered yet: past it toolshed stops reading
// until one is answered. A client that pipes requests faster than they are answered
// (100,000 at once took toolshed to 1.14 GB) then waits in its own writes, as the
// pipe fills, rather than toolshed holding them all.
const MaxOpenRequests = 1024

// openWaits counts the times a connection waited for fewer requests open (for the
// tests that check it stops reading).
var openWaits atomic.Int64

// waitOpen waits until fewer than n of the client's requests are open, their answers
// written included (n = 1: none), and reports false when the connection closed first,
// or expired (nil: never) did.
func (c *stdioConn) waitOpen(n int, expired <-chan time.Time) bool {
	c.mu.Lock()
	for len(c.open)+c.writing >= n {
		if c.fewer == nil {
			c.fewer = make(chan struct{})
		}
		fewer := c.fewer
		c.mu.Unlock()
		openWaits.Add(1)
		select {
		case <-fewer:
		case <-c.life.Done():
			return false
		case <-expired:
			return false
		}
		c.mu.Lock()
	}
	c.mu.Unlock()
	return true
}

// fastSession is what a connection needs to serve tools/call itself: the session's
// gateway, profile and server session.
type fastSession struct {
	g       *Gateway
	profile string
	ss      *mcp.ServerSession
}

// serveFast makes c serve the ordinary tools/call requests of session ss itself, from
// now on.
func (c *stdioConn) serveFast(g *Gateway, profile string, ss *mcp.ServerSession) {
	c.fastCalls.Store(&fastSession{g: g, profile: profile, ss: ss})
}

// Read reads the client's next message. When a stdio client has closed its end (EOF),
// the requests it sent before are answered first: the SDK writes nothing once its
// reading has ended, so `printf '<initialize>\n' | toolshed serve` would otherwise
// answer nothing at all. They are given up to Options.DrainTimeout (--drain-timeout),
// as a drain gives the calls in flight; what is still open then is cancelled, as the
// SDK cancels it: MCP's stdio shutdown is the client closing stdin, then waiting for
// the server to exit before it sends SIGTERM (which stops toolshed at once, see
// ServeStdio), and a client that has gone must not keep a call running until its
// call timeout. An in-process client that closes is gone: its requests are cancelled
// at once.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		if c.lc == nil && !c.waitOpen(MaxOpenRequests, nil) {
			return nil, mcp.ErrConnectionClosed
		}
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			if fs := c.fastCalls.Load(); fs != nil && c.lc != nil && errors.Is(err, io.EOF) {
				grace := time.NewTimer(fs.g.opts.drainTimeout())
				c.waitOpen(1, grace.C)
				grace.Stop()
			}
			c.end()
			return msg, err
		}
		if c.lc != nil || !c.observe(msg) {
			return msg, nil
		}
	}
}

// observe keeps track of a message from the client, in the order they come, and
// reports whether the fast path took it (and so the SDK is not to see it). On
// toolshed's own line connection it runs on the reading goroutine (lineConn.route),
// so that a call taken by the fast path skips the hand-over to the SDK's reader.
func (c *stdioConn) observe(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return false
	}
	switch {
	case req.Method == "notifications/cancelled":
		if id, ok := cancelledRequest(req.Params); ok {
			c.mu.Lock()
			if _, ok := c.open[id]; ok {
				c.open[id] = true
			}
			if cancel := c.fast[id]; cancel != nil {
				cancel()
			}
			c.mu.Unlock()
		}
	case req.IsCall():
		if err := c.classify(req); err != nil {
			resp := &jsonrpc.Response{ID: req.ID, Error: err}
			_ = c.Connection.Write(context.Background(), resp)
			return true
		}
		if req.Method == "subscriptions/listen" && !c.openListen(req.ID) {
			e := subscriptionLimit(fmt.Sprintf("this connection has %d subscriptions/listen streams open, the most toolshed allows on one (MaxStdioListens); cancel listens no longer in use (notifications/cancelled), one is enough", MaxStdioListens))
			_ = c.Connection.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Error: e})
			return true
		}
		if c.tryTask(req) {
			return true
		}
		if req.Method == "initialize" {
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				c.mu.Lock()
				c.version = p.ProtocolVersion
				c.mu.Unlock()
			}
		}
		if c.tryFast(req) {
			return true
		}
		// A new request with an id cancelled before is not cancelled.
		c.mu.Lock()
		c.open[req.ID] = false
		c.mu.Unlock()
	}
	return false
}

// classify reads the era of a client's request (see classifyRequest), and returns the
// error it is refused with, if it is: a malformed envelope, a version toolshed does not
// speak, a method the modern protocol removed, or, once the client has spoken the
// modern protocol on this connection, a request without an envelope. The connection's
// version then becomes the modern one, so that a batch is refused (see batching).
// server/discover does not make a connection modern: a client may probe with it and
// then initialize (the AI SDK does).
func (c *stdioConn) classify(req *jsonrpc.Request) *jsonrpc.Error {
	env, err := classifyRequest(req)
	if err != nil || req.Method == "server/discover" {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case env.version != "":
		c.version = env.version
	case modernVersion(c.version) && req.Method != "initialize":
		return missingEnvelope(req.Method, c.version)
	}
	return nil
}

// openListen counts a subscriptions/listen request as open until it is answered, and
// reports false, counting nothing, when MaxStdioListens are open already. A request
// whose id is in flight is not counted twice: the SDK refuses it.
func (c *stdioConn) openListen(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.listens[id] {
		return true
	}
	if len(c.listens) >= MaxStdioListens {
		return false
	}
	if c.listens == nil {
		c.listens = map[jsonrpc.ID]bool{}
	}
	c.listens[id] = true
	return true
}

// tryFast serves req on the fast path when it can (see fastCallOf), and reports
// whether it did.
func (c *stdioConn) tryFast(req *jsonrpc.Request) bool {
	fs := c.fastCalls.Load()
	if fs == nil {
		return false
	}
	fc, ok := fs.g.fastCallOf(fs.profile, fs.ss, req)
	if !ok {
		return false
	}
	c.mu.Lock()
	if c.fast[req.ID] != nil {
		c.mu.Unlock()
		// In flight on the fast path: dropped, as the SDK drops its own (its refusal
		// has no id, and so is never written).
		return true
	}
	if _, busy := c.open[req.ID]; busy {
		c.mu.Unlock()
		return false // in flight on the SDK's path: the SDK refuses it
	}
	c.open[req.ID] = false
	// A response is written whether or not its request was cancelled; the cancelled
	// ones are dropped.
	serve := fastServer(&c.mu, c.fast, c.life, fc, func(resp *jsonrpc.Response) { _ = c.writeFast(resp) })
	if c.lc != nil {
		c.lc.handOff(serve)
	} else {
		go serve()
	}
	return true
}

func (c *stdioConn) Close() error {
	c.end()
	return c.Connection.Close()
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return c.Connection.Write(ctx, msg)
	}
	if c.answered(resp.ID) {
		if c.lc != nil {
			return c.lc.answer(resp.ID, nil) // dropped from its batch, if it has one
		}
		return nil
	}
	defer c.written()
	return c.Connection.Write(ctx, msg)
}

// batching reports whether the client's session speaks a protocol version with JSON-RPC
// batches (before 2025-06-18), and which: the one it asked for in its initialize, when
// toolshed serves it, else the newest, which toolshed answers with. It is read from the
// initialize as it is read, not as the SDK has handled it: a client may send a batch
// right behind its initialize. Before initialize, batches are taken, as the SDK takes
// them.
func (c *stdioConn) batching() (bool, string) {
	c.mu.Lock()
	v := c.version
	c.mu.Unlock()
	switch {
	case v == "":
		return true, ""
	case !slices.Contains(protocolVersions, v):
		v = protocolVersions[0]
	}
	return v < "2025-06-18", v
}

// answered forgets request id, answered now, and reports whether its answer is to be
// dropped (the client cancelled it). The id is free again at once: a client may reuse
// it as soon as it reads the answer. An answer to be written counts as open until
// written (see written): a client that does not read its answers holds up their
// writes, and so, past MaxOpenRequests, the reading of its next requests.
func (c *stdioConn) answered(id jsonrpc.ID) (drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	drop = c.open[id]
	delete(c.open, id)
	delete(c.listens, id)
	if !drop {
		c.writing++
	}
	c.fewerNow()
	return drop
}

// written records that an answer counted by answered is written (or failed).
func (c *stdioConn) written() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writing--
	c.fewerNow()
}

// fewerNow wakes what waits for fewer requests open; c.mu is held.
func (c *stdioConn) fewerNow() {
	if c.fewer != nil {
		close(c.fewer)
		c.fewer = nil
	}
}

// writeFast writes the fast path's response to a request, as Write would.
func (c *stdioConn) writeFast(resp *jsonrpc.Response) error {
	lc, ok := c.Connection.(*lineConn)
	if c.answered(resp.ID) {
		if ok {
			return lc.answer(resp.ID, nil) // dropped from its batch, if it has one
		}
		return nil
	}
	defer c.written()
	if !ok {
		return c.Connection.Write(context.Background(), resp)
	}
	select {
	case <-lc.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	data, err := encodeResponse(resp)
	if err != nil {
		return err
	}
	return lc.answer(resp.ID, data)
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
