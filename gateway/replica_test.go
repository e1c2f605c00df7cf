package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

func TestCheckReplicaID(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"toolshed-1", true}, {"a", true}, {"0", true}, {long, true}, {"toolshed-7d9f8b-x2k4q", true},
		{"", false}, {long + "a", false}, {"Toolshed", false}, {"-a", false}, {"a-", false},
		{"a.b", false}, {"a_b", false}, {"a b", false}, {"ä", false}, {"a\n", false},
	} {
		err := gateway.CheckReplicaID(tc.id)
		if (err == nil) != tc.ok {
			t.Errorf("CheckReplicaID(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, gateway.ErrReplicaID) || !strings.Contains(err.Error(), "DNS label")) {
			t.Errorf("CheckReplicaID(%q): %v does not say what a replica id must be", tc.id, err)
		}
	}
}

// A replica names itself in the session ids it issues; a session id that names another
// replica (or none) is unknown here, 404, so that its client initializes again.
func TestReplicaOwnedSessionIDs(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{ReplicaID: "toolshed-2"}) + "/mcp"
	cs := httpClient(t, endpoint, nil, nil, "")
	id := cs.ID()
	if !regexp.MustCompile(`^toolshed-2\.[A-Z2-7]{26}$`).MatchString(id) {
		t.Fatalf("session id %q: want toolshed-2. and 26 characters of base32", id)
	}
	if got := resultText(call(t, cs, "alpha__echo", map[string]any{"text": "owned"})); got != "owned" {
		t.Errorf("a call on the replica's session: %q", got)
	}
	random := strings.TrimPrefix(id, "toolshed-2.")
	for _, other := range []string{"toolshed-1." + random, random, "toolshed-2.AAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		resp, body := rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"}}}`,
			map[string]string{"Mcp-Session-Id": other, "Mcp-Protocol-Version": "2025-11-25"})
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("session id %q on replica toolshed-2: %d %s, want 404", other, resp.StatusCode, body)
		}
	}
}

// A replica id that is not a DNS label is refused by every MCP request, with why,
// rather than issuing ids a balancer would route wrong.
func TestBadReplicaIDRefusesRequests(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{ReplicaID: "Replica.1"}) + "/mcp"
	resp, body := rawPOST(t, context.Background(), endpoint, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(body, "ReplicaID") || !strings.Contains(body, "DNS label") {
		t.Errorf("initialize with a bad replica id: %d %s", resp.StatusCode, body)
	}
}
