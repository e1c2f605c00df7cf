package gateway_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
)

// TestUpstreamErrorsHideSecrets: an HTTP upstream whose URL carries a key in its query
// (?api_key=, as some hosted MCP servers take one) and one whose error answer echoes
// the bearer token it was sent fail without the key reaching the log or the status
// (/readyz, the start-up progress), which the one redaction rule hides.
func TestUpstreamErrorsHideSecrets(t *testing.T) {
	const urlKey, bearer = "url-secret-4711", "sk-header-secret-0815"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "invalid credentials: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
	}))
	defer echo.Close()
	cfg := &config.Config{Servers: []config.Server{
		{Name: "down", Type: config.HTTP, URL: "http://" + down + "/mcp?api_key=" + urlKey},
		{Name: "echo", Type: config.HTTP, URL: echo.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer " + bearer}},
	}}
	h := startGateway(t, cfg, gateway.Options{})
	failed := 0
	for _, s := range h.g.Statuses() {
		if s.Err == nil {
			continue
		}
		failed++
		if e := s.Err.Error(); strings.Contains(e, urlKey) || strings.Contains(e, bearer) {
			t.Errorf("upstream %s's status error shows a key: %s", s.Name, e)
		}
	}
	if failed != 2 {
		t.Errorf("%d upstreams failed with an error; want both (%+v)", failed, h.g.Statuses())
	}
	if log := h.log.String(); strings.Contains(log, urlKey) || strings.Contains(log, bearer) {
		t.Errorf("the log shows a key:\n%s", log)
	}
}
