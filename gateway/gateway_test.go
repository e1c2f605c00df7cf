package gateway_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/policy"
)

func TestOffModeListsQualifiedTools(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")}}, gateway.Options{Mode: policy.Off})
	cs := h.client("", nil)
	names := toolNames(t, cs)
	for _, want := range []string{"alpha__echo", "alpha__add", "beta__echo", "beta__delete_everything"} {
		if !has(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	if has(names, "tool_search") {
		t.Errorf("off mode lists the bridge: %v", names)
	}
	res := call(t, cs, "alpha__add", map[string]any{"a": 2, "b": 3})
	if res.IsError || resultText(res) != "5" {
		t.Fatalf("alpha__add = %+v", res)
	}
	if got, _ := json.Marshal(res.StructuredContent); string(got) != `{"sum":5}` {
		t.Errorf("structured content %s", got)
	}
	res = call(t, cs, "beta__fail", map[string]any{})
	if !res.IsError || resultText(res) != "it failed on purpose" {
		t.Errorf("beta__fail = %+v, want the upstream's own error result unchanged", res)
	}
}

// The result of a call through toolshed is the result of calling the upstream directly.
func TestResultsUnchanged(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	cs := h.client("", nil)
	cmd, args, env := upstreamCommand("basic")
	c := exec.Command(cmd, args...)
	testupstream.Own(t, c)
	for k, v := range env {
		c.Env = append(c.Environ(), k+"="+v)
	}
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: c}, &mcp.ClientSessionOptions{ProtocolVersion: gateway.UpstreamProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"add", map[string]any{"a": 1.5, "b": 2}},
		{"echo", map[string]any{"text": "héllo <b>&</b>"}},
		{"fail", map[string]any{}},
		{"args", map[string]any{"z": 1, "a": []any{true, nil, "x"}}},
	} {
		want := call(t, direct, tc.tool, tc.args)
		got := call(t, cs, "alpha__"+tc.tool, tc.args)
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if string(wb) != string(gb) {
			t.Errorf("%s through toolshed:\n%s\ndirect:\n%s", tc.tool, gb, wb)
		}
	}
}

func TestNoPrefix(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "many:3")}}, gateway.Options{Mode: policy.Off, NoPrefix: true})
	names := toolNames(t, h.client("", nil))
	for _, want := range []string{"echo", "add", "tool_00001", "tool_00003"} {
		if !has(names, want) {
			t.Errorf("no-prefix tools/list lacks %s: %v", want, names)
		}
	}
	if res := call(t, h.client("", nil), "echo", map[string]any{"text": "hi"}); resultText(res) != "hi" {
		t.Errorf("echo = %+v", res)
	}
	// The same names on two servers stay qualified.
	h2 := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")}}, gateway.Options{Mode: policy.Off, NoPrefix: true})
	names = toolNames(t, h2.client("", nil))
	if !has(names, "alpha__echo") || !has(names, "beta__echo") || has(names, "echo") {
		t.Errorf("ambiguous names must stay qualified: %v", names)
	}
}

func TestOnModeBridge(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On})
	cs := h.client("", nil)
	names := toolNames(t, cs)
	if !reflect.DeepEqual(names, []string{"tool_call", "tool_describe", "tool_search"}) {
		t.Fatalf("on mode lists %v, want only the bridge", names)
	}
	res := call(t, cs, "tool_search", map[string]any{"query": "add two numbers", "limit": 3})
	var found struct {
		Matches []struct{ Name string }
	}
	json.Unmarshal([]byte(resultText(res)), &found)
	if len(found.Matches) == 0 || found.Matches[0].Name != "alpha__add" {
		t.Fatalf("tool_search = %s", resultText(res))
	}
	res = call(t, cs, "tool_describe", map[string]any{"name": "alpha__add"})
	var desc struct {
		InputSchema  json.RawMessage
		OutputSchema json.RawMessage
	}
	json.Unmarshal([]byte(resultText(res)), &desc)
	if string(desc.InputSchema) != `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}` {
		t.Errorf("tool_describe schema %s", desc.InputSchema)
	}
	res = call(t, cs, "tool_call", map[string]any{"name": "alpha__add", "arguments": map[string]any{"a": 40, "b": 2}})
	if res.IsError || resultText(res) != "42" {
		t.Errorf("tool_call = %+v", res)
	}
	// Errors of the bridge: bad arguments never reach the tool.
	res = call(t, cs, "tool_call", map[string]any{"name": "alpha__add", "arguments": map[string]any{"a": "x"}})
	if errorCode(t, res) != "invalid_tool_input" || !strings.Contains(resultText(res), "/a") {
		t.Errorf("tool_call with bad arguments = %s (%s)", resultText(res), errorCode(t, res))
	}
	res = call(t, cs, "tool_call", map[string]any{"name": "alpha__nope", "arguments": map[string]any{}})
	if errorCode(t, res) != "invalid_tool_input" {
		t.Errorf("unknown tool = %s", resultText(res))
	}
}

// The arguments a client sends reach the tool byte for byte, directly and by tool_call.
func TestArgumentsUntouched(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On, NoPrefix: false})
	cs := h.client("", nil)
	args := json.RawMessage(`{"zeta":1.50,"alpha":"caf\u00e9","nested":{"b":[1,2],"a":null}}`)
	res := call(t, cs, "tool_call", map[string]any{"name": "alpha__args", "arguments": args})
	if got := resultText(res); got != string(args) {
		t.Errorf("the tool received %s, want %s", got, args)
	}
}

func TestFaultExitAtStart(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("bad", "exit"), testServer("good", "basic")}}, gateway.Options{Mode: policy.Off})
	cs := h.client("", nil)
	if res := call(t, cs, "good__echo", map[string]any{"text": "still here"}); resultText(res) != "still here" {
		t.Fatalf("good__echo = %+v", res)
	}
	waitFor(t, "two restarts of the failing server", func() bool { st := status(h, "bad"); return st.Restarts >= 2 && st.State == gateway.Failed })
	st := status(h, "bad")
	if st.State == gateway.Ready || st.Err == nil || !strings.Contains(st.Err.Error(), "could not start") {
		t.Errorf("bad upstream status %+v", st)
	}
	if !strings.Contains(h.log.String(), "[bad] test upstream: refusing to start (exit mode): cannot connect to postgres://app:xxxxx@db/app\n") {
		t.Errorf("the child's stderr is not in the log with its server's prefix, redacted:\n%s", h.log.String())
	}
	if strings.Contains(h.log.String(), "s3cret") {
		t.Errorf("the child's password is in the log:\n%s", h.log.String())
	}
	if names := toolNames(t, cs); has(names, "bad__echo") || !has(names, "good__echo") {
		t.Errorf("tools %v", names)
	}
}

func status(h *harness, name string) gateway.Status {
	for _, s := range h.g.Statuses() {
		if s.Name == name {
			return s
		}
	}
	return gateway.Status{}
}

func TestFaultCrashMidCall(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")}}, gateway.Options{Mode: policy.Off})
	cs := h.client("", nil)
	res := call(t, cs, "alpha__crash", map[string]any{})
	if errorCode(t, res) != "unavailable" {
		t.Fatalf("a crash mid-call gave %+v (%s), want unavailable", res, resultText(res))
	}
	if res := call(t, cs, "beta__echo", map[string]any{"text": "ok"}); resultText(res) != "ok" {
		t.Errorf("the other upstream: %+v", res)
	}
	waitFor(t, "the crashed server to be restarted", func() bool {
		st := status(h, "alpha")
		return st.State == gateway.Ready && st.Restarts >= 1
	})
	waitFor(t, "alpha's tools to come back", func() bool { return has(toolNames(t, cs), "alpha__echo") })
	if res := call(t, cs, "alpha__echo", map[string]any{"text": "back"}); resultText(res) != "back" {
		t.Errorf("after restart: %+v", res)
	}
}

func TestFaultHangAtStart(t *testing.T) {
	hang := testServer("stuck", "hang")
	hang.ConnectTimeout = 300 * time.Millisecond
	h := startGateway(t, &config.Config{Servers: []config.Server{hang, testServer("good", "basic")}}, gateway.Options{Mode: policy.Off})
	st := status(h, "stuck")
	if st.State == gateway.Ready || st.Err == nil || !strings.Contains(st.Err.Error(), "connect_timeout") {
		t.Errorf("hanging upstream status %+v", st)
	}
	if res := call(t, h.client("", nil), "good__echo", map[string]any{"text": "x"}); resultText(res) != "x" {
		t.Errorf("good__echo = %+v", res)
	}
}

func TestFaultGarbage(t *testing.T) {
	garbage := testServer("noisy", "garbage")
	garbage.ConnectTimeout = 2 * time.Second
	h := startGateway(t, &config.Config{Servers: []config.Server{garbage, testServer("good", "basic")}}, gateway.Options{Mode: policy.Off})
	if st := status(h, "noisy"); st.State == gateway.Ready {
		t.Errorf("a server writing garbage is ready: %+v", st)
	}
	if res := call(t, h.client("", nil), "good__echo", map[string]any{"text": "x"}); resultText(res) != "x" {
		t.Errorf("good__echo = %+v", res)
	}
}

func TestCallTimeout(t *testing.T) {
	s := testServer("alpha", "basic")
	s.CallTimeout = 300 * time.Millisecond
	h := startGateway(t, &config.Config{Servers: []config.Server{s}}, gateway.Options{Mode: policy.Off})
	res := call(t, h.client("", nil), "alpha__hang", map[string]any{})
	if errorCode(t, res) != "execution_time_exceeded" || !strings.Contains(resultText(res), "call_timeout") {
		t.Errorf("hang = %s (%s)", resultText(res), errorCode(t, res))
	}
}

func TestManyTools(t *testing.T) {
	many := testServer("big", "many:10000")
	many.ConnectTimeout = time.Minute
	h := startGateway(t, &config.Config{Servers: []config.Server{many, testServer("alpha", "basic")}}, gateway.Options{})
	cs := h.client("", nil)
	// The first client changes what the upstreams are told it supports (see
	// TestRedeclareOnClientChange): they reconnect, which takes big (10,000 tools) a
	// while under the race detector on a loaded machine.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		st := status(h, "big")
		if st.State == gateway.Ready && st.Tools == 10000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("big upstream %+v", st)
		}
	}
	names := toolNames(t, cs)
	if len(names) != 3 {
		t.Errorf("auto mode with 10,000 tools lists %d tools, want the bridge", len(names))
	}
	res := call(t, cs, "tool_search", map[string]any{"query": "tool_04242"})
	if !strings.Contains(resultText(res), `"big__tool_04242"`) {
		t.Errorf("tool_search tool_04242 = %s", resultText(res))
	}
	res = call(t, cs, "tool_call", map[string]any{"name": "big__tool_09999", "arguments": map[string]any{"item": 1}})
	if resultText(res) != "tool_09999" {
		t.Errorf("tool_call = %+v", res)
	}
	off := startGateway(t, &config.Config{Servers: []config.Server{many}}, gateway.Options{Mode: policy.Off})
	if n := len(toolNames(t, off.client("", nil))); n != 10000 {
		t.Errorf("off mode lists %d tools, want 10,000", n)
	}
}

func TestListChanged(t *testing.T) {
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.Off})
	changed := make(chan struct{}, 10)
	cs := h.client("", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	if res := call(t, cs, "alpha__grow", map[string]any{"n": 7}); resultText(res) != "added extra_7" {
		t.Fatalf("grow = %+v", res)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed reached the client")
	}
	waitFor(t, "alpha__extra_7 in tools/list", func() bool { return has(toolNames(t, cs), "alpha__extra_7") })
	if res := call(t, cs, "alpha__extra_7", map[string]any{}); resultText(res) != "extra_7" {
		t.Errorf("extra_7 = %+v", res)
	}
}
