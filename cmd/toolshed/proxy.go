package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"strings"

	"github.com/toolshed/toolshed/catalog"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/hybrid"
	"github.com/toolshed/toolshed/internal/redact"
	"github.com/toolshed/toolshed/learn"
	"github.com/toolshed/toolshed/messages"
)

func runProxy(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	listenFlag := fs.String("listen", "127.0.0.1:8787", "serve the Messages API at http://`ADDR`/v1/messages: a port (which binds 127.0.0.1) or host:port")
	upstreamURL := fs.String("upstream-url", "", "the upstream API's base `URL` (default https://api.anthropic.com, or https://api.openai.com/v1 for openai)")
	kind := fs.String("upstream-kind", "anthropic", "the upstream's wire format, `KIND`: anthropic (the Messages API) or openai (Chat Completions)")
	model := fs.String("model", "", "send every request to upstream model `NAME` instead of the one the client names")
	token := envDefault(fs.String("token", "", "`TOKEN` clients must send as their API key, as x-api-key or Authorization: Bearer (default $TOOLSHED_TOKEN)"), "TOOLSHED_TOKEN")
	doors := addDoorFlags(fs)
	maxIter := fs.Int("max-iterations", 8, "make at most `N` upstream calls for one request while the model searches, then answer with stop_reason pause_turn")
	maxAnswer := fs.Int64("max-answer-mib", messages.DefaultMaxAnswerBytes>>20, "read at most `N` MiB of one upstream answer (a whole answer, or all of a stream); a request whose answer is larger fails alone with an api_error")
	toolCache := fs.Int64("tool-cache-mib", messages.DefaultToolCacheBytes>>20, "keep the tools lists clients send validated and indexed within `N` MiB (an estimate of their memory), the oldest dropped first; a list larger than that is indexed for each request")
	drain := fs.Duration("drain-timeout", gateway.DefaultDrainTimeout, "after SIGINT or SIGTERM, stop accepting and let requests in flight finish for up to `DURATION`, then answer those still running 529 overloaded_error (a second signal stops at once)")
	emb := addEmbedFlags(fs, hybrid.DefaultQueryTimeout)
	var catalogs listFlag
	fs.Var(&catalogs, "catalog", "rank the client's own tool search (Claude Code's ToolSearch) with the definitions in catalog `FILE`: the tools of the MCP servers the client has (repeatable)")
	configFile := fs.String("config", "", "rank the client's own tool search with the tools of the servers in config `FILE` (the client's own MCP config, e.g. .mcp.json): they are started once, listed and stopped")
	logFlags := searchLogFlags{
		db:      fs.String("db", "", "record searches and the calls they led to in `DSN`: a SQLite file, a postgres:// URL, or off (default: $XDG_DATA_HOME/toolshed/searchlog.db, which toolshed serve and stats share)"),
		queries: fs.String("log-queries", "", "`MODE` of keeping each query in the search log: plain (the text), hash (its SHA-256) or off (default plain)"),
	}
	clientSearch := fs.String("client-search", "on", "`MODE` of the client's own tool search (Claude Code's ToolSearch): on answers it with toolshed's ranking when toolshed has the definitions of its deferred tools (--config, --catalog, or the request's), off leaves it to the client")
	fs.Usage = func() {
		printUsage(stdout, fs, "[--listen ADDR] [--upstream-url URL] [--upstream-kind KIND] [--model NAME] [--catalog FILE]... [--config FILE] [--client-search MODE] [--db DSN] [--log-queries MODE] [--max-iterations N] [--max-answer-mib N] [--tool-cache-mib N] [--drain-timeout DURATION] "+
			doorSynopsis+" "+embedSynopsis,
			"Serves POST /v1/messages and /v1/messages/count_tokens with Anthropic's tool search (defer_loading, tool_search_tool_regex/bm25, tool_reference; or the client's own search, as Claude Code's ToolSearch) for any model. "+
				"The upstream key comes from the environment: ANTHROPIC_API_KEY, or OPENAI_API_KEY for openai. It is never logged, and replaces the client's key.")
	}
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	if err := doors.check(); err != nil {
		return err
	}
	if *drain <= 0 {
		return usageErr("--drain-timeout must be a positive duration, such as 5s, got %v", *drain)
	}
	if *maxIter < 0 {
		return usageErr("--max-iterations must be a positive number, got %d", *maxIter)
	}
	if *maxAnswer <= 0 || *maxAnswer > 1<<20 {
		return usageErr("--max-answer-mib must be a number of MiB from 1 to 1048576, got %d", *maxAnswer)
	}
	if *toolCache <= 0 || *toolCache > 1<<20 {
		return usageErr("--tool-cache-mib must be a number of MiB from 1 to 1048576, got %d", *toolCache)
	}
	var up messages.Upstream
	keyVar, defaultURL := "ANTHROPIC_API_KEY", messages.DefaultAnthropicURL
	switch *kind {
	case "anthropic":
		up = &messages.Anthropic{BaseURL: *upstreamURL, APIKey: os.Getenv(keyVar), Model: *model, MaxAnswerBytes: *maxAnswer << 20}
	case "openai":
		keyVar, defaultURL = "OPENAI_API_KEY", messages.DefaultOpenAIURL
		up = &messages.OpenAI{BaseURL: *upstreamURL, APIKey: os.Getenv(keyVar), Model: *model, MaxAnswerBytes: *maxAnswer << 20}
	default:
		return usageErr("--upstream-kind must be anthropic or openai, got %q", *kind)
	}
	if err := logFlags.check(); err != nil {
		return err
	}
	if *clientSearch != "on" && *clientSearch != "off" {
		return usageErr("--client-search must be on or off, got %q", *clientSearch)
	}
	if len(catalogs) > 0 && *configFile != "" {
		return usageErr("--catalog and --config both give the client's tools; use one")
	}
	if _, err := emb.on(); err != nil {
		return err
	}
	var clientTools *catalog.Snapshot
	switch {
	case *clientSearch == "off":
	case len(catalogs) > 0:
		snap, err := loadCatalog(catalogs, stderr)
		if err != nil {
			return err
		}
		clientTools = snap
	case *configFile != "":
		cfg, err := loadServersConfig(*configFile, stderr)
		if err != nil {
			return err
		}
		snap, err := configCatalog(context.Background(), cfg, *configFile, "ranked by toolshed", stderr)
		if err != nil {
			return err
		}
		clientTools = snap
	}
	ln, err := listen("--listen", *listenFlag, *token != "", stderr)
	if err != nil {
		return err
	}
	searchLog, err := openServeLog(config.SearchLog{}, logFlags, stderr)
	if err != nil {
		ln.Close()
		return err
	}
	defer closeSearchLog(searchLog, stderr)
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	p := &messages.Proxy{Upstream: up, MaxIterations: *maxIter, ToolCacheBytes: *toolCache << 20, Logger: logger, ClientKey: *token, AllowOrigins: doors.origins, AllowHosts: doors.hosts,
		ClientTools: clientTools, NoClientSearch: *clientSearch == "off"}
	if searchLog != nil {
		p.SearchLog = searchLog
	}
	if err := emb.proxy(p, stderr); err != nil {
		return err
	}
	target := redact.String(*upstreamURL) // its password or a key= parameter is a key
	if target == "" {
		target = "the default " + *kind + " API"
	}
	if w := keyWarning(keyVar, os.Getenv(keyVar) != "", *upstreamURL, defaultURL); w != "" {
		fmt.Fprintln(stderr, w)
	}
	url, note := openURL(ln)
	fmt.Fprintf(stderr, "toolshed: Messages API with tool search at %s/v1/messages, forwarding to %s%s\n", url, target, note)
	fmt.Fprintf(stderr, "toolshed: point a client at it, e.g. ANTHROPIC_BASE_URL=%s\n", url)
	ctx, stop := onSignals(stderr, *drain, 0, nil)
	defer stop()
	if searchLog != nil {
		// The answers to Claude Code's search learn from what its searches led to, as
		// the gateway's search does.
		p.Learn = learn.New(searchLog, learn.Options{Kept: 16, Logf: func(format string, args ...any) { logger.Warn(fmt.Sprintf(format, args...)) }})
		go p.Learn.Run(ctx)
	}
	return serveDrain(ctx, ln, p.Handler(), doors.limits(), *drain, fmt.Sprintf("the drain timeout (%v, --drain-timeout)", *drain), p.Stop)
}

// keyWarning is what proxy says at start-up when the variable keyVar that holds the
// upstream's key (ANTHROPIC_API_KEY, or OPENAI_API_KEY for openai) is empty: the
// upstream then gets no key at all, since a client's own key (x-api-key, Authorization)
// is never forwarded (it may be the proxy's --token, and is the client's to the proxy,
// not the operator's to the API). It names the variable, never a key. A server on this
// machine (a loopback upstream URL: Ollama, vLLM, llama.cpp, LM Studio) needs no key,
// so there is no warning for it; one elsewhere may, and the default APIs
// (api.anthropic.com, api.openai.com) do. upstreamURL is --upstream-url, "" for
// defaultURL.
func keyWarning(keyVar string, hasKey bool, upstreamURL, defaultURL string) string {
	if hasKey {
		return ""
	}
	const notForwarded = "a client's own key (x-api-key or Authorization) is not forwarded"
	if upstreamURL == "" {
		return fmt.Sprintf("toolshed: warning: $%s is empty, so requests reach %s with no API key and it will refuse them; %s. Set %s in the environment toolshed proxy runs in", keyVar, defaultURL, notForwarded, keyVar)
	}
	if onThisMachine(upstreamURL) {
		return ""
	}
	return fmt.Sprintf("toolshed: warning: $%s is empty, so requests reach %s with no API key; %s. If the upstream needs a key, set %s in the environment toolshed proxy runs in", keyVar, redact.String(upstreamURL), notForwarded, keyVar)
}

// onThisMachine reports whether a URL's host is a loopback address or localhost.
func onThisMachine(rawURL string) bool {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
