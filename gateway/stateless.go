package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Stateless Streamable HTTP (HTTPOptions.Stateless) serves every POST on a session of
// its own, as the go-sdk's StreamableHTTPOptions.Stateless does: no Mcp-Session-Id is
// issued or read, a request that is not initialize is served as if its session had
// been initialized with default (no) client capabilities, and the session ends with
// the POST. Any replica can then serve any request, at the cost of what needs a
// session: requests from server to client (sampling, elicitation, roots), resumable
// streams, list_changed notifications and what the search log links within a session
// (see docs/replicas.md). A rate limit per session (rate_limit) applies per token and
// profile instead.

// errStateless refuses a request toolshed would send a stateless client: it has no
// session to answer on.
var errStateless = errors.New("stateless HTTP: toolshed cannot send requests to the client (sampling, elicitation, roots need a session)")

// statelessVersion is the protocol of a stateless request that names none (the
// Mcp-Protocol-Version header's default).
const statelessVersion = "2025-03-26"

// statelessEnded counts the stateless POSTs whose session has ended, for the tests that
// check none outlives its client.
var statelessEnded atomic.Int64

func (h *streamableFront) serveStateless(w http.ResponseWriter, r *http.Request, owner sessionOwner) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed: this toolshed serves Streamable HTTP without sessions (--stateless): only POST", http.StatusMethodNotAllowed)
		return
	}
	if !postHeadersOK(w, r) {
		return
	}
	p, ok := h.readPOST(w, r)
	if !ok {
		return
	}
	modern, ok := h.modernPOST(w, r, p, owner.profile)
	if !ok {
		return
	}
	h.servePerPOST(w, r, owner, p, modern)
}

// servePerPOST serves a POST on a session of its own, which ends with it: every POST
// of a stateless front, and a modern client's (whose protocol, modern, has no
// sessions) on any front. The session is counted against no session cap, and its
// token and profile (owner) are the request's.
func (h *streamableFront) servePerPOST(w http.ResponseWriter, r *http.Request, owner sessionOwner, p post, modern string) {
	if p.initialize && h.g.refuseDraining(w) {
		return // a new client: let another replica take it
	}
	release, ok := h.holdListen(w, p, owner.cred)
	if !ok {
		return
	}
	defer release()
	state := &mcp.ServerSessionState{LogLevel: "info"}
	switch {
	case modern != "":
		// The request's envelope is its caller (see callerOf); the session's version
		// makes the SDK answer input requests as results (MRTR) to it.
		state.InitializeParams = &mcp.InitializeParams{ProtocolVersion: modern}
		// Its log level is its envelope's, which the SDK keeps in the request's
		// context (none: no log messages). The fast path, which cannot, serves only
		// requests that name none (see fastMeta), by the session's: none either.
		state.LogLevel = ""
	case !p.initialize:
		v := p.version
		if !slices.Contains(protocolVersions, v) || modernVersion(v) {
			v = statelessVersion
		}
		state.InitializeParams = &mcp.InitializeParams{ProtocolVersion: v}
	}
	if !p.initialized {
		state.InitializedParams = &mcp.InitializedParams{}
	}
	conn := newHTTPConn("")
	conn.stateless = true
	ss, err := h.g.mcpServerFor(owner.profile).Connect(context.WithoutCancel(r.Context()), httpTransport{conn}, &mcp.ServerSessionOptions{State: state})
	if err != nil {
		h.g.logf("http: cannot start a session: %v", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return
	}
	// The session is no client toolshed declares anything for (see join): it cannot
	// be asked for anything, and it ends with the POST.
	h.g.clients.setStateless(ss, owner)
	conn.serveFast(h.g, owner.profile, ss)
	finished := false
	defer func() {
		end := func() {
			ss.Close()
			h.g.calls.forgetSession(ss)
			h.g.clients.endStateless(ss)
			statelessEnded.Add(1)
		}
		if finished {
			end()
			return
		}
		// The client went away with requests in flight: the calls are cancelled, and
		// the session ends once the SDK has their answers, which it waits for.
		h.g.calls.sessionGone(ss)
		go func() {
			conn.clientGone()
			end()
		}()
	}()
	s, dup, err := conn.track(p.msgs, func() *mcp.RequestExtra { return &mcp.RequestExtra{Header: r.Header} })
	if err != nil {
		finished = true
		writeDuplicate(w, dup, err)
		return
	}
	// Read before the requests are delivered: their answers change it.
	single := s != nil && s.requests == 1 && !p.batch
	if single && len(p.msgs) == 1 {
		if serve, ok := conn.fastServe(p.msgs[0]); ok {
			// An ordinary tools/call runs on this POST's goroutine, as a session's does
			// (serveInline). A client that goes away meanwhile has its call cancelled, as
			// below (clientGone): no session outlives the POST to end it later.
			stop := context.AfterFunc(r.Context(), conn.clientGone)
			h.serveInline(w, r, s, streamWriter{json: true, hold: true, modern: modern != ""}, serve, func() {})
			stop()
			finished = true // the call has ended: nothing is in flight
			return
		}
	}
	for _, m := range p.msgs {
		if !conn.deliver(m) {
			if s != nil {
				s.abandon(s.gen, false)
			}
			http.Error(w, "session is closing", http.StatusServiceUnavailable)
			return
		}
	}
	if s == nil {
		// Notifications and responses only: accepted, nothing to answer.
		finished = true
		w.WriteHeader(http.StatusAccepted)
		return
	}
	_, listen := isListen(p.msgs)
	finished = h.write(w, r, s, s.attach(), streamWriter{json: single, hold: true, modern: modern != "", listen: listen && !p.batch})
}

// clientGone cancels the requests of a stateless POST whose client went away, whether
// or not their calls have started: cancelWhere finds only the calls registered, and a
// call still checking its arguments would register after it and run on until the
// upstream answers or the call timeout, holding the POST's session and goroutines
// (ServerSession.Close waits for the SDK's handlers; it does not cancel them). The fast
// path's calls run on c.life; the SDK's handlers end as on a client's
// notifications/cancelled.
func (c *httpConn) clientGone() {
	c.end()
	c.mu.Lock()
	ids := make([]jsonrpc.ID, 0, len(c.pending))
	for id := range c.pending {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		params, err := json.Marshal(&mcp.CancelledParams{RequestID: id.Raw(), Reason: "the client went away"})
		if err != nil || !c.deliver(&jsonrpc.Request{Method: "notifications/cancelled", Params: params}) {
			return
		}
	}
}
