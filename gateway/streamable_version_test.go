package gateway_test

import (
	"net/http"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// An MCP-Protocol-Version that is no version at all is refused as the SDK refuses an
// unsupported one; a newer, well-formed version is the session's to answer.
func TestHTTPProtocolVersionHeaderShape(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	session := ""
	rawSessionID(t, endpoint, &session)
	for _, tc := range []struct {
		version string
		status  int
	}{
		{"banana", http.StatusBadRequest},
		{"2025-11-25; drop", http.StatusBadRequest},
		{"2024-01-01", http.StatusBadRequest},
		{"2025-11-25", http.StatusOK},
	} {
		resp := send(t, http.MethodPost, endpoint, session, tc.version, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		if resp == nil {
			t.FailNow()
		}
		b := bodyWithin(t, "ping", resp)
		if resp.StatusCode != tc.status {
			t.Errorf("MCP-Protocol-Version %q: %d %s, want %d", tc.version, resp.StatusCode, b, tc.status)
		}
	}
}
