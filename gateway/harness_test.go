package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// harness is a running gateway for one test.
type harness struct {
	t    testing.TB
	g    *gateway.Gateway
	log  *testupstream.SyncBuffer
	stop context.CancelFunc
	done chan struct{} // closed when Run has returned
}

// testServer returns the config of a test upstream (see serveTestUpstream).
func testServer(name, mode string) config.Server {
	cmd, args, env := upstreamCommand(mode)
	return config.Server{Name: name, Type: config.Stdio, Command: cmd, Args: args, Env: env}
}

// startGateway runs a gateway over cfg until the test ends, and waits until every
// upstream has started or failed once (unless opts.WaitForClient, where they start only
// when a client comes).
func startGateway(t testing.TB, cfg *config.Config, opts gateway.Options) *harness {
	t.Helper()
	log := &testupstream.SyncBuffer{}
	opts.Log = log
	if opts.BackoffMin == 0 {
		opts.BackoffMin, opts.BackoffMax = 50*time.Millisecond, 200*time.Millisecond
	}
	g, err := gateway.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, g: g, log: log, stop: cancel, done: make(chan struct{})}
	go func() {
		g.Run(ctx)
		close(h.done)
	}()
	t.Cleanup(func() {
		if !h.stopped(10 * time.Second) {
			t.Errorf("the gateway did not stop within 10s")
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", log.String())
		}
	})
	if !opts.WaitForClient {
		readyCtx, cancelReady := context.WithTimeout(ctx, 30*time.Second)
		defer cancelReady()
		g.WaitReady(readyCtx)
	}
	return h
}

// stopped stops the gateway and reports whether Run returned within wait.
func (h *harness) stopped(wait time.Duration) bool {
	h.stop()
	select {
	case <-h.done:
		return true
	case <-time.After(wait):
		return false
	}
}

// protocols are the MCP versions the client side of the tests speaks: the newest the
// gateway offers, and an older one (where an empty elicitation capability means form
// elicitation).
var protocols = []string{"2025-11-25", "2025-03-26"}

// client connects an MCP client of protocol oldClient to the gateway in memory, as
// profile.
func (h *harness) client(profile string, opts *mcp.ClientOptions) *mcp.ClientSession {
	return h.clientVersion(profile, opts, "")
}

// oldClient is the protocol version of the tests' clients that ask for none: the newest
// with sessions, whose behaviour (requests from server to client, a session's
// capabilities) those tests are about. The go-sdk v1.8 client would otherwise
// negotiate 2026-07-28, which the tests of front_era_test.go and
// streamable_envelope_test.go cover, asking for sdkDefault.
const oldClient = "2025-11-25"

// sdkDefault asks clientVersion and dialHTTP for a client with the SDK's default
// options (no version asked for): it negotiates the newest version both speak.
const sdkDefault = "sdk default"

// sessionOptions are the client session options of a test client of version (see
// oldClient, sdkDefault).
func sessionOptions(version string) *mcp.ClientSessionOptions {
	switch version {
	case "":
		return &mcp.ClientSessionOptions{ProtocolVersion: oldClient}
	case sdkDefault:
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: version}
}

// clientVersion is client speaking a given protocol version ("": oldClient).
func (h *harness) clientVersion(profile string, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	h.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := h.g.Connect(ctx, st, profile); err != nil {
		h.t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(ctx, ct, sessionOptions(version))
	if err != nil {
		h.t.Fatal(err)
	}
	if version != "" && version != sdkDefault && cs.InitializeResult().ProtocolVersion != version {
		h.t.Fatalf("negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, version)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// rawClient connects a client to the gateway in memory, as profile, that the test drives
// message by message over an unbuffered pipe (writes to it block until it reads).
func (h *harness) rawClient(profile string) mcp.Connection {
	h.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := h.g.Connect(context.Background(), st, profile); err != nil {
		h.t.Fatal(err)
	}
	conn, err := ct.Connect(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	return conn
}

// waitFor polls cond until it holds or 20 seconds pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func has(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// errorCode returns the code of an error result ("" when the result is no error).
func errorCode(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if !res.IsError {
		return ""
	}
	b, _ := json.Marshal(res.StructuredContent)
	var s struct {
		Error string `json:"error"`
	}
	json.Unmarshal(b, &s)
	return s.Error
}

// killServer SIGKILLs the upstream server whose process id is in pidFile, as a server
// that dies does.
func killServer(t *testing.T, pidFile string) {
	t.Helper()
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}
