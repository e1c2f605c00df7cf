package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client's first requests come while the servers start: over stdio a client starts
// toolshed and lists its tools at once, and the servers start once it has connected (see
// Options.WaitForClient). A server started with `npx -y` installs its package first. On
// the 2-core test VM, with an empty npm cache, the npm reference servers answered
// initialize 7-8 s after npx started, one at a time, and 10-12 s with three starting at
// once; 2 s once cached. npx prints nothing while it installs: there is no progress to
// watch, only the start to wait for.
//
// Clients wait for a tools/list: the MCP TypeScript SDK, on which the Inspector and most
// clients are built, 60 s by default; the Inspector CLI 60 s for a request (and 15 s to
// connect, which toolshed answers at once); Claude Code its MCP_TIMEOUT, 30 s by
// default; Gemini CLI 10 minutes; Codex CLI 10 s for initialize and the first
// tools/list together (startup_timeout_sec), after which it gives up on the server,
// and so on every tool behind toolshed. So a request waits for the servers in their
// first start for up to DefaultStartWait from that start, within Claude Code's bound
// with room for its own start, and a one-shot client such as the Inspector CLI gets
// their tools; a client known to give up sooner is answered before it does (see
// clientPatience). A server that failed, or waits to restart, holds no one up (it
// would most likely fail the same way meanwhile), and a server that is up is never
// held up by another: a call waits only for the server it names (see upstreamsOf).
//
// A client answered while servers are still starting is told so: tool_search's
// description names them (bridge.DefinitionsStarting), a search that finds fewer tools
// than it asked for names them (see Gateway.unsearched), toolshed says so on stderr
// (see reportEarly, and noteSlowStart for the user), and once they are up their tools
// join the catalog and the clients get notifications/tools/list_changed.
//
// A start that installs first must not be cut short: with a bound of 30 s, three npx
// servers starting at once on a loaded machine (30-32 s) were killed while npm was
// still installing them, then started, and installed, again. So until a stdio server
// has been up once, its starts are bounded by Options.FirstStartTimeout, 2 minutes,
// rather than 30 s (see Upstream.startTimeout); the start-up wait is unchanged, so
// clients are answered without it after 25 s and told when it is up, and /readyz
// answers 503 while it is in its first start, for 2 minutes at most.

// DefaultStartWait is Options.StartWait's default: how long a request waits for the
// servers in their first start, from that start (see above).
const DefaultStartWait = 25 * time.Second

func (o *Options) startWait() time.Duration { return orDefault(o.StartWait, DefaultStartWait) }

// clientPatience is how long the clients known to give up on a server sooner than
// DefaultStartWait wait for its first answers, from their initialize (by the name
// they give in it): their requests are answered patienceMargin before that, with
// what is up. Codex CLI's startup_timeout_sec (10 s by default) bounds its initialize
// and first tools/list together. Claude Code's MCP_TIMEOUT (30 s by default) bounds
// its tools/list.
var clientPatience = map[string]time.Duration{
	"codex-mcp-client": 10 * time.Second,
	"claude-code":      30 * time.Second,
}

// patienceMargin is left of a client's patience for the answer's way back.
const patienceMargin = 3 * time.Second

// patienceOf returns when the requests of session ss must be answered by (see
// clientPatience), or the zero time when its client waits long enough.
func (c *clients) patienceOf(ss *mcp.ServerSession) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.patience[ss]
}

// listWait bounds how long a request waits for the upstreams to reconnect after a
// change of what toolshed declares to them, so that it sees what the new declaration
// offers.
const listWait = 5 * time.Second

// firstStarting reports whether the upstream is in its first start: connecting, never
// up, never failed.
func (u *Upstream) firstStarting() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.firstStartingLocked()
}

func (u *Upstream) firstStartingLocked() bool {
	return !u.cfg.Disabled && u.status.State == Connecting && u.status.Restarts == 0
}

// hold returns until when a request that began at start waits for the upstream to
// settle on generation gen of the clients' support (see settled): Options.StartWait
// from the upstream's start while it is in its first start, but not past by (unless it
// is zero), listWait from the request's start while it reconnects after a change of
// declaration, and the zero time (not at all) once it has settled.
func (u *Upstream) hold(gen uint64, start, by time.Time) time.Time {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.settledLocked(gen):
		return time.Time{}
	case u.firstStartingLocked() && !u.started.IsZero():
		until := u.started.Add(u.g.opts.startWait())
		if !by.IsZero() && by.Before(until) {
			until = by
		}
		return until
	}
	return start.Add(listWait)
}

// settled reports whether every upstream of ups has settled on the current declaration:
// connected with it, or failed trying, or out of the game.
func (g *Gateway) settled(ups []*Upstream) bool {
	select {
	case <-g.clients.known:
	default:
		return false
	}
	_, gen := g.declared()
	for _, u := range ups {
		if !u.settled(gen) {
			return false
		}
	}
	return true
}

// holding reports whether a request that began at start, to be answered by by (zero:
// no bound), is still held, at now, by one of the upstreams ups (see Upstream.hold).
func (g *Gateway) holding(ups []*Upstream, start, by, now time.Time) bool {
	select {
	case <-g.clients.known:
	default:
		// The upstreams start once a client has said what it supports.
		return now.Before(start.Add(listWait))
	}
	_, gen := g.declared()
	for _, u := range ups {
		if now.Before(u.hold(gen, start, by)) {
			return true
		}
	}
	return false
}

// settle holds a request of method of session ss while the upstreams ups hold it (see
// holding), lets the reassembly that follows land, and reports on stderr a request
// answered while some of them are still in their first start.
//
// An upstream that is up has settled, but its tools are in the catalog only once the
// reassembly its start set off has run (see reassembleLoop): a request that came in
// between (a client that calls a tool from a cached list right after initialize, with
// no tools/list before) would find no such tool. So the request reassembles itself
// when one of ups is up and not in the catalog yet.
func (g *Gateway) settle(ctx context.Context, ss *mcp.ServerSession, method string, ups ...*Upstream) {
	start, by := time.Now(), g.clients.patienceOf(ss)
	held := g.holding(ups, start, by, start) && poll(ctx, 0, func() bool { return !g.holding(ups, start, by, time.Now()) })
	if held || unassembled(ups) {
		g.reassemble()
	}
	g.reportEarly(method, ups)
}

// unassembled reports whether one of ups is ready but its tools are not yet in the
// catalog: the assembly its change asked for may not have run yet (see reassembleLoop),
// or be deferred while catalog servers start (see Gateway.catalogStarting), and a
// request for it must not miss its tools.
func unassembled(ups []*Upstream) bool {
	for _, u := range ups {
		u.mu.Lock()
		waiting := u.status.State == Ready && !u.assembled
		u.mu.Unlock()
		if waiting {
			return true
		}
	}
	return false
}

// reportEarly says on stderr that a request of method is answered while some of ups
// are still in their first start, once for each set of such servers: the user sees why
// a client has fewer tools than configured, and that it is told when they come.
func (g *Gateway) reportEarly(method string, ups []*Upstream) {
	if len(g.current.Load().starting) == 0 {
		return // the common case, at no cost
	}
	var names []string
	for _, u := range ups {
		if u.firstStarting() {
			names = append(names, u.cfg.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	key := strings.Join(names, "\x00")
	g.earlyMu.Lock()
	seen := g.early[key]
	g.early[key] = true
	g.earlyMu.Unlock()
	if seen {
		return
	}
	are := fmt.Sprintf("%d servers are", len(names))
	if len(names) == 1 {
		are = "1 server is"
	}
	g.logf("answered a client's %s while %s still starting (%s): their tools are added when they are up, and clients are told (notifications/tools/list_changed)", method, are, strings.Join(names, ", "))
}

// noteSlowStart says on stderr, once, that the upstream is still in its first start
// when requests stop waiting for it (Options.StartWait), and how long it may take yet:
// a user whose `npx -y` server installs for a minute sees why a client has fewer tools,
// and that toolshed is not stuck. It says nothing when the server is up or failed by
// then, or when its start is bounded by the start-up wait anyway.
func (u *Upstream) noteSlowStart() {
	wait := u.g.opts.startWait()
	bound, installing := u.startTimeout()
	if !u.firstStarting() || bound <= wait {
		return
	}
	why := ""
	if installing {
		why = "a first start may install it (npx -y, uvx), so "
	}
	u.g.logf("%s is still starting after %v; %stoolshed gives it up to %v; meanwhile clients are answered without its tools, and told when it is up (notifications/tools/list_changed)",
		u.cfg.Name, wait, why, bound)
}

// startingFor returns the servers still in their first start when the assembly was
// made that profile may use, in config order: tool_search's description names them. A
// profile never learns of servers it may not use.
func (a *assembly) startingFor(profile string) []string {
	if len(a.starting) == 0 {
		return nil
	}
	scope := a.g.cfg.Profiles[profile].Scope
	var out []string
	for _, name := range a.starting {
		if scope.AllowsServer(name) {
			out = append(out, name)
		}
	}
	return out
}
