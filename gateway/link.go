package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway/config"
)

// An upstream's connection declares, at initialize, what the clients support (see
// clientSupport). When that changes, the upstream makes a new connection beside the old
// one, moves to it once it has listed its tools, and closes the old one when the requests
// in flight on it have ended.

// link is one connection to the upstream server: its session, and what toolshed
// declared on it of what the clients support.
type link struct {
	cs     *mcp.ClientSession
	client *mcp.Client
	// conn is cs's connection when toolshed wraps it (every transport but Streamable
	// HTTP): calls go out on it directly (see Upstream.startCall).
	// capture sees the raw tools/list results on cs (see Upstream.list).
	capture *toolsCapture
	conn    *captureConn
	support clientSupport
	gen     uint64
	// version is the protocol version the connection negotiated (see era.go).
	version string
	// busy counts the requests toolshed sent on cs that are not answered yet.
	busy  atomic.Int64
	close func() // ends the session and what its transport started
}

// toolshedClient is who toolshed is to its upstreams.
var toolshedClient = &mcp.Implementation{Name: "toolshed", Version: Version}

func waitLink(l *link) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.cs.Wait() }()
	return done
}

// connectTimeout bounds listing the tools and features of the server once it is up,
// and resubscribing: its connect_timeout, else Options.ConnectTimeout.
func (u *Upstream) connectTimeout() time.Duration {
	if u.cfg.ConnectTimeout > 0 {
		return u.cfg.ConnectTimeout
	}
	return u.g.opts.connectTimeout()
}

// startTimeout bounds a start of the server, listing its tools included, and reports
// whether it is the longer bound of a start that may install the server: for a stdio
// server whose config sets no connect_timeout and that has not been up yet,
// Options.FirstStartTimeout, since `npx -y` or uvx installs the server before it
// starts (docker run pulls its image), and npx says nothing meanwhile: there is no
// progress to watch, only a start to wait for. Each such start gets it, not only the
// first: npm's cache keeps the packages a start killed midway had downloaded, so the
// next one gets further, where a shorter bound would kill each the same way. Otherwise
// it is connectTimeout: a server that has been up is installed, an HTTP server
// installs nothing, and a connect_timeout set in the config always wins.
func (u *Upstream) startTimeout() (timeout time.Duration, installing bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	command := !u.catalog && u.cfg.Type != config.HTTP && u.cfg.Type != config.SSE // see transport
	if u.cfg.ConnectTimeout <= 0 && command && !u.everUp {
		return u.g.opts.firstStartTimeout(), true
	}
	return u.connectTimeout(), false
}

// boundNote says which bound a start outlived, for its error.
func boundNote(installing bool) string {
	if installing {
		return ", the bound of its starts until it has been up once, as a start may install it first (npx -y, uvx); if it needs longer, set its connect_timeout"
	}
	return " (connect_timeout)"
}

// dial makes a connection, declaring what the clients support now, and lists the
// server's tools and features on it.
func (u *Upstream) dial(ctx context.Context) (*link, []json.RawMessage, features, error) {
	support, gen := u.g.declared()
	if u.catalog {
		support = clientSupport{} // toolshed's own catalog server asks clients nothing
	}
	timeout, installing := u.startTimeout()
	// The connection lives on linkCtx: some transports keep the context they connect
	// with for as long as the connection lasts (the SSE client's event stream), so it
	// must not end when dial returns. Only the start is bounded by connect_timeout.
	linkCtx, endLink := context.WithCancel(ctx)
	connectCtx, cancel := context.WithTimeout(linkCtx, timeout)
	defer cancel()
	startTimer := time.AfterFunc(timeout, endLink)
	started := func() bool { return startTimer.Stop() }
	fail := func(err error) (*link, []json.RawMessage, features, error) {
		endLink()
		u.settle(gen)
		return nil, nil, features{}, err
	}
	// One capture per connection: JSON-RPC ids repeat across them, and a connection
	// that replaces this one may fail while this one goes on.
	l := &link{support: support, gen: gen, capture: newToolsCapture()}
	t, cleanup, err := u.transport(ctx, l)
	if err != nil {
		return fail(err)
	}
	l.client = mcp.NewClient(toolshedClient, u.clientOptions(support))
	l.client.AddSendingMiddleware(l.count)
	l.client.AddReceivingMiddleware(u.rootsMiddleware)
	// No version is pinned unless the config says legacy: the SDK asks the server
	// (server/discover) and speaks 2026-07-28 to a server that offers it, else
	// initializes as before, at the newest version both speak (UpstreamProtocol at most).
	var sessionOpts *mcp.ClientSessionOptions
	if u.cfg.Protocol == config.ProtocolLegacy {
		sessionOpts = &mcp.ClientSessionOptions{ProtocolVersion: UpstreamProtocol}
	}
	cs, err := l.client.Connect(linkCtx, t, sessionOpts)
	if err != nil {
		cleanup()
		if connectCtx.Err() != nil && ctx.Err() == nil {
			note := boundNote(installing)
			if !installing {
				note += "; it may be hanging or slow to install"
			}
			return fail(fmt.Errorf("did not finish starting within %v%s", timeout, note))
		}
		return fail(fmt.Errorf("could not start: %w", err))
	}
	// Closing the session (on shutdown) ends Wait.
	stop := context.AfterFunc(ctx, func() { cs.Close() })
	l.cs = cs
	if ir := cs.InitializeResult(); ir != nil {
		l.version = ir.ProtocolVersion
	}
	l.close = func() {
		stop()
		cs.Close()
		endLink()
		cleanup()
	}
	tools, err := u.list(connectCtx, l)
	if err != nil {
		l.close()
		if connectCtx.Err() != nil && ctx.Err() == nil {
			return fail(fmt.Errorf("did not list its tools within %v%s", timeout, boundNote(installing)))
		}
		return fail(fmt.Errorf("could not list its tools: %w", err))
	}
	f := u.listFeatures(connectCtx, l)
	if !started() {
		l.close()
		return fail(fmt.Errorf("did not finish starting within %v%s", timeout, boundNote(installing)))
	}
	return l, tools, f, nil
}

// count is a sending middleware that keeps l.busy.
func (l *link) count(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		l.busy.Add(1)
		defer l.busy.Add(-1)
		return next(ctx, method, req)
	}
}

// install makes l the connection new requests go to, with its tools and features.
func (u *Upstream) install(l *link, tools []json.RawMessage, f features) {
	u.mu.Lock()
	u.installLocked(l, tools, f)
	u.mu.Unlock()
}

// installLocked is install with u.mu held.
func (u *Upstream) installLocked(l *link, tools []json.RawMessage, f features) {
	u.session, u.link, u.tools, u.features = l.cs, l, tools, f
	u.everUp = true
	u.featuresVersion++
	u.status.Tokens = u.tokens(tools)
	u.status.Protocol = l.version
	if l.gen+1 > u.settledGen {
		u.settledGen = l.gen + 1
	}
}

// resubscribe subscribes again, on a new connection, to the resources clients are
// subscribed to.
func (u *Upstream) resubscribe(ctx context.Context, l *link) {
	if !u.g.subs.any() {
		return
	}
	u.g.reassemble() // so that resubscribe sees this server as the owner again
	subCtx, cancel := context.WithTimeout(ctx, u.connectTimeout())
	defer cancel()
	u.g.resubscribe(subCtx, u, l.cs)
}

// swap moves the upstream to a new connection that declares what the clients support
// now, when that differs from what l declared. Requests go to the new connection once it
// has listed its tools; l closes when the requests in flight on it have ended (at most
// a call timeout later). It returns the new connection, or nil when l stays: the
// declaration did not change, or the new connection failed (l keeps serving, and the
// failure is logged).
func (u *Upstream) swap(ctx context.Context, l *link) *link {
	support, gen := u.g.declared()
	if u.catalog || support == l.support {
		u.settle(gen)
		return nil
	}
	nl, tools, f, err := u.dial(ctx)
	if err != nil {
		if ctx.Err() == nil {
			u.g.logf("upstream %s: could not reconnect to offer %s (%v); it keeps its connection, which offers %s", u.cfg.Name, support, err, l.support)
		}
		return nil
	}
	u.install(nl, tools, f)
	u.g.upstreamChanged(u)
	u.resubscribe(ctx, nl)
	u.drain(ctx, l)
	return nl
}

// drain closes l once the requests in flight on it have ended, or a call timeout has
// passed, or ctx ends.
func (u *Upstream) drain(ctx context.Context, l *link) {
	timeout := u.cfg.CallTimeout
	if timeout <= 0 {
		timeout = config.DefaultCallTimeout
	}
	u.draining.Add(1)
	go func() {
		defer u.draining.Done()
		defer l.close()
		poll(ctx, timeout, func() bool { return l.busy.Load() == 0 })
	}()
}

// settle records that a connection attempt declaring generation gen has ended.
func (u *Upstream) settle(gen uint64) {
	u.mu.Lock()
	if gen+1 > u.settledGen {
		u.settledGen = gen + 1
	}
	u.mu.Unlock()
}

// settled reports whether the upstream has settled on generation gen of the clients'
// support: it connected declaring it, or failed trying, or it does not run, or it is
// toolshed's own catalog server (which asks clients nothing) and has started.
func (u *Upstream) settled(gen uint64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.settledLocked(gen)
}

// settledLocked is settled with u.mu held.
func (u *Upstream) settledLocked(gen uint64) bool {
	switch {
	case u.cfg.Disabled, u.status.State == Failed, u.status.State == Stopped, u.status.State == NeedsSignIn:
		return true
	case u.status.Restarts > 0 && u.status.State != Ready:
		return true // a server that keeps failing must not hold clients up
	case u.catalog:
		// Ready, not only listed: install records the list a moment before the state
		// changes, and an assembly in between would leave the server's tools out.
		return u.settledGen > 0 && u.status.State == Ready
	}
	return u.settledGen > gen
}

// currentLink returns the connection new requests go to, or nil.
func (u *Upstream) currentLink() *link {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.link
}

// clientOptions relays what an upstream sends toolshed's client to the gateway, and
// declares what the clients support (see clientSupport): the SDK declares sampling and
// elicitation whenever their handlers are set, so they are set only then.
func (u *Upstream) clientOptions(support clientSupport) *mcp.ClientOptions {
	opts := &mcp.ClientOptions{
		Capabilities: support.capabilities(),
		// A modern server asks for input by answering a call with input_required; the
		// SDK would answer it itself, through the handlers below, and retry. The
		// calling client must answer it instead: the registry relays it (see mrtr.go).
		MultiRoundTrip:             &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { signal(u.relisted) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { u.hear(listPrompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { u.hear(listResources) },
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			u.g.resourceUpdated(ctx, req.Params)
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			u.g.calls.logMessage(ctx, u.cfg.Name, req.Params)
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			u.g.calls.progress(ctx, req.Params)
		},
	}
	if support.elicits() {
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			res, err := u.g.calls.relay(ctx, u.cfg.Name, req.Params)
			if err != nil {
				return nil, err
			}
			return res.(*mcp.ElicitResult), nil
		}
	}
	if support.elicitURL {
		opts.ElicitationCompleteHandler = func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			u.g.elicitationComplete(ctx, u.cfg.Name, req.Params)
		}
	}
	if support.sampling {
		opts.CreateMessageHandler = func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			res, err := u.g.calls.relay(ctx, u.cfg.Name, req.Params)
			if err != nil {
				return nil, err
			}
			return res.(*mcp.CreateMessageResult), nil
		}
	}
	return opts
}

// rootsMiddleware answers the upstream's roots/list with the roots of the client its
// request is for (see callRegistry.cause), rather than with the SDK client's own list.
func (u *Upstream) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		res, err := u.g.calls.relay(ctx, u.cfg.Name, &mcp.ListRootsParams{})
		if err != nil {
			return nil, err
		}
		return res.(*mcp.ListRootsResult), nil
	}
}
