// Package gateway is toolshed's MCP front: it aggregates upstream MCP servers and serves
// any MCP client, over stdio or Streamable HTTP, either listing every upstream tool (a
// plain aggregating proxy) or replacing the deferred ones by tool_search, tool_describe
// and tool_call. Calls go to the real tool unchanged, through hooks that see the real
// tool's name whichever way the call came.
package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/embed"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/redact"
	"github.com/toolshed/toolshed/learn"
	"github.com/toolshed/toolshed/metrics"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
	"github.com/toolshed/toolshed/searchlog"
)

// Version is toolshed's version, reported to clients and upstreams, in the metrics
// (toolshed_build_info) and by toolshed version. Release builds stamp it: go build
// -ldflags "-X github.com/toolshed/toolshed/gateway.Version=1.2.3" (the Dockerfiles and
// .goreleaser.yaml do). Left unstamped, it is set when the program starts from the
// module version the go command recorded, else DevVersion (see version.go).
var Version = ""

// Options configure a Gateway beyond its config file. The zero value works.
type Options struct {
	// Mode, when set, overrides tools.tool_search.enabled (the --tool-search flag).
	Mode policy.Mode
	// ContextWindow, when above 0, overrides the config's context window.
	ContextWindow int
	// NoPrefix lists tools by their bare names when no other listed tool has the same
	// name (qualified server__tool names otherwise).
	NoPrefix bool
	// MaxNameLen, when above 0, is the longest name a tool is listed under: longer
	// names are shortened with a hash (see shortenNames), for clients that cut long
	// names themselves and lose tools doing it (Gemini CLI). At least MinNameLen.
	MaxNameLen int
	// Catalogs are served as catalog upstreams (see catalogTransport), after the
	// configured servers: tools that can be searched and described but not run.
	Catalogs []catalog.Source
	// Log receives toolshed's log and the upstreams' stderr; nil means os.Stderr.
	Log io.Writer
	// StartWait bounds how long a client's request waits for the upstreams still in
	// their first start, from their start (default DefaultStartWait): past it, the
	// request is answered without them, and the client is told that they are coming
	// (see starting.go).
	StartWait time.Duration
	// WaitForClient starts the upstreams only once the first client has initialized, so
	// that they are told from the start what it supports (sampling, elicitation, roots),
	// rather than told nothing and then reconnected. It suits stdio, where one client
	// comes at once; without it the upstreams start at Run, told that clients support
	// nothing until one connects.
	WaitForClient bool
	// ConnectTimeout and FirstStartTimeout bound the servers whose config sets no
	// connect_timeout (one that does is bounded by it alone). FirstStartTimeout
	// (default config.DefaultFirstStartTimeout) bounds the starts of a stdio server
	// until it has been up once: such a start may install the server first (npx -y,
	// uvx, docker pulling its image). ConnectTimeout (default
	// config.DefaultConnectTimeout) bounds its starts once it has been up, those of
	// HTTP servers, and listing tools and features again.
	ConnectTimeout, FirstStartTimeout time.Duration
	// Backoff bounds the delay before restarting a failed upstream: it starts at
	// BackoffMin (default 1s), doubles up to BackoffMax (default 1m), and starts over
	// once an upstream has run for BackoffReset (default 1m).
	BackoffMin, BackoffMax, BackoffReset time.Duration
	// DrainTimeout bounds how long Drain lets the calls and HTTP requests in flight
	// finish before Run's context ends and cancels what is left (default
	// DefaultDrainTimeout).
	DrainTimeout time.Duration
	// StopTimeout bounds how long Run takes to stop once its context ends (default
	// DefaultStopTimeout). It is shared out between the steps of a clean stop: a fifth
	// for the cancellations of the calls in flight (notifications/cancelled) to reach
	// their upstreams, then, for each stdio server, a quarter to exit once its stdin is
	// closed and a quarter more after SIGTERM, before SIGKILL (to its process group
	// each time). The same steps stop a server that is restarted or replaced.
	StopTimeout time.Duration
	// SearchLog, when set, records every tool_search and every call of a real tool
	// (see searchlog). The gateway does not close it.
	SearchLog *searchlog.Log
	// Credentials, when set, holds the sign-ins of remote servers that ask for OAuth
	// (toolshed auth login; see package oauth): their requests carry the stored
	// token, refreshed as it expires. A server that asks for sign-in without one
	// stored waits in NeedsSignIn, its tools unavailable with that advice, and
	// connects once a credential appears. nil: a server's 401 is a failure like
	// any other.
	Credentials oauth.Store
	// NoLearning keeps search from learning from SearchLog (see package learn): by default,
	// the queries whose searches led to successful calls of a tool are indexed as a
	// field of that tool.
	NoLearning bool
	// LearnInterval is how often what searches led to is read again from SearchLog
	// (default learn.DefaultInterval): replicas sharing a log learn from each other's
	// traffic within it.
	LearnInterval time.Duration
	// Embed, when set, makes tool_search fuse its word ranking with the cosine ranking of
	// embeddings from this endpoint (see package hybrid): the catalog's tools are
	// embedded in the background, and until then, or whenever the endpoint fails,
	// tool_search answers with words alone.
	Embed *embed.Client
	// EmbedCacheDir is where tool vectors are cached (see embed.BuildOptions.CacheDir).
	EmbedCacheDir string
	// EmbedStore, when set, keeps tool vectors in place of the file cache: the search
	// log's database, so that replicas sharing it embed each tool once (see
	// embed.BuildOptions.Store). A store that fails falls back to the file cache.
	EmbedStore embed.Store
	// EmbedQueryTimeout bounds a query's embedding (default hybrid.DefaultQueryTimeout).
	EmbedQueryTimeout time.Duration
	// Metrics, when set, counts searches, describes and calls, upstream states and
	// restarts, sessions and tokens (see package metrics), and the HTTP front serves
	// them at GET /metrics. Nil counts nothing.
	Metrics *metrics.Metrics
}

// DefaultDrainTimeout is Options.DrainTimeout's default: calls of most tools end well
// within it, and with DefaultStopTimeout after it toolshed has stopped its servers and
// exited before Kubernetes' default grace period (terminationGracePeriodSeconds, 30
// seconds) runs out and it is killed. (docker stop waits 10 seconds unless told more:
// give it --time 30, or toolshed a shorter --drain-timeout.)
const DefaultDrainTimeout = 20 * time.Second

// DefaultStopTimeout is Options.StopTimeout's default: long enough for upstreams to be
// told of the cancelled calls and for a server to exit on its own.
const DefaultStopTimeout = 5 * time.Second

func (o *Options) drainTimeout() time.Duration { return orDefault(o.DrainTimeout, DefaultDrainTimeout) }
func (o *Options) stopTimeout() time.Duration  { return orDefault(o.StopTimeout, DefaultStopTimeout) }

// cancelGrace is how long a stopping gateway waits for the cancellations of its calls
// to be written to their upstreams before it closes them.
func (o *Options) cancelGrace() time.Duration { return o.stopTimeout() / 5 }

// stopStep is how long a stdio server gets to exit after its stdin is closed, and again
// after SIGTERM, before SIGKILL.
func (o *Options) stopStep() time.Duration { return o.stopTimeout() / 4 }

func (o *Options) connectTimeout() time.Duration {
	return orDefault(o.ConnectTimeout, config.DefaultConnectTimeout)
}

func (o *Options) firstStartTimeout() time.Duration {
	return orDefault(o.FirstStartTimeout, config.DefaultFirstStartTimeout)
}

func (o *Options) backoffMin() time.Duration   { return orDefault(o.BackoffMin, time.Second) }
func (o *Options) backoffMax() time.Duration   { return orDefault(o.BackoffMax, time.Minute) }
func (o *Options) backoffReset() time.Duration { return orDefault(o.BackoffReset, time.Minute) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// The search indexes the gateway keeps: those of the current catalog and of a few
// before it, so that a catalog that comes back (a server that restarts with the tools
// it had) is not indexed again; indexesKept for the default profile, as before profiles
// had catalogs of their own, and profileIndexesKept more for each profile, whose
// catalog is its scope's (see assembly.plan). An index of 10,000 tools holds about 3
// MiB (search's BenchmarkIndexHeap), one of a scope's tools less.
//
// Counted by tools too: every index also keeps its catalog's tools alive (their
// structs alone 3.8 MB at 10,000 tools), so eight of a large catalog that changed
// cost eight times both. The indexes kept hold at most the tools of the current
// catalog once for the default profile and once for each other (so the current ones
// never push each other out), plus indexSlackTools: a catalog of a few hundred tools
// keeps as many of its past indexes as before, one of 10,000 none.
const (
	indexesKept        = 8
	profileIndexesKept = 4
	indexSlackTools    = 2000
)

// Gateway is a running toolshed gateway.
type Gateway struct {
	// hub runs the per-user sign-ins (see usersignin.go), at publicURL; nil without
	// an HTTP front that has a public URL.
	hubMu     sync.Mutex
	hub       *oauth.Hub
	publicURL string
	// ownCred is the credential of the HTTP front's own token (HTTPOptions.Token),
	// whose clients are the gateway's own (see userOf).
	ownCred atomic.Pointer[credential]
	// subjects maps the credential of an OAuth-signed-in client to its subject as
	// the activity log names it (see oauthFront.logged).
	subjects  sync.Map
	cfg       *config.Config
	opts      Options
	upstreams []*Upstream
	byName    map[string]*Upstream
	// decoded keeps the upstreams' decoded tools from one assembly to the next (and
	// from an upstream's own count of its tokens to the assembly that follows), so a
	// reassembly decodes only the lists that changed.
	decoded catalog.Cache
	cache   search.Cache
	calls   *callRegistry
	tasks   taskTable // the upstreams' tasks handed to clients (see tasks.go)
	// taskWakes holds the polls of tasks that status notifications wake (see
	// tasknotify.go).
	taskWakes taskWakes
	procs     processes // the upstream servers' processes (see Kill)
	clients   *clients
	hooks     *hooks
	rec       *recorder
	learn     *learn.Learner // nil: search does not learn
	vectors   *vectors       // nil: search uses words alone
	limits    *rateLimits
	logMu     sync.Mutex

	current atomic.Pointer[assembly]
	// servers holds one MCP server per profile ("" is the default profile); every
	// session of a profile shares it, since what a session sees depends only on its
	// profile.
	serversMu sync.Mutex
	servers   map[string]*profileServer

	changes chan struct{} // an upstream changed: reassemble
	// reassembleHook, set by tests, runs before each reassembly of the loop: a test
	// holds it to see what a request finds before the loop gets to an upstream's
	// change.
	reassembleHook atomic.Pointer[func()]
	// draining is set by Drain; posts counts the Streamable HTTP POSTs being served,
	// which Drain waits for.
	draining atomic.Bool
	posts    atomic.Int64
	// drainOnce makes drainStarted, closed when Drain starts: what lasts as long as
	// its client stays (a subscriptions/listen POST) ends then.
	drainOnce    sync.Once
	drainStarted chan struct{}
	// life ends when Run's context does: requests relayed to clients end with it.
	life      context.Context
	endLife   context.CancelFunc
	listeners []func(Event)

	subs subscriptions
	// warnings prints the catalog's problems once per change (see catalogWarnings).
	warnings catalogWarnings
	// unmatched reports overrides that select no tool, once each.
	unmatched unmatchedOverrides
	// early holds the sets of servers still starting that a client was answered
	// without (see reportEarly), each reported once.
	earlyMu sync.Mutex
	early   map[string]bool
}

// Event reports a change the serve command shows on stderr.
type Event struct {
	// Upstream is set when an upstream changed state.
	Upstream *Status
	// Assembled is set when the catalog was reassembled.
	Assembled *Summary
	// Clients is set when what toolshed declares to its upstreams of what its clients
	// support changed.
	Clients *ClientsChange
}

// Summary describes the current catalog, as the default profile sees it.
type Summary struct {
	ServersUp, Servers int
	// Settled reports that every upstream has started or failed at least once (or is
	// disabled): the summary is not one of a gateway still starting.
	Settled bool
	Tools   int
	// TokensAll is what listing every tool costs; TokensListed what the default profile
	// lists (the bridge included when tool search is on).
	TokensAll, TokensListed int
	// Listed is how many tools are listed besides the bridge, Deferred how many only
	// tool_search finds.
	Listed, Deferred int
	// Mode is the tool search setting (auto, on, off); Active whether tool search is on;
	// Reason says why, in one sentence.
	Mode   policy.Mode
	Active bool
	Reason string
}

// New prepares a gateway; Run starts it.
func New(cfg *config.Config, opts Options) (*Gateway, error) {
	if opts.MaxNameLen != 0 && opts.MaxNameLen < MinNameLen {
		return nil, fmt.Errorf("a name limit of %d characters leaves no room for a readable name and its hash: give 0 (no limit) or at least %d", opts.MaxNameLen, MinNameLen)
	}
	g := &Gateway{cfg: cfg, opts: opts, byName: map[string]*Upstream{}, servers: map[string]*profileServer{}, changes: make(chan struct{}, 1), early: map[string]bool{}}
	g.cache.Size = indexesKept + profileIndexesKept*len(cfg.Profiles)
	g.calls = newCallRegistry(g)
	g.rec = newRecorder(opts.SearchLog, opts.Metrics, func(ss *mcp.ServerSession) string { return g.clients.tagOf(ss) }, g.subjectOf,
		func(tag string) string { return g.clients.linkKeyOf(tag) })
	if opts.SearchLog != nil && !opts.NoLearning {
		g.learn = learn.New(opts.SearchLog, learn.Options{Interval: opts.LearnInterval, Kept: learn.DefaultKept * (1 + len(cfg.Profiles)), Logf: g.logf})
	}
	if opts.Embed != nil {
		g.vectors = newVectors(g, opts.Embed)
	}
	g.clients = newClients(opts.WaitForClient)
	g.life, g.endLife = context.WithCancel(context.Background())
	h, err := newHooks(cfg.Hooks, g.logOut())
	if err != nil {
		return nil, err
	}
	g.hooks = h
	g.limits = newRateLimits(cfg.RateLimit)
	for _, s := range cfg.Servers {
		if _, dup := g.byName[s.Name]; dup {
			return nil, fmt.Errorf("two upstream servers are named %q; rename one", s.Name)
		}
		u := newUpstream(s, g)
		g.upstreams = append(g.upstreams, u)
		g.byName[s.Name] = u
	}
	for _, src := range opts.Catalogs {
		if _, dup := g.byName[src.Server]; dup {
			return nil, fmt.Errorf("catalog server %q has the name of a configured server; rename one", src.Server)
		}
		u := newUpstream(config.Server{Name: src.Server, AlwaysLoad: src.AlwaysLoad}, g)
		u.catalog, u.catalogTools = true, src.Tools
		g.upstreams = append(g.upstreams, u)
		g.byName[src.Server] = u
	}
	g.opts.Catalogs = nil // the upstreams have them: let the file go with their use
	for name, p := range cfg.Profiles {
		if err := p.Scope.Check(); err != nil {
			return nil, fmt.Errorf("profile %q: %w", name, err)
		}
	}
	g.current.Store(g.assemble())
	return g, nil
}

// OnEvent registers fn to be called (from one goroutine at a time) on every event.
// Call it before Run.
func (g *Gateway) OnEvent(fn func(Event)) { g.listeners = append(g.listeners, fn) }

// Run connects every upstream and keeps them running until ctx ends. It returns once all
// upstreams are stopped.
//
// Once ctx ends it stops within Options.StopTimeout (call Drain first to let the calls
// in flight finish): requests relayed to clients end
// (endLife), the calls in flight are cancelled (their clients get a cancelled result,
// their upstreams notifications/cancelled), and only once those cancellations are
// written, or a fifth of the drain timeout has passed, do the upstreams' connections
// close and their servers stop (see commandTransport). Whatever process of theirs is
// left is then killed with its process group.
func (g *Gateway) Run(ctx context.Context) error {
	upCtx, stopUpstreams := context.WithCancel(context.WithoutCancel(ctx))
	defer stopUpstreams()
	stop := context.AfterFunc(ctx, func() {
		g.endLife()
		g.calls.cancelFor(func(*call) bool { return true }, errStopping)
		poll(context.Background(), g.opts.cancelGrace(), g.upstreamsIdle)
		stopUpstreams()
	})
	defer stop()
	var wg sync.WaitGroup
	for _, u := range g.upstreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.run(upCtx)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.reassembleLoop(upCtx)
	}()
	if g.learn != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.learn.Run(upCtx)
		}()
	}
	wg.Wait()
	g.procs.killAll()
	g.hooks.close()
	if hub, _ := g.signIns(); hub != nil {
		hub.Close()
	}
	return nil
}

// upstreamsIdle reports whether no request toolshed sent an upstream waits for its
// answer: a cancelled call stops waiting once its notifications/cancelled is written.
func (g *Gateway) upstreamsIdle() bool {
	for _, u := range g.upstreams {
		if l := u.currentLink(); l != nil && l.busy.Load() > 0 {
			return false
		}
	}
	return true
}

// Kill ends every upstream server at once, with its whole process group (SIGKILL), and
// any that starts after it: for a toolshed that must exit now (a second signal, a drain
// that outlived its timeout) without leaving servers running behind it.
func (g *Gateway) Kill() { g.procs.killAll() }

// WaitReady waits until every enabled upstream has been ready or failed at least once,
// or ctx ends, so that a first tools/list sees everything that could start. With
// Options.WaitForClient, the upstreams start only when a client connects.
func (g *Gateway) WaitReady(ctx context.Context) {
	if poll(ctx, 0, func() bool { return g.settled(g.upstreams) }) {
		g.reassemble() // let the last reassembly land
	}
}

// Connect serves one client over transport t, as profile: for in-process clients and
// tests (mcp.NewInMemoryTransports). The client is served as the stdio one is (see
// directFront).
func (g *Gateway) Connect(ctx context.Context, t mcp.Transport, profile string) (*mcp.ServerSession, error) {
	return g.connect(ctx, t, profile)
}

// Catalog returns the current catalog: the tools of the upstreams that are up, with the
// config's overrides applied (hidden tools left out), as every profile's plan starts
// from it.
func (g *Gateway) Catalog() *catalog.Snapshot { return g.current.Load().snap }

// Statuses reports every upstream's state, in config order.
func (g *Gateway) Statuses() []Status {
	out := make([]Status, len(g.upstreams))
	for i, u := range g.upstreams {
		out[i] = u.Status()
	}
	return out
}

// upstreamChanged is called by an upstream whenever its state or tools change.
func (g *Gateway) upstreamChanged(u *Upstream) {
	st := u.Status()
	g.emit(Event{Upstream: &st})
	select {
	case g.changes <- struct{}{}:
	default:
	}
}

func (g *Gateway) reassembleLoop(ctx context.Context) {
	sweep := time.NewTicker(30 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.changes:
			if h := g.reassembleHook.Load(); h != nil {
				(*h)()
			}
			if !g.catalogStarting() {
				g.reassemble()
			}
		case <-sweep.C:
			g.sweepSubscriptions(ctx)
		}
	}
}

// reassemble rebuilds the catalog from the live tool lists and, if it changed, updates
// every profile's listed tools (clients get notifications/tools/list_changed).
func (g *Gateway) reassemble() {
	g.serversMu.Lock()
	defer g.serversMu.Unlock()
	a := g.assemble()
	old := g.current.Load()
	changed := old == nil || old.snap.Hash() != a.snap.Hash() || old.hidden.Hash() != a.hidden.Hash() || old.upHash != a.upHash || old.restarting.Hash() != a.restarting.Hash() || !slices.Equal(old.starting, a.starting)
	toldTools := map[*profileServer]bool{} // the profiles whose tools sync changed
	if changed {
		g.current.Store(a)
		g.cache.SetMaxTools((1+len(g.cfg.Profiles))*a.snap.Len() + indexSlackTools)
		g.vectors.prepare(a.snap)
		for _, ps := range g.servers {
			toldTools[ps] = ps.sync(a)
		}
	}
	// A server's list_changed reaches the clients even when its list reads the same as
	// before (a server may re-register a tool with a new handler, and the conformance
	// suite's triggers re-add the same tool and prompt): a client that lists what the
	// server listed is told, as the server's own clients would be.
	announced := map[string]listKinds{}
	for _, u := range g.upstreams {
		if k := u.takeAnnounced(); k != 0 {
			announced[u.cfg.Name] = k
		}
	}
	if len(announced) > 0 {
		for _, ps := range g.servers {
			ps.passOn(a, announced, toldTools[ps])
		}
	}
	// Only now are the tools of the upstreams in a callable: report them ready.
	for _, u := range g.upstreams {
		if u.markAssembled(a.included[u]) {
			st := u.Status()
			g.emit(Event{Upstream: &st})
		}
	}
	if changed {
		sum := g.summary(a)
		g.emit(Event{Assembled: &sum})
	}
}

// catalogStarting reports whether a catalog upstream is in its first start. Catalog
// upstreams are answered in process and are all ready within moments of each other,
// while each assembly rebuilds the whole catalog: assembling at each of them (435 at
// 10,000 tools) cost half a second of the start. The last one's change assembles them
// all at once; one that fails leaves its first start, so none is waited for long. Only
// the reassembly a change wakes defers: a request that waited for the servers to settle
// reassembles at once (see settle).
func (g *Gateway) catalogStarting() bool {
	for _, u := range g.upstreams {
		if u.catalog && u.firstStarting() {
			return true
		}
	}
	return false
}

// assemble builds the catalog of the upstreams that are ready, in config order.
func (g *Gateway) assemble() *assembly {
	var sources []catalog.Source
	up := ""
	feats := map[string]features{}
	included := map[*Upstream]bool{}
	var starting []string
	for _, u := range g.upstreams {
		if u.firstStarting() {
			starting = append(starting, u.cfg.Name)
		}
		if src, ok := u.Source(); ok {
			sources = append(sources, src)
			included[u] = true
			u.mu.Lock()
			feats[u.cfg.Name] = u.features
			up += fmt.Sprintf("%s\x00%d\x00", u.cfg.Name, u.featuresVersion)
			u.mu.Unlock()
		}
	}
	applied := g.applyOverrides(sources, g.settled(g.upstreams))
	snap, problems := g.decoded.Build(applied.Sources)
	g.warnings.report(g, applied.Sources, snap, problems)
	hidden, _ := g.decoded.Build(applied.Hidden)
	restarting := g.restartingTools()
	g.decoded.Prune()
	return &assembly{g: g, snap: snap, hidden: hidden, restarting: restarting, starting: starting, upHash: up, features: feats, included: included, plans: map[string]*policy.Plan{}}
}

func (g *Gateway) summary(a *assembly) Summary {
	s := Summary{Servers: len(g.upstreams), Tools: a.snap.Len(), TokensAll: a.snap.Tokens(), Settled: g.settled(g.upstreams)}
	for _, u := range g.upstreams {
		if u.Status().State == Ready {
			s.ServersUp++
		}
	}
	plan := a.plan("")
	s.Mode, s.Active, s.Reason = plan.Config.Enabled, plan.Active, plan.Reason
	s.Listed, s.Deferred = len(plan.Visible), len(plan.Deferred)
	s.TokensListed = a.listedTokens("")
	return s
}

func (g *Gateway) emit(e Event) {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	if m := g.opts.Metrics; m != nil {
		if s := e.Upstream; s != nil {
			m.Upstream(s.Name, s.State == Ready, s.Tools)
		}
		if a := e.Assembled; a != nil {
			m.CatalogTokens(a.TokensAll)
		}
	}
	for _, fn := range g.listeners {
		fn(e)
	}
}

func (g *Gateway) logOut() io.Writer {
	if g.opts.Log != nil {
		return g.opts.Log
	}
	return os.Stderr
}

func (g *Gateway) logf(format string, args ...any) {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	// Every line goes through the one redaction rule: it may quote an upstream's URL,
	// error or log message, any of which may hold a key.
	io.WriteString(g.logOut(), redact.String(fmt.Sprintf("toolshed: "+format+"\n", args...)))
}

// slogger is the SDK's logger: warnings and errors only, into toolshed's log.
func (g *Gateway) slogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(redactedWriter{g.logOut()}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// redactedWriter passes each write through the one redaction rule: slog writes a
// record in one write, and the SDK's records quote errors that may hold an upstream's
// URL or what it answered.
type redactedWriter struct{ w io.Writer }

func (r redactedWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, redact.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// assembly is one catalog snapshot with what is derived from it: one plan per profile,
// computed when first needed, and the search index from the cache.
type assembly struct {
	g    *Gateway
	snap *catalog.Snapshot
	// restarting has the last known tools of the upstreams that are restarting: not
	// listed, searched or described, only recognised by calls (see restartingCall).
	restarting *catalog.Snapshot
	// hidden has the tools the config's overrides hide: only recognised by calls, to
	// refuse them (see hiddenTool).
	hidden *catalog.Snapshot
	// starting names the upstreams in their first start, in config order (see
	// startingFor).
	starting []string
	upHash   string // which upstreams are up: a change relists even if the tools did not change
	// features holds each ready upstream's prompts, resources and templates.
	features map[string]features
	// included has the upstreams whose tools are in snap.
	included map[*Upstream]bool

	mu    sync.Mutex
	plans map[string]*policy.Plan
}

// plan returns the plan of a profile over this assembly.
func (a *assembly) plan(profile string) *policy.Plan {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.plans[profile]; ok {
		return p
	}
	cfg := a.g.cfg.ToolSearch
	if cfg == (policy.Config{}) {
		// No tool_search settings (no config file, or one built in code): the
		// defaults, before the mode flag overrides the mode alone.
		cfg = policy.DefaultConfig()
	}
	if a.g.opts.Mode != "" {
		cfg.Enabled = a.g.opts.Mode
	}
	window := a.g.cfg.ContextWindow
	if a.g.opts.ContextWindow > 0 {
		window = a.g.opts.ContextWindow
	}
	if window <= 0 {
		window = config.DefaultContextWindow
	}
	// Over the scope's own catalog, so that nothing a session is told, search's
	// statistics included, depends on the tools outside its scope (see Scope.Catalog).
	scope := a.g.cfg.Profiles[profile].Scope
	p := policy.Decide(scope.Catalog(a.snap), policy.Input{Config: cfg, Servers: a.g.serverRules(), Scope: scope, ContextWindow: window})
	a.plans[profile] = p
	return p
}

// serverRules are the configured servers' defer and enable settings, by server name.
func (g *Gateway) serverRules() map[string]policy.ServerRules {
	rules := map[string]policy.ServerRules{}
	for _, s := range g.cfg.Servers {
		rules[s.Name] = s.Rules
	}
	return rules
}

// index returns the index profile searches: that of its plan's catalog, the scope's own
// (see plan), learned from the search log once built. Each is built once per catalog
// and kept in the cache, which holds a few catalogs for each profile.
func (a *assembly) index(profile string) *search.Index {
	return a.g.learn.Index(a.g.cache.Index(a.plan(profile).Snapshot))
}

// Profiles returns the names of the configured profiles, sorted.
func (g *Gateway) Profiles() []string {
	var names []string
	for n := range g.cfg.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// mcpServerFor returns the MCP server of a profile, creating it on first use.
func (g *Gateway) mcpServerFor(profile string) *mcp.Server {
	return g.profileServer(profile).server
}

// profileServer returns the server of a profile, creating it on first use.
func (g *Gateway) profileServer(profile string) *profileServer {
	g.serversMu.Lock()
	defer g.serversMu.Unlock()
	if ps, ok := g.servers[profile]; ok {
		return ps
	}
	ps := newProfileServer(g, profile)
	ps.sync(g.current.Load())
	g.servers[profile] = ps
	return ps
}
