package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// rpcError is the JSON-RPC error answer to request id (raw JSON) with code and message,
// as the front writes it.
func rpcError(id string, code int, message string) string {
	m, _ := json.Marshal(message)
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(m) + `}}`
}

// A POST without a session whose request is of protocol 2026-07-28 (an envelope in
// _meta) is served on a session of its own that ends with it: it takes no slot, and
// names no session. Such POSTs, which carry no session id a client could end, once
// held every slot until the idle timeout (30 minutes), and every other client was
// refused.
func TestHTTPEnvelopedPOSTsOpenNoSession(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: 2}) + "/mcp"
	ended := gateway.StatelessEnded()
	for i, tc := range []struct{ method, name, body, want string }{
		{"tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + envelope + `}}`, `"name":"alpha__echo"`},
		{"tools/list", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + envelope + `}}`, `"name":"alpha__echo"`},
		{"tools/call", "alpha__echo", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"},` + envelope + `}}`, `"resultType":"complete"`},
		{"resources/list", "", `{"jsonrpc":"2.0","id":5,"method":"resources/list","params":{` + envelope + `}}`, `"resources":`},
	} {
		headers := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": tc.method}
		if tc.name != "" {
			headers["Mcp-Name"] = tc.name
		}
		r := post(t, endpoint, headers, strings.NewReader(tc.body))
		if r.status != http.StatusOK || !strings.Contains(r.body, tc.want) || r.header.Get("Mcp-Session-Id") != "" {
			t.Errorf("enveloped POST %d: %d %q %s, want 200 with %s and no session", i+1, r.status, r.header.Get("Mcp-Session-Id"), r.body, tc.want)
		}
	}
	if joined, stateless := h.g.ClientCounts(); joined != 0 || stateless != 0 {
		t.Errorf("%d client sessions and %d POST sessions after the enveloped POSTs, want none", joined, stateless)
	}
	if n := gateway.StatelessEnded() - ended; n < 4 {
		t.Errorf("%d POST sessions ended, want 4", n)
	}
	// Both slots are free: two clients initialize.
	for i := range 2 {
		if r := post(t, endpoint, nil, strings.NewReader(initializeBody)); !initialized(r) {
			t.Fatalf("initialize %d after the enveloped POSTs: %d %s", i+1, r.status, r.body)
		}
	}
}

// A modern request the front cannot serve is refused in the protocol's terms, as the
// go-sdk's own stateless handler refuses it: the JSON-RPC error, for the request that
// asked, with the HTTP status MCP 2026-07-28 gives its code, and no session.
func TestHTTPEnvelopeRefusal(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	for _, stateless := range []bool{false, true} {
		endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: 1, Stateless: stateless}) + "/mcp"
		const env26 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		list := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
		for _, tc := range []struct {
			name    string
			headers map[string]string
			body    string
			status  int
			want    string
		}{
			{"no envelope", list, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, 400,
				rpcError("1", -32602, `Invalid params: tools/list has no _meta "io.modelcontextprotocol/protocolVersion": every request of MCP 2026-07-28 carries the envelope (protocolVersion, clientCapabilities, clientInfo)`)},
			{"no capabilities", list, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 400,
				rpcError("2", -32602, `Invalid params: _meta "io.modelcontextprotocol/clientCapabilities" is missing or not an object: a request of MCP 2026-07-28 must declare the client's capabilities ({} for none)`)},
			{"capabilities not an object", list, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}`, 400,
				rpcError("3", -32602, `Invalid params: _meta "io.modelcontextprotocol/clientCapabilities" is missing or not an object: a request of MCP 2026-07-28 must declare the client's capabilities ({} for none)`)},
			{"client info not an object", list, `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"me"}}}`, 400,
				rpcError("4", -32602, `Invalid params: _meta "io.modelcontextprotocol/clientInfo" must be an object with the client's name and version`)},
			{"not a version", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":"v","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`, 400,
				rpcError(`"v"`, -32602, `Invalid params: _meta "io.modelcontextprotocol/protocolVersion" must be a protocol version such as "2026-07-28"`)},
			{"a later version", map[string]string{"MCP-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"},
				`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, 400,
				`{"jsonrpc":"2.0","id":5,"error":{"code":-32022,"message":"Unsupported protocol version \"2027-01-01\": toolshed speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05",` +
					`"data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2027-01-01"}}}`},
			// The probe of a client of a later protocol, as the conformance suite sends it.
			{"server/discover at a version that is no date", map[string]string{"MCP-Protocol-Version": "v999.0.0", "Mcp-Method": "server/discover"},
				`{"jsonrpc":"2.0","id":301,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`, 400,
				`{"jsonrpc":"2.0","id":301,"error":{"code":-32022,"message":"Unsupported protocol version \"v999.0.0\": toolshed speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05",` +
					`"data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"v999.0.0"}}}`},
			{"server/discover whose header and envelope disagree", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"},
				`{"jsonrpc":"2.0","id":302,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`, 400,
				rpcError("302", -32020, `Bad Request: the Mcp-Protocol-Version header "2026-07-28" does not match the request's _meta "io.modelcontextprotocol/protocolVersion" "v999.0.0"`)},
			{"no version header", map[string]string{"Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{` + env26 + `}}`, 400,
				rpcError("6", -32020, `Bad Request: the Mcp-Protocol-Version header is required on a request that carries _meta "io.modelcontextprotocol/protocolVersion"`)},
			{"version header and envelope disagree", map[string]string{"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + env26 + `}}`, 400,
				rpcError("7", -32020, `Bad Request: the Mcp-Protocol-Version header "2025-11-25" does not match the request's _meta "io.modelcontextprotocol/protocolVersion" "2026-07-28"`)},
			{"no Mcp-Method", modernHeaders, `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{` + env26 + `}}`, 400,
				rpcError("8", -32020, `Bad Request: missing required Mcp-Method header`)},
			{"Mcp-Method disagrees", list, `{"jsonrpc":"2.0","id":9,"method":"prompts/list","params":{` + env26 + `}}`, 400,
				rpcError("9", -32020, `Bad Request: header mismatch: Mcp-Method header value 'tools/list' does not match body value 'prompts/list'`)},
			{"no Mcp-Name", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"},
				`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"},` + env26 + `}}`, 400,
				rpcError("10", -32020, `Bad Request: missing required Mcp-Name header for method "tools/call"`)},
			{"Mcp-Name disagrees", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "alpha__add"},
				`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"},` + env26 + `}}`, 400,
				rpcError("11", -32020, `Bad Request: header mismatch: Mcp-Name header value 'alpha__add' does not match body value 'alpha__echo'`)},
			{"initialize", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "initialize"},
				`{"jsonrpc":"2.0","id":12,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"x","version":"1"},` + env26 + `}}`, 404,
				rpcError("12", -32601, `Method not found: initialize is not part of MCP 2026-07-28; a request that carries "io.modelcontextprotocol/protocolVersion" needs no session`)},
			{"ping", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "ping"}, `{"jsonrpc":"2.0","id":13,"method":"ping","params":{` + env26 + `}}`, 404,
				rpcError("13", -32601, `Method not found: ping is not part of MCP 2026-07-28; a request that carries "io.modelcontextprotocol/protocolVersion" needs no session`)},
			{"logging/setLevel", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "logging/setLevel"}, `{"jsonrpc":"2.0","id":14,"method":"logging/setLevel","params":{"level":"debug",` + env26 + `}}`, 404,
				rpcError("14", -32601, `Method not found: logging/setLevel is not part of MCP 2026-07-28; a request that carries "io.modelcontextprotocol/protocolVersion" needs no session`)},
			{"resources/subscribe", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/subscribe", "Mcp-Name": "x"}, `{"jsonrpc":"2.0","id":15,"method":"resources/subscribe","params":{"uri":"x",` + env26 + `}}`, 404,
				rpcError("15", -32601, `Method not found: resources/subscribe is not part of MCP 2026-07-28; a request that carries "io.modelcontextprotocol/protocolVersion" needs no session`)},
			{"resources/unsubscribe", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/unsubscribe"}, `{"jsonrpc":"2.0","id":16,"method":"resources/unsubscribe","params":{"uri":"x",` + env26 + `}}`, 404,
				rpcError("16", -32601, `Method not found: resources/unsubscribe is not part of MCP 2026-07-28; a request that carries "io.modelcontextprotocol/protocolVersion" needs no session`)},
			{"an unknown method", map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "foo/bar"}, `{"jsonrpc":"2.0","id":17,"method":"foo/bar","params":{` + env26 + `}}`, 404,
				rpcError("17", -32601, `method not found: "foo/bar"`)},
			{"a batch, no version header", nil, `[{"jsonrpc":"2.0","id":18,"method":"tools/list","params":{` + env26 + `}}]`, 400,
				`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: a POST of MCP 2026-07-28 carries one message; JSON-RPC batches are not part of MCP since 2025-06-18"}}`},
		} {
			t.Run(fmt.Sprintf("stateless=%v/%s", stateless, tc.name), func(t *testing.T) {
				r := post(t, endpoint, tc.headers, strings.NewReader(tc.body))
				if r.status != tc.status || r.header.Get("Content-Type") != "application/json" || r.body != tc.want {
					t.Errorf("got %d %q %s\nwant %d \"application/json\" %s", r.status, r.header.Get("Content-Type"), r.body, tc.status, tc.want)
				}
				if s := r.header.Get("Mcp-Session-Id"); s != "" {
					t.Errorf("the refusal named a session: %s", s)
				}
			})
		}
		// GET and DELETE have no session to stream from or end.
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			r := do(t, testupstream.Request(t, method, endpoint, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Accept": "text/event-stream"}, nil))
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
				t.Errorf("stateless=%v: %s of a 2026-07-28 client: %d Allow %q %s, want 405 Allow POST", stateless, method, r.status, r.header.Get("Allow"), r.body)
			}
		}
	}
	if joined, perPOST := h.g.ClientCounts(); joined != 0 || perPOST != 0 {
		t.Errorf("%d sessions and %d POST sessions left after the refusals, want none", joined, perPOST)
	}
}

// The probe of a client that speaks both eras (server/discover) offers 2026-07-28
// beside the versions of sessions, and gives its slot back: the initialize of a client
// that then chooses a session is not refused for the cap of one session.
func TestHTTPDiscoverOffersBothEras(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: 1}) + "/mcp"
	for i := range 3 {
		r := post(t, endpoint, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"},
			strings.NewReader(`{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{`+envelope+`}}`))
		if r.status != http.StatusOK || !strings.Contains(r.body, `"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`) {
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

// A go-sdk client with default options (v1.8.0) negotiates 2026-07-28 over Streamable
// HTTP and lists and calls without a session, while a client pinned to 2025-11-25 on
// the same endpoint, at a cap of one session, gets that one session.
func TestHTTPModernAndOldClients(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{MaxSessions: 1}) + "/mcp"
	modern := httpClient(t, endpoint, nil, nil, sdkDefault)
	if v := modern.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the default client negotiated %s, want 2026-07-28", v)
	}
	old := httpClient(t, endpoint, nil, nil, "2025-11-25")
	for _, cs := range []*mcp.ClientSession{modern, old, modern} {
		if names := toolNames(t, cs); !slices.Contains(names, "alpha__echo") {
			t.Errorf("%s tools: %v", cs.InitializeResult().ProtocolVersion, names)
		}
		if res := call(t, cs, "alpha__echo", map[string]any{"text": "hi"}); res.IsError || resultText(res) != "hi" {
			t.Errorf("%s call: %s", cs.InitializeResult().ProtocolVersion, resultText(res))
		}
	}
	if joined, _ := h.g.ClientCounts(); joined != 1 {
		t.Errorf("%d sessions, want the old client's one", joined)
	}
}

// A modern call that needs a capability its request did not declare (here the user's
// approval, asked through elicitation) gets MissingRequiredClientCapability (-32021)
// and HTTP 400; one that declares it gets the approval prompt as its result.
func TestHTTPMissingCapability(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, Hooks: config.Hooks{Approve: []string{"alpha__echo"}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	headers := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "alpha__echo"}
	body := func(caps string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"x"},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	}
	r := post(t, endpoint, headers, strings.NewReader(body(`{}`)))
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32021,"message":"Missing required client capability: alpha__echo needs the user's approval, asked through elicitation; declare the elicitation capability in _meta \"io.modelcontextprotocol/clientCapabilities\"","data":{"requiredCapabilities":{"elicitation":{}}}}}`
	if r.status != http.StatusBadRequest || r.body != want {
		t.Errorf("got %d %s\nwant 400 %s", r.status, r.body, want)
	}
	r = post(t, endpoint, headers, strings.NewReader(body(`{"elicitation":{"form":{}}}`)))
	if r.status != http.StatusOK || !strings.Contains(r.body, `"resultType":"input_required"`) {
		t.Errorf("with elicitation declared: %d %s, want the approval prompt", r.status, r.body)
	}
}

// A subscriptions/listen POST lasts as long as its client stays, and ends when the
// gateway drains: it is not a call in flight, and must not hold the drain (and so a
// restart) for the whole drain timeout.
func TestHTTPListenEndsOnDrain(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off, DrainTimeout: 20 * time.Second})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	req := testupstream.Request(t, http.MethodPost, endpoint, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"},
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+envelope+`}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ack, err := bufio.NewReader(resp.Body).ReadString('}')
	if err != nil || !strings.Contains(ack, "notifications/subscriptions/acknowledged") {
		t.Fatalf("listen: %d %q %v", resp.StatusCode, ack, err)
	}
	start := time.Now()
	if left := h.g.Drain(context.Background()); left != 0 {
		t.Errorf("%d calls left after the drain", left)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the drain took %v with a listen open, want it to end the listen at once", d)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Errorf("the listen's stream did not end cleanly: %v", err)
	}
}
