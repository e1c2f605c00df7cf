package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
)

// env26 is the envelope of a 2026-07-28 request whose client declares caps (JSON).
func env26(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// lastLine is the last of lines, the response until read up to, without its newline.
func lastLine(lines []string) string { return strings.TrimSpace(lines[len(lines)-1]) }

// The stdio front serves a client of MCP 2026-07-28 on the connection it serves older
// clients on: without initialize, each request with its envelope. What it cannot
// serve it refuses in the protocol's terms, under the request's id, and reads on.
func TestStdioModernRequests(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	s := newRawLineSession(t, h)
	for _, tc := range []struct {
		name, line, id, want string
	}{
		{"a later version", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, "1",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version \"2027-01-01\": toolshed speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26 and 2024-11-05",` +
				`"data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2027-01-01"}}}`},
		{"no capabilities", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "2",
			rpcError("2", -32602, `Invalid params: _meta "io.modelcontextprotocol/clientCapabilities" is missing or not an object: a request of MCP 2026-07-28 must declare the client's capabilities ({} for none)`)},
		{"ping", `{"jsonrpc":"2.0","id":3,"method":"ping","params":{` + env26(`{}`) + `}}`, "3",
			rpcError("3", -32601, `Method not found: ping is not part of MCP 2026-07-28; a request that carries "io.modelcontextprotocol/protocolVersion" needs no session`)},
		{"initialize", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"x","version":"1"},` + env26(`{}`) + `}}`, "4",
			rpcError("4", -32601, `Method not found: initialize is not part of MCP 2026-07-28; a request that carries "io.modelcontextprotocol/protocolVersion" needs no session`)},
		{"logging/setLevel", `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"debug",` + env26(`{}`) + `}}`, "5",
			rpcError("5", -32601, `Method not found: logging/setLevel is not part of MCP 2026-07-28; a request that carries "io.modelcontextprotocol/protocolVersion" needs no session`)},
		{"a call", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"},` + env26(`{}`) + `}}`, "6",
			`"resultType":"complete"`},
		// The connection speaks 2026-07-28 now: a request without its envelope, or a
		// batch, is refused.
		{"no envelope", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, "7",
			rpcError("7", -32602, `Invalid params: tools/list has no _meta "io.modelcontextprotocol/protocolVersion": every request of MCP 2026-07-28 carries the envelope (protocolVersion, clientCapabilities, clientInfo)`)},
		{"a batch", `[{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{` + env26(`{}`) + `}}]`, "8",
			rpcError("8", -32600, `Invalid Request: JSON-RPC batches are not part of MCP 2025-06-18 and later, and this session speaks 2026-07-28; send each message on a line of its own`)},
		{"a list", `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{` + env26(`{}`) + `}}`, "9",
			`"name":"alpha__echo"`},
	} {
		s.send(t, tc.line)
		got := lastLine(s.until(t, tc.id))
		if strings.HasPrefix(tc.want, `{"jsonrpc"`) && got != tc.want || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

// A modern request's caller is read from its own envelope, not from the first request
// of its connection (which the SDK keeps as the session's): a client that declared no
// elicitation first and then does is asked for approval through MRTR, and one that
// stops declaring it gets MissingRequiredClientCapability (-32021), naming elicitation.
func TestStdioCallerIsEachRequests(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, Hooks: config.Hooks{Approve: []string{"alpha__echo"}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	s := newRawLineSession(t, h)
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+env26(`{}`)+`}}`)
	s.until(t, "1")
	call := func(id, caps, extra string) string {
		s.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"alpha__echo","arguments":{"text":"hi"},`+extra+env26(caps)+`}}`)
		return lastLine(s.until(t, id))
	}
	asked := call("2", `{"elicitation":{"form":{}}}`, "")
	if !strings.Contains(asked, `"resultType":"input_required"`) || !strings.Contains(asked, `Allow the assistant to call alpha__echo`) {
		t.Errorf("a call from a client that declares elicitation now: %s, want the approval as input_required", asked)
	}
	var question struct {
		Result struct {
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(asked), &question); err != nil || question.Result.RequestState == "" {
		t.Fatalf("the approval question has no requestState (%v): %s", err, asked)
	}
	state, _ := json.Marshal(question.Result.RequestState)
	if got := call("3", `{"elicitation":{"form":{}}}`, `"requestState":`+string(state)+`,"inputResponses":{"toolshed-approval":{"action":"accept","content":{"approve":true}}},`); !strings.Contains(got, `"text":"hi"`) || strings.Contains(got, `"isError":true`) {
		t.Errorf("the call with the approval: %s", got)
	}
	want := `{"jsonrpc":"2.0","id":4,"error":{"code":-32021,"message":"Missing required client capability: alpha__echo needs the user's approval, asked through elicitation; declare the elicitation capability in _meta \"io.modelcontextprotocol/clientCapabilities\"","data":{"requiredCapabilities":{"elicitation":{}}}}}`
	if got := call("4", `{}`, ""); got != want {
		t.Errorf("a call from a client that declares no elicitation:\n%s\nwant\n%s", got, want)
	}
}

// A go-sdk client with default options (v1.8.0) negotiates 2026-07-28 on the stdio
// front, lists, calls, gets a bad call's error, and answers the approval prompt
// through MRTR (its ElicitationHandler, called by the SDK's retry).
func TestStdioModernGoClient(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, Hooks: config.Hooks{Approve: []string{"alpha__add"}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	if _, err := h.g.Connect(context.Background(), gateway.LineTransport(inR, outW, func() error {
		inR.Close()
		return outW.Close()
	}), ""); err != nil {
		t.Fatal(err)
	}
	asked := 0
	client := mcp.NewClient(&mcp.Implementation{Name: "go-modern", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	})
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	if names := toolNames(t, cs); !has(names, "alpha__echo") {
		t.Errorf("tools: %v", names)
	}
	if res := call(t, cs, "alpha__echo", map[string]any{"text": "hi"}); res.IsError || resultText(res) != "hi" {
		t.Errorf("echo: %s", resultText(res))
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__nope", Arguments: map[string]any{}})
	var rpcErr interface{ Error() string }
	if err == nil {
		t.Errorf("a call to an unknown tool: %v, want an error", res)
	} else if rpcErr = err; !strings.Contains(rpcErr.Error(), "alpha__nope") {
		t.Errorf("a call to an unknown tool: %v", err)
	}
	if res := call(t, cs, "alpha__add", map[string]any{"a": 1, "b": 2}); res.IsError || asked != 1 {
		b, _ := json.Marshal(res)
		t.Errorf("approved add: asked %d times, result %s", asked, b)
	}
}

// tools/list lists tools sorted by name, whatever the order of the servers, and says
// honestly how long and by whom it may be cached: ttlMs 0 while tool search may turn on
// or off by itself (auto), 30 s when nothing but a list_changed can change it, and
// cacheScope "private" when callers may see different lists (hooks that deny tools,
// tokens that select profiles).
func TestToolsListCacheable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  policy.Mode
		cfg   func(*config.Config)
		ttl   float64
		scope string
	}{
		{"off", policy.Off, func(*config.Config) {}, 30000, "public"},
		{"auto", policy.Auto, func(*config.Config) {}, 0, "public"},
		{"deny hook", policy.Off, func(c *config.Config) { c.Hooks.Deny = []string{"alpha__add"} }, 30000, "private"},
		{"tokens", policy.Off, func(c *config.Config) {
			c.Profiles = map[string]config.Profile{"ops": {Token: "secret", Scope: policy.Scope{Servers: []string{"alpha"}}}}
		}, 30000, "private"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Servers: []config.Server{testServer("beta", "basic"), testServer("alpha", "basic")}}
			tc.cfg(cfg)
			h := startGateway(t, cfg, gateway.Options{Mode: tc.mode})
			s := newRawLineSession(t, h)
			s.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+env26(`{}`)+`}}`)
			var resp struct {
				Result struct {
					Tools []struct {
						Name string `json:"name"`
					} `json:"tools"`
					TTLMs      *float64 `json:"ttlMs"`
					CacheScope string   `json:"cacheScope"`
				} `json:"result"`
			}
			line := lastLine(s.until(t, "1"))
			if err := json.Unmarshal([]byte(line), &resp); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			var names []string
			for _, tool := range resp.Result.Tools {
				names = append(names, tool.Name)
			}
			if len(names) < 2 || !slices.IsSorted(names) {
				t.Errorf("tools listed in the order %v, want sorted by name", names)
			}
			if r := resp.Result; r.TTLMs == nil || *r.TTLMs != tc.ttl || r.CacheScope != tc.scope {
				t.Errorf("ttlMs %v cacheScope %q, want %v %q", r.TTLMs, r.CacheScope, tc.ttl, tc.scope)
			}
		})
	}
}

// A 2026-07-28 client learns of list changes through subscriptions/listen, which the
// go-sdk client opens by itself when it has a list-changed handler: over stdio, and
// over HTTP, where the listen is a POST of its own whose session lasts as long as it.
// An upstream that adds a tool reaches both.
func TestListenCarriesListChanges(t *testing.T) {
	stdio, web, changed := modernListeners(t)
	growUntilHeard(t, stdio, changed)
	if names := toolNames(t, web); !has(names, "alpha__extra_1") {
		t.Errorf("tools after the change: %v", names)
	}
}

// An upstream's tools/list_changed reaches the listens even when its tools read the
// same as before: the conformance suite's test_trigger_tool_change (go-sdk
// everything-server) re-adds the same tool at each call, and its server-stateless
// scenario waits 1.5 s for the notice on a listen opened after the first call. toolshed
// used to re-list, find nothing new and tell no one.
func TestListenCarriesUnchangedRelist(t *testing.T) {
	stdio, web, changed := modernListeners(t)
	growUntilHeard(t, stdio, changed)
	if names := toolNames(t, web); !has(names, "alpha__extra_1") {
		t.Fatalf("tools after the change: %v", names)
	}
	// extra_1 again: the server sends tools/list_changed, its list is as it was.
	for _, ch := range changed {
		for len(ch) > 0 { // a late copy of an earlier notice is not the one awaited
			<-ch
		}
	}
	call(t, stdio, "alpha__grow", map[string]any{"n": 1})
	deadline := time.After(30 * time.Second)
	for front, ch := range changed {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the server's tools/list_changed (an unchanged list) did not reach the %s listen within 30s", front)
		}
	}
}

// modernListeners starts a gateway over a basic upstream with tool search off and
// connects a 2026-07-28 go-sdk client over stdio and one over HTTP, each of which opens
// a listen; changed has a channel per front ("stdio", "http") that a tools/list_changed
// fills.
func modernListeners(t *testing.T) (stdio, web *mcp.ClientSession, changed map[string]chan struct{}) {
	t.Helper()
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	changed = map[string]chan struct{}{"stdio": make(chan struct{}, 8), "http": make(chan struct{}, 8)}
	opts := func(front string) *mcp.ClientOptions {
		ch := changed[front]
		return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case ch <- struct{}{}:
			default: // heard already
			}
		}}
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	if _, err := h.g.Connect(context.Background(), gateway.LineTransport(inR, outW, func() error {
		inR.Close()
		return outW.Close()
	}), ""); err != nil {
		t.Fatal(err)
	}
	stdio, err := mcp.NewClient(&mcp.Implementation{Name: "go-modern", Version: "1"}, opts("stdio")).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdio.Close() })
	web = httpClient(t, endpoint, nil, opts("http"), sdkDefault)
	for _, cs := range []*mcp.ClientSession{stdio, web} {
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
	}
	return stdio, web, changed
}

// growUntilHeard has the upstream add a tool (extra_1, extra_2, …) until a
// tools/list_changed has reached every front of changed: the listens are open once their acknowledgement came,
// and a change before would be missed.
func growUntilHeard(t *testing.T, stdio *mcp.ClientSession, changed map[string]chan struct{}) {
	t.Helper()
	waiting := maps.Clone(changed)
	for n := 1; len(waiting) > 0; n++ {
		if n > 40 {
			t.Fatalf("no tools/list_changed reached %v", slices.Collect(maps.Keys(waiting)))
		}
		call(t, stdio, "alpha__grow", map[string]any{"n": n})
		deadline := time.Now().Add(500 * time.Millisecond)
		for front, ch := range waiting {
			select {
			case <-ch:
				delete(waiting, front)
			case <-time.After(time.Until(deadline)):
			}
		}
	}
}
