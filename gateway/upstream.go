package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/redact"
	"github.com/toolshed/toolshed/oauth"
)

// UpstreamProtocol is the newest MCP version toolshed initializes an upstream server at,
// the newest of ProtocolVersions: the last one with server-to-client requests for
// sampling, elicitation and roots at any time, which toolshed relays to its own clients.
// A server that offers 2026-07-28 when asked (server/discover) is spoken to in that
// version instead, unless its config says protocol: legacy (see era.go).
const UpstreamProtocol = "2025-11-25"

// State is where an upstream is in its life.
type State string

// Upstream states.
const (
	Connecting State = "connecting"
	Ready      State = "ready"
	Failed     State = "failed" // it will be retried after a backoff
	Disabled   State = "disabled"
	Stopped    State = "stopped"
	// NeedsSignIn: a remote server asks for OAuth and toolshed has no credential
	// for it, or the one it had can no longer be refreshed. It is not restarted: it
	// connects once `toolshed auth login NAME` has stored a credential.
	NeedsSignIn State = "needs sign-in"
)

// Errors of calls to upstreams; the gateway turns them into tool results with the
// matching search.Code.
var (
	// ErrUnavailable: the upstream is not connected (starting, crashed, restarting).
	ErrUnavailable = errors.New("upstream unavailable")
	// ErrTimeout: the call outlived its timeout.
	ErrTimeout = errors.New("call timed out")
)

// Status is a snapshot of an upstream's state, for progress reports and health checks.
type Status struct {
	Name  string
	State State
	Tools int
	// Tokens is what listing all the upstream's tools costs a model (o200k_base).
	Tokens int
	// Protocol is the MCP version the server's connection negotiated: 2026-07-28 for
	// a modern server, else the version initialize agreed on.
	Protocol string
	Err      error
	Restarts int
	// Retry, when State is Failed, is how long the upstream waits before it restarts.
	Retry time.Duration
	// Since is when the upstream entered State.
	Since time.Time
}

// Upstream is one upstream MCP server: it connects, lists its tools, relays calls, and
// restarts the server with exponential backoff when it fails. One upstream failing never
// touches another.
type Upstream struct {
	cfg config.Server
	// catalog makes this a catalog upstream (see catalogTransport): catalogServer
	// answers for it, made once from catalogTools on the first connection, which are
	// then let go (the catalog file they are read from is not kept: the server keeps
	// its own compacted copy of what it lists).
	catalog      bool
	catalogTools []json.RawMessage
	catalogOnce  sync.Once
	catalogSrv   *catalogServer
	g            *Gateway
	stderr       io.Writer

	mu sync.Mutex
	// base is the HTTP transport of a remote server's requests: its sign-in's
	// (see signIn) or http.DefaultTransport.
	base http.RoundTripper
	// lostSignIn is why the sign-in of the current connection ended (see
	// signInLost).
	lostSignIn error
	session    *mcp.ClientSession
	link       *link // the connection new requests go to; nil when there is none
	status     Status
	// started is when the upstream began its first start (see run and hold).
	started time.Time
	// everUp is set once the upstream has been up: its starts are then bounded by
	// connectTimeout, not by the longer bound of a start that may install it (see
	// startTimeout).
	everUp bool
	// settledGen is one more than the newest generation of the clients' support (see
	// Gateway.declared) for which a connection attempt ended, connected or failed.
	settledGen uint64
	// assembled is set once the gateway's catalog has the tools of this connection:
	// until then Status reports Connecting, so that "ready" means callable.
	assembled bool
	tools     []json.RawMessage
	// known is the tool list of the last connection that was ready, kept while the
	// server restarts (see restartingSource), so that calls of its tools meanwhile get
	// unavailable rather than "no such tool".
	known    []json.RawMessage
	features features
	// featuresVersion counts changes of features, so reassembly notices them.
	featuresVersion int
	listing         sync.Mutex // one tools/list at a time, so captures do not interleave
	relisted        chan struct{}
	refeatured      chan struct{}
	redeclared      chan struct{} // what the clients support changed
	draining        sync.WaitGroup

	// announced has the lists the server said changed (its list_changed notifications)
	// and toolshed has read anew, until the reassembly that passes the notices on (see
	// Gateway.reassemble); heard has those of prompts and resources not read yet. Both
	// are guarded by mu.
	announced, heard listKinds
}

func newUpstream(cfg config.Server, g *Gateway) *Upstream {
	u := &Upstream{cfg: cfg, g: g, relisted: make(chan struct{}, 1), refeatured: make(chan struct{}, 1), redeclared: make(chan struct{}, 1)}
	u.stderr = &prefixWriter{prefix: "[" + cfg.Name + "] ", w: g.logOut()}
	u.status = Status{Name: cfg.Name, State: Connecting, Since: time.Now()}
	if cfg.Disabled {
		u.status.State = Disabled
	}
	return u
}

// Name is the upstream's server name.
func (u *Upstream) Name() string { return u.cfg.Name }

// Status reports the upstream's current state.
func (u *Upstream) Status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.status
	s.Tools = len(u.tools)
	if s.State == Ready && !u.assembled {
		s.State = Connecting
	}
	return s
}

// markAssembled records whether the current catalog has this upstream's tools, and
// reports whether that made it ready.
func (u *Upstream) markAssembled(included bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	was := u.assembled
	u.assembled = included && u.status.State == Ready
	return u.assembled && !was
}

// Source returns the upstream's tools as a catalog source, or false when it has none to
// offer (not ready).
func (u *Upstream) Source() (catalog.Source, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.status.State != Ready {
		return catalog.Source{}, false
	}
	return catalog.Source{Server: u.cfg.Name, AlwaysLoad: u.cfg.AlwaysLoad, Tools: u.tools, Origin: "upstream " + u.cfg.Name}, true
}

// restartingSource returns the tools the upstream had when it was last ready, while it
// is restarting (connecting again or waiting to), or false when it is not restarting or
// was never ready.
func (u *Upstream) restartingSource() (catalog.Source, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.known == nil || u.status.State != Connecting && u.status.State != Failed {
		return catalog.Source{}, false
	}
	return catalog.Source{Server: u.cfg.Name, AlwaysLoad: u.cfg.AlwaysLoad, Tools: u.known, Origin: "upstream " + u.cfg.Name}, true
}

func (u *Upstream) setState(s State, err error) {
	u.mu.Lock()
	u.setStateLocked(s, err)
	u.mu.Unlock()
	u.g.upstreamChanged(u)
}

// failed records the end of a life: one more restart, after retry.
func (u *Upstream) failed(err error, retry time.Duration) {
	u.mu.Lock()
	u.status.Restarts++
	u.status.Retry = retry
	u.setStateLocked(Failed, err)
	u.mu.Unlock()
	u.g.opts.Metrics.Restart(u.cfg.Name)
	u.g.upstreamChanged(u)
}

func (u *Upstream) setStateLocked(s State, err error) {
	changed := u.status.State != s
	// The error is shown (the log, /readyz, start-up progress) and may quote the
	// server's URL with a key in its query, or an answer that echoes the key sent.
	u.status.State, u.status.Err = s, redact.Wrap(err)
	if changed {
		u.status.Since = time.Now()
	}
	if s != Ready {
		if u.tools != nil {
			u.known = u.tools
		}
		if s == Stopped || s == Disabled {
			u.known = nil
		}
		u.tools, u.features = nil, features{}
		u.featuresVersion++
	}
	u.assembled = false
}

// run keeps the upstream connected until ctx ends: connect, list, serve until the
// session ends, then wait with exponential backoff and start again. It starts once
// what the clients support is known (see Options.WaitForClient).
func (u *Upstream) run(ctx context.Context) {
	if u.cfg.Disabled {
		return
	}
	defer u.draining.Wait()
	select {
	case <-u.g.clients.known:
	case <-ctx.Done():
		u.setState(Stopped, nil)
		return
	}
	u.mu.Lock()
	u.started = time.Now()
	u.mu.Unlock()
	note := time.AfterFunc(u.g.opts.startWait(), u.noteSlowStart)
	defer note.Stop()
	backoff := u.g.opts.backoffMin()
	for ctx.Err() == nil {
		u.setState(Connecting, nil)
		started := time.Now()
		err := u.connectAndServe(ctx)
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, oauth.ErrNotSignedIn) {
			u.waitForSignIn(ctx, err)
			backoff = u.g.opts.backoffMin()
			continue
		}
		if time.Since(started) > u.g.opts.backoffReset() {
			backoff = u.g.opts.backoffMin()
		}
		u.failed(err, backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, u.g.opts.backoffMax())
	}
	u.setState(Stopped, nil)
}

// connectAndServe runs one life of the upstream: it returns why the life ended. A change
// of what the clients support does not end it: the upstream moves to a new connection
// (see swap).
func (u *Upstream) connectAndServe(ctx context.Context) error {
	l, tools, f, err := u.dial(ctx)
	if err != nil {
		return err
	}
	defer func() { l.close() }()
	// Installed and ready at once: a request that finds the upstream settled on its
	// connection must find it ready too, or it would go on without its tools (see
	// Gateway.settle).
	u.mu.Lock()
	u.installLocked(l, tools, f)
	u.setStateLocked(Ready, nil)
	u.mu.Unlock()
	u.g.upstreamChanged(u)
	u.resubscribe(ctx, l)

	done := waitLink(l)
	for {
		select {
		case err := <-done:
			u.mu.Lock()
			u.session, u.link = nil, nil
			u.mu.Unlock()
			if lost := u.takeLostSignIn(); lost != nil {
				return lost
			}
			if err == nil || errors.Is(err, mcp.ErrConnectionClosed) {
				err = errors.New("the server closed the connection")
			}
			return fmt.Errorf("stopped: %w", err)
		case <-u.relisted:
			u.relist(ctx, l)
		case <-u.refeatured:
			u.mu.Lock()
			heard := u.heard
			u.heard = 0
			u.mu.Unlock()
			listCtx, cancel := context.WithTimeout(ctx, u.connectTimeout())
			f := u.listFeatures(listCtx, l)
			cancel()
			u.mu.Lock()
			u.features = f
			u.featuresVersion++
			u.announced |= heard
			u.mu.Unlock()
			u.g.upstreamChanged(u)
		case <-u.redeclared:
			if nl := u.swap(ctx, l); nl != nil {
				l = nl
				done = waitLink(l)
			}
		}
	}
}

// relist re-reads the tools after notifications/tools/list_changed.
func (u *Upstream) relist(ctx context.Context, l *link) {
	listCtx, cancel := context.WithTimeout(ctx, u.connectTimeout())
	defer cancel()
	tools, err := u.list(listCtx, l)
	if err != nil {
		u.g.logf("upstream %s: re-listing tools after list_changed: %v", u.cfg.Name, err)
		return
	}
	u.mu.Lock()
	u.tools = tools
	u.status.Tokens = u.tokens(tools)
	u.announced |= listTools
	u.mu.Unlock()
	u.g.upstreamChanged(u)
}

// listKinds is a set of the lists a server announces changes of.
type listKinds uint8

const (
	listTools listKinds = 1 << iota
	listPrompts
	listResources // resources and resource templates: one notification covers both
)

// hear notes that the server announced a change of the lists kinds, and has them read
// anew (see connectAndServe).
func (u *Upstream) hear(kinds listKinds) {
	u.mu.Lock()
	u.heard |= kinds
	u.mu.Unlock()
	signal(u.refeatured)
}

// takeAnnounced returns the lists the server announced changes of since the last call
// and toolshed has read anew, and clears them.
func (u *Upstream) takeAnnounced() listKinds {
	u.mu.Lock()
	defer u.mu.Unlock()
	a := u.announced
	u.announced = 0
	return a
}

// tokens is the token cost of listing tools as this upstream's.
func (u *Upstream) tokens(tools []json.RawMessage) int {
	snap, _ := u.g.decoded.Build([]catalog.Source{{Server: u.cfg.Name, Tools: tools}})
	return snap.Tokens()
}

// catalogServer returns the server of a catalog upstream, nil for any other.
func (u *Upstream) catalogServer() *catalogServer {
	if !u.catalog {
		return nil
	}
	u.catalogOnce.Do(func() {
		u.catalogSrv = newCatalogServer(u.cfg.Name, u.catalogTools, &u.g.decoded)
		u.catalogTools = nil
	})
	return u.catalogSrv
}

// list reads every page of tools/list and returns the tools exactly as the server sent
// them when the raw capture saw them, else as the SDK decoded them. A catalog
// upstream's are known without asking (see catalogServer).
func (u *Upstream) list(ctx context.Context, l *link) ([]json.RawMessage, error) {
	if cs := u.catalogServer(); cs != nil {
		return cs.listed, nil
	}
	cs := l.cs
	u.listing.Lock()
	defer u.listing.Unlock()
	l.capture.take()
	var decoded []*mcp.Tool
	params := &mcp.ListToolsParams{}
	for pages := 0; ; pages++ {
		if pages == 10000 {
			return nil, errors.New("tools/list did not end after 10,000 pages")
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		decoded = append(decoded, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	var raw []json.RawMessage
	for _, page := range l.capture.take() {
		var r struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(page, &r) == nil {
			raw = append(raw, r.Tools...)
		}
	}
	if sameTools(raw, decoded) {
		return raw, nil
	}
	out := make([]json.RawMessage, 0, len(decoded))
	for _, t := range decoded {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// sameTools reports whether the raw tools are the decoded ones, by name and order.
func sameTools(raw []json.RawMessage, decoded []*mcp.Tool) bool {
	if len(raw) != len(decoded) {
		return false
	}
	for i, r := range raw {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(r, &t) != nil || t.Name != decoded[i].Name {
			return false
		}
	}
	return true
}

// relay passes the upstream's sampling or elicitation request to the client that caused
// it (see callRegistry.cause).
func (u *Upstream) relay(ctx context.Context, params mcp.InputRequest) (mcp.InputResponse, error) {
	return u.g.calls.relay(ctx, u.cfg.Name, params)
}

// notify passes on progress and log notifications in order (see captureConn.Read).
func (u *Upstream) notify(ctx context.Context, method string, params json.RawMessage) bool {
	switch method {
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(params, &p) != nil {
			return false
		}
		u.g.calls.progress(ctx, &p)
		return true
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(params, &p) != nil {
			return false
		}
		u.g.calls.logMessage(ctx, u.cfg.Name, &p)
		return true
	}
	return false
}

// signal sends on a channel of one unless a signal is already pending.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// upstreamCall is a tools/call toolshed sends an upstream for a client's call.
type upstreamCall struct {
	name string          // the tool's name at the server
	args json.RawMessage // sent as given
	meta mcp.Meta        // the client's _meta (carrying the progress token), see link.callMeta
	// caller is what the calling client supports, which a modern server is told (see
	// link.callMeta).
	caller clientSupport
	// retry, when not nil, makes the request the retry of a call the server asked
	// input for (MRTR), with a JSON-RPC id of its own.
	retry *callRetry
	// user, for a server each user signs in to, is who the call is for: it is
	// signed with their credential (see usersignin.go).
	user string
}

// startCall sends uc to the upstream, within the call timeout. done gets the outcome,
// once: the server's result as the JSON it sent (an input_required one included), or
// an error. It is called from the goroutine that reads the answer, and must not block.
func (u *Upstream) startCall(ctx context.Context, uc upstreamCall, done func(json.RawMessage, error)) {
	// The call counts in l.busy from the moment it takes l, under u.mu, where a
	// replacement connection is installed: a connection being replaced closes only
	// once its calls are answered (see Upstream.drain).
	u.mu.Lock()
	l := u.link
	if l != nil {
		l.busy.Add(1)
	}
	u.mu.Unlock()
	if l == nil {
		done(nil, u.unavailable())
		return
	}
	cs, conn := l.cs, l.conn
	params := callParams{Meta: l.callMeta(uc.meta, uc.caller), Name: uc.name, Arguments: uc.args}
	if uc.retry != nil {
		params.InputResponses, params.RequestState = uc.retry.responses, uc.retry.state
	}
	timeout := u.cfg.CallTimeout
	if timeout <= 0 {
		timeout = config.DefaultCallTimeout
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	if uc.user != "" {
		callCtx = oauth.WithUser(callCtx, uc.user)
	}
	finish := func(raw json.RawMessage, err error) {
		l.busy.Add(-1)
		raw, err = u.callOutcome(ctx, callCtx, timeout, raw, err)
		cancel()
		done(raw, err)
	}
	if conn == nil {
		// Streamable HTTP: the SDK's client makes the call, and the round trip hands
		// the result's bytes to the sink on their way in.
		go func() {
			sink := &resultSink{}
			res, err := cs.CallTool(withResultSink(callCtx, sink), &mcp.CallToolParams{Name: params.Name, Arguments: params.Arguments,
				Meta: params.Meta, InputResponses: params.InputResponses, RequestState: params.RequestState})
			var raw json.RawMessage
			if err == nil {
				if raw = sink.result(); raw == nil {
					raw, err = marshal(res)
				}
			}
			finish(raw, err)
		}()
		return
	}
	// stdio, SSE and catalog upstreams: the call goes out on the connection, and its
	// result comes back undecoded (see captureConn.start).
	body, err := marshal(params)
	if err != nil {
		finish(nil, err)
		return
	}
	// A task handle that answers the call after it was cancelled starts a task nobody
	// follows: it is cancelled in turn (see abandonedTask).
	conn.startLate(callCtx, "tools/call", body, finish, func(raw json.RawMessage) { u.abandonedTask(l, raw) })
}

// unavailable is the error of a call the upstream has no connection for.
func (u *Upstream) unavailable() error {
	u.mu.Lock()
	state := u.status.State
	u.mu.Unlock()
	if state == Failed || state == Connecting {
		return fmt.Errorf("%w: the server %s is restarting", ErrUnavailable, u.cfg.Name)
	}
	return fmt.Errorf("%w: %s is %s", ErrUnavailable, u.cfg.Name, state)
}

// callOutcome maps how a call ended to what Call returns.
func (u *Upstream) callOutcome(ctx, callCtx context.Context, timeout time.Duration, raw json.RawMessage, err error) (json.RawMessage, error) {
	switch {
	case err == nil:
		if k := bytes.TrimSpace(raw); len(k) == 0 || k[0] != '{' {
			return nil, fmt.Errorf("%s answered tools/call with a result that is not a JSON object: %.100s", u.cfg.Name, raw)
		}
		return raw, nil // an input_required result too: the registry relays it
	case ctx.Err() != nil:
		return nil, context.Cause(ctx) // the caller cancelled, or the gateway is stopping
	case errors.Is(context.Cause(callCtx), ErrTimeout):
		return nil, fmt.Errorf("%w: %s did not answer within %v (call_timeout)", ErrTimeout, u.cfg.Name, timeout)
	}
	var wire *jsonrpc.Error
	if errors.As(err, &wire) {
		return nil, err // the server answered, with an error
	}
	var signIn *oauth.SignInError
	if errors.As(err, &signIn) {
		return nil, signIn // says what to run; the connection is fine
	}
	// No answer: the connection broke (the server crashed or closed it).
	return nil, fmt.Errorf("%w: %s stopped during the call (%v)", ErrUnavailable, u.cfg.Name, err)
}

// callParams are the params of a tools/call request, in the order the SDK writes them.
type callParams struct {
	Meta           mcp.Meta             `json:"_meta,omitempty"`
	Name           string               `json:"name"`
	Arguments      json.RawMessage      `json:"arguments,omitempty"`
	InputResponses mcp.InputResponseMap `json:"inputResponses,omitempty"`
	RequestState   string               `json:"requestState,omitempty"`
}

// transport builds the transport of a new connection l to the upstream, and a cleanup
// for what it started. l gets the connection toolshed wraps (every transport but
// Streamable HTTP) when it connects.
func (u *Upstream) transport(ctx context.Context, l *link) (mcp.Transport, func(), error) {
	if cs := u.catalogServer(); cs != nil {
		return u.captureTransport(catalogTransport(cs), l), func() {}, nil
	}
	switch u.cfg.Type {
	case config.HTTP, config.SSE:
		base, err := u.signIn(ctx)
		if err != nil {
			return nil, nil, err
		}
		client := &http.Client{Transport: &captureRoundTripper{base: base, headers: u.cfg.Headers, capture: l.capture}}
		if u.cfg.Type == config.SSE {
			client.Transport.(*captureRoundTripper).capture = nil
			return u.captureTransport(&mcp.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: client}, l), func() {}, nil
		}
		return &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: client, MaxRetries: -1}, func() {}, nil
	}
	if u.cfg.Command == "" {
		return nil, nil, errors.New("no command to start")
	}
	cmd := exec.Command(u.cfg.Command, u.cfg.Args...)
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(u.cfg.Env))
	for k := range u.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+u.cfg.Env[k])
	}
	cmd.Dir = u.cfg.Cwd
	cmd.Stderr = u.stderr
	ownProcessGroup(cmd)
	cleanup := func() { u.g.procs.end(cmd) }
	return u.captureTransport(commandTransport{cmd: cmd, terminate: u.g.opts.stopStep(), procs: &u.g.procs}, l), cleanup, nil
}

// captureTransport wraps t so that toolshed sees the upstream's messages on l's
// connection (see captureConn) and can call tools on it.
func (u *Upstream) captureTransport(t mcp.Transport, l *link) mcp.Transport {
	notify := func(ctx context.Context, method string, params json.RawMessage) bool {
		return u.taskNotice(l, method, params) || u.notify(ctx, method, params)
	}
	return captureTransport{Transport: t, capture: l.capture, relay: u.relay, notify: notify,
		connected: func(c *captureConn) { l.conn = c }}
}

// prefixWriter writes each line written to it to w with a prefix, so that the stderr of
// every child process lands in toolshed's log marked with its server's name. Each line
// goes through the one redaction rule, as toolshed's own lines do: a server that fails
// may print its DSN, URL or key.
type prefixWriter struct {
	prefix string
	w      io.Writer
	mu     sync.Mutex
	buf    []byte
}

// maxStderrLine is the longest line of a child's stderr held before what it has so far
// is written out as a line: a line without an end must not grow without bound. The redaction rule is
// linear in a line's length (see internal/redact's BenchmarkString).
const maxStderrLine = 64 << 10

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		if err := p.line(p.buf[:i+1]); err != nil {
			return len(b), nil // a broken log must not break the child
		}
		p.buf = p.buf[i+1:]
	}
	if len(p.buf) > maxStderrLine { // a very long line without newline: flush it, redacted
		p.line(append(p.buf, '\n'))
		p.buf = p.buf[:0]
	}
	return len(b), nil
}

// line writes one line, redacted, with the prefix, in one write.
func (p *prefixWriter) line(l []byte) error {
	_, err := io.WriteString(p.w, p.prefix+redact.String(string(l)))
	return err
}
