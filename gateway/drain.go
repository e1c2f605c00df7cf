package gateway

import (
	"context"
	"net/http"
)

// A gateway stops in two phases. Drain comes first: the gateway stops taking new clients
// (GET /readyz answers 503, so that a load balancer sends them elsewhere, and a request
// that would start a Streamable HTTP session is refused with 503 and Retry-After), while
// the sessions it has keep being served and their calls in flight may finish, for up to
// Options.DrainTimeout. Then Run's context ends: what is still running is cancelled,
// each client told why (errStopping), and the upstreams are stopped (Options.StopTimeout).

// Drain starts draining and returns once no call, and no HTTP request, is in flight, or
// Options.DrainTimeout has passed, or ctx ends. It returns how many calls were still
// running then: those Run cancels when its context ends. Sessions that are open but idle
// are not waited for: their next request finds the gateway gone (behind a load balancer,
// another replica), as after any restart.
func (g *Gateway) Drain(ctx context.Context) int {
	if g.draining.CompareAndSwap(false, true) {
		close(g.drainSignal())
	}
	poll(ctx, g.opts.drainTimeout(), func() bool { return g.calls.running() == 0 && g.posts.Load() == 0 })
	return g.calls.running()
}

// drainSignal returns the channel the first Drain closes when it starts.
func (g *Gateway) drainSignal() chan struct{} {
	g.drainOnce.Do(func() { g.drainStarted = make(chan struct{}) })
	return g.drainStarted
}

// Draining reports whether Drain has started.
func (g *Gateway) Draining() bool { return g.draining.Load() }

// running counts the calls in flight that are running upstream: not those suspended
// for their client's input (multi round-trip), which end with their session.
func (r *callRegistry) running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, calls := range r.inflight {
		for _, c := range calls {
			if c.state == "" || r.pending[c.state] != c { // not suspended for its client's input
				n++
			}
		}
	}
	return n
}

// drainRetryAfter is the Retry-After, in seconds, of a new session refused while the
// gateway drains: by then a load balancer has taken this replica out of its pool, and a
// restarted one is likely up.
const drainRetryAfter = "5"

// refuseDraining answers 503 to a request that would start a session on a draining
// gateway, and reports whether it did.
func (g *Gateway) refuseDraining(w http.ResponseWriter) bool {
	if !g.draining.Load() {
		return false
	}
	w.Header().Set("Retry-After", drainRetryAfter)
	httpError(w, http.StatusServiceUnavailable, "toolshed is shutting down and starts no new session; retry in a few seconds (behind a load balancer, another replica takes it)")
	return true
}
