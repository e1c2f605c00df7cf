package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// get sends a GET with headers ("Host" sets the request's host).
func get(t *testing.T, url string, headers map[string]string) httpReply {
	t.Helper()
	return do(t, testupstream.Request(t, http.MethodGet, url, headers, nil))
}

type upstreamStatus struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Tools    int    `json:"tools"`
	Protocol string `json:"protocol"`
	Error    string `json:"error"`
}

// TestHTTPHealth: /healthz and /readyz answer anyone with no details; /status gives
// the details of the caller's profile, behind the token and Host checks of /mcp.
func TestHTTPHealth(t *testing.T) {
	t.Parallel()
	bad, off := testServer("bad", "exit"), testServer("off", "basic")
	off.Disabled = true
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic"), bad, off},
		Profiles: map[string]config.Profile{
			"beta-only": {Scope: policy.Scope{Servers: []string{"beta"}}, Token: "beta-secret"},
		}}
	// bad fails once and is not restarted during the test.
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off, BackoffMin: time.Hour, BackoffMax: time.Hour})
	url := serveHTTP(t, h, gateway.HTTPOptions{Token: "main-secret"})
	names := toolNames(t, h.client("", nil))
	alphaTools, betaTools := len(withPrefix(names, "alpha__")), len(withPrefix(names, "beta__"))
	if alphaTools == 0 || betaTools == 0 {
		t.Fatalf("the upstreams list no tools: %v", names)
	}

	// Liveness and readiness: no token, no details. One server failed and one is
	// disabled: the gateway is ready all the same.
	for _, path := range []string{"/healthz", "/readyz"} {
		r := get(t, url+path, nil)
		if r.status != http.StatusOK || r.body != "{\"status\":\"ok\"}\n" || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("GET %s = %d %s %q, want 200 {\"status\":\"ok\"}", path, r.status, r.header.Get("Content-Type"), r.body)
		}
	}

	// Details need the token, and show the caller's profile only.
	all := []upstreamStatus{
		{Name: "alpha", State: "ready", Tools: alphaTools, Protocol: "2025-11-25"},
		{Name: "beta", State: "ready", Tools: betaTools, Protocol: "2025-11-25"},
		{Name: "bad", State: "failed", Error: "could not start"},
		{Name: "off", State: "disabled"},
	}
	for _, tc := range []struct {
		name, path, auth string
		status           int
		want             []upstreamStatus
	}{
		{"no token", "/status", "", http.StatusUnauthorized, nil},
		{"wrong token", "/status", "Bearer nope", http.StatusUnauthorized, nil},
		{"gateway token", "/status", "Bearer main-secret", http.StatusOK, all},
		{"lowercase bearer", "/status", "bearer main-secret", http.StatusOK, all},
		{"profile token", "/status", "Bearer beta-secret", http.StatusOK, all[1:2]},
		{"gateway token at a profile", "/status/beta-only", "Bearer main-secret", http.StatusOK, all[1:2]},
		{"profile token at the default", "/status/nosuch", "Bearer beta-secret", http.StatusForbidden, nil},
		{"unknown profile", "/status/nosuch", "Bearer main-secret", http.StatusNotFound, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := map[string]string{}
			if tc.auth != "" {
				headers["Authorization"] = tc.auth
			}
			r := get(t, url+tc.path, headers)
			if r.status != tc.status {
				t.Fatalf("GET %s with %q = %d %q, want %d", tc.path, tc.auth, r.status, r.body, tc.status)
			}
			if tc.status != http.StatusOK {
				if strings.Contains(r.body, "alpha") || strings.Contains(r.body, "could not start") {
					t.Errorf("a refused request learns about the servers: %q", r.body)
				}
				return
			}
			var got struct {
				Upstreams []upstreamStatus `json:"upstreams"`
			}
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatalf("GET %s: %v in %q", tc.path, err, r.body)
			}
			if len(got.Upstreams) != len(tc.want) {
				t.Fatalf("GET %s = %s, want %d upstreams", tc.path, r.body, len(tc.want))
			}
			for i, w := range tc.want {
				g := got.Upstreams[i]
				if g.Name != w.Name || g.State != w.State || g.Tools != w.Tools || g.Protocol != w.Protocol || !strings.Contains(g.Error, w.Error) || (w.Error == "") != (g.Error == "") {
					t.Errorf("upstream %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}

	// Every path checks the Host, as /mcp does.
	for _, path := range []string{"/healthz", "/readyz", "/status"} {
		r := get(t, url+path, map[string]string{"Host": "evil.example", "Authorization": "Bearer main-secret"})
		if r.status != http.StatusForbidden || strings.Contains(r.body, "alpha") {
			t.Errorf("GET %s with Host evil.example = %d %q, want 403", path, r.status, r.body)
		}
	}
}

// TestHTTPReadyz: the gateway is not ready while a server starts for the first time,
// and is once that server has failed (one broken server must not hold it unready).
// ProbeHandler, the probes' own listener, says the same, and serves nothing else.
func TestHTTPReadyz(t *testing.T) {
	t.Parallel()
	stuck := testServer("stuck", "hang")
	stuck.ConnectTimeout = 5 * time.Second
	g, err := gateway.New(&config.Config{Servers: []config.Server{testServer("good", "basic"), stuck}},
		gateway.Options{Mode: policy.Off, BackoffMin: time.Hour, BackoffMax: time.Hour, Log: &testupstream.SyncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	probes := httptest.NewServer(g.ProbeHandler())
	t.Cleanup(probes.Close)

	for _, base := range []string{srv.URL, probes.URL} {
		if r := get(t, base+"/readyz", nil); r.status != http.StatusServiceUnavailable || r.body != "{\"status\":\"starting\"}\n" {
			t.Errorf("GET %s/readyz while stuck starts = %d %q, want 503 starting", base, r.status, r.body)
		}
		if r := get(t, base+"/healthz", nil); r.status != http.StatusOK {
			t.Errorf("GET %s/healthz while starting = %d %q, want 200", base, r.status, r.body)
		}
	}
	for _, path := range []string{"/status", "/mcp", "/metrics"} {
		if r := get(t, probes.URL+path, nil); r.status != http.StatusNotFound {
			t.Errorf("GET %s on the probe handler = %d %q, want 404", path, r.status, r.body)
		}
	}
	waitFor(t, "/readyz to answer 200 once stuck failed", func() bool {
		return get(t, srv.URL+"/readyz", nil).status == http.StatusOK
	})
	if r := get(t, probes.URL+"/readyz", nil); r.status != http.StatusOK {
		t.Errorf("GET /readyz on the probe handler once ready = %d %q, want 200", r.status, r.body)
	}
	for _, s := range g.Statuses() {
		if s.Name == "stuck" && s.State != gateway.Failed {
			t.Errorf("ready with stuck %s, want failed", s.State)
		}
	}
}
