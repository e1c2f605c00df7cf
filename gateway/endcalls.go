package gateway

import (
	"context"
	"fmt"
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
