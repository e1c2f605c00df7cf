package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What ends a client's calls before their upstreams answer: the client cancelling one
// (notifications/cancelled, handled by the SDK), the client ending its session (a
// Streamable HTTP DELETE, stdin closed), and the gateway stopping. The SDK closes a
// session only once the requests in flight are answered, and a client that gave up
// its session must not wait for them (nor the gateway's shutdown for a slow tool).

// cancelWhere cancels the calls in flight that match: the upstream is told
// (notifications/cancelled) and the client's request ends at once; a call suspended
// for the client's input (multi round-trip) is dropped.
func (r *callRegistry) cancelWhere(match func(*call) bool) { r.cancelFor(match, nil) }

// sessionGone cancels the calls of ss, whose client went away, and those of ss that
// register from now on, until forgetSession: a call still on its way (checking its
// arguments, or not yet handed to its handler by the SDK, which then misses the
// notifications/cancelled the client's leaving sends) would otherwise run on until the
// upstream answers or the call timeout ends it.
func (r *callRegistry) sessionGone(ss *mcp.ServerSession) {
	r.mu.Lock()
	r.gone[ss] = true
	r.mu.Unlock()
	r.cancelWhere(func(c *call) bool { return c.session == ss })
}

// forgetSession forgets that ss's client went away (see sessionGone), once ss ended.
func (r *callRegistry) forgetSession(ss *mcp.ServerSession) {
	r.mu.Lock()
	delete(r.gone, ss)
	r.mu.Unlock()
}

// errStopping is why the calls in flight end when the gateway stops.
var errStopping = fmt.Errorf("%w: toolshed is shutting down", context.Canceled)

// cancelFor is cancelWhere, telling the upstreams why (a nil cause: the client
// cancelled).
func (r *callRegistry) cancelFor(match func(*call) bool, cause error) {
	r.mu.Lock()
	var running, suspended []*call
	for _, calls := range r.inflight {
		for _, c := range calls {
			if !match(c) {
				continue
			}
			if _, ok := r.pending[c.id]; ok {
				suspended = append(suspended, c)
			} else {
				running = append(running, c)
			}
		}
	}
	r.mu.Unlock()
	for _, c := range running {
		c.cancel(cause)
	}
	for _, c := range suspended {
		c.cancel(cause) // the first cause stays: expire's is nil
		r.expire(c)
	}
}
