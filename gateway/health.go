package gateway

import (
	"encoding/json"
	"net/http"
)

// handleHealth adds the health paths to mux: GET /healthz and GET /readyz, which need
// no token and tell nothing but ok or not (a load balancer or an orchestrator asks
// them), GET /status[/{profile}], which needs what /mcp needs and reports the
// servers of the caller's profile only, and, with Options.Metrics, GET /metrics, which
// covers every profile's servers and so needs the gateway's own token (see whole).
func (g *Gateway) handleHealth(mux *http.ServeMux, auth *httpAuth) {
	g.handleProbes(mux)
	if m := g.opts.Metrics; m != nil {
		metrics := m.Handler()
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
			if auth.whole(w, r) {
				metrics.ServeHTTP(w, r)
			}
		})
	}
	serveStatus := func(w http.ResponseWriter, r *http.Request) {
		if profile, _, ok := auth.profile(w, r); ok {
			writeJSON(w, http.StatusOK, map[string]any{"upstreams": g.statusOf(profile)})
		}
	}
	mux.HandleFunc("GET /status", serveStatus)
	mux.HandleFunc("GET /status/{profile}", serveStatus)
}

// ProbeHandler serves GET /healthz and GET /readyz, as Handler's handler does, and
// nothing else: for a listener of their own, which an orchestrator's probes reach
// however many connections clients hold on the main one. It checks no Host header: put
// it behind the same checks as the main front if it listens beyond loopback.
func (g *Gateway) ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	g.handleProbes(mux)
	return mux
}

// handleProbes adds GET /healthz and GET /readyz to mux.
func (g *Gateway) handleProbes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case g.draining.Load():
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		case g.ready():
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		default:
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		}
	})
}

// ready reports whether no upstream is still starting: each has been ready (and may be
// again, or restarting), has failed at least once, or does not run. An upstream that
// keeps failing thus leaves the gateway ready: every replica runs the same config, so
// a server that fails here fails on each of them, and a balancer that took them all out
// would lose every other server's tools too (toolshed serves those, says which server
// failed in /status and toolshed_upstream_up, and keeps restarting it). One slow to
// start for the first time holds it unready, as a first tools/list would miss its tools:
// for as long as its first start is bounded (Upstream.startTimeout: 2 minutes for a
// stdio server, which may be installing, unless its connect_timeout says otherwise).
// A draining gateway is not ready either (see the GET /readyz handler).
func (g *Gateway) ready() bool {
	for _, s := range g.Statuses() {
		if s.State == Connecting && s.Restarts == 0 {
			return false
		}
	}
	return true
}

// upstreamStatus is one server in GET /status.
type upstreamStatus struct {
	Name  string `json:"name"`
	State State  `json:"state"`
	Tools int    `json:"tools"`
	// Protocol is the MCP version toolshed speaks to the server (absent until it
	// first connects).
	Protocol string `json:"protocol,omitempty"`
	Error    string `json:"error,omitempty"`
}

// statusOf reports the servers a profile may use.
func (g *Gateway) statusOf(profile string) []upstreamStatus {
	scope := g.cfg.Profiles[profile].Scope
	ups := []upstreamStatus{}
	for _, s := range g.Statuses() {
		if !scope.AllowsServer(s.Name) {
			continue
		}
		e := ""
		if s.Err != nil {
			e = s.Err.Error()
		}
		ups = append(ups, upstreamStatus{Name: s.Name, State: s.State, Tools: s.Tools, Protocol: s.Protocol, Error: e})
	}
	return ups
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
