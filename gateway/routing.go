package gateway

import (
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Routing of what an upstream server sends on its own (sampling, elicitation and roots
// requests, log messages) to the client it is for. MCP before 2026-07-28 links none of
// them to the client request that caused it, so toolshed passes them on only when they
// cannot be another principal's (see principals), and refuses them otherwise. A
// 2026-07-28 server asks for input as part of the call (multi round-trip requests,
// see mrtr.go), which goes to that call's client whoever else uses the server: the
// refusal is for older servers' own requests only.

// principalMemory is how long after a principal's last call on a server ended its
// clients still count among those the server's requests may be for (see cause). MCP
// links no server request to the call it is about, and servers do send them after their
// result: a sampling request raced with it, a log line written last, a background job.
// A longer memory refuses more requests where principals take turns on one server; a
// request a server sends later than this after its call, when one other principal
// uses it, cannot be told from that principal's.
const principalMemory = time.Minute

// errUnknownCause refuses an upstream's request when toolshed cannot tell which of its
// clients it is for.
func errUnknownCause(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// cause finds the client an upstream's request (sampling, elicitation, roots/list) is
// for. MCP gives such a request no link to the client request that caused it, so toolshed
// passes it on only when it cannot be for another principal (see principals): then it is
// the session whose requests are in flight on that server when only one session has any,
// else the only client connected that may use the server. Otherwise toolshed cannot
// know, and the request is refused rather than sent to a client that may not be the one.
// When the session's cause is a tool call, the call is returned too: the request goes
// to the client as part of that call.
func (r *callRegistry) cause(server string) (*call, *mcp.ServerSession, error) {
	if n := r.principals(server); n > 1 {
		return nil, nil, errUnknownCause("clients of %d profiles or tokens use %s, so toolshed cannot tell which client this request is for (MCP does not link it to the request that caused it); it passes a server's requests on only while one profile and token uses that server (its calls in the last %s included)", n, server, principalMemory)
	}
	r.mu.Lock()
	calls := slices.Clone(r.inflight[server])
	r.mu.Unlock()
	c := r.g.clients
	c.mu.Lock()
	var sessions []*mcp.ServerSession
	for ss := range c.forwards[server] {
		sessions = append(sessions, ss)
	}
	c.mu.Unlock()
	for _, call := range calls {
		if !slices.Contains(sessions, call.session) {
			sessions = append(sessions, call.session)
		}
	}
	switch len(sessions) {
	case 0:
		live := r.g.liveSessions(server)
		switch len(live) {
		case 1:
			return nil, live[0], nil
		case 0:
			return nil, nil, errUnknownCause("toolshed has no client connected that may use %s to pass this request to; it is relayed while such a client is connected", server)
		}
		return nil, nil, errUnknownCause("toolshed serves %d clients and none of them has a request running on %s, so it cannot tell which client this request is for; send it while handling that client's request", len(live), server)
	case 1:
		var mine []*call
		for _, call := range calls {
			if call.session == sessions[0] {
				mine = append(mine, call)
			}
		}
		switch {
		case len(mine) == 0:
			return nil, sessions[0], nil
		case len(mine) > 1 && mine[0].mrtr:
			return nil, nil, errUnknownCause("%d calls of one client are running on %s, and that client takes requests only as part of a call, so toolshed cannot tell which call this request belongs to", len(mine), server)
		}
		return mine[0], sessions[0], nil
	}
	return nil, nil, errUnknownCause("requests of %d clients are running on %s, so toolshed cannot tell which client this request is for (MCP does not link it to the request that caused it); retry when only one client's request is running", len(sessions), server)
}

// principal is who a session acts for: the profile it is served as and the credential
// (the bearer token, or none) that created it. Sessions of one principal are one party,
// which may see what the other asked; a server's request is never passed to another
// principal's client on a guess.
type principal struct {
	profile string
	cred    credential
}

// principalOf returns the principal of session ss. A stateless HTTP POST's session
// has no id and never joins: its principal is who sent it.
func (c *clients) principalOf(ss *mcp.ServerSession) principal {
	if ss == nil {
		return principal{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.stateless[ss]; ok {
		return principal{o.profile, o.cred}
	}
	return principal{c.profiles[ss], c.creds[ss.ID()]}
}

// principals counts the principals a request or log message of server may be for:
// those of the clients connected that may use it, of the clients with requests in
// flight on it, and of the calls on it that ended within principalMemory (their
// clients may have left).
func (r *callRegistry) principals(server string) int {
	r.mu.Lock()
	seen := map[principal]bool{}
	for _, p := range r.recentPrincipals(server) {
		seen[p] = true
	}
	var sessions []*mcp.ServerSession
	for _, call := range r.inflight[server] {
		sessions = append(sessions, call.session)
	}
	r.mu.Unlock()
	c := r.g.clients
	c.mu.Lock()
	for ss := range c.forwards[server] {
		sessions = append(sessions, ss)
	}
	c.mu.Unlock()
	for _, ss := range append(sessions, r.g.liveSessions(server)...) {
		if ss != nil {
			seen[r.g.clients.principalOf(ss)] = true
		}
	}
	return len(seen)
}

// setCredential records (or, with ok false, forgets) the credential that created HTTP
// session id.
func (c *clients) setCredential(id string, cred credential, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.creds[id] = cred
	} else {
		delete(c.creds, id)
	}
}

// recentPrincipals returns the principals whose calls on server ended within
// principalMemory, and forgets older ones. r.mu must be held.
func (r *callRegistry) recentPrincipals(server string) []principal {
	var out []principal
	cut := time.Now().Add(-principalMemory)
	for p, at := range r.used[server] {
		if at.Before(cut) {
			delete(r.used[server], p)
		} else {
			out = append(out, p)
		}
	}
	if len(r.used[server]) == 0 {
		delete(r.used, server)
	}
	return out
}
