package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/redact"
	"github.com/toolshed/toolshed/policy"
)

func TestProgressAndCancellation(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	cs := h.client("", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, req.Params)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "alpha__slow", Arguments: map[string]any{"steps": 3}}
	params.SetProgressToken("my-token-42")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || resultText(res) != "done 3 steps" {
		t.Fatalf("slow = %+v, %v", res, err)
	}
	waitFor(t, "3 progress notifications", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3 })
	mu.Lock()
	for i, p := range got {
		if p.ProgressToken != "my-token-42" || p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("progress %d = %+v, want the client's own token", i, p)
		}
	}
	mu.Unlock()

	// Cancelling the client's call cancels the upstream's.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha__slow", Arguments: map[string]any{"steps": 200}}); err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	waitFor(t, "the upstream to see the cancellation", func() bool {
		return resultText(call(t, cs, "alpha__cancelled", map[string]any{})) == "1"
	})
}

func TestElicitationAndSamplingRelay(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) { testRelay(t, version) })
	}
}

func testRelay(t *testing.T, version string) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	cs := h.clientVersion("", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message != "What is your name?" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "hi"}}, nil
		},
	}, version)
	if got := resultText(call(t, cs, "alpha__elicit", map[string]any{})); got != "accept Ada" {
		t.Errorf("elicit through toolshed = %q", got)
	}
	if got := resultText(call(t, cs, "alpha__sample", map[string]any{})); got != "model test-model said: hi" {
		t.Errorf("sample through toolshed = %q", got)
	}
	// Through tool_call too.
	on := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On})
	cs2 := on.clientVersion("", &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
	}}, version)
	if got := resultText(call(t, cs2, "tool_call", map[string]any{"name": "alpha__elicit", "arguments": map[string]any{}})); got != "accept Grace" {
		t.Errorf("elicit through tool_call = %q", got)
	}
}

func TestHooksAllowDeny(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, Hooks: config.Hooks{Allow: []string{"alpha__*"}, Deny: []string{"alpha__fail", "*__crash"}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On})
	cs := h.client("", nil)
	for _, tool := range []string{"alpha__fail", "alpha__crash"} {
		// Denied whichever way the call comes: directly is impossible in on mode, so
		// through tool_call, where the hook sees the real name.
		res := call(t, cs, "tool_call", map[string]any{"name": tool, "arguments": map[string]any{}})
		if errorCode(t, res) != "permission_denied" || !strings.Contains(resultText(res), tool) {
			t.Errorf("%s: %s (%s), want permission_denied naming the real tool", tool, resultText(res), errorCode(t, res))
		}
	}
	if res := call(t, cs, "tool_call", map[string]any{"name": "alpha__echo", "arguments": map[string]any{"text": "ok"}}); resultText(res) != "ok" {
		t.Errorf("an allowed tool: %+v", res)
	}
	if st := status(h, "alpha"); st.Restarts != 0 {
		t.Errorf("the denied crash ran: %+v", st)
	}
}

func TestApproval(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) { testApproval(t, version) })
	}
}

func testApproval(t *testing.T, version string) {
	logFile := filepath.Join(t.TempDir(), "activity.jsonl")
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")},
		Hooks: config.Hooks{ApproveDestructive: true, Approve: []string{"alpha__echo"}, SecretFields: []string{"password"}, ActivityLog: logFile}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	asked := 0
	answer := "accept"
	cs := h.clientVersion("", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		if strings.Contains(req.Params.Message, "hunter2") {
			t.Errorf("the approval question shows a secret argument: %s", req.Params.Message)
		}
		return &mcp.ElicitResult{Action: answer, Content: map[string]any{"approve": true}}, nil
	}}, version)
	args := map[string]any{"password": "hunter2", "target": "/"}
	if res := call(t, cs, "alpha__delete_everything", args); res.IsError || resultText(res) != "deleted" {
		t.Fatalf("approved call = %s", resultText(res))
	}
	answer = "decline"
	if res := call(t, cs, "alpha__delete_everything", args); errorCode(t, res) != "permission_denied" {
		t.Errorf("declined call = %s", resultText(res))
	}
	if res := call(t, cs, "alpha__add", map[string]any{"a": 1, "b": 1}); res.IsError || asked != 2 {
		t.Errorf("a tool without approval rule: %s, asked %d times", resultText(res), asked)
	}
	// A client that cannot elicit is refused, with the reason.
	plain := h.clientVersion("", nil, version)
	res := call(t, plain, "alpha__echo", map[string]any{"text": "x"})
	if errorCode(t, res) != "permission_denied" || !strings.Contains(resultText(res), "elicitation") {
		t.Errorf("approval without elicitation = %s", resultText(res))
	}

	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "hunter2") {
		t.Errorf("the activity log holds a secret:\n%s", data)
	}
	var outcomes []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct {
			Tool, Server, Via, Outcome, Session string
			DurationMS                          *float64 `json:"duration_ms"`
			Arguments                           map[string]any
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("activity line %q: %v", line, err)
		}
		if e.Server != "alpha" || e.Via != "direct" || e.DurationMS == nil || e.Session == "" {
			t.Errorf("activity line %q", line)
		}
		if e.Tool == "alpha__delete_everything" && e.Arguments["password"] != redact.Mask {
			t.Errorf("password not masked as %s: %q", redact.Mask, line)
		}
		outcomes = append(outcomes, e.Tool+":"+e.Outcome)
	}
	want := "alpha__delete_everything:ok alpha__delete_everything:declined alpha__add:ok alpha__echo:declined"
	if strings.Join(outcomes, " ") != want {
		t.Errorf("activity outcomes %v, want %s", outcomes, want)
	}
}

func TestRateLimit(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}, RateLimit: config.RateLimit{CallsPerMinute: 1, Burst: 2}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	cs := h.client("", nil)
	for i := range 2 {
		if res := call(t, cs, "alpha__echo", map[string]any{"text": "x"}); res.IsError {
			t.Fatalf("call %d: %s", i, resultText(res))
		}
	}
	res := call(t, cs, "alpha__echo", map[string]any{"text": "x"})
	if errorCode(t, res) != "too_many_requests" {
		t.Errorf("third call = %s", resultText(res))
	}
	// Another session has its own budget.
	if res := call(t, h.client("", nil), "alpha__echo", map[string]any{"text": "x"}); res.IsError {
		t.Errorf("another session: %s", resultText(res))
	}
}

func TestProfiles(t *testing.T) {
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")},
		Profiles: map[string]config.Profile{"beta-only": {Scope: policy.Scope{Servers: []string{"beta"}, Tools: []string{"alpha__echo"}}}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On})
	cs := h.client("beta-only", nil)
	res := call(t, cs, "tool_search", map[string]any{"query": "add two numbers", "limit": 20})
	if strings.Contains(resultText(res), "alpha__add") || !strings.Contains(resultText(res), "beta__add") {
		t.Errorf("search in profile = %s", resultText(res))
	}
	unknown := call(t, cs, "tool_describe", map[string]any{"name": "alpha__nosuchtool"})
	hidden := call(t, cs, "tool_describe", map[string]any{"name": "alpha__add"})
	if strings.ReplaceAll(resultText(hidden), "alpha__add", "X") != strings.ReplaceAll(resultText(unknown), "alpha__nosuchtool", "X") {
		t.Errorf("an out-of-scope tool is described differently from an unknown one:\n%s\n%s", resultText(hidden), resultText(unknown))
	}
	unknown = call(t, cs, "tool_call", map[string]any{"name": "alpha__nosuchtool", "arguments": map[string]any{}})
	hidden = call(t, cs, "tool_call", map[string]any{"name": "alpha__add", "arguments": map[string]any{"a": 1, "b": 2}})
	if strings.ReplaceAll(resultText(hidden), "alpha__add", "X") != strings.ReplaceAll(resultText(unknown), "alpha__nosuchtool", "X") {
		t.Errorf("an out-of-scope tool is called differently from an unknown one:\n%s\n%s", resultText(hidden), resultText(unknown))
	}
	if res := call(t, cs, "tool_call", map[string]any{"name": "alpha__echo", "arguments": map[string]any{"text": "granted"}}); resultText(res) != "granted" {
		t.Errorf("a tool granted by glob: %s", resultText(res))
	}
	// The default profile sees everything.
	res = call(t, h.client("", nil), "tool_search", map[string]any{"query": "add two numbers", "limit": 20})
	if !strings.Contains(resultText(res), "alpha__add") {
		t.Errorf("default profile search = %s", resultText(res))
	}
}

func TestPinnedAndDeferConfigs(t *testing.T) {
	alpha := testServer("alpha", "basic")
	alpha.Rules = policy.ServerRules{Configs: map[string]policy.ToolConfig{"echo": {DeferLoading: ptr(false)}, "crash": {Enabled: ptr(false)}}}
	beta := testServer("beta", "basic")
	beta.AlwaysLoad = true
	h := startGateway(t, &config.Config{Servers: []config.Server{alpha, beta}}, gateway.Options{Mode: policy.On})
	cs := h.client("", nil)
	names := toolNames(t, cs)
	if !has(names, "alpha__echo") || !has(names, "beta__add") || has(names, "alpha__add") || !has(names, "tool_search") {
		t.Errorf("on mode with pinning lists %v", names)
	}
	res := call(t, cs, "tool_call", map[string]any{"name": "alpha__crash", "arguments": map[string]any{}})
	if errorCode(t, res) != "invalid_tool_input" {
		t.Errorf("a disabled tool is callable: %s", resultText(res))
	}
}
