package gateway_test

import (
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// TestInstructions: a client is given toolshed's instructions and, under each server's
// name, the instructions of the servers its profile may use, each cut at 2 KB (Claude
// Code's cap), over stdio-like sessions of both eras; a profile that may not use a
// server gets none of its.
func TestInstructions(t *testing.T) {
	alpha := testServer("alpha", "basic")
	alpha.Env[instructionsEnv] = "Use alpha__add for sums."
	beta := testServer("beta", "basic")
	beta.Env[instructionsEnv] = strings.Repeat("é", 3000) // 6,000 bytes
	gamma := testServer("gamma", "basic")                 // no instructions
	cfg := &config.Config{Servers: []config.Server{alpha, beta, gamma},
		Profiles: map[string]config.Profile{"onlygamma": {Scope: policy.Scope{Servers: []string{"gamma"}}}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On})
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		cs := h.clientVersion("", nil, version)
		if v := cs.InitializeResult().ProtocolVersion; v != version {
			t.Fatalf("negotiated %s, want %s", v, version)
		}
		got := cs.InitializeResult().Instructions
		i, j := strings.Index(got, "## Server alpha\nUse alpha__add for sums."), strings.Index(got, "## Server beta\n")
		if !strings.HasPrefix(got, "toolshed aggregates") || i < 0 || j < i || strings.Contains(got, "Server gamma") {
			t.Fatalf("%q client's instructions:\n%.300s", version, got)
		}
		b := got[j+len("## Server beta\n"):]
		if len(b) > 2048 || !strings.HasSuffix(b, "[…]") || !strings.HasPrefix(b, "éé") {
			t.Errorf("beta's instructions: %d bytes, ending %q", len(b), b[max(0, len(b)-10):])
		}
	}
	if got := h.client("onlygamma", nil).InitializeResult().Instructions; strings.Contains(got, "alpha") || strings.Contains(got, "## Server") {
		t.Errorf("a profile without alpha and beta got %q", got)
	}
}
