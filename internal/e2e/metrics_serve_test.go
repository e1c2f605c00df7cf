//go:build e2e && linux

package e2e

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/promtest"
)

// toolshed serve over stdio with --metrics-addr given a bare port, in front of the real
// npm server-everything: the metrics are served on loopback without a token, and count
// the stdio session, the upstream and a call as the client saw them.
func TestServeStdioMetricsAddr(t *testing.T) {
	config, _, _ := recordedEverything(t)
	p := startSignalled(t, true, nil, append(serveArgs(config, "5s"), "--metrics-addr", "0")...)
	url := p.waitStderr(t, regexp.MustCompile(`serving Prometheus metrics at (http://(\S+)/metrics)`), time.Minute)
	if !strings.HasPrefix(url[2], "127.0.0.1:") {
		t.Errorf("--metrics-addr 0 listens on %s, want loopback (127.0.0.1)", url[2])
	}
	p.stdioSession(t, `{}`, longTool)
	p.send(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	list := p.expect(t, "tools/list result", time.Minute, func(b []byte) bool { _, ok := resultOfID(b, `"list"`); return ok })
	listed := float64(strings.Count(string(list), `"name":"everything__`))
	p.send(t, callMessage("echo", "everything__echo", `{"message":"hi"}`))
	res := p.expect(t, "the echo result", time.Minute, func(b []byte) bool { _, ok := resultOfID(b, `"echo"`); return ok })
	if strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("echo failed: %s", res)
	}
	got := promtest.Scrape(t, url[1], "")
	for _, c := range []struct {
		family string
		labels map[string]string
		want   float64
	}{
		{"toolshed_sessions", map[string]string{"transport": "stdio"}, 1},
		{"toolshed_sessions_started_total", map[string]string{"transport": "stdio"}, 1},
		{"toolshed_sessions", map[string]string{"transport": "http"}, 0},
		{"toolshed_upstream_up", map[string]string{"server": "everything"}, 1},
		{"toolshed_upstream_tools", map[string]string{"server": "everything"}, listed},
		{"toolshed_calls_total", map[string]string{"server": "everything", "outcome": "ok"}, 1},
		{"toolshed_calls_total", map[string]string{"server": "everything", "outcome": "tool_error"}, 0},
		{"toolshed_request_duration_seconds", map[string]string{"op": "call"}, 1},
		// Tool search is off: the session listed every tool, and saved nothing.
		{"toolshed_tokens_saved_total", map[string]string{}, 0},
	} {
		if v, ok := got.Value(c.family, c.labels); v != c.want || !ok {
			t.Errorf("%s%v = %v (present %v), want %v", c.family, c.labels, v, ok, c.want)
		}
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.waitExit(t, stopBound); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
}
