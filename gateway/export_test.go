package gateway

import (
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LineTransport is the stdio front's transport on r and w instead of stdin and stdout:
// Gateway.Connect(ctx, LineTransport(r, w, closeIO), profile) serves a client as
// ServeStdio does, for the tests that drive the stdio front byte by byte. closeIO ends
// r and w.
func LineTransport(r io.Reader, w io.Writer, closeIO func() error) mcp.Transport {
	return stdioTransport{r: r, w: w, closeIO: closeIO}
}

// SetPrimeDelay sets how long a POST with one request waits for its response before it
// answers with an event stream, and returns what restores it.
func SetPrimeDelay(d time.Duration) func() {
	old := primeDelay.Swap(int64(d))
	return func() { primeDelay.Store(old) }
}

// SetMaxPollInterval sets the longest pollIntervalMs toolshed honours when it polls a
// task, and returns what restores it.
func SetMaxPollInterval(d time.Duration) func() {
	old := pollIntervalCap.Swap(int64(d))
	return func() { pollIntervalCap.Store(old) }
}

// RelatedStreams counts the entries of relatedStreams, the process-wide map of the
// Streamable HTTP requests in flight (for the tests that check none is left behind).
func RelatedStreams() int {
	n := 0
	relatedStreams.Range(func(any, any) bool { n++; return true })
	return n
}

// SetFastCalls turns the connections' own serving of tools/call (fastcall.go) on or
// off, and returns what restores it.
func SetFastCalls(on bool) func() {
	old := fastCallsOff.Swap(!on)
	return func() { fastCallsOff.Store(old) }
}

// FastCallsServed is how many calls the fast path has served in this process.
func FastCallsServed() int64 { return fastCallsServed.Load() }

// StatelessEnded is how many stateless POSTs' sessions have ended in this process.
func StatelessEnded() int64 { return statelessEnded.Load() }

// ClientCounts counts the client sessions the gateway tracks: those that joined, and
// the stateless HTTP POSTs' sessions alive (for the tests that check none is left).
func (g *Gateway) ClientCounts() (joined, stateless int) {
	g.clients.mu.Lock()
	defer g.clients.mu.Unlock()
	return len(g.clients.sessions), len(g.clients.stateless)
}

// CallsRunning counts the calls running upstream (what Drain waits for).
func (g *Gateway) CallsRunning() int { return g.calls.running() }

// HoldReassembly makes the gateway's reassembly loop wait, before each reassembly, until
// the returned function is called (once), as a loaded machine may make it wait.
func (g *Gateway) HoldReassembly() (release func()) {
	held := make(chan struct{})
	hook := func() { <-held }
	g.reassembleHook.Store(&hook)
	var once sync.Once
	return func() {
		once.Do(func() {
			g.reassembleHook.Store(nil)
			close(held)
		})
	}
}

// Up reports whether the upstream named name is connected with its tools listed,
// whether or not the catalog has them yet (Status reports it ready only then).
func (g *Gateway) Up(name string) bool {
	u := g.byName[name]
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.status.State == Ready
}

// OpenWaits is how many times, in this process, a directly served client's connection
// waited for fewer requests open before reading on (see MaxOpenRequests).
func OpenWaits() int64 { return openWaits.Load() }

// SchemasChecked reports whether the catalog warnings' schema checks, which run after
// each assembly, have all been made and printed.
func (g *Gateway) SchemasChecked() bool { return g.warnings.schemasChecked() }
