package testupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// The TypeScript SDK v2 test servers (ts2/server.mjs) speak MCP 2026-07-28: a server
// started with legacy "reject" is modern-only (it answers initialize with -32022), one
// with "serve" (stdio) or "stateless" (HTTP) serves both eras. They run on the SDK that
// scripts/deps.sh installs into .deps/npm (@modelcontextprotocol/server 2.4.0), with
// the tools echo, confirm (asks for an elicitation through MRTR, and reports the answer
// and the requestState it got back), ask_llm (asks for a sampling through MRTR) and slow
// (waits until cancelled). env is added to the server's environment: WIRE_LOG=FILE logs every
// message it receives, LATE=MS adds the tool late after MS milliseconds, LATE=FILE
// once FILE exists.

// ts2Script returns the path of a script of ts2/ (server.mjs, tasks.mjs, client.mjs…), and
// the node_modules its SDK is installed in.
func ts2Script(t testing.TB, name string) (script, modules string) {
	t.Helper()
	npmFile(t, "@modelcontextprotocol/server (TypeScript SDK v2)", "@modelcontextprotocol/server/package.json")
	return filepath.Join(Root(t), "internal", "testupstream", "ts2", name), filepath.Join(DepsDir(t), "npm", "node_modules")
}

// ts2Command is `env TS2_MODULES=… [env…] node server.mjs args…`.
func ts2Command(t testing.TB, env map[string]string, args ...string) (command string, cmdArgs []string) {
	t.Helper()
	return ts2ScriptCommand(t, "server.mjs", env, args...)
}

// ts2ScriptCommand is `env TS2_MODULES=… [env…] node SCRIPT args…` for a script of ts2/.
func ts2ScriptCommand(t testing.TB, name string, env map[string]string, args ...string) (command string, cmdArgs []string) {
	t.Helper()
	node := Node(t)
	script, modules := ts2Script(t, name)
	envPath, err := exec.LookPath("env")
	if err != nil {
		t.Fatalf("testupstream: env(1) not found: %v", err)
	}
	cmdArgs = []string{"TS2_MODULES=" + modules}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k+"="+env[k])
	}
	cmdArgs = append(cmdArgs, node, script)
	return envPath, append(cmdArgs, args...)
}

// TS2Stdio returns the command line of the TypeScript SDK v2 test server over stdio;
// legacy is "reject" (modern-only) or "serve" (both eras).
func TS2Stdio(t testing.TB, legacy string, env map[string]string) (command string, args []string) {
	t.Helper()
	return ts2Command(t, env, "stdio", legacy)
}

// TS2TaskStdio returns the command line of the Tasks extension test server
// (ts2/tasks.mjs: a modern-only stdio server whose tools job and ask answer with a task
// handle, whose tool late answers with one only once its call is cancelled, and which
// answers tasks/get, tasks/update and tasks/cancel). env is added to
// its environment: WIRE_LOG=FILE logs every line it reads, PID_FILE=FILE gets its
// process id.
func TS2TaskStdio(t testing.TB, env map[string]string) (command string, args []string) {
	t.Helper()
	return ts2ScriptCommand(t, "tasks.mjs", env)
}

// TS2TaskHTTP starts the Tasks extension test server (ts2/tasks.mjs) over Streamable
// HTTP, modern-only, on a free 127.0.0.1 port, owned by the test and stopped at its
// end, and returns its MCP endpoint URL once it answers. env is as for TS2TaskStdio
// (WIRE_LOG gets "HTTP METHOD Mcp-Method=... Mcp-Name=... BODY" per request).
func TS2TaskHTTP(t testing.TB, env map[string]string) (url string) {
	t.Helper()
	return serveHTTP(t, "the TypeScript SDK v2 tasks server", 30*time.Second, func(addr string) *exec.Cmd {
		_, port, _ := net.SplitHostPort(addr)
		command, args := ts2ScriptCommand(t, "tasks.mjs", env, "http", port)
		return exec.Command(command, args...)
	})
}

// TS2HTTP starts the TypeScript SDK v2 test server over Streamable HTTP on a free
// 127.0.0.1 port, owned by the test (see Own) and stopped at its end, and returns its
// MCP endpoint URL once it answers; legacy is "reject" (modern-only) or "stateless"
// (both eras).
func TS2HTTP(t testing.TB, legacy string, env map[string]string) (url string) {
	t.Helper()
	return serveHTTP(t, "the TypeScript SDK v2 test server", 30*time.Second, func(addr string) *exec.Cmd {
		_, port, _ := net.SplitHostPort(addr)
		command, args := ts2Command(t, env, "http", legacy, port)
		return exec.Command(command, args...)
	})
}

// TS2Step is one step of a TS2Client run, as the client saw it: the tools a list
// returned, a call's result, or the error a step got.
type TS2Step struct {
	Tools  []string        `json:"tools"`
	Result json.RawMessage `json:"result"`
	// Error is the error a step got: Code is the JSON-RPC error code, or the SDK's
	// own (a string, such as "REQUEST_TIMEOUT" for a call it cancelled).
	Error *struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	} `json:"error"`
}

// TS2Run is what a TS2Client run did: the protocol version it negotiated, its steps,
// and the messages of the elicitations it answered.
type TS2Run struct {
	Version      string                    `json:"version"`
	Connect      *struct{ Message string } `json:"connect"`
	Steps        []TS2Step                 `json:"steps"`
	Elicitations []string                  `json:"elicitations"`
}

// TS2Client runs the TypeScript SDK v2 test client (ts2/client.mjs) against a server:
// target is "stdio", COMMAND, ARGS... (a server the client starts) or "http", URL.
// mode is its version negotiation ("auto", "legacy", or a version to pin); steps are
// what it does, in order (see client.mjs): {"op": "list"}, {"op": "call", "name": …,
// "args": …}, {"op": "cancel", "name": …, "args": …, "ms": …}. The client and what it
// starts run in a process group the run kills at its end, bounded by ctx.
func TS2Client(t testing.TB, ctx context.Context, mode string, steps []map[string]any, target ...string) (*TS2Run, error) {
	t.Helper()
	npmFile(t, "@modelcontextprotocol/client (TypeScript SDK v2)", "@modelcontextprotocol/client/package.json")
	script, modules := ts2Script(t, "client.mjs")
	plan, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	envPath, err := exec.LookPath("env")
	if err != nil {
		t.Fatalf("testupstream: env(1) not found: %v", err)
	}
	argv := append([]string{"TS2_MODULES=" + modules, Node(t), script, mode, string(plan)}, target...)
	stdout, stderr, code, err := run(ctx, t.TempDir(), envPath, argv...)
	if err != nil || code != 0 {
		return nil, fmt.Errorf("ts2 client exited %d (%v); stderr:\n%s", code, err, stderr)
	}
	var out TS2Run
	if err := json.Unmarshal(bytes.TrimSpace(stdout), &out); err != nil {
		return nil, fmt.Errorf("ts2 client output %q: %v; stderr:\n%s", stdout, err, stderr)
	}
	return &out, nil
}
