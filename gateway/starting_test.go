package gateway_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/bridge"
	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

// gatedServer is a server of the config whose command line runs only once the test
// calls open (see testupstream.Gated).
func gatedServer(t *testing.T, name, cmd string, args []string) (config.Server, func()) {
	gcmd, gargs, open := testupstream.Gated(t, cmd, args)
	return config.Server{Name: name, Type: config.Stdio, Command: gcmd, Args: gargs}, open
}

// searchDescription returns the description of tool_search in cs's tools/list.
func searchDescription(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == bridge.SearchTool {
			return tool.Description
		}
	}
	t.Fatalf("no tool_search in the list")
	return ""
}

// A client answered while a real server (npm server-memory, held back as npx installing
// it would) is still in its first start is told so: tool_search's description and a
// search that finds too little name it, toolshed says so on stderr, a profile that may
// not use it learns nothing of it, and once it is up the client gets
// notifications/tools/list_changed and its tools.
func TestStartingServerNamedUntilUp(t *testing.T) {
	mcmd, margs := testupstream.Memory(t)
	memory, open := gatedServer(t, "memory", mcmd, margs)
	cfg := &config.Config{
		Servers:  []config.Server{testServer("alpha", "basic"), memory},
		Profiles: map[string]config.Profile{"alphaonly": {Scope: policy.Scope{Servers: []string{"alpha"}}}},
	}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On, StartWait: 500 * time.Millisecond, WaitForClient: true})
	changed := make(chan struct{}, 100)
	cs := h.client("", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	waitFor(t, "alpha to be up", func() bool { return status(h, "alpha").State == gateway.Ready })

	const starting = "1 server still starting: memory; their tools appear when they are up"
	if desc := searchDescription(t, cs); !strings.Contains(desc, starting) {
		t.Errorf("tool_search's description while memory starts: %q; want it to say %q", desc, starting)
	}
	if want := "answered a client's tools/list while 1 server is still starting (memory)"; !strings.Contains(h.log.String(), want) {
		t.Errorf("toolshed's log does not say %q:\n%s", want, h.log.String())
	}
	const query = "create entities in the knowledge graph"
	res := searchFor(t, cs, query)
	if want := []bridge.Unsearched{{Server: "memory", State: bridge.Starting}}; !reflect.DeepEqual(res.Unavailable, want) || !strings.Contains(res.Hint, "1 server is still starting: memory") {
		t.Errorf("a search while memory starts: unavailable %+v, hint %q; want memory named as starting", res.Unavailable, res.Hint)
	}
	other := h.client("alphaonly", nil)
	if desc := searchDescription(t, other); strings.Contains(desc, "memory") || strings.Contains(desc, "starting") {
		t.Errorf("a profile without memory is told of it: %q", desc)
	}
	if got := call(t, other, bridge.SearchTool, map[string]any{"query": query}); strings.Contains(resultText(got), "memory") || strings.Contains(resultText(got), "unavailable") {
		t.Errorf("a profile without memory is told of it by a search: %s", resultText(got))
	}

	open()
	deadline := time.After(time.Minute)
	for up := false; !up; {
		select {
		case <-changed:
			desc := searchDescription(t, cs)
			up = strings.Contains(desc, "memory") && !strings.Contains(desc, "starting")
		case <-deadline:
			t.Fatalf("no notifications/tools/list_changed with memory's tools; tool_search's description: %q", searchDescription(t, cs))
		}
	}
	if res := searchFor(t, cs, query); !found(res, "memory__create_entities") || len(res.Unavailable) > 0 {
		t.Errorf("once memory is up, a search gave %+v", res)
	}
}

// Codex CLI gives a server 10 seconds for initialize and the first tools/list together,
// then gives up on it, and on every tool behind toolshed with it: while a real server
// (npm server-memory, held back) is still starting, a client that says it is Codex
// gets the tools of the servers that are up within those 10 seconds, where others are
// held up to 25.
func TestImpatientClientAnsweredInTime(t *testing.T) {
	mcmd, margs := testupstream.Memory(t)
	memory, _ := gatedServer(t, "memory", mcmd, margs)
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic"), memory}}, gateway.Options{Mode: policy.Off, WaitForClient: true})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := h.g.Connect(context.Background(), st, ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // Codex's startup_timeout_sec
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codex-mcp-client", Version: "0.171.0"}, nil).Connect(ctx, ct, sessionOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("Codex's first tools/list: %v (Codex gives up after 10 seconds)", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !has(names, "alpha__echo") || has(names, "memory__read_graph") {
		t.Errorf("Codex's first tools/list has %v, want alpha's tools and not memory's", names)
	}
}

// A client that calls a tool from a list it cached, right after initialize and with no
// tools/list before, finds the tool: its server came up, but the reassembly loop,
// held here as a loaded machine may hold it, has not put its tools in the catalog
// yet. The call waits for that server as a list does, then runs: directly, through
// tool_call, on the SDK's path and on the connections' own (fastcall.go).
func TestCallRightAfterStartFindsTool(t *testing.T) {
	for _, mode := range []policy.Mode{policy.Off, policy.On} {
		for _, fast := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fast=%v", mode, fast), func(t *testing.T) {
				defer gateway.SetFastCalls(fast)()
				cfg := &config.Config{Servers: []config.Server{testServer("echo", "basic")}}
				h := startGateway(t, cfg, gateway.Options{Mode: mode, WaitForClient: true})
				release := h.g.HoldReassembly()
				defer release()
				cs := h.client("", nil)
				waitFor(t, "echo to be up", func() bool { return h.g.Up("echo") })
				if st := status(h, "echo"); st.State != gateway.Connecting {
					t.Fatalf("echo is %s before the catalog has its tools; the test holds nothing", st.State)
				}
				args := map[string]any{"text": "hi"}
				var res *mcp.CallToolResult
				var err error
				if mode == policy.On {
					res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: bridge.CallTool, Arguments: map[string]any{"name": "echo__echo", "arguments": args}})
				} else {
					res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo__echo", Arguments: args})
				}
				if err != nil {
					t.Fatalf("a call right after start-up: %v", err)
				}
				if resultText(res) != "hi" {
					t.Errorf("a call right after start-up gave %s: %s, want hi", errorCode(t, res), resultText(res))
				}
			})
		}
	}
}
