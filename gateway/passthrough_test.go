package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// networkUpstream is an MCP server on a loopback socket, over Streamable HTTP or the
// HTTP+SSE transport, whose results carry what the SDK's structs would change: a number
// beyond float64, 1.0, a member the SDK does not model.
func networkUpstream(t *testing.T, sse bool) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "net-upstream", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "big", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Progress first, so the result comes in an event stream after another
			// event.
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "big"}},
				StructuredContent: json.RawMessage(`{"n":12345678901234567890,"f":1.0,"x-unknown":{"b":1,"a":2}}`)}, nil
		})
	// A definition the SDK's structs would change: a number beyond float64 and members in
	// an order of their own.
	server.AddTool(&mcp.Tool{Name: "wide", InputSchema: json.RawMessage(wideSchema)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	var srv *httptest.Server
	if sse {
		srv = httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	} else {
		srv = httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

const wideSchema = `{"type":"object","x-z":1,"properties":{"n":{"type":"integer","maximum":12345678901234567890}},"x-a":2}`

// networkTransports are the network transports of upstreams: Streamable HTTP and the
// HTTP+SSE transport.
var networkTransports = []struct {
	name string
	typ  string
	sse  bool
}{{"streamable-http", config.HTTP, false}, {"sse", config.SSE, true}}

// postResult posts a JSON-RPC request with id on a raw session and returns its result's
// bytes.
func postResult(t *testing.T, post func(context.Context, string) *http.Response, body, id string) []byte {
	t.Helper()
	resp := post(context.Background(), body)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resultIn(t, b, id)
}

// resultIn returns the bytes of the result of JSON-RPC call id in a response body, JSON
// or server-sent events.
func resultIn(t *testing.T, body []byte, id string) []byte {
	t.Helper()
	msgs := [][]byte{body}
	if bytes.HasPrefix(body, []byte("event:")) {
		msgs = nil
		for _, l := range strings.Split(string(body), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				msgs = append(msgs, []byte(d))
			}
		}
	}
	for _, m := range msgs {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(m, &r) == nil && string(r.ID) == id && r.Result != nil {
			return r.Result
		}
	}
	t.Fatalf("no result for call %s in\n%s", id, body)
	return nil
}

// Results from Streamable HTTP and SSE upstreams reach the client as the upstream wrote
// them, also when they come in an event stream after a progress notification.
func TestNetworkUpstreamResultBytes(t *testing.T) {
	direct := rawSession(t, networkUpstream(t, false))
	want := postResult(t, direct, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{}}}`, "2")
	if !bytes.Contains(want, []byte(`12345678901234567890,"f":1.0,"x-unknown":{"b":1,"a":2}`)) {
		t.Fatalf("the upstream's own result is %s", want)
	}
	for _, tc := range networkTransports {
		t.Run(tc.name, func(t *testing.T) {
			up := config.Server{Name: "net", Type: tc.typ, URL: networkUpstream(t, tc.sse)}
			h := startGateway(t, &config.Config{Servers: []config.Server{up}}, gateway.Options{Mode: policy.Off})
			post := rawSession(t, serveHTTP(t, h, gateway.HTTPOptions{})+"/mcp")
			for _, params := range []string{
				`{"name":"net__big","arguments":{}}`,
				`{"name":"net__big","arguments":{},"_meta":{"progressToken":"p1"}}`,
			} {
				if got := postResult(t, post, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+params+`}`, "2"); !bytes.Equal(got, want) {
					t.Errorf("%s: through toolshed\n%s\ndirectly\n%s", params, got, want)
				}
			}
		})
	}
}

// Definitions from Streamable HTTP and SSE upstreams are listed as the upstream wrote
// them, whichever way the response comes (the go-sdk's server answers tools/list as an
// event stream), on every start: the capture must have a page before the SDK's caller
// reads it.
func TestNetworkUpstreamListBytes(t *testing.T) {
	for _, tc := range networkTransports {
		t.Run(tc.name, func(t *testing.T) {
			url := networkUpstream(t, tc.sse)
			for i := range 12 {
				up := config.Server{Name: "net", Type: tc.typ, URL: url}
				h := startGateway(t, &config.Config{Servers: []config.Server{up}}, gateway.Options{Mode: policy.Off})
				post := rawSession(t, serveHTTP(t, h, gateway.HTTPOptions{})+"/mcp")
				if got := postResult(t, post, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "3"); !bytes.Contains(got, []byte(`"inputSchema":`+wideSchema)) {
					t.Fatalf("start %d: tools/list through toolshed\n%s\nlacks the upstream's schema\n%s", i, got, wideSchema)
				}
				h.stop()
			}
		})
	}
}

// When the upstream cannot be reconnected to declare a change of what the clients
// support (a server that runs once at a time), it keeps its connection, and the tools it
// lists later on that connection are still listed as it wrote them.
func TestListBytesAfterFailedReconnect(t *testing.T) {
	up := testServer("alpha", "single")
	up.Env["TOOLSHED_TEST_LOCK"] = filepath.Join(t.TempDir(), "lock")
	h := startGateway(t, &config.Config{Servers: []config.Server{up}}, gateway.Options{Mode: policy.Off})
	// A client that can sample: the upstream is to be reconnected, and cannot be.
	post := rawSessionWith(t, serveHTTP(t, h, gateway.HTTPOptions{})+"/mcp", `{"sampling":{}}`, new(string))
	eventually(t, func() string {
		if !strings.Contains(h.log.String(), "could not reconnect") {
			return "the upstream was not reconnected yet"
		}
		return ""
	})
	resp := post(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__grow","arguments":{"n":1}}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	eventually(t, func() string {
		got := postResult(t, post, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "3")
		if !bytes.Contains(got, []byte(`"alpha__extra_1"`)) {
			return "alpha__extra_1 is not listed yet"
		}
		if !bytes.Contains(got, []byte(`"inputSchema":`+wideSchema)) {
			return fmt.Sprintf("after the relist, tools/list\n%s\nlacks the upstream's schema\n%s", got, wideSchema)
		}
		return ""
	})
}
