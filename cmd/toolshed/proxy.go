package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/hybrid"
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
	drain := fs.Duration("drain-timeout", gateway.DefaultDrainTimeout, "after SIGINT or SIGTERM, stop accepting and let requests in flight finish for up to `DURATION` (a second signal stops at once)")
	emb := addEmbedFlags(fs, hybrid.DefaultQueryTimeout)
	fs.Usage = func() {
		printUsage(stdout, fs, "[--listen ADDR] [--upstream-url URL] [--upstream-kind KIND] [--model NAME] [--max-iterations N] [--drain-timeout DURATION] "+
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
	var up messages.Upstream
	switch *kind {
	case "anthropic":
		up = &messages.Anthropic{BaseURL: *upstreamURL, APIKey: os.Getenv("ANTHROPIC_API_KEY"), Model: *model}
	case "openai":
		up = &messages.OpenAI{BaseURL: *upstreamURL, APIKey: os.Getenv("OPENAI_API_KEY"), Model: *model}
	default:
		return usageErr("--upstream-kind must be anthropic or openai, got %q", *kind)
	}
	if _, err := emb.on(); err != nil {
		return err
	}
	ln, err := listen("--listen", *listenFlag, *token != "", stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	p := &messages.Proxy{Upstream: up, MaxIterations: *maxIter, Logger: logger, ClientKey: *token, AllowOrigins: doors.origins, AllowHosts: doors.hosts}
	if err := emb.proxy(p, stderr); err != nil {
		return err
	}
	target := *upstreamURL
	if target == "" {
		target = "the default " + *kind + " API"
	}
	fmt.Fprintf(stderr, "toolshed: Messages API with tool search at http://%s/v1/messages, forwarding to %s\n", ln.Addr(), target)
	fmt.Fprintf(stderr, "toolshed: point a client at it, e.g. ANTHROPIC_BASE_URL=http://%s\n", ln.Addr())
	ctx, stop := onSignals(stderr, *drain, 0, nil)
	defer stop()
	return serveUntil(ctx, ln, p.Handler(), doors.limits(), *drain, fmt.Sprintf("the drain timeout (%v, --drain-timeout)", *drain))
}
