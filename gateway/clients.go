package gateway

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/metrics"
)

// toolshed is a client of every upstream on behalf of its own clients. What it declares
// to an upstream at initialize (sampling, elicitation, roots) decides what the upstream
// offers: the npm server-everything lists trigger-sampling-request only to a client that
// declared sampling, server-filesystem takes its allowed directories from the client's
// roots. So toolshed declares what every connected client supports, and nothing more.
//
// MCP fixes a client's capabilities at initialize for protocols up to 2025-11-25, the
// newest toolshed speaks (see ProtocolVersions). Protocol 2026-07-28 carries them on every
// request (_meta "io.modelcontextprotocol/clientCapabilities"), but it has no requests
// from server to client outside a request's own multi round-trip, so an upstream could
// not ask for roots when it starts, and no npm reference server speaks it. When what
// the clients support changes, toolshed therefore reconnects each upstream with the new
// declaration: the new connection is made while the old one keeps serving, new requests
// go to the new one once it has listed its tools, and the old one closes when the
// requests in flight on it have ended (see Upstream.swap).

// ProtocolVersions returns the MCP versions toolshed speaks to its clients, newest
// first, over stdio and Streamable HTTP alike: 2026-07-28, whose requests each carry
// their envelope and need no session (see caller.go), and 2025-11-25 to 2024-11-05,
// which initialize a session. One front serves both at once. Upstream servers are
// reached at the newest version each speaks (see era.go).
func ProtocolVersions() []string { return slices.Clone(protocolVersions) }

var protocolVersions = []string{modernProtocol, UpstreamProtocol, "2025-06-18", "2025-03-26", "2024-11-05"}

// clientSupport is the part of a client's capabilities that toolshed relays from
// upstreams to clients.
type clientSupport struct {
	sampling, samplingContext bool
	elicitForm, elicitURL     bool
	roots, rootsListChanged   bool
}

// supportOf reads what a client declared at initialize.
func supportOf(p *mcp.InitializeParams) clientSupport {
	var s clientSupport
	if p == nil || p.Capabilities == nil {
		return s
	}
	c := p.Capabilities
	if c.Sampling != nil {
		// Not sampling with tools: toolshed relays sampling requests as
		// sampling/createMessage without tools.
		s.sampling, s.samplingContext = true, c.Sampling.Context != nil
	}
	if e := c.Elicitation; e != nil {
		// An empty elicitation capability means form elicitation (before 2025-11-25).
		s.elicitForm = e.Form != nil || e.URL == nil
		s.elicitURL = e.URL != nil
	}
	if c.RootsV2 != nil {
		s.roots, s.rootsListChanged = true, c.RootsV2.ListChanged
	}
	return s
}

// and is what both s and o support.
func (s clientSupport) and(o clientSupport) clientSupport {
	return clientSupport{
		sampling: s.sampling && o.sampling, samplingContext: s.samplingContext && o.samplingContext,
		elicitForm: s.elicitForm && o.elicitForm, elicitURL: s.elicitURL && o.elicitURL,
		roots: s.roots && o.roots, rootsListChanged: s.rootsListChanged && o.rootsListChanged,
	}
}

func (s clientSupport) elicits() bool { return s.elicitForm || s.elicitURL }

// capabilities is s as a client declares it.
func (s clientSupport) capabilities() *mcp.ClientCapabilities {
	c := &mcp.ClientCapabilities{} // not nil: the SDK would add roots by default
	if s.sampling {
		c.Sampling = &mcp.SamplingCapabilities{}
		if s.samplingContext {
			c.Sampling.Context = &mcp.SamplingContextCapabilities{}
		}
	}
	if s.elicits() {
		c.Elicitation = &mcp.ElicitationCapabilities{}
		if s.elicitForm {
			c.Elicitation.Form = &mcp.FormElicitationCapabilities{}
		}
		if s.elicitURL {
			c.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
	}
	if s.roots {
		c.RootsV2 = &mcp.RootCapabilities{ListChanged: s.rootsListChanged}
	}
	return c
}

// String names what s supports, for people: "sampling, elicitation and roots", or
// "none of sampling, elicitation and roots".
func (s clientSupport) String() string {
	var have []string
	if s.sampling {
		have = append(have, "sampling")
	}
	switch {
	case s.elicitForm && s.elicitURL:
		have = append(have, "elicitation (form and url)")
	case s.elicitURL:
		have = append(have, "elicitation (url)")
	case s.elicitForm:
		have = append(have, "elicitation")
	}
	if s.roots {
		have = append(have, "roots")
	}
	if len(have) == 0 {
		return "none of sampling, elicitation and roots"
	}
	if len(have) == 1 {
		return have[0]
	}
	return strings.Join(have[:len(have)-1], ", ") + " and " + have[len(have)-1]
}

// clients tracks the client sessions of every profile, what toolshed declares to
// upstreams because of them, and which sessions have requests other than tool calls
// in flight on which upstream (tool calls are in the callRegistry).
type clients struct {
	mu       sync.Mutex
	sessions map[*mcp.ServerSession]clientSupport
	profiles map[*mcp.ServerSession]string // the profile each session is served as
	ids      map[string]*mcp.ServerSession // the sessions that have an id (Streamable HTTP)
	creds    map[string]credential         // HTTP session id -> the credential that created it
	tags     map[*mcp.ServerSession]string // the name each session has in the logs (see sessionTag)
	support  clientSupport                 // what upstreams are told
	gen      uint64                        // counts changes of support
	known    chan struct{}                 // closed once support is known (see Options.WaitForClient)
	isKnown  bool
	forwards map[string]map[*mcp.ServerSession]int // server -> session -> requests in flight
	listed   map[*mcp.ServerSession]bool           // the sessions that listed tools (see countSaved)
	// patience holds, for the sessions of clients that give up on a server soon (see
	// clientPatience), when their requests must be answered by.
	patience map[*mcp.ServerSession]time.Time
	// elicitations maps the URL elicitations relayed to a client, by server and
	// elicitation id, so that their completion reaches the same client.
	elicitations map[[2]string]*mcp.ServerSession
	// stateless are the sessions of stateless HTTP POSTs (HTTPOptions.Stateless): they
	// never join. Their client cannot be asked anything, so what it supports must not
	// change what upstreams are told, and one session per request would make
	// upstreams reconnect at every change.
	stateless map[*mcp.ServerSession]sessionOwner
	// ownerKeys maps the tag of a stateless POST's session to who sent it, as the
	// search log's calls are tied to searches by (see linkKeyOf).
	ownerKeys map[string]string
}

func newClients(waitForClient bool) *clients {
	c := &clients{sessions: map[*mcp.ServerSession]clientSupport{}, profiles: map[*mcp.ServerSession]string{}, tags: map[*mcp.ServerSession]string{}, listed: map[*mcp.ServerSession]bool{}, ids: map[string]*mcp.ServerSession{}, creds: map[string]credential{}, known: make(chan struct{}),
		forwards: map[string]map[*mcp.ServerSession]int{}, elicitations: map[[2]string]*mcp.ServerSession{}, stateless: map[*mcp.ServerSession]sessionOwner{}, ownerKeys: map[string]string{}, patience: map[*mcp.ServerSession]time.Time{}}
	if !waitForClient {
		c.isKnown = true
		close(c.known)
	}
	return c
}

// declared returns what upstreams are to be told, and its generation.
func (g *Gateway) declared() (clientSupport, uint64) {
	g.clients.mu.Lock()
	defer g.clients.mu.Unlock()
	return g.clients.support, g.clients.gen
}

// join records a client session once it has initialized, and forgets it when it ends.
// A change of what the clients support is declared to the upstreams.
func (g *Gateway) join(ss *mcp.ServerSession, profile string) {
	p := ss.InitializeParams()
	if p == nil {
		return
	}
	c := g.clients
	c.mu.Lock()
	_, joined := c.sessions[ss]
	if _, stateless := c.stateless[ss]; joined || stateless {
		c.mu.Unlock()
		return
	}
	c.sessions[ss] = supportOf(p)
	c.profiles[ss] = profile
	g.opts.Metrics.SessionStarted(transportOf(ss))
	c.tags[ss] = newSessionTag(ss)
	if id := ss.ID(); id != "" {
		c.ids[id] = ss
	}
	if p.ClientInfo != nil {
		if d, ok := clientPatience[p.ClientInfo.Name]; ok {
			c.patience[ss] = time.Now().Add(d - patienceMargin)
		}
	}
	c.mu.Unlock()
	go func() {
		ss.Wait()
		g.leave(ss)
	}()
	var who *mcp.Implementation
	if p.ClientInfo != nil {
		who = p.ClientInfo
	}
	g.redeclare(who)
}

// setStateless marks ss as the session of a stateless HTTP POST sent by owner, and
// names it in the logs by a tag of its own (see newSessionTag).
func (c *clients) setStateless(ss *mcp.ServerSession, owner sessionOwner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stateless[ss] = owner
	tag := newSessionTag(ss)
	c.tags[ss] = tag
	c.ownerKeys[tag] = owner.linkKey()
}

// endStateless forgets a stateless HTTP POST's session once it ended.
func (c *clients) endStateless(ss *mcp.ServerSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.stateless, ss)
	delete(c.ownerKeys, c.tags[ss])
	delete(c.tags, ss)
}

// linkKeyOf is what the session tagged tag ties its calls to searches by (see
// recorder.linkKey): the tag itself, or for a stateless POST's session, which ends with
// its request, who sent it, so that a call in one POST is tied to the search of an
// earlier one.
func (c *clients) linkKeyOf(tag string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.ownerKeys[tag]; ok {
		return k
	}
	return tag
}

// rateKey is what the calls of ss are rate-limited as (see rateLimits): the session,
// or, for a stateless POST's session, whoever sent it.
func (c *clients) rateKey(ss *mcp.ServerSession) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.stateless[ss]; ok {
		return o
	}
	return ss
}

// isStateless reports whether ss is a stateless HTTP POST's session.
func (c *clients) isStateless(ss *mcp.ServerSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.stateless[ss]
	return ok
}

// byID returns the initialized session with Streamable HTTP session id id, if it is live.
func (c *clients) byID(id string) *mcp.ServerSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id]
}

// tagOf returns the name session ss has in the logs: computed once when it joined (an
// HMAC on every call was a twentieth of a call's CPU), or now for a session that has not.
func (c *clients) tagOf(ss *mcp.ServerSession) string {
	c.mu.Lock()
	tag, ok := c.tags[ss]
	c.mu.Unlock()
	if !ok {
		tag = sessionTag(ss)
	}
	return tag
}

func (g *Gateway) leave(ss *mcp.ServerSession) {
	c := g.clients
	c.mu.Lock()
	g.opts.Metrics.SessionEnded(transportOf(ss))
	delete(c.sessions, ss)
	delete(c.profiles, ss)
	delete(c.tags, ss)
	delete(c.listed, ss)
	delete(c.patience, ss)
	if id := ss.ID(); id != "" && c.ids[id] == ss {
		delete(c.ids, id)
	}
	for key, s := range c.elicitations {
		if s == ss {
			delete(c.elicitations, key)
		}
	}
	c.mu.Unlock()
	g.redeclare(nil)
}

// redeclare recomputes what every connected client supports and, when that changed,
// tells the upstreams to reconnect with it. With no client connected the declaration
// stays as it was: no one is there to be wrong about, and the next client would most
// likely bring it back.
func (g *Gateway) redeclare(joined *mcp.Implementation) {
	c := g.clients
	c.mu.Lock()
	if len(c.sessions) == 0 {
		c.mu.Unlock()
		return
	}
	first := true
	var s clientSupport
	for _, cs := range c.sessions {
		if first {
			s, first = cs, false
		} else {
			s = s.and(cs)
		}
	}
	starting := !c.isKnown
	if s == c.support && !starting {
		c.mu.Unlock()
		return
	}
	c.support = s
	c.gen++
	if starting {
		c.isKnown = true
		close(c.known)
	}
	n := len(c.sessions)
	c.mu.Unlock()

	ev := &ClientsChange{Support: s.String(), Clients: n, Starting: starting}
	if joined != nil {
		ev.Joined = strings.TrimSpace(joined.Name + " " + joined.Version)
	}
	for _, u := range g.upstreams {
		if !u.catalog && !u.cfg.Disabled {
			ev.Servers++
			signal(u.redeclared)
		}
	}
	g.emit(Event{Clients: ev})
}

// ClientsChange reports a change of what toolshed declares to its upstreams of what its
// clients support.
type ClientsChange struct {
	// Support names what every connected client supports (see clientSupport.String).
	Support string
	// Clients is how many clients are connected; Joined names the one whose arrival
	// caused the change ("claude-code 2.1.332"), if one did.
	Clients int
	Joined  string
	// Servers is how many upstream servers (re)connect to declare it.
	Servers int
	// Starting reports the first declaration (Options.WaitForClient): the upstreams
	// start now rather than reconnect.
	Starting bool
}

// liveSessions returns the initialized client sessions whose profile may use server:
// a request of that server that no request caused may go to no other.
func (g *Gateway) liveSessions(server string) []*mcp.ServerSession {
	g.clients.mu.Lock()
	defer g.clients.mu.Unlock()
	out := make([]*mcp.ServerSession, 0, len(g.clients.sessions))
	for ss := range g.clients.sessions {
		if g.cfg.Profiles[g.clients.profiles[ss]].Scope.AllowsServer(server) {
			out = append(out, ss)
		}
	}
	return out
}

// forwarding records that session ss has a request (other than a tool call) in flight
// on server; the returned func ends it.
func (g *Gateway) forwarding(server string, ss *mcp.ServerSession) func() {
	c := g.clients
	c.mu.Lock()
	m := c.forwards[server]
	if m == nil {
		m = map[*mcp.ServerSession]int{}
		c.forwards[server] = m
	}
	m[ss]++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if m[ss]--; m[ss] == 0 {
			delete(m, ss)
		}
	}
}

// relayContext bounds an upstream's request to a client: it ends when the gateway stops
// (the upstream's connection cannot close while its request is being handled) and, when
// it is sent outside any call, after the server's call timeout, since a client that went
// away without ending its session (an HTTP client that sent no DELETE) never answers.
func (g *Gateway) relayContext(ctx context.Context, server string, outsideCall bool) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(g.life, cancel)
	if u := g.byName[server]; outsideCall && u != nil {
		var cancelTimeout context.CancelFunc
		ctx, cancelTimeout = u.withCallTimeout(ctx)
		return ctx, func() { cancelTimeout(); stop(); cancel() }
	}
	return ctx, func() { stop(); cancel() }
}

// rememberElicitation records the client a URL elicitation was relayed to.
func (g *Gateway) rememberElicitation(server string, params mcp.InputRequest, ss *mcp.ServerSession) {
	p, ok := params.(*mcp.ElicitParams)
	if !ok || p.Mode != "url" || p.ElicitationID == "" || ss == nil {
		return
	}
	g.clients.mu.Lock()
	g.clients.elicitations[[2]string{server, p.ElicitationID}] = ss
	g.clients.mu.Unlock()
}

// elicitationComplete passes an upstream's notifications/elicitation/complete to the
// client its URL elicitation went to.
func (g *Gateway) elicitationComplete(ctx context.Context, server string, p *mcp.ElicitationCompleteParams) {
	key := [2]string{server, p.ElicitationID}
	g.clients.mu.Lock()
	ss := g.clients.elicitations[key]
	delete(g.clients.elicitations, key)
	g.clients.mu.Unlock()
	if ss == nil {
		g.logf("upstream %s: completion of elicitation %q, which toolshed did not relay to any client", server, p.ElicitationID)
		return
	}
	if err := ss.NotifyElicitationComplete(ctx, p); err != nil {
		g.logf("upstream %s: passing on the completion of elicitation %q: %v", server, p.ElicitationID, err)
	}
}

// rootsListChanged passes a client's notifications/roots/list_changed on to every
// upstream told that roots can change. The roots/list that follows is routed like any
// upstream request (see cause).
func (g *Gateway) rootsListChanged() {
	for _, u := range g.upstreams {
		if l := u.currentLink(); l != nil && l.support.rootsListChanged {
			// The SDK sends notifications/roots/list_changed only from AddRoots and
			// RemoveRoots; the root added here is never listed, since toolshed answers
			// roots/list itself (see rootsMiddleware).
			l.client.AddRoots(&mcp.Root{URI: "toolshed:roots-changed", Name: "placeholder"})
		}
	}
}

// sessionMiddleware records every client session once it has initialized, and makes its
// requests wait for the upstreams they concern (see upstreamsOf) to settle: to start,
// up to Options.StartWait, or to reconnect after a change of declaration, up to listWait
// (see settle).
func (g *Gateway) sessionMiddleware(profile string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			switch {
			case ss == nil:
			case method == "server/discover":
				// A probe before initialize, answered at once: a client gives up on it
				// within a second (the AI SDK does) and falls back to initialize.
				return next(ctx, method, req)
			case method == "initialize":
				res, err := next(ctx, method, req)
				if err == nil {
					g.join(ss, profile)
				}
				return res, err
			case method == "ping" || method == "logging/setLevel" || method == "subscriptions/listen" || strings.HasPrefix(method, "notifications/"):
				// Nothing an upstream answers: not held while they start. A listen (MCP
				// 2026-07-28) is acknowledged at once, and carries their arrival.
				if ss.InitializeParams() != nil {
					g.join(ss, profile)
				}
			case method == "tools/list" && g.opts.Metrics != nil:
				g.join(ss, profile)
				g.settle(ctx, ss, method, g.upstreamsOf(method, req)...)
				res, err := next(ctx, method, req)
				if err == nil {
					g.countSaved(ss, profile)
				}
				return res, err
			default:
				g.join(ss, profile)
				g.settle(ctx, ss, method, g.upstreamsOf(method, req)...)
			}
			return next(ctx, method, req)
		}
	}
}

// upstreamsOf returns the upstreams whose start, or reconnection after a change of what
// toolshed declares, a request must wait for: the upstream of the tool a call names,
// when the name says which (server__tool); every upstream for anything else (the lists,
// the bridge tools, which search, describe and call the catalog, prompts and resources).
// A server that is slow to start must not hold up the calls of those that are up, and a
// call must reach its server on a connection that declares what its client supports.
func (g *Gateway) upstreamsOf(method string, req mcp.Request) []*Upstream {
	var tool string
	if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
		tool = r.Params.Name
	}
	return g.upstreamsFor(method, tool)
}

// serving reports whether ss is a session whose requests toolshed serves as the
// session middleware leaves them: joined after its initialize, or a stateless POST's
// (which never joins, see join).
func (c *clients) serving(ss *mcp.ServerSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, joined := c.sessions[ss]
	_, stateless := c.stateless[ss]
	return joined || stateless
}

// poll checks cond every 20 ms until it holds, ctx ends or max passes (max <= 0: no
// limit), and reports whether it held.
func poll(ctx context.Context, max time.Duration, cond func() bool) bool {
	var deadline <-chan time.Time
	if max > 0 {
		t := time.NewTimer(max)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
	return true
}

// transportOf names the transport of a client session, for the metrics: Streamable HTTP
// sessions have an id, stdio and in-process ones none.
func transportOf(ss *mcp.ServerSession) string {
	if ss.ID() != "" {
		return metrics.HTTP
	}
	return metrics.Stdio
}

// countSaved adds to the metrics what a session's first tools/list saved against
// listing every tool of its profile in full. Later lists are not counted: a session
// pays for its tool definitions once, in the prompt its client builds from the first.
func (g *Gateway) countSaved(ss *mcp.ServerSession, profile string) {
	c := g.clients
	c.mu.Lock()
	_, live := c.sessions[ss]
	first := live && !c.listed[ss]
	if first {
		c.listed[ss] = true
	}
	c.mu.Unlock()
	if !first {
		return
	}
	a := g.current.Load()
	g.opts.Metrics.TokensSaved(a.plan(profile).TotalTokens - a.listedTokens(profile))
}
