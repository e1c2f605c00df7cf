package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/internal/builtin"
	"github.com/toolshed/toolshed/internal/frontdoor"
	"github.com/toolshed/toolshed/internal/memlimit"
	"github.com/toolshed/toolshed/metrics"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/oauth/resource"
	"github.com/toolshed/toolshed/policy"
)

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	configFile := envDefault(fs.String("config", "", "serve the servers of config `FILE`, with its settings: the mcpServers JSON of Claude Desktop, Cursor or Claude Code, VS Code's servers, or toolshed's YAML (default $TOOLSHED_CONFIG)"), "TOOLSHED_CONFIG")
	httpAddr := fs.String("http", "", "serve Streamable HTTP at http://`ADDR`/mcp instead of stdio: a port (8080, which binds 127.0.0.1) or host:port")
	mode := fs.String("tool-search", "", "tool search `MODE`: auto (on when the deferrable tools' definitions reach threshold_pct, 10%, of the context window), on or off (default: the config's tools.tool_search.enabled, else auto)")
	window := fs.Int("context-window", 0, "the model's context window in `TOKENS`, for auto mode (default: the config's context_window, else 200000)")
	profile := fs.String("profile", "", "serve the stdio client as profile `NAME`, a scope of the config's profiles (over HTTP, each client chooses its own by path or token)")
	noPrefix := fs.Bool("no-prefix", false, "list each tool by its bare name (create_issue, not github__create_issue) unless another listed tool has that name")
	maxName := fs.Int("max-name-length", 0, fmt.Sprintf("list no tool name longer than `N` characters, at least %d (0, the default, is no limit): a longer name keeps its server's start and the whole tool name, with a hash between them (Gemini CLI: 63 minus the length of mcp_SERVER_)", gateway.MinNameLen))
	token := envDefault(fs.String("token", "", "bearer `TOKEN` HTTP clients must send (default $TOOLSHED_TOKEN; a profile may have its own in the config)"), "TOOLSHED_TOKEN")
	maxSessions := fs.Int("max-sessions", gateway.DefaultMaxSessions, "keep at most `N` HTTP sessions open at once; past it, a new one gets 503 (-1: no cap)")
	maxPerToken := fs.Int("max-sessions-per-token", gateway.DefaultMaxSessionsPerToken, "keep at most `N` HTTP sessions open at once per token (all clients count as one when no token is needed); past it, a new one gets 503 (-1: no cap)")
	maxListens := fs.Int("max-listens", gateway.DefaultMaxListens, "keep at most `N` subscriptions/listen streams (MCP 2026-07-28) open at once over HTTP; past it, a new one gets JSON-RPC error -32603 \"Subscription limit reached\" (-1: no cap)")
	maxListensPerToken := fs.Int("max-listens-per-token", gateway.DefaultMaxListensPerToken, "keep at most `N` subscriptions/listen streams open at once over HTTP per token (all clients count as one when no token is needed); past it, a new one gets -32603 \"Subscription limit reached\" (-1: no cap)")
	stateless := fs.Bool("stateless", false, "serve Streamable HTTP without sessions: every POST on its own, GET and DELETE 405; any replica serves any request, but server-to-client requests (sampling, elicitation, roots), resumable streams and list_changed are lost (see docs/replicas.md)")
	replica := envDefault(fs.String("replica-id", "", "name this replica `ID` (a DNS label, such as toolshed-1) in the HTTP session ids it issues, ID.random, for a balancer to route each session to its owner (default $TOOLSHED_REPLICA_ID)"), "TOOLSHED_REPLICA_ID")
	drain := fs.Duration("drain-timeout", gateway.DefaultDrainTimeout, "after SIGINT or SIGTERM over --http, drain for up to `DURATION`: /readyz answers 503 and new sessions are refused while open sessions are served and calls in flight may finish; then what is left is cancelled and the servers stopped (over stdio, calls are cancelled at once, and at the end of stdin the requests read before it are given up to DURATION to be answered; a second signal stops at once)")
	startWait := fs.Duration("start-wait", gateway.DefaultStartWait, "let a client's requests wait up to `DURATION` for servers still in their first start (npx may be installing them); past it they are answered without them, and the client is told when they are up (notifications/tools/list_changed)")
	metricsAddr := fs.String("metrics-addr", "", "also serve Prometheus metrics at http://`ADDR`/metrics, without a token (a bare port binds 127.0.0.1); over --http, GET /metrics is served too, with the token /status needs")
	probeAddr := fs.String("probe-addr", "", "also serve GET /healthz and GET /readyz alone at http://`ADDR`, without a token (a bare port binds 127.0.0.1): a listener of their own, which an orchestrator's probes reach however many connections clients hold on --http")
	memTarget := fs.Int64("memory-target-mib", memlimit.DefaultTarget>>20, "keep the memory toolshed's Go runtime uses within `N` MiB while its live data leaves the collector room (about 100 MiB of process at 10,000 tools); past that, Go's defaults (0: Go's defaults always; GOMEMLIMIT or GOGC in the environment rule over it)")
	doors := addDoorFlags(fs)
	logFlags := searchLogFlags{
		db:      fs.String("db", "", "record searches and calls in `DSN`: a SQLite file, a postgres:// URL, or off (default: the config's search_log.db, else $XDG_DATA_HOME/toolshed/searchlog.db)"),
		queries: fs.String("log-queries", "", "`MODE` of keeping each query in the search log: plain (the text), hash (its SHA-256) or off (default: the config's search_log.queries, else plain)"),
	}
	emb := addEmbedFlags(fs, hybrid.DefaultQueryTimeout)
	credentials := envDefault(fs.String("credentials", "", "sign in to remote servers that ask for OAuth with the credentials in `FILE`, which toolshed auth login writes (default $TOOLSHED_CREDENTIALS, else $XDG_DATA_HOME/toolshed/credentials.json)"), "TOOLSHED_CREDENTIALS")
	credentialsDB := addCredentialsDBFlag(fs)
	publicURL := fs.String("public-url", "", "toolshed's public `URL` over --http (https://toolshed.example.com), where browsers open the sign-in pages of servers each user signs in to (oauth perUser); default: the origin of the config's oauth.resource, else the --http address when it is a loopback one")
	var catalogs listFlag
	fs.Var(&catalogs, "catalog", "also serve catalog `FILE`'s tools, listed and searched but not run: a call says how to configure the real server (repeatable)")
	fs.Usage = func() {
		printUsage(stdout, fs, "[--config FILE] [--catalog FILE]... [--profile NAME] [--tool-search MODE] [--context-window TOKENS] [--no-prefix] [--max-name-length N] [--start-wait DURATION] "+
			"[--http ADDR] [--public-url URL] [--stateless] [--replica-id ID] [--max-sessions N] [--max-sessions-per-token N] [--max-listens N] [--max-listens-per-token N] [--drain-timeout DURATION] [--metrics-addr ADDR] [--probe-addr ADDR] [--memory-target-mib N] "+
			doorSynopsis+" [--db DSN] [--log-queries MODE] [--credentials FILE | --credentials-db DSN] "+embedSynopsis,
			"Runs the MCP gateway: it serves the tools of every server in the config to one MCP client over stdio, or to many over Streamable HTTP with --http, and, when the tools are many, replaces them with tool_search, tool_describe and tool_call. "+
				"Without --config or --catalog, it serves the built-in catalog: the tool definitions of 21 real MCP servers, whose calls say how to configure the real server.")
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if *memTarget < 0 || *memTarget > 1<<40 {
		return usageErr("--memory-target-mib %d: give a size in MiB, or 0 for Go's defaults", *memTarget)
	}
	// From the start: reading and decoding a large catalog is most of what serve
	// ever allocates.
	memCtx, endMem := context.WithCancel(context.Background())
	defer endMem()
	memlimit.Start(memCtx, uint64(*memTarget)<<20)
	if err := doors.check(); err != nil {
		return err
	}
	if u, err := neturl.Parse(*publicURL); *publicURL != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "") {
		return usageErr("--public-url %q: give toolshed's public URL as browsers reach it, such as https://toolshed.example.com", *publicURL)
	}
	if err := logFlags.check(); err != nil {
		return err
	}
	// Over stdio exactly one client comes: the upstreams start when it has said what it
	// supports, and are told so from the start.
	opts := gateway.Options{NoPrefix: *noPrefix, MaxNameLen: *maxName, ContextWindow: *window, Log: stderr, WaitForClient: *httpAddr == ""}
	if _, err := oauth.DefaultPath(); *credentials != "" || *credentialsDB != "" || err == nil {
		store, _, done, err := openCredentials(context.Background(), *credentials, *credentialsDB, true, stderr)
		if err != nil {
			return err
		}
		defer done() // after the gateway, which refreshes with it, has stopped
		opts.Credentials = store
	}
	if *maxName != 0 && *maxName < gateway.MinNameLen {
		return usageErr("--max-name-length must be 0 (no limit) or at least %d, got %d", gateway.MinNameLen, *maxName)
	}
	if *mode != "" {
		m, err := policy.ParseMode(*mode)
		if err != nil {
			return usageErr("--tool-search: %v", err)
		}
		opts.Mode = m
	}
	if *window < 0 {
		return usageErr("--context-window must be a number of tokens, got %d", *window)
	}
	for _, f := range []struct {
		name string
		n    int
		what string
	}{{"--max-sessions", *maxSessions, "sessions"}, {"--max-sessions-per-token", *maxPerToken, "sessions"},
		{"--max-listens", *maxListens, "listens"}, {"--max-listens-per-token", *maxListensPerToken, "listens"}} {
		if f.n == 0 || f.n < -1 {
			return usageErr("%s must be a number of %s above 0, or -1 for no cap; got %d", f.name, f.what, f.n)
		}
	}
	if *probeAddr != "" && *httpAddr == "" {
		return usageErr("--probe-addr serves the health probes of Streamable HTTP: add --http ADDR, or leave --probe-addr out")
	}
	if *stateless && *httpAddr == "" {
		return usageErr("--stateless is a mode of Streamable HTTP: add --http ADDR, or leave --stateless out")
	}
	if *replica != "" {
		if err := gateway.CheckReplicaID(*replica); err != nil {
			return usageErr("--replica-id (or $TOOLSHED_REPLICA_ID): %v", err)
		}
	}
	if *drain <= 0 {
		return usageErr("--drain-timeout must be a positive duration, such as 5s, got %v", *drain)
	}
	opts.DrainTimeout = *drain
	opts.StopTimeout = min(*drain, gateway.DefaultStopTimeout)
	if *startWait <= 0 {
		return usageErr("--start-wait must be a positive duration, such as 10s, got %v", *startWait)
	}
	opts.StartWait = *startWait
	cfg := &config.Config{}
	if *configFile != "" {
		load := loadServersConfig
		if len(catalogs) > 0 {
			load = loadConfig // the catalogs are served, whatever servers the config has
		}
		var err error
		if cfg, err = load(*configFile, stderr); err != nil {
			return err
		}
	}
	// Every flag and the config are checked before anything starts: a mistake is
	// reported at once, not after the upstream servers have started.
	emb.withConfig(fs, cfg.Embed)
	if err := emb.gateway(&opts); err != nil {
		return err
	}
	if err := cfg.CheckProfile(*profile); err != nil {
		return usageErr("--profile: %v", err)
	}
	if *profile != "" && *httpAddr != "" {
		return usageErr("--profile chooses the profile of the stdio client; over HTTP each client chooses its own, by path (/mcp/NAME) or by the profile's token: leave --profile out")
	}
	var ln net.Listener
	if *httpAddr != "" {
		var err error
		if ln, err = listen("--http", *httpAddr, *token != "" || hasProfileTokens(cfg) || cfg.OAuth.Enabled(), stderr); err != nil {
			return err
		}
		defer ln.Close()
	}
	var probeLn net.Listener
	if *probeAddr != "" {
		var err error
		// Like the metrics: ok or not, no token, no warning off loopback.
		if probeLn, err = listen("--probe-addr", *probeAddr, true, stderr); err != nil {
			return err
		}
		defer probeLn.Close()
	}
	var metricsLn net.Listener
	if *metricsAddr != "" {
		var err error
		// The metrics say which servers run and how busy they are, nothing a
		// client sends: no token, and no warning off loopback.
		if metricsLn, err = listen("--metrics-addr", *metricsAddr, true, stderr); err != nil {
			return err
		}
		defer metricsLn.Close()
	}
	if *httpAddr != "" || metricsLn != nil {
		opts.Metrics = metrics.New(gateway.Version, *replica)
	}
	for _, f := range catalogs {
		sources, problems := catalog.ReadFile(f)
		for _, p := range problems {
			fmt.Fprintf(stderr, "toolshed: warning: %v\n", p)
		}
		opts.Catalogs = append(opts.Catalogs, sources...)
	}
	if *configFile == "" && len(catalogs) == 0 {
		opts.Catalogs, _ = builtin.Sources()
		fmt.Fprintln(stderr, "toolshed: no --config: serving the built-in catalog (tool definitions of 21 real MCP servers; a call explains how to configure the real server)")
	}
	searchLog, err := openServeLog(cfg.SearchLog, logFlags, stderr)
	if err != nil {
		return err
	}
	// Closed last, once the gateway has stopped and recorded its last calls.
	defer closeSearchLog(searchLog, stderr)
	opts.SearchLog = searchLog
	if searchLog != nil {
		opts.Metrics.SearchLog(searchLog) // a nil Metrics (no --metrics-addr) ignores it
	}
	if searchLog != nil {
		opts.EmbedStore = searchLog // tool vectors shared by the replicas of one database
	}
	opts.NoLearning = cfg.SearchLog.NoLearn
	opts.LearnInterval = cfg.SearchLog.LearnEvery
	g, err := gateway.New(cfg, opts)
	opts.Catalogs = nil // the gateway has them; the catalog files' bytes need not stay
	if err != nil {
		return err
	}
	progress := newProgress(stderr, len(g.Statuses()), opts.WaitForClient)
	g.OnEvent(progress.event)

	// Signals are handled until the upstreams have stopped: a second signal while
	// they stop kills their process groups before exiting (see onSignals). Over HTTP
	// the first signal drains the gateway; the fronts and the upstreams run until it
	// has (ctx), then stop, cancelling what is left. Over stdio the one client is the
	// process that started toolshed: when it signals, it is leaving and will read no
	// result, so the calls in flight are cancelled at once.
	drainFor, stopFor := *drain, opts.StopTimeout+httpStopBound
	if *httpAddr == "" {
		drainFor, stopFor = opts.StopTimeout, 0
	}
	signalled, stopSignals := onSignals(stderr, drainFor, stopFor, g.Kill)
	defer stopSignals()
	ctx, stopRun := context.WithCancel(context.Background())
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-signalled.Done():
		}
		if *httpAddr != "" {
			if left := g.Drain(ctx); left > 0 {
				fmt.Fprintf(stderr, "toolshed: %d calls still running after the drain timeout (%v, --drain-timeout): cancelling them\n", left, *drain)
			}
		}
		stopRun()
	}()
	runDone := make(chan struct{})
	go func() {
		g.Run(ctx)
		close(runDone)
	}()
	defer func() { stopRun(); <-runDone }()
	if metricsLn != nil {
		go serveUntil(ctx, metricsLn, doors.guard(opts.Metrics.Handler()), doors.limits(), time.Second, "the stop")
		url, note := openURL(metricsLn)
		fmt.Fprintf(stderr, "toolshed: serving Prometheus metrics at %s/metrics%s\n", url, note)
	}

	if *httpAddr == "" {
		if hint := stdinHint(term.IsTerminal(int(os.Stdin.Fd()))); hint != "" {
			fmt.Fprintln(stderr, hint)
		}
		// The client's first requests wait (up to --start-wait) for the upstreams to
		// start; slower ones appear later, and the client is told
		// (notifications/tools/list_changed).
		if err := g.ServeStdio(ctx, *profile); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
	if probeLn != nil {
		// Served until the gateway has drained, as /readyz says 503 meanwhile.
		go serveUntil(ctx, probeLn, doors.guard(g.ProbeHandler()), doors.limits(), time.Second, "the stop")
		url, note := openURL(probeLn)
		fmt.Fprintf(stderr, "toolshed: serving health probes at %s/healthz and %s/readyz%s\n", url, url, note)
	}
	oauth, err := oauthOptions(cfg.OAuth, stderr)
	if err != nil {
		return err
	}
	if oauth != nil {
		defer oauth.Verifier.Close()
	}
	url, note := openURL(ln)
	public := *publicURL
	if public == "" && oauth == nil && frontdoor.IsLoopback(ln.Addr().String()) {
		public = url
	}
	fmt.Fprintf(stderr, "toolshed: serving MCP over Streamable HTTP at %s/mcp (profiles at /mcp/{profile})%s%s\n", url, httpMode(*stateless, *replica), note)
	return serveUntil(ctx, ln, g.Handler(gateway.HTTPOptions{Token: *token, AllowOrigins: doors.origins, AllowHosts: doors.hosts, MaxSessions: *maxSessions, MaxSessionsPerToken: *maxPerToken,
		MaxListens: *maxListens, MaxListensPerToken: *maxListensPerToken, Stateless: *stateless, ReplicaID: *replica, OAuth: oauth, PublicURL: public}), doors.limits(), opts.StopTimeout+httpStopBound,
		fmt.Sprintf("the drain timeout (%v, --drain-timeout) and the cancellation of their calls", *drain))
}

// httpMode says how the HTTP front serves sessions, for its startup line.
func httpMode(stateless bool, replica string) string {
	var parts []string
	if stateless {
		parts = append(parts, "stateless: no sessions")
	}
	if replica != "" {
		parts = append(parts, "replica "+replica)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// httpStopBound is how long, past the gateway's stop timeout, the HTTP requests still
// open when the drain ends may take to be answered: their calls were cancelled at the
// start of the stop, so what is left is writing the results.
const httpStopBound = time.Second

func hasProfileTokens(cfg *config.Config) bool {
	for _, p := range cfg.Profiles {
		if p.Token != "" {
			return true
		}
	}
	return false
}

// oauthOptions turns the config's oauth section into the HTTP front's options: nil
// when it has none.
func oauthOptions(c config.OAuth, stderr io.Writer) (*gateway.OAuthOptions, error) {
	if !c.Enabled() {
		return nil, nil
	}
	aud := c.Audience
	if aud == "" {
		aud = c.Resource
	}
	v, err := resource.New(resource.Options{Issuer: c.Issuer, Audience: aud, Scopes: c.Scopes,
		IntrospectionClientID: c.IntrospectionClientID, IntrospectionClientSecret: c.IntrospectionClientSecret,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "toolshed: "+format+"\n", args...) }})
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	fmt.Fprintf(stderr, "toolshed: clients may sign in with OAuth tokens of %s for %s\n", c.Issuer, c.Resource)
	return &gateway.OAuthOptions{Verifier: v, Resource: c.Resource, Subjects: c.Subjects}, nil
}
