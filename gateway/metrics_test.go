package gateway_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/promtest"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/metrics"
	"github.com/toolshed/toolshed/policy"
)

// pidWrapped runs a server's command through a shell that writes its pid to a file
// first, so that the test can kill the real server and watch toolshed restart it.
func pidWrapped(t *testing.T, name, cmd string, args []string) (config.Server, string) {
	pidFile := filepath.Join(t.TempDir(), name+".pid")
	return config.Server{Name: name, Type: config.Stdio, Command: "sh", Args: []string{"-c", "echo $$ > '" + pidFile + "'; exec " + testupstream.ShellLine(cmd, args)}}, pidFile
}

// The metrics of a real gateway, served over Streamable HTTP in front of the real npm
// everything and filesystem servers, after known traffic from real go-sdk clients:
// every counter equals what the clients saw, searches, describes and calls by outcome
// (ok, the server's own error, refused by the hooks or for an unknown tool, refused
// arguments), sessions, an upstream killed and restarted, and tokens.
func TestMetricsCountWhatClientsSaw(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("metrics\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ecmd, eargs := testupstream.Everything(t)
	everything, pidFile := pidWrapped(t, "everything", ecmd, eargs)
	fcmd, fargs := testupstream.Filesystem(t, dir)
	m := metrics.New(gateway.Version, "replica-1")
	h := startGateway(t, &config.Config{
		Servers: []config.Server{everything, {Name: "filesystem", Type: config.Stdio, Command: fcmd, Args: fargs}},
		Hooks:   config.Hooks{Deny: []string{"everything__get-env"}},
	}, gateway.Options{Mode: policy.On, Metrics: m})
	const token = "metrics-token"
	base := serveHTTP(t, h, gateway.HTTPOptions{Token: token})
	auth := map[string]string{"Authorization": "Bearer " + token}

	// Before any traffic: the upstreams are up, with their tools, nothing counted.
	before := promtest.Scrape(t, base+"/metrics", token)
	for _, name := range []string{"everything", "filesystem"} {
		st := status(h, name)
		if v, _ := before.Value("toolshed_upstream_up", map[string]string{"server": name}); v != 1 {
			t.Errorf("toolshed_upstream_up{server=%q} = %v, want 1 (state %s)", name, v, st.State)
		}
		if v, _ := before.Value("toolshed_upstream_tools", map[string]string{"server": name}); int(v) != st.Tools || st.Tools == 0 {
			t.Errorf("toolshed_upstream_tools{server=%q} = %v, want %d", name, v, st.Tools)
		}
		if v, ok := before.Value("toolshed_calls_total", map[string]string{"server": name, "outcome": "ok"}); !ok || v != 0 {
			t.Errorf("toolshed_calls_total{server=%q,outcome=ok} = %v (present %v) before any call, want 0", name, v, ok)
		}
	}
	if v, _ := before.Value("toolshed_build_info", map[string]string{"version": gateway.Version, "replica": "replica-1"}); v != 1 {
		t.Errorf("toolshed_build_info = %v, want 1", v)
	}
	if v, _ := before.Value("toolshed_catalog_tokens", map[string]string{}); int(v) != h.g.Catalog().Tokens() || v == 0 {
		t.Errorf("toolshed_catalog_tokens = %v, want the catalog's %d", v, h.g.Catalog().Tokens())
	}

	// What the clients see, tallied as they see it.
	searches := map[string]int{}
	describes := map[string]int{}
	calls := map[[2]string]int{} // server, outcome
	c1 := httpClient(t, base+"/mcp", auth, nil, "")
	c2 := httpClient(t, base+"/mcp", auth, nil, "")
	for _, cs := range []*mcp.ClientSession{c1, c2} {
		for range 2 { // a second tools/list saves nothing more
			if _, err := cs.ListTools(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	search := func(cs *mcp.ClientSession, query any) {
		res := call(t, cs, "tool_search", map[string]any{"query": query})
		searches[map[bool]string{false: "ok", true: "error"}[res.IsError]]++
	}
	search(c1, "echo a message back")
	search(c2, "read a text file")
	search(c1, "")
	describe := func(cs *mcp.ClientSession, name string) {
		res := call(t, cs, "tool_describe", map[string]any{"name": name})
		describes[map[bool]string{false: "ok", true: "error"}[res.IsError]]++
	}
	describe(c1, "everything__echo")
	describe(c2, "nosuch__tool")
	toolCall := func(cs *mcp.ClientSession, name string, args map[string]any, want, server, outcome string) {
		t.Helper()
		res := call(t, cs, "tool_call", map[string]any{"name": name, "arguments": args})
		if got := errorCode(t, res); got != want || (want == "" && res.IsError != (outcome == "tool_error")) {
			t.Fatalf("tool_call %s gave %q (%s), want error code %q as a %s call", name, got, resultText(res), want, outcome)
		}
		calls[[2]string{server, outcome}]++
	}
	for range 3 {
		toolCall(c1, "everything__echo", map[string]any{"message": "hi"}, "", "everything", "ok")
	}
	toolCall(c2, "filesystem__read_text_file", map[string]any{"path": filepath.Join(dir, "notes.txt")}, "", "filesystem", "ok")
	// The server's own error: a path outside its allowed directory.
	toolCall(c2, "filesystem__read_text_file", map[string]any{"path": "/etc/passwd"}, "", "filesystem", "tool_error")
	toolCall(c1, "everything__get-env", map[string]any{}, "permission_denied", "everything", "refused")
	toolCall(c1, "nosuch__tool", map[string]any{}, "invalid_tool_input", "", "refused")
	toolCall(c2, "everything__echo", map[string]any{"message": 42}, "invalid_tool_input", "everything", "failed")

	// One session ends: the gauge follows, the started counter does not.
	c2.Close()
	waitFor(t, "the closed session to leave the sessions gauge", func() bool {
		v, _ := promtest.Scrape(t, base+"/metrics", token).Value("toolshed_sessions", map[string]string{"transport": "http"})
		return v == 1
	})

	// The everything server dies and toolshed restarts it.
	killServer(t, pidFile)
	waitFor(t, "everything to restart", func() bool {
		st := status(h, "everything")
		return st.Restarts == 1 && st.State == gateway.Ready
	})
	toolCall(c1, "everything__echo", map[string]any{"message": "back"}, "", "everything", "ok")

	got := promtest.Scrape(t, base+"/metrics", token)
	check := func(family string, labels map[string]string, want float64) {
		t.Helper()
		if v, ok := got.Value(family, labels); v != want || !ok {
			t.Errorf("%s%v = %v (present %v), want %v", family, labels, v, ok, want)
		}
	}
	total := func(m map[string]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	for _, o := range []string{"ok", "error"} {
		check("toolshed_searches_total", map[string]string{"outcome": o}, float64(searches[o]))
		check("toolshed_describes_total", map[string]string{"outcome": o}, float64(describes[o]))
	}
	if searches["error"] == 0 || describes["error"] == 0 {
		t.Errorf("the traffic has no failed search (%v) or describe (%v): it does not test the error outcome", searches, describes)
	}
	nCalls := 0
	for _, server := range []string{"everything", "filesystem"} {
		for _, o := range metrics.CallOutcomes {
			check("toolshed_calls_total", map[string]string{"server": server, "outcome": o}, float64(calls[[2]string{server, o}]))
			nCalls += calls[[2]string{server, o}]
		}
	}
	check("toolshed_calls_total", map[string]string{"server": "", "outcome": "refused"}, float64(calls[[2]string{"", "refused"}]))
	nCalls += calls[[2]string{"", "refused"}]
	// The error codes the clients saw: the empty query, the unknown tool described, the
	// denied call, the unknown tool called and the bad arguments (both
	// invalid_tool_input), the server's own error.
	for _, c := range []struct {
		op, code string
		want     float64
	}{
		{"search", "invalid_tool_input", 1}, {"describe", "invalid_tool_input", 1},
		{"call", "permission_denied", 1}, {"call", "invalid_tool_input", 2}, {"call", "tool_error", 1},
		{"call", "too_many_requests", 0}, {"search", "unavailable", 0},
	} {
		check("toolshed_errors_total", map[string]string{"op": c.op, "code": c.code}, c.want)
	}
	check("toolshed_request_duration_seconds", map[string]string{"op": "search"}, float64(total(searches)))
	check("toolshed_request_duration_seconds", map[string]string{"op": "describe"}, float64(total(describes)))
	check("toolshed_request_duration_seconds", map[string]string{"op": "call"}, float64(nCalls))
	check("toolshed_sessions_started_total", map[string]string{"transport": "http"}, 2)
	check("toolshed_sessions", map[string]string{"transport": "http"}, 1)
	check("toolshed_sessions_started_total", map[string]string{"transport": "stdio"}, 0)
	check("toolshed_upstream_restarts_total", map[string]string{"server": "everything"}, 1)
	check("toolshed_upstream_restarts_total", map[string]string{"server": "filesystem"}, 0)
	check("toolshed_upstream_up", map[string]string{"server": "everything"}, 1)
	check("toolshed_upstream_tools", map[string]string{"server": "everything"}, float64(status(h, "everything").Tools))

	// Each session's first tools/list saved the same: what every tool costs minus
	// the bridge (everything is deferred).
	saved, _ := got.Value("toolshed_tokens_saved_total", map[string]string{})
	all, _ := got.Value("toolshed_catalog_tokens", map[string]string{})
	if per := saved / 2; saved <= 0 || per >= all || per < all/2 {
		t.Errorf("toolshed_tokens_saved_total = %v after 2 sessions listed tools, want twice a session's saving, which is below the catalog's %v tokens and more than half of it", saved, all)
	}

	// /metrics needs the token /status needs.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %s, want 401", resp.Status)
	}
}

// A gateway without metrics serves no /metrics, and two gateways in one process count
// apart (each Metrics has its own registry).
func TestMetricsOffAndApart(t *testing.T) {
	off := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On})
	resp, err := http.Get(serveHTTP(t, off, gateway.HTTPOptions{}) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics of a gateway without metrics: %s, want 404", resp.Status)
	}

	var bases [2]string
	var clients [2]*mcp.ClientSession
	for i := range bases {
		h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On, Metrics: metrics.New(gateway.Version, "")})
		bases[i] = serveHTTP(t, h, gateway.HTTPOptions{})
		clients[i] = httpClient(t, bases[i]+"/mcp", nil, nil, "")
	}
	call(t, clients[0], "tool_search", map[string]any{"query": "echo"})
	for i, want := range []float64{1, 0} {
		if v, _ := promtest.Scrape(t, bases[i]+"/metrics", "").Value("toolshed_searches_total", map[string]string{"outcome": "ok"}); v != want {
			t.Errorf("gateway %d: toolshed_searches_total{outcome=ok} = %v, want %v", i, v, want)
		}
	}
}

// TestMetricsNeedTheGatewayToken checks that /metrics on the main listener, which covers
// every profile's servers, is not readable with one profile's token: that token's holder
// sees only its own servers in /status and must not learn the others' from the metrics.
func TestMetricsNeedTheGatewayToken(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")},
		Profiles: map[string]config.Profile{
			"alpha-only": {Scope: policy.Scope{Servers: []string{"alpha"}}, Token: "alpha-secret"},
		}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On, Metrics: metrics.New(gateway.Version, "")})
	for _, tc := range []struct {
		name, gatewayToken, auth string
		status                   int
	}{
		{"the gateway's token", "main-secret", "Bearer main-secret", http.StatusOK},
		{"a profile's token", "main-secret", "Bearer alpha-secret", http.StatusForbidden},
		{"no token", "main-secret", "", http.StatusUnauthorized},
		{"profile tokens only", "", "Bearer alpha-secret", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", serveHTTP(t, h, gateway.HTTPOptions{Token: tc.gatewayToken})+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("GET /metrics with %q: %s %s, want %d", tc.auth, resp.Status, body, tc.status)
			}
			if tc.status == http.StatusOK && !strings.Contains(string(body), `toolshed_upstream_up{server="beta"}`) {
				t.Errorf("the gateway's token got metrics without every server:\n%.500s", body)
			}
			if tc.status == http.StatusForbidden && (strings.Contains(string(body), "beta") || !strings.Contains(string(body), "--metrics-addr")) {
				t.Errorf("a refused profile token got %q: it must name no server and point to --metrics-addr", body)
			}
		})
	}
}
