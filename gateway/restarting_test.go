package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/search"
)

// TestRestartingServerCallsGetUnavailable kills a real upstream and holds it down while
// it restarts: a call of one of its tools, listed directly or through tool_call, gets
// unavailable with advice to retry, not "no tool named"; the tools are neither listed
// nor searchable meanwhile; the user is not asked to approve a call that cannot run; a
// profile that cannot use the server learns nothing; once the server is back, the same
// call works.
func TestRestartingServerCallsGetUnavailable(t *testing.T) {
	for _, mode := range []policy.Mode{policy.Off, policy.On} {
		t.Run(string(mode), func(t *testing.T) {
			gate := filepath.Join(t.TempDir(), "down")
			alpha := testServer("alpha", "basic")
			alpha.Env["TOOLSHED_TEST_GATE"] = gate
			cfg := &config.Config{
				Servers:  []config.Server{alpha, testServer("beta", "basic")},
				Profiles: map[string]config.Profile{"betaonly": {Scope: policy.Scope{Servers: []string{"beta"}}}},
				Hooks:    config.Hooks{Approve: []string{"alpha__echo"}},
			}
			h := startGateway(t, cfg, gateway.Options{Mode: mode})
			var asked atomic.Int32 // approvals the user was asked for
			cs := h.client("", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}})
			callTool := func(cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
				t.Helper()
				if mode == policy.On {
					return call(t, cs, "tool_call", map[string]any{"name": name, "arguments": args})
				}
				return call(t, cs, name, args)
			}
			callEcho := func(cs *mcp.ClientSession, name string) *mcp.CallToolResult {
				t.Helper()
				return callTool(cs, name, map[string]any{"text": "hi"})
			}
			var betaSession *mcp.ClientSession
			other := func() *mcp.ClientSession {
				if betaSession == nil {
					betaSession = h.client("betaonly", nil)
				}
				return betaSession
			}
			if res := callEcho(cs, "alpha__echo"); resultText(res) != "hi" || asked.Load() != 1 {
				t.Fatalf("before the crash: %s, after %d approvals, want hi after 1", resultText(res), asked.Load())
			}

			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if res := callTool(cs, "alpha__crash", map[string]any{}); errorCode(t, res) != "unavailable" {
				t.Fatalf("the crash mid-call gave %s", resultText(res))
			}
			waitFor(t, "alpha to fail restarting twice", func() bool {
				st := status(h, "alpha")
				return st.Restarts >= 3 && st.State != gateway.Ready
			})
			waitFor(t, "alpha's tools to leave tools/list", func() bool { return !has(toolNames(t, cs), "alpha__echo") })

			res := callEcho(cs, "alpha__echo")
			if code := errorCode(t, res); code != string(search.Unavailable) || !strings.Contains(resultText(res), "retry") || !strings.Contains(resultText(res), "restarting") {
				t.Errorf("a call while alpha restarts gave %s: %s; want unavailable, saying it restarts and to retry", code, resultText(res))
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the user was asked to approve a call while its server was down (%d approvals)", n-1)
			}
			if mode == policy.On {
				if res := call(t, cs, "tool_search", map[string]any{"query": "echo"}); strings.Contains(resultText(res), "alpha__echo") {
					t.Errorf("tool_search finds a tool of a server that is down: %s", resultText(res))
				}
				// tool_describe says the same as a call.
				res := call(t, cs, "tool_describe", map[string]any{"name": "alpha__echo"})
				if code := errorCode(t, res); code != string(search.Unavailable) || !strings.Contains(resultText(res), "restarting") {
					t.Errorf("tool_describe while alpha restarts gave %s: %s; want unavailable", code, resultText(res))
				}
				if res := call(t, other(), "tool_describe", map[string]any{"name": "alpha__echo"}); errorCode(t, res) != string(search.InvalidToolInput) {
					t.Errorf("tool_describe of a profile without alpha gave %s: %s", errorCode(t, res), resultText(res))
				}
				// A name no server ever had is still unknown.
				if res := callEcho(cs, "alpha__nosuch"); errorCode(t, res) != string(search.InvalidToolInput) {
					t.Errorf("an unknown name while alpha restarts gave %s: %s", errorCode(t, res), resultText(res))
				}
			} else {
				r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__nosuch", Arguments: map[string]any{}})
				if err == nil {
					t.Errorf("an unknown name while alpha restarts gave %s, want the SDK's unknown tool error", resultText(r))
				}
			}
			// A profile that may not use alpha is told what it would be told of any
			// unknown name.
			betaOnly := other()
			if mode == policy.On {
				if res := callEcho(betaOnly, "alpha__echo"); errorCode(t, res) != string(search.InvalidToolInput) || strings.Contains(resultText(res), "restart") {
					t.Errorf("a profile without alpha was told %s: %s", errorCode(t, res), resultText(res))
				}
			} else if r, err := betaOnly.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha__echo", Arguments: map[string]any{"text": "hi"}}); err == nil {
				t.Errorf("a profile without alpha got a result: %s", resultText(r))
			}

			if err := os.Remove(gate); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "alpha to be back", func() bool { return status(h, "alpha").State == gateway.Ready })
			if res := callEcho(cs, "alpha__echo"); resultText(res) != "hi" {
				t.Errorf("after the restart: %s (%s)", resultText(res), errorCode(t, res))
			}
		})
	}
}

// A tool of a server that has never been up (its first start failed and it keeps
// failing, or it is still in its first start past the start-up wait) is unavailable,
// as a tool of a restarting server is, not "no tool named": directly, through
// tool_call and tool_describe. A profile that may not use the server is told what it
// would be told of any unknown name.
func TestNeverStartedServerCallsGetUnavailable(t *testing.T) {
	for _, mode := range []policy.Mode{policy.Off, policy.On} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := &config.Config{
				Servers:  []config.Server{testServer("alpha", "basic"), testServer("dead", "exit"), testServer("slow", "hang")},
				Profiles: map[string]config.Profile{"alphaonly": {Scope: policy.Scope{Servers: []string{"alpha"}}}},
			}
			h := startGateway(t, cfg, gateway.Options{Mode: mode, StartWait: 200 * time.Millisecond, WaitForClient: true})
			cs := h.client("", nil)
			waitFor(t, "dead to fail and alpha to be up", func() bool {
				return status(h, "dead").Restarts > 0 && status(h, "alpha").State == gateway.Ready
			})
			callTool := func(cs *mcp.ClientSession, name string) (*mcp.CallToolResult, error) {
				args := map[string]any{"text": "hi"}
				if mode == policy.On {
					return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tool_call", Arguments: map[string]any{"name": name, "arguments": args}})
				}
				return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			}
			for _, tc := range []struct{ tool, says string }{
				{"dead__echo", "has not started yet"},
				{"slow__echo", "is still starting"},
			} {
				res, err := callTool(cs, tc.tool)
				if err != nil {
					t.Errorf("calling %s: %v; want unavailable", tc.tool, err)
					continue
				}
				if code := errorCode(t, res); code != string(search.Unavailable) || !strings.Contains(resultText(res), tc.says) || !strings.Contains(resultText(res), "retry") {
					t.Errorf("calling %s gave %s: %s; want unavailable, saying the server %s and to retry", tc.tool, code, resultText(res), tc.says)
				}
				if mode == policy.On {
					res := call(t, cs, "tool_describe", map[string]any{"name": tc.tool})
					if code := errorCode(t, res); code != string(search.Unavailable) || !strings.Contains(resultText(res), tc.says) {
						t.Errorf("tool_describe of %s gave %s: %s; want unavailable", tc.tool, code, resultText(res))
					}
				}
			}
			// A server that is up still has unknown tools, and an unknown server none.
			for _, name := range []string{"alpha__nosuch", "nosuch__echo"} {
				if res, err := callTool(cs, name); err == nil && errorCode(t, res) != string(search.InvalidToolInput) {
					t.Errorf("calling %s gave %s: %s; want no such tool", name, errorCode(t, res), resultText(res))
				}
			}
			other := h.client("alphaonly", nil)
			if res, err := callTool(other, "dead__echo"); err == nil && (errorCode(t, res) != string(search.InvalidToolInput) || strings.Contains(resultText(res), "start")) {
				t.Errorf("a profile without dead was told %s: %s", errorCode(t, res), resultText(res))
			}
		})
	}
}
