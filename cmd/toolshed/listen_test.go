package main

import (
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestWildcardListenURLs: serve --http, --metrics-addr, --probe-addr and proxy --listen on 0.0.0.0
// print a URL a user can open (the loopback one; the wildcard address Go reports, [::],
// is none) and say that they listen on every interface; the URLs printed answer. They
// printed http://[::]:PORT/mcp.
func TestWildcardListenURLs(t *testing.T) {
	bin := toolshedBinary(t)
	anyPort := func() string {
		_, port, _ := net.SplitHostPort(freeAddr(t))
		return port
	}
	mcpPort, metricsPort, probePort, proxyPort := anyPort(), anyPort(), anyPort(), anyPort()
	serve := startCommand(t, bin, nil, []string{"serve", "--catalog", "testdata/small.json", "--token", "secret",
		"--http", "0.0.0.0:" + mcpPort, "--metrics-addr", "0.0.0.0:" + metricsPort, "--probe-addr", "0.0.0.0:" + probePort}, testupstream.ServersReady)
	proxy := startCommand(t, bin, []string{"ANTHROPIC_API_KEY=sk-test"}, []string{"proxy", "--token", "secret", "--listen", "0.0.0.0:" + proxyPort},
		func(log string) bool { return strings.Contains(log, "ANTHROPIC_BASE_URL=") })
	for _, tc := range []struct {
		log  string
		line *regexp.Regexp
		port string
		path string // what the URL answers 200 to, without a token
	}{
		{serve.String(), regexp.MustCompile(`serving MCP over Streamable HTTP at (\S+)/mcp .*`), mcpPort, "/healthz"},
		{serve.String(), regexp.MustCompile(`serving Prometheus metrics at (\S+)/metrics.*`), metricsPort, "/metrics"},
		{serve.String(), regexp.MustCompile(`serving health probes at (\S+)/healthz and \S+/readyz.*`), probePort, "/readyz"},
		{proxy.String(), regexp.MustCompile(`Messages API with tool search at (\S+)/v1/messages.*`), proxyPort, "/healthz"},
		{proxy.String(), regexp.MustCompile(`point a client at it, e.g. ANTHROPIC_BASE_URL=(\S+)`), proxyPort, "/healthz"},
	} {
		m := tc.line.FindStringSubmatch(tc.log)
		if m == nil {
			t.Errorf("no line matching %s in:\n%s", tc.line, tc.log)
			continue
		}
		if want := "http://127.0.0.1:" + tc.port; m[1] != want {
			t.Errorf("%q: URL %s, want %s", m[0], m[1], want)
		}
		if !strings.Contains(tc.line.String(), "BASE_URL") && !strings.HasSuffix(m[0], "it listens on every interface: other machines use this machine's address, port "+tc.port) {
			t.Errorf("%q does not say it listens on every interface", m[0])
		}
		resp, err := http.Get(m[1] + tc.path)
		if err != nil {
			t.Errorf("GET %s%s: %v", m[1], tc.path, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s%s: %s", m[1], tc.path, resp.Status)
		}
	}
}
