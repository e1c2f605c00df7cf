package frontdoor

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Limits bound what clients can hold of a server. The zero value gives the defaults,
// which a single user never reaches; a negative value turns a limit off.
type Limits struct {
	// MaxConns caps the connections served at once; past it, new connections wait in
	// the listen queue until one ends. Zero means DefaultMaxConns.
	MaxConns int
	// MaxConnsPerClient is the share of MaxConns one client address may hold (an IPv4
	// address, or an IPv6 /64); its connections past it are taken out of the count,
	// answered 503 and closed (see capListener.refuse), so that one client cannot fill
	// MaxConns and leave the others, health probes among them, waiting in the listen
	// queue. Zero means half of MaxConns (with no MaxConns, no share). Clients behind
	// one reverse proxy or NAT share its address.
	MaxConnsPerClient int
	// HeaderTimeout is how long a request's headers may take to arrive. Zero means
	// DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// BodyTimeout is how long a request's body may take to arrive, from the end of its
	// headers; a body that is late fails to read, and its connection is closed. It does
	// not bound the response: a long tool call or an SSE stream lasts as long as it
	// needs. Zero means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that carries no request for this long,
	// so that idle connections do not hold MaxConns. Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
}

// The defaults of Limits.
const (
	// DefaultMaxConns is far above what one user's clients open (an MCP session holds
	// one or two connections; a proxy request one), and leaves a 200-session load test
	// room.
	DefaultMaxConns      = 1024
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout lets a 32 MB body (the proxy's limit) arrive at 10 Mbit/s.
	DefaultBodyTimeout = 30 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
)

func pick[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Listener returns ln, capped at l.MaxConns connections at once, and at
// l.MaxConnsPerClient of them per client address.
func (l Limits) Listener(ln net.Listener) net.Listener {
	total := pick(l.MaxConns, DefaultMaxConns)
	share := pick(l.MaxConnsPerClient, (total+1)/2)
	if total == 0 && share == 0 {
		return ln
	}
	return newCapListener(ln, total, share)
}

// Server returns an http.Server for h with the timeouts of l. Serve it on
// l.Listener(ln).
//
// The body's deadline is set per request (see BodyTimeout) rather than as the server's
// ReadTimeout, so that the handler's read error says what happened, and it is lifted
// once the body is read: the server then reads the connection in the background while
// the handler answers, to learn when the client goes, and a deadline left on it would
// cancel the request's context under a long SSE stream or tool call.
func (l Limits) Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           l.bodyDeadline(h),
		ReadHeaderTimeout: pick(l.HeaderTimeout, DefaultHeaderTimeout),
		IdleTimeout:       pick(l.IdleTimeout, DefaultIdleTimeout),
	}
}

// bodyDeadline gives each request with a body until BodyTimeout to send it.
func (l Limits) bodyDeadline(h http.Handler) http.Handler {
	d := pick(l.BodyTimeout, DefaultBodyTimeout)
	if d == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Without a body (GET, DELETE), the server already reads in the background: a
		// deadline would end that read, and the request with it.
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(d)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, header: w.Header(), timeout: d}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline of its connection when the body has been read
// (the server then starts its background read), and says what a timeout means. A body
// that timed out closes its connection after the answer: the server would otherwise keep
// it for a next request until the idle timeout, holding one of MaxConns.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	header  http.Header
	timeout time.Duration
	done    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF && !b.done:
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	case err != nil && err != io.EOF:
		if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			b.header.Set("Connection", "close")
			err = fmt.Errorf("the request body did not arrive within %s: %w", b.timeout, err)
		}
	}
	return n, err
}
