package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
)

// TestSetLevel checks that logging/setLevel takes MCP's eight levels and refuses
// anything else with invalid params and a message that lists them.
func TestSetLevel(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{})
	cs := h.client("", nil)
	ctx := context.Background()
	for _, level := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
			t.Errorf("setLevel %q: %v", level, err)
		}
	}
	for _, level := range []string{"verbose", "warn", "DEBUG", "Info", "", "debug "} {
		err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("setLevel %q = %v, want a JSON-RPC error %d", level, err, jsonrpc.CodeInvalidParams)
			continue
		}
		for _, want := range []string{"not a logging level", "debug, info, notice, warning, error, critical, alert, emergency"} {
			if !strings.Contains(werr.Message, want) {
				t.Errorf("setLevel %q: message %q lacks %q", level, werr.Message, want)
			}
		}
	}
	// The session still works.
	if res := call(t, cs, "alpha__echo", map[string]any{"text": "ok"}); resultText(res) != "ok" {
		t.Errorf("after refused levels: %s", resultText(res))
	}
}
