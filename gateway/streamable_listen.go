package gateway

import (
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A subscriptions/listen request of MCP 2026-07-28 is answered only when its client
// ends it: over HTTP its POST holds a connection, a per-POST session and goroutines
// for as long as the client keeps it, and over stdio a handler of the SDK's. Without a
// bound, one token could hold every connection --max-connections allows, so listens
// are capped as sessions are: over HTTP in total (--max-listens) and per token
// (--max-listens-per-token), counted in the session table's lock (httpSessions), and
// over stdio per connection (MaxStdioListens). A listen past a cap is refused before
// its acknowledgement, as the TypeScript SDK v2 server refuses one past its
// maxSubscriptions: JSON-RPC error -32603 "Subscription limit reached" (HTTP 200),
// followed here by which cap and what to do.

// DefaultMaxListens and DefaultMaxListensPerToken are HTTPOptions.MaxListens' and
// HTTPOptions.MaxListensPerToken's defaults. A client needs one listen (the go-sdk and
// TypeScript clients open one per session); the total is the TypeScript SDK's default
// maxSubscriptions, and the share of a token that of its sessions
// (DefaultMaxSessionsPerToken), so that one token can hold at most a quarter.
const (
	DefaultMaxListens         = 1024
	DefaultMaxListensPerToken = DefaultMaxSessionsPerToken
)

// MaxStdioListens bounds the listens a client may have open on one stdio connection:
// it has one client, which needs one listen.
const MaxStdioListens = 16

// subscriptionLimit is the refusal of a listen past a cap, why saying which.
func subscriptionLimit(why string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Subscription limit reached: " + why}
}

// reserveListen takes a listen slot for cred, or says which cap it is over.
func (s *httpSessions) reserveListen(cred credential) *jsonrpc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch overTotal, overCred := s.listens.take(cred); {
	case overTotal:
		return subscriptionLimit(fmt.Sprintf("toolshed has %d subscriptions/listen streams open, the most it allows (--max-listens, HTTPOptions.MaxListens); close listens no longer in use (a listen ends when its client closes its POST), or raise the limit", s.listens.total))
	case overCred:
		return subscriptionLimit(fmt.Sprintf("%s %d subscriptions/listen streams open, the most toolshed allows per token (--max-listens-per-token, HTTPOptions.MaxListensPerToken); close listens no longer in use (one per client is enough), or raise the limit", s.who(), s.listens.perCred[cred]))
	}
	return nil
}

// releaseListen gives back a slot reserveListen took.
func (s *httpSessions) releaseListen(cred credential) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listens.give(cred)
}

// holdListen takes a listen slot for a POST that is a subscriptions/listen (p), and
// returns the function that gives it back when the POST ends; past a cap it answers
// the refusal itself, before the SDK sees the request and so before any
// acknowledgement, and ok is false. A POST that is no listen takes nothing.
func (h *streamableFront) holdListen(w http.ResponseWriter, p post, cred credential) (release func(), ok bool) {
	req, listen := isListen(p.msgs)
	if !listen {
		return func() {}, true
	}
	if e := h.sessions.reserveListen(cred); e != nil {
		writeJSONRPCError(w, errorStatus(e.Code), req.ID, e)
		return nil, false
	}
	return func() { h.sessions.releaseListen(cred) }, true
}

// isListen reports whether msgs are one subscriptions/listen request, and returns it.
func isListen(msgs []jsonrpc.Message) (*jsonrpc.Request, bool) {
	if len(msgs) != 1 {
		return nil, false
	}
	req, ok := msgs[0].(*jsonrpc.Request)
	return req, ok && req.IsCall() && req.Method == "subscriptions/listen"
}
