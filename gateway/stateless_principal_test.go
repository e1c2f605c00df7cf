package gateway_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// TestStatelessLogNeverToAnotherPrincipal: a stateless HTTP client is the principal of
// its token and profile, as a session's client is. Its server's log message, sent after
// its call ended while a client of the gateway's own (no token) has a call running on
// that server, could be either's: it goes to toolshed's log, never to the other client.
// Every stateless POST counted as the principal of no profile and no token, the same
// principal as that other client, so the message went to it.
func TestStatelessLogNeverToAnotherPrincipal(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "logs")}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{Stateless: true, Token: "stateless-secret"}) + "/mcp"
	local, localLogs := loggingClient(t, h, "", nil)
	resp, body := rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__log_later","arguments":{"text":"the stateless client's secret","ms":1500}}}`,
		map[string]string{"Authorization": "Bearer stateless-secret"})
	if resp.StatusCode != 200 || !strings.Contains(body, "will log") {
		t.Fatalf("stateless log_later: %d %s", resp.StatusCode, body)
	}
	call(t, local, "alpha__slow", map[string]any{"steps": 60})
	waitFor(t, "the stateless call's log message", func() bool {
		return strings.Contains(h.log.String(), "the stateless client's secret") || localLogs.has("the stateless client's secret")
	})
	if localLogs.has("the stateless client's secret") {
		t.Fatalf("a client without the token got the log message of a stateless client's call: %q", localLogs.all())
	}
}
