package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// connectVersion connects an in-memory client asking for a protocol version, and returns
// the session whatever version was negotiated.
func connectVersion(t *testing.T, h *harness, version string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := h.g.Connect(context.Background(), st, ""); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connecting with %s: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// The gateway offers the same protocol versions whichever way a client comes (the MCP
// server of stdio and in-memory clients, and Streamable HTTP): 2026-07-28 and the
// versions of sessions, down to 2024-11-05. A client gets the version it asks for.
func TestProtocolVersionsAgree(t *testing.T) {
	versions := gateway.ProtocolVersions()
	if want := []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}; !slices.Equal(versions, want) {
		t.Errorf("versions offered: %v, want %v", versions, want)
	}
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	endpoint := serveHTTP(t, h, gateway.HTTPOptions{}) + "/mcp"
	for _, asked := range versions {
		want := asked
		if !slices.Contains(versions, asked) {
			want = versions[0]
		}
		if got := connectVersion(t, h, asked).InitializeResult().ProtocolVersion; got != want {
			t.Errorf("stdio front: asked for %s, negotiated %s; want %s", asked, got, want)
		}
		cs, closeFn, err := dialHTTP(endpoint, nil, nil, asked)
		if err != nil {
			t.Errorf("HTTP front: asking for %s: %v", asked, err)
			continue
		}
		if got := cs.InitializeResult().ProtocolVersion; got != want {
			t.Errorf("HTTP front: asked for %s, negotiated %s; want %s", asked, got, want)
		}
		closeFn()
	}
}

// clientKinds are clients that differ in what they offer servers.
var clientKinds = []struct {
	name string
	opts func() *mcp.ClientOptions
	// sampling reports whether the client can serve sampling requests.
	sampling bool
}{
	{"nothing", func() *mcp.ClientOptions { return &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}} }, false},
	{"sampling", func() *mcp.ClientOptions {
		return &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}, CreateMessageHandler: sampleAs("direct-model")}
	}, true},
	// What Claude Code 2.1.332 declares: roots and elicitation, no sampling.
	{"roots and elicitation", func() *mcp.ClientOptions {
		return &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true},
				Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
		}
	}, false},
}

func sampleAs(model string) func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Model: model, Role: "assistant", Content: &mcp.TextContent{Text: "hello from " + model}}, nil
	}
}

// sortedToolNames lists a session's tools, sorted.
func sortedToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	names := toolNames(t, cs)
	sort.Strings(names)
	return names
}

// eventually polls f until it returns "" (or 20 seconds pass) and reports what it last
// returned.
func eventually(t *testing.T, f func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msg := f()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Error(msg)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Through toolshed, the npm server-everything offers a client exactly the tools it
// offers that client directly: trigger-sampling-request only to a client that can serve
// sampling, get-roots-list only to one with roots, whether the upstreams start before
// the client comes (HTTP) or once it has (stdio).
func TestDeclaredSupportEverything(t *testing.T) {
	ecmd, eargs := testupstream.Everything(t)
	for _, kind := range clientKinds {
		direct := func() []string {
			cmd := exec.Command(ecmd, eargs...)
			testupstream.Own(t, cmd)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, kind.opts()).
				Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: gateway.UpstreamProtocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			time.Sleep(500 * time.Millisecond) // the server adds its conditional tools once initialized
			return sortedToolNames(t, cs)
		}()
		if got := slices.Contains(direct, "trigger-sampling-request"); got != kind.sampling {
			t.Fatalf("%s: server-everything lists trigger-sampling-request directly: %t (%v)", kind.name, got, direct)
		}
		for _, wait := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/WaitForClient=%t", kind.name, wait), func(t *testing.T) {
				h := startGateway(t, &config.Config{Servers: []config.Server{{Name: "everything", Type: config.Stdio, Command: ecmd, Args: eargs}}},
					gateway.Options{Mode: policy.Off, NoPrefix: true, WaitForClient: wait})
				cs := h.client("", kind.opts())
				eventually(t, func() string {
					if got := sortedToolNames(t, cs); !slices.Equal(got, direct) {
						return fmt.Sprintf("through toolshed: %v\ndirect:          %v", got, direct)
					}
					return ""
				})
				if !kind.sampling {
					return
				}
				// The client serves the sampling request of its own call.
				res := call(t, cs, "trigger-sampling-request", map[string]any{"prompt": "hi", "maxTokens": 5})
				if res.IsError || !strings.Contains(resultText(res), "hello from direct-model") {
					t.Errorf("trigger-sampling-request through toolshed = %s", resultText(res))
				}
			})
		}
	}
}

// What the upstreams are told follows the connected clients: a client that cannot serve
// sampling takes trigger-sampling-request away from every client while it is connected,
// and a call in flight when the upstream reconnects still completes.
func TestRedeclareOnClientChange(t *testing.T) {
	ecmd, eargs := testupstream.Everything(t)
	h := startGateway(t, &config.Config{Servers: []config.Server{{Name: "everything", Type: config.Stdio, Command: ecmd, Args: eargs}}},
		gateway.Options{Mode: policy.Off, NoPrefix: true})
	sampler := h.client("", &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}, CreateMessageHandler: sampleAs("sampler")})
	lists := func(want bool) func() string {
		return func() string {
			if got := has(toolNames(t, sampler), "trigger-sampling-request"); got != want {
				return fmt.Sprintf("trigger-sampling-request listed: %t, want %t", got, want)
			}
			return ""
		}
	}
	eventually(t, lists(true))

	// A long call runs while a plain client connects: the upstream reconnects without
	// sampling, and the call finishes on the connection it started on.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := sampler.CallTool(context.Background(), &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 2, "steps": 4}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	time.Sleep(300 * time.Millisecond)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := h.g.Connect(context.Background(), st, ""); err != nil {
		t.Fatal(err)
	}
	plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).Connect(context.Background(), ct, sessionOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, lists(false))
	if res := <-done; res.IsError || !strings.Contains(resultText(res), "completed") {
		t.Errorf("the call in flight during the reconnection: %s", resultText(res))
	}
	// The plain client leaves: sampling is offered again.
	plain.Close()
	eventually(t, lists(true))
}

// The upstream's requests go to the client whose request caused them, among the
// clients of one principal (one profile and token), and are refused when toolshed cannot
// tell which client that is: never to the client that called last. While clients of
// another principal may use the server, they are refused (TestConcurrentSamplingNeverMisrouted).
func TestRelayToCause(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, Profiles: map[string]config.Profile{"other": {}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	a := h.client("", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-a")})
	b := h.client("", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-b")})

	if got := resultText(call(t, a, "alpha__sample_later", map[string]any{"ms": 0})); got != "model model-a" {
		t.Errorf("a's sampling request went to %q", got)
	}
	if got := resultText(call(t, b, "alpha__sample_later", map[string]any{"ms": 0})); got != "model model-b" {
		t.Errorf("b's sampling request went to %q", got)
	}

	// a's call asks for sampling while b's call is running too, and b called last.
	res := make(chan *mcp.CallToolResult, 1)
	go func() { res <- call(t, a, "alpha__sample_later", map[string]any{"ms": 600}) }()
	time.Sleep(200 * time.Millisecond)
	slow := make(chan *mcp.CallToolResult, 1)
	go func() { slow <- call(t, b, "alpha__slow", map[string]any{"steps": 30}) }()
	got := <-res
	if !got.IsError || !strings.Contains(resultText(got), "cannot tell which client") {
		t.Errorf("a sampling request while two clients' calls run = %q, want a refusal", resultText(got))
	}
	<-slow

	// A client of another profile connects: a's requests could now be its.
	h.client("other", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-other")})
	if got := resultText(call(t, a, "alpha__sample_later", map[string]any{"ms": 0})); !strings.Contains(got, "clients of 2 profiles or tokens") {
		t.Errorf("a's sampling request while another profile's client may use alpha = %q, want a refusal", got)
	}
}

// An upstream's request that comes as the call that caused it ends still reaches that
// call's client: attached to the call, it is not lost when the call's result comes first.
func TestRelayAfterCallEnds(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	a := h.client("", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-a")})
	for i := range 20 {
		if got := resultText(call(t, a, "alpha__sample_detached", map[string]any{})); got != "asked" {
			t.Fatalf("sample_detached = %q", got)
		}
		if got := resultText(call(t, a, "alpha__detached_model", map[string]any{"ms": 3000})); got != "model model-a" {
			t.Fatalf("round %d: the sampling request sent as its call ended got %q, want model-a's answer", i, got)
		}
	}
}

// A server that is slow to start holds up the lists (so that a client's first tools/list
// has every tool that could start) and its own calls, but not the calls of servers that
// are up.
func TestSlowServerHoldsOnlyItsOwn(t *testing.T) {
	slow := testServer("slow", "hang")
	slow.ConnectTimeout = time.Minute
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic"), slow}}, gateway.Options{Mode: policy.Off, WaitForClient: true})
	cs := h.client("", nil)
	waitFor(t, "alpha to be ready", func() bool { return h.g.Statuses()[0].State == gateway.Ready })
	// The lists are held for the slow server for up to DefaultStartWait (25 seconds); a
	// call held would miss this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": "not held"}})
	if err != nil || resultText(res) != "not held" {
		t.Fatalf("a call of a ready server while another starts: %v, %v", resultText(res), err)
	}
	if st := h.g.Statuses()[1].State; st != gateway.Connecting {
		t.Fatalf("the slow server is %s, want still connecting (the test needs it slow)", st)
	}
}

// A client that goes away without ending its HTTP session stops counting once its
// session has been idle for the idle timeout: what the upstreams are told is again what
// the clients still there support.
func TestIdleSessionLeaves(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	sampler := h.client("", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-a")})
	declares := func(want bool) func() string {
		return func() string {
			got := resultText(call(t, sampler, "alpha__declared", map[string]any{}))
			if strings.Contains(got, `"sampling"`) != want {
				return fmt.Sprintf("the upstream was told %s; want sampling declared: %t", got, want)
			}
			return ""
		}
	}
	eventually(t, declares(true))
	// A client that cannot sample joins over HTTP, and is never heard from again: the
	// upstream is told that the clients cannot sample, until that client's session has
	// been idle for the idle timeout.
	rawSession(t, serveHTTP(t, h, gateway.HTTPOptions{IdleTimeout: 2 * time.Second})+"/mcp")
	eventually(t, declares(false))
	eventually(t, declares(true))
}

// A server's request that no request of a client caused goes to the only client that
// may use that server: never to a client of a profile that cannot see it, even when
// that client is the only one connected.
func TestUnsolicitedRequestStaysInScope(t *testing.T) {
	cfg := &config.Config{
		Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")},
		Profiles: map[string]config.Profile{
			"a": {Scope: policy.Scope{Servers: []string{"alpha"}}},
			"b": {Scope: policy.Scope{Tools: []string{"beta__*"}}},
		},
	}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	b := h.client("b", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-b")})
	a := h.client("a", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-a")})
	// alpha asks for sampling a second after the call that started it, when a has left
	// and only b, which cannot see alpha, is connected.
	if got := resultText(call(t, a, "alpha__sample_detached", map[string]any{"ms": 1000})); got != "asked" {
		t.Fatalf("sample_detached = %q", got)
	}
	a.Close()
	time.Sleep(2 * time.Second)
	// a2 can sample too, so that what alpha is told does not change (a new declaration
	// would restart it, and its pending request with it).
	a2 := h.client("a", &mcp.ClientOptions{CreateMessageHandler: sampleAs("model-a2")})
	got := resultText(call(t, a2, "alpha__detached_model", map[string]any{"ms": 5000}))
	if strings.Contains(got, "model-b") || !strings.Contains(got, "error") {
		t.Errorf("alpha's request while only a client of another profile was connected got %q, want a refusal", got)
	}
	if got := resultText(call(t, b, "beta__sample_later", map[string]any{"ms": 0})); got != "model model-b" {
		t.Errorf("b's own server's sampling request = %q", got)
	}
}

// The roots of the client reach an upstream that asks for them during a call, and
// server-filesystem takes them as its allowed directories, at start and when they change.
func TestRootsReachFilesystem(t *testing.T) {
	argDir, root1, root2 := t.TempDir(), t.TempDir(), t.TempDir()
	fcmd, fargs := testupstream.Filesystem(t, argDir)
	cfg := &config.Config{Servers: []config.Server{{Name: "filesystem", Type: config.Stdio, Command: fcmd, Args: fargs}, testServer("alpha", "basic")}}
	for _, wait := range []bool{false, true} {
		t.Run(fmt.Sprintf("WaitForClient=%t", wait), func(t *testing.T) {
			h := startGateway(t, cfg, gateway.Options{Mode: policy.Off, WaitForClient: wait})
			client := mcp.NewClient(&mcp.Implementation{Name: "rooted", Version: "1"}, nil)
			client.AddRoots(&mcp.Root{URI: fileURI(root1), Name: "one"})
			ct, st := mcp.NewInMemoryTransports()
			if _, err := h.g.Connect(context.Background(), st, ""); err != nil {
				t.Fatal(err)
			}
			cs, err := client.Connect(context.Background(), ct, sessionOptions(""))
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := resultText(call(t, cs, "alpha__roots", map[string]any{})); got != fileURI(root1) {
				t.Errorf("roots/list during a call = %q, want the client's %s", got, fileURI(root1))
			}
			allowed := func(want ...string) func() string {
				return func() string {
					got := resultText(call(t, cs, "filesystem__list_allowed_directories", map[string]any{}))
					for _, dir := range want {
						if !strings.Contains(got, testupstream.RealPath(t, dir)) {
							return fmt.Sprintf("allowed directories %q lack %s", got, dir)
						}
					}
					if strings.Contains(got, testupstream.RealPath(t, argDir)) {
						return fmt.Sprintf("allowed directories %q are still the command line's", got)
					}
					return ""
				}
			}
			eventually(t, allowed(root1))
			client.AddRoots(&mcp.Root{URI: fileURI(root2), Name: "two"})
			eventually(t, allowed(root1, root2))
		})
	}
}

func fileURI(dir string) string { return (&url.URL{Scheme: "file", Path: dir}).String() }

// A client that never answers the upstream's roots/list (an HTTP client gone without
// ending its session) holds neither the upstream nor the gateway's shutdown.
func TestStopWhileClientSilent(t *testing.T) {
	fcmd, fargs := testupstream.Filesystem(t)
	h := startGateway(t, &config.Config{Servers: []config.Server{{Name: "filesystem", Type: config.Stdio, Command: fcmd, Args: fargs}}}, gateway.Options{Mode: policy.Off})
	ctx := context.Background()
	conn := h.rawClient("")
	id, _ := jsonrpc.MakeID(float64(1))
	init := &jsonrpc.Request{ID: id, Method: "initialize", Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"silent","version":"1"}}`)}
	if err := conn.Write(ctx, init); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 1)
	go func() {
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "roots/list" {
				asked <- struct{}{} // and never answered
			}
		}
	}()
	// The first request after initialize makes the filesystem server reconnect
	// declaring roots; it asks for them as it starts.
	conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"})
	id2, _ := jsonrpc.MakeID(float64(2))
	conn.Write(ctx, &jsonrpc.Request{ID: id2, Method: "tools/list"})
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the filesystem server did not ask the client for its roots")
	}
	if !h.stopped(15 * time.Second) {
		t.Fatal("the gateway did not stop while a client left the upstream's roots/list unanswered")
	}
}

// A client that does not read the notifications about its call holds up no other
// client's calls on the same upstream: the upstream's messages are read on, and that
// client's notifications wait for it alone.
func TestSlowClientHoldsUpNoOtherClient(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, Profiles: map[string]config.Profile{"other": {}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	ctx := context.Background()
	// The stuck client speaks JSON-RPC by hand over an unbuffered pipe, so that it can
	// stop reading: then every write to it blocks.
	conn := h.rawClient("")
	send := func(msg string) {
		m, err := jsonrpc.DecodeMessage([]byte(msg))
		if err == nil {
			err = conn.Write(ctx, m)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stuck","version":"1"}}}`)
	if _, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha__slow","arguments":{"steps":8},"_meta":{"progressToken":"p"}}}`)
	if m, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	} else if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "notifications/progress" {
		t.Fatalf("the stuck client's first message is %v, want a progress notification", m)
	}
	// It reads nothing more; the upstream goes on sending progress.
	time.Sleep(200 * time.Millisecond)
	other := h.client("other", nil)
	callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := other.CallTool(callCtx, &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": "not held up"}})
	if err != nil || resultText(res) != "not held up" {
		t.Errorf("another client's call while one client reads nothing: %v, %v", resultText(res), err)
	}
}
