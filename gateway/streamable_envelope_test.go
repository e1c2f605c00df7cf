package gateway_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// envelope is the _meta of a 2026-07-28 request, as the TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0) sends it on every request.
const envelope = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ts2-client","version":"2.4.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"sampling":{}}}`

// modernHeaders are the headers of a 2026-07-28 client's POST.
var modernHeaders = map[string]string{"MCP-Protocol-Version": "2026-07-28"}

// refusal2026 is toolshed's answer to a request of protocol 2026-07-28 with id id (raw
// JSON), which it does not serve yet.
func refusal2026(id, requested string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32022,"message":"protocol version \"` + requested +
		`\" is not supported: toolshed speaks 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05; start a session with initialize",` +
		`"data":{"supported":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"` + requested + `"}}}`
}

// A POST without a session whose request is of protocol 2026-07-28 (an envelope in
// _meta) opens no session and takes no slot: such POSTs, which carry no session id a
// client could end, once held every slot until the idle timeout (30 minutes), and every
// other client was refused.
func TestHTTPEnvelopedPOSTsOpenNoSession(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: 2}) + "/mcp"
	for i, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + envelope + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + envelope + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"},` + envelope + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + envelope + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"resources/list","params":{` + envelope + `}}`,
	} {
		r := post(t, endpoint, modernHeaders, strings.NewReader(body))
		if r.status != http.StatusBadRequest || !strings.Contains(r.body, `"code":-32022`) || r.header.Get("Mcp-Session-Id") != "" {
			t.Errorf("enveloped POST %d: %d %q %s, want 400 with error -32022 and no session", i+1, r.status, r.header.Get("Mcp-Session-Id"), r.body)
		}
	}
	if joined, _ := h.g.ClientCounts(); joined != 0 {
		t.Errorf("%d client sessions after the enveloped POSTs, want 0", joined)
	}
	// Both slots are free: two clients initialize.
	for i := range 2 {
		if r := post(t, endpoint, nil, strings.NewReader(initializeBody)); !initialized(r) {
			t.Fatalf("initialize %d after the enveloped POSTs: %d %s", i+1, r.status, r.body)
		}
	}
}

// The refusal of a 2026-07-28 request is the protocol's: HTTP 400 and the JSON-RPC error
// UnsupportedProtocolVersion (-32022) with the versions toolshed speaks, for the request
// that asked, whatever its method, id, version or batch. server/discover, the probe of
// a client that speaks both eras, is answered with those versions instead, and the
// client falls back to initialize.
func TestHTTPEnvelopeRefusal(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: 1}) + "/mcp"
	for _, tc := range []struct {
		name    string
		headers map[string]string
		body    string
		want    string
	}{
		{"tools/list", modernHeaders,
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + envelope + `}}`,
			refusal2026("1", "2026-07-28")},
		{"a call with a string id, no version header", nil,
			`{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"},` + envelope + `}}`,
			refusal2026(`"c-7"`, "2026-07-28")},
		{"a later version", map[string]string{"MCP-Protocol-Version": "2027-01-01"},
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			refusal2026("2", "2027-01-01")},
		{"not a version", nil,
			`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"latest"}}}`,
			refusal2026("3", "latest")},
		{"an escaped key", modernHeaders,
			`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			refusal2026("6", "2026-07-28")},
		{"a batch (2025-03-26)", nil,
			`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{` + envelope + `}}]`,
			refusal2026("5", "2026-07-28")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, endpoint, tc.headers, strings.NewReader(tc.body))
			if r.status != http.StatusBadRequest || r.header.Get("Content-Type") != "application/json" || r.body != tc.want {
				t.Errorf("got %d %q %s\nwant 400 \"application/json\" %s", r.status, r.header.Get("Content-Type"), r.body, tc.want)
			}
			if s := r.header.Get("Mcp-Session-Id"); s != "" {
				t.Errorf("the refusal named a session: %s", s)
			}
		})
	}
	// The probe is answered, with the versions of the refusal, and gives its slot back:
	// the client's initialize that follows is not refused for the cap of one session.
	for i := range 3 {
		r := post(t, endpoint, modernHeaders, strings.NewReader(`{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{`+envelope+`}}`))
		if r.status != http.StatusOK || !strings.Contains(r.body, `"supportedVersions":["2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`) {
			t.Fatalf("server/discover %d: %d %s", i+1, r.status, r.body)
		}
		init := post(t, endpoint, nil, strings.NewReader(initializeBody))
		if !initialized(init) {
			t.Fatalf("initialize after server/discover %d: %d %s", i+1, init.status, init.body)
		}
		del := testupstream.Request(t, http.MethodDelete, endpoint, map[string]string{"Mcp-Session-Id": init.header.Get("Mcp-Session-Id")}, nil)
		if d := do(t, del); d.status != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", d.status, d.body)
		}
	}
}

// A go-sdk client that speaks 2026-07-28 (v1.8.0, no version asked for) probes with
// server/discover, falls back to 2025-11-25 and works, at a cap of one session.
func TestHTTPModernClientFallsBack(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: 1}) + "/mcp"
	cs := httpClient(t, endpoint, nil, nil, "")
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %s, want 2025-11-25", v)
	}
	if names := toolNames(t, cs); !slices.Contains(names, "alpha__echo") {
		t.Errorf("tools: %v", names)
	}
}
