package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// These tests run the toolshed binary as a user would, against real upstreams (the npm
// reference servers and the go-sdk conformance server), driven by real clients (the MCP
// Inspector CLI and the MCP conformance suite).

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// toolshedBinary builds cmd/toolshed once per test run, into the directory TestMain
// removes at the end.
func toolshedBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		binaryPath = filepath.Join(testDir, "toolshed")
		out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// writeConfig writes an mcpServers config of the given stdio servers.
func writeConfig(t *testing.T, servers map[string][]string) string {
	t.Helper()
	cfg := map[string]any{}
	for name, argv := range servers {
		cfg[name] = map[string]any{"command": argv[0], "args": argv[1:]}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": cfg})
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func argv(cmd string, args []string) []string { return append([]string{cmd}, args...) }

// inspect runs the Inspector against target and decodes its JSON result.
func inspect(t *testing.T, target []string, options ...string) (map[string]any, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stdout, stderr, code, err := testupstream.Inspector(t, ctx, target, append(options, "--format", "json")...)
	if err != nil {
		t.Fatalf("inspector: %v\nstderr: %s", err, stderr)
	}
	var out struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil || out.Result == nil {
		t.Fatalf("inspector %v (exit %d) printed no result: %s\nstderr: %s", options, code, stdout, stderr)
	}
	return out.Result, code
}

// toolText returns the text of a tools/call result.
func toolText(res map[string]any) string {
	var parts []string
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			parts = append(parts, m["text"].(string))
		}
	}
	return strings.Join(parts, "\n")
}

func toolSchema(t *testing.T, list map[string]any, name string) any {
	t.Helper()
	tools, _ := list["tools"].([]any)
	for _, x := range tools {
		if m := x.(map[string]any); m["name"] == name {
			return m["inputSchema"]
		}
	}
	t.Fatalf("no tool %s in %v", name, list)
	return nil
}

// checkBridge drives toolshed in front of the npm everything and memory servers, as the
// target (a command line for stdio, or a URL): tools/list shows the bridge,
// tool_search finds an upstream tool, tool_describe gives its schema unchanged, and
// tool_call gives the upstream's own result.
func checkBridge(t *testing.T, target []string, everything []string) {
	list, _ := inspect(t, target, "--method", "tools/list")
	var names []string
	for _, x := range list["tools"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	if !reflect.DeepEqual(names, []string{"tool_call", "tool_describe", "tool_search"}) {
		t.Errorf("tools/list through toolshed = %v, want the bridge", names)
	}

	res, _ := inspect(t, target, "--method", "tools/call", "--tool-name", "tool_search", "--tool-arg", "query=echo back the input message")
	var found struct {
		Matches []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(toolText(res)), &found); err != nil || len(found.Matches) == 0 || found.Matches[0].Name != "everything__echo" {
		t.Errorf("tool_search = %s", toolText(res))
	}

	direct, _ := inspect(t, everything, "--method", "tools/list")
	res, _ = inspect(t, target, "--method", "tools/call", "--tool-name", "tool_describe", "--tool-arg", "name=everything__echo")
	var desc struct {
		InputSchema any `json:"inputSchema"`
	}
	json.Unmarshal([]byte(toolText(res)), &desc)
	if want := toolSchema(t, direct, "echo"); !reflect.DeepEqual(desc.InputSchema, want) {
		t.Errorf("tool_describe schema %v, the server lists %v", desc.InputSchema, want)
	}

	want, _ := inspect(t, everything, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hello from the test")
	got, _ := inspect(t, target, "--method", "tools/call", "--tool-name", "tool_call", "--tool-arg", `name=everything__echo`, `arguments={"message": "hello from the test"}`)
	if toolText(got) == "" || !reflect.DeepEqual(got["content"], want["content"]) {
		t.Errorf("tool_call result %v, direct result %v", got, want)
	}

	// The memory server, written and read back through tool_call.
	res, code := inspect(t, target, "--method", "tools/call", "--tool-name", "tool_call", "--tool-arg", "name=memory__create_entities",
		`arguments={"entities": [{"name": "toolshed", "entityType": "project", "observations": ["searches tools"]}]}`)
	if code != 0 {
		t.Fatalf("create_entities through tool_call exited %d: %v", code, res)
	}
	res, _ = inspect(t, target, "--method", "tools/call", "--tool-name", "tool_call", "--tool-arg", "name=memory__read_graph", "arguments={}")
	if !strings.Contains(toolText(res), "searches tools") {
		t.Errorf("read_graph = %s", toolText(res))
	}
	// A call of an unknown tool is an error result (exit 5), not a crash.
	if _, code := inspect(t, target, "--method", "tools/call", "--tool-name", "tool_call", "--tool-arg", "name=memory__no_such_tool", "arguments={}"); code != 5 {
		t.Errorf("unknown tool: exit %d, want 5 (an isError result)", code)
	}
}

func TestServeInspectorStdio(t *testing.T) {
	bin := toolshedBinary(t)
	ecmd, eargs := testupstream.Everything(t)
	mcmd, margs := testupstream.Memory(t)
	cfg := writeConfig(t, map[string][]string{"everything": argv(ecmd, eargs), "memory": argv(mcmd, margs)})
	checkBridge(t, []string{bin, "serve", "--config", cfg, "--tool-search", "on"}, argv(ecmd, eargs))
}

func TestServeInspectorHTTP(t *testing.T) {
	bin := toolshedBinary(t)
	ecmd, eargs := testupstream.Everything(t)
	mcmd, margs := testupstream.Memory(t)
	cfg := writeConfig(t, map[string][]string{"everything": argv(ecmd, eargs), "memory": argv(mcmd, margs)})
	url := startServe(t, bin, "--config", cfg, "--tool-search", "on")
	checkBridge(t, []string{url}, argv(ecmd, eargs))
}

// startServe runs toolshed serve --http on a free port until the test ends and returns
// its MCP endpoint once every upstream is up.
func startServe(t *testing.T, bin string, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	startCommand(t, bin, nil, append([]string{"serve", "--http", addr}, args...), testupstream.ServersReady)
	return "http://" + addr + "/mcp"
}

// freeAddr returns a local address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startCommand runs bin with args (and env added to the environment) until the test
// ends (see testupstream.Start), and returns once ready accepts its stderr so far.
func startCommand(t *testing.T, bin string, env, args []string, ready func(stderr string) bool) *testupstream.SyncBuffer {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return testupstream.Start(t, cmd, ready)
}

// The conformance suite's 2026-07-28 requirement set (server role, Streamable HTTP)
// passes against toolshed in off mode in front of the go-sdk everything-server, which
// toolshed reaches at 2026-07-28 too; what a gateway cannot pass yet is in
// testdata/conformance-2026-baseline.yml, each with its reason. Before toolshed served
// 2026-07-28 to its clients, 112 checks passed and 66 failed (the envelope, header and
// status checks of server-stateless, http-header-validation and
// http-custom-header-server-validation among them).
func TestServeConformance2026(t *testing.T) {
	bin := toolshedBinary(t)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{
		"command": testupstream.ConformanceServer(t)}}})
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServe(t, bin, "--config", cfg, "--tool-search", "off", "--no-prefix")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	baseline, _ := filepath.Abs("testdata/conformance-2026-baseline.yml")
	out, code, err := testupstream.ConformanceSuite2026(t, ctx, url, "--requirements", "2026-07-28", "--expected-failures", baseline)
	if err != nil {
		t.Fatal(err)
	}
	passed, failed := testupstream.ParseConformance(out)
	t.Logf("conformance 2026-07-28: %d scenarios passed, failed: %v", len(passed), failed)
	for _, want := range []string{"server-stateless", "http-header-validation", "http-custom-header-server-validation", "caching", "tools-list"} {
		if !slices.Contains(passed, want) {
			t.Errorf("scenario %s did not pass", want)
		}
	}
	if code != 0 || len(passed) < 30 {
		t.Errorf("conformance suite exited %d with %d scenarios passed, failed %v:\n%s", code, len(passed), failed, out)
	}
}

// The conformance suite passes against toolshed in off mode in front of the go-sdk
// everything-server; scenarios that cannot pass are in testdata/conformance-baseline.yml.
// The server speaks 2026-07-28 too, but its sampling and elicitation tools ask the
// client the old way (Session.CreateMessage, Session.Elicit), which it refuses on a
// 2026-07-28 connection: protocol legacy keeps it on 2025-11-25, as this suite (of
// 2025-11-25) needs.
func TestServeConformance(t *testing.T) {
	bin := toolshedBinary(t)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{
		"command": testupstream.ConformanceServer(t), "protocol": "legacy"}}})
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServe(t, bin, "--config", cfg, "--tool-search", "off", "--no-prefix")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	baseline, _ := filepath.Abs("testdata/conformance-baseline.yml")
	out, code, err := testupstream.ConformanceSuite(t, ctx, url, "--suite", "all", "--expected-failures", baseline)
	if err != nil {
		t.Fatal(err)
	}
	passed, failed := testupstream.ParseConformance(out)
	t.Logf("conformance: %d scenarios passed, failed: %v", len(passed), failed)
	if code != 0 || len(passed) < 30 {
		t.Errorf("conformance suite exited %d with %d scenarios passed, failed %v:\n%s", code, len(passed), failed, out)
	}

	// The baseline's tools-call-with-logging fails in the suite only because the suite's
	// earlier sessions are still open: alone with toolshed, its client gets the logs.
	alone := startServe(t, bin, "--config", cfg, "--tool-search", "off", "--no-prefix")
	out, code, err = testupstream.ConformanceSuite(t, ctx, alone, "--scenario", "tools-call-with-logging")
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 || !bytes.Contains(out, []byte("Passed: 1/1, 0 failed")) {
		t.Errorf("tools-call-with-logging alone with toolshed exited %d:\n%s", code, out)
	}
}
