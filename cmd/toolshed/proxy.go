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
	listenFlag := fs.String("listen", "127.0.0.1:8787", "serve the Messages API on `ADDR` (a bare port binds 127.0.0.1)")
	upstreamURL := fs.String("upstream-url", "", "the upstream API's base `URL` (default https://api.anthropic.com, or https://api.openai.com/v1 for openai)")
	kind := fs.String("upstream-kind", "anthropic", "the upstream's wire format: `anthropic` (Messages API) or openai (Chat Completions)")
	model := fs.String("model", "", "send every request to this upstream `MODEL` instead of the one the client names")
	token := fs.String("token", os.Getenv("TOOLSHED_TOKEN"), "`TOKEN` clients must send as their API key (x-api-key or Authorization: Bearer; default $TOOLSHED_TOKEN)")
	doors := addDoorFlags(fs)
	maxIter := fs.Int("max-iterations", 0, "most upstream calls per request while the model searches (default 8; then stop_reason pause_turn)")
	drain := fs.Duration("drain-timeout", gateway.DefaultDrainTimeout, "after SIGINT or SIGTERM, stop accepting and let requests in flight finish for up to `DURATION` (a second signal stops at once)")
	emb := addEmbedFlags(fs, hybrid.DefaultQueryTimeout)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolshed proxy [--listen ADDR] [--upstream-url URL] [--upstream-kind anthropic|openai] [--model MODEL] [--token TOKEN]")
		fmt.Fprintln(stderr, "Serves POST /v1/messages and /v1/messages/count_tokens with Anthropic's tool search (defer_loading,")
		fmt.Fprintln(stderr, "tool_search_tool_regex/bm25, tool_reference; or the client's own search, as Claude Code's ToolSearch)")
		fmt.Fprintln(stderr, "for any model. The upstream key comes from the environment: ANTHROPIC_API_KEY, or OPENAI_API_KEY")
		fmt.Fprintln(stderr, "for openai. It is never logged, and replaces the client's key.")
		fs.PrintDefaults()
	}
	if err := parseFlagsOnly(fs, args, stderr); err != nil {
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
	url, note := openURL(ln)
	fmt.Fprintf(stderr, "toolshed: Messages API with tool search at %s/v1/messages, forwarding to %s%s\n", url, target, note)
	fmt.Fprintf(stderr, "toolshed: point a client at it, e.g. ANTHROPIC_BASE_URL=%s\n", url)
	ctx, stop := onSignals(stderr, *drain, 0, nil)
	defer stop()
	return serveUntil(ctx, ln, p.Handler(), doors.limits(), *drain, fmt.Sprintf("the drain timeout (%v, --drain-timeout)", *drain))
}
