package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestProtocolMatrix is issue 29's matrix: {old, modern} client × {old, modern-only,
// both-eras} upstream × {stdio, HTTP} front. One toolshed config holds every upstream
// at once: the npm reference server-everything (MCP 2025-11-25 and older), the
// TypeScript SDK v2 test server modern-only (legacy "reject") over stdio and over
// Streamable HTTP, and the same server serving both eras over stdio. The clients are
// the go-sdk client pinned to 2025-11-25 (old), the go-sdk client with its default
// options and the TypeScript SDK v2 client in auto mode (modern: both must end at
// 2026-07-28 once toolshed serves it).
//
// Each cell (client × upstream × front) lists the tools (every member of the
// upstream's own definitions of the pinned tools reaches the client unchanged), finds a
// deferred tool with tool_search and describes it, calls echo directly and through
// tool_call, makes a bad call, does an elicitation round trip (server-everything asks
// the old way, in a direct call; the TS server through MRTR, in a tool_call), cancels a
// call (the upstream gets notifications/cancelled), and sees a list change (the TS
// server adds the tool "late"; server-everything is killed and comes back) reach the
// client. Every step is a subtest of its own, so a run says which cell and step fails
// and why.
//
// The HTTP front is one toolshed shared by the three clients (old and modern on one
// endpoint); over stdio each client starts its own toolshed, as stdio clients do.
func TestProtocolMatrix(t *testing.T) {
	bin := toolshedBinary(t)
	// Subtests run at once in goroutines rather than with t.Parallel: the clients of a
	// front wait for one another (see stage), which -parallel (2 on 2 cores) would
	// deadlock.
	concurrently(t, []string{"http", "stdio"}, func(t *testing.T, front int) {
		if front == 0 {
			d := newDeployment(t, "http", len(matrixClients))
			url := startServe(t, bin, "--config", d.config, "--tool-search", "on")
			concurrently(t, clientNames(), func(t *testing.T, i int) {
				runCells(t, d, matrixClients[i].start(t, url), matrixClients[i].want)
			})
			return
		}
		concurrently(t, clientNames(), func(t *testing.T, i int) {
			d := newDeployment(t, "stdio-"+matrixClients[i].name, 1)
			runCells(t, d, matrixClients[i].start(t, bin, "serve", "--config", d.config, "--tool-search", "on"), matrixClients[i].want)
		})
	})
}

// concurrently runs a subtest per name, all at once, and returns when all have ended.
func concurrently(t *testing.T, names []string, fn func(t *testing.T, i int)) {
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) { fn(t, i) })
		}()
	}
	wg.Wait()
}

func clientNames() []string {
	var names []string
	for _, mc := range matrixClients {
		names = append(names, mc.name)
	}
	return names
}

// matrixClient is what a cell needs of a client, whichever SDK it is built with.
type matrixClient interface {
	// version is the protocol version the client negotiated.
	version() string
	// listTools returns the tools/list result as the client got it.
	listTools(ctx context.Context) (json.RawMessage, error)
	// callTool returns the CallToolResult as the client got it, or the JSON-RPC error;
	// when ctx ends first, the client cancels the call.
	callTool(ctx context.Context, name string, args any) (json.RawMessage, error)
	// listChanges counts the tool list changes the client was told of.
	listChanges() int
	// elicitations returns the messages of the elicitations the client answered.
	elicitations() []string
}

// matrixClients are the clients of the matrix; start connects one to a URL (HTTP
// front) or runs a command line and speaks to it over stdio.
var matrixClients = []struct {
	name, want string // want: the protocol version the client must negotiate
	start      func(t *testing.T, target ...string) matrixClient
}{
	{"go-2025-11-25", "2025-11-25", func(t *testing.T, target ...string) matrixClient { return goMatrixClient(t, "2025-11-25", target) }},
	{"go-default", "2026-07-28", func(t *testing.T, target ...string) matrixClient { return goMatrixClient(t, "", target) }},
	{"ts2-auto", "2026-07-28", func(t *testing.T, target ...string) matrixClient {
		return tsMatrixClient{testupstream.TS2MatrixClient(t, "auto", target...)}
	}},
}

// goClient is the go-sdk (v1.8.0) client. It declares elicitation and answers like the
// TS client: accept {yes: true} when the schema asks for "yes", else decline.
type goClient struct {
	cs      *mcp.ClientSession
	mu      sync.Mutex
	changes int
	asked   []string
}

func goMatrixClient(t *testing.T, pin string, target []string) *goClient {
	c := &goClient{}
	client := mcp.NewClient(&mcp.Implementation{Name: "toolshed-matrix-go", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.mu.Lock()
			c.changes++
			c.mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.asked = append(c.asked, req.Params.Message)
			c.mu.Unlock()
			if s, ok := req.Params.RequestedSchema.(map[string]any); ok {
				if props, _ := s["properties"].(map[string]any); props["yes"] != nil {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"yes": true}}, nil
				}
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	var transport mcp.Transport
	if len(target) == 1 && strings.HasPrefix(target[0], "http") {
		transport = &mcp.StreamableClientTransport{Endpoint: target[0]}
	} else {
		cmd := exec.Command(target[0], target[1:]...)
		testupstream.OwnGraceful(t, cmd)
		transport = &mcp.CommandTransport{Command: cmd}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if pin != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: pin}
	}
	cs, err := client.Connect(ctx, transport, opts)
	if err != nil {
		t.Fatalf("go-sdk client (protocol %q) cannot connect to %v: %v", pin, target, err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

func (c *goClient) version() string { return c.cs.InitializeResult().ProtocolVersion }

func (c *goClient) listTools(ctx context.Context) (json.RawMessage, error) {
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (c *goClient) callTool(ctx context.Context, name string, args any) (json.RawMessage, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (c *goClient) listChanges() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changes
}

func (c *goClient) elicitations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.asked...)
}

type tsMatrixClient struct{ c *testupstream.TS2Client }

func (c tsMatrixClient) version() string { return c.c.Version }
func (c tsMatrixClient) listTools(ctx context.Context) (json.RawMessage, error) {
	return c.c.ListTools(ctx)
}
func (c tsMatrixClient) callTool(ctx context.Context, name string, args any) (json.RawMessage, error) {
	return c.c.CallTool(ctx, name, args)
}
func (c tsMatrixClient) listChanges() int       { return c.c.ListChanges() }
func (c tsMatrixClient) elicitations() []string { return c.c.Elicitations() }

// upstreamCase is one upstream of the matrix and the tools a cell uses on it.
type upstreamCase struct {
	name   string   // server name in the config
	listed []string // pinned tools: listed with the upstream's own definitions
	// find is a deferred tool (not listed) that tool_search finds for query, and
	// tool_describe describes.
	find, query string
	// echo, pinned, returns echoWant for echoArgs.
	echo     string
	echoArgs map[string]any
	echoWant string
	// elicit asks the client for input: the result has elicitWant. elicitArgs are its
	// arguments; viaToolCall says the cell calls it through tool_call (it is deferred).
	elicit      string
	elicitArgs  map[string]any
	elicitWant  string
	viaToolCall bool
	// slow runs until cancelled; slowArgs are its arguments.
	slow     string
	slowArgs map[string]any
	// late is a tool the upstream adds when the test says so ("" for server-everything,
	// which the test kills instead: its tools leave and come back).
	late string
}

// ts2Case is the TS server's case, as name.
func ts2Case(name string) upstreamCase {
	return upstreamCase{name: name, listed: []string{"echo", "slow"}, find: "confirm", query: "confirm",
		echo: "echo", echoArgs: map[string]any{"text": "through the matrix"}, echoWant: "through the matrix",
		elicit: "confirm", elicitArgs: map[string]any{"what": "deploy"}, elicitWant: "confirmed=true", viaToolCall: true,
		slow: "slow", slowArgs: map[string]any{}, late: "late"}
}

var matrixUpstreams = []upstreamCase{
	{name: "old", listed: []string{"echo", "trigger-long-running-operation"}, find: "get-sum", query: "sum of two numbers",
		echo: "echo", echoArgs: map[string]any{"message": "through the matrix"}, echoWant: "Echo: through the matrix",
		elicit: "trigger-elicitation-request", elicitArgs: map[string]any{}, elicitWant: "User declined",
		slow: "trigger-long-running-operation", slowArgs: map[string]any{"duration": 120, "steps": 120}},
	ts2Case("rejstdio"),
	ts2Case("rejhttp"),
	ts2Case("both"),
}

// deployment is one toolshed config with every upstream of the matrix, and what the
// test needs to watch and poke them: each upstream's wire log, the late file that makes
// the TS servers add their tool, server-everything's process ids.
type deployment struct {
	config string
	wire   map[string]string // server name → the file its received messages go to
	late   string
	pids   string
	ref    map[string]map[string]map[string]any // server → tool → its definition, as the server lists it

	// Cells that cancel a call on an upstream count here, so that a cell can wait for
	// as many notifications/cancelled at the upstream as there were cancels.
	cancels map[string]*atomic.Int32
	// Server-everything asks its client the old way (elicitation, roots), with no link
	// to the call: while calls of two clients run on it, toolshed cannot tell whose
	// session to ask, and says so. The clients of one deployment take turns for their
	// cells on it.
	oldCell sync.Mutex

	lateStage, killStage *stage
}

// newDeployment writes the config of a toolshed that users clients share.
func newDeployment(t *testing.T, name string, users int) *deployment {
	dir := t.TempDir()
	d := &deployment{
		wire:    map[string]string{},
		late:    filepath.Join(dir, "late"),
		pids:    filepath.Join(dir, "old.pids"),
		cancels: map[string]*atomic.Int32{},
	}
	for _, u := range matrixUpstreams {
		d.wire[u.name] = filepath.Join(dir, u.name+".wire")
		d.cancels[u.name] = &atomic.Int32{}
	}
	env := func(u string) map[string]string { return map[string]string{"WIRE_LOG": d.wire[u], "LATE": d.late} }
	rcmd, rargs := testupstream.TS2Stdio(t, "reject", env("rejstdio"))
	bcmd, bargs := testupstream.TS2Stdio(t, "serve", env("both"))
	ecmd, eargs := testupstream.Everything(t)
	// server-everything, with what it receives copied to its wire log (tee through a
	// fifo; a background job's stdin is /dev/null unless redirected, so fd 3 keeps
	// toolshed's pipe) and its pid written down so that the test can kill it. The
	// server is the process toolshed started (exec), so toolshed sees it die.
	oldScript := `wire=$1; pids=$2; shift 2; fifo="$pids.$$"; mkfifo "$fifo" || exit 1; exec 3<&0; ` +
		`tee -a "$wire" <&3 >"$fifo" 2>/dev/null & echo $$ >> "$pids"; exec "$@" <"$fifo" 3<&-`
	servers := map[string]any{
		"old":      map[string]any{"command": "sh", "args": append([]string{"-c", oldScript, "sh", d.wire["old"], d.pids, ecmd}, eargs...)},
		"rejstdio": map[string]any{"command": rcmd, "args": rargs},
		"rejhttp":  map[string]any{"url": testupstream.TS2HTTP(t, "reject", env("rejhttp"))},
		"both":     map[string]any{"command": bcmd, "args": bargs},
	}
	// Tool search is on. The tools a cell calls directly are pinned, and so listed as
	// their servers define them; the TS server's confirm and server-everything's
	// get-sum stay deferred, for tool_search, tool_describe and tool_call to find.
	var pins []map[string]any
	for _, name := range []string{"echo", "slow", "late", "trigger-long-running-operation", "trigger-elicitation-request"} {
		pins = append(pins, map[string]any{"name": name, "alwaysLoad": true})
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers, "tools": pins})
	d.config = filepath.Join(dir, name+".json")
	if err := os.WriteFile(d.config, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d.ref = matrixReference(t)
	d.lateStage = newStage(users, func() {
		if err := os.WriteFile(d.late, nil, 0o644); err != nil {
			t.Errorf("writing the late file: %v", err)
		}
	})
	d.killStage = newStage(users, func() {
		pid := d.oldPid(t)
		if pid == 0 {
			t.Errorf("server-everything wrote no pid to %s", d.pids)
			return
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Errorf("killing server-everything (pid %d): %v", pid, err)
		}
	})
	return d
}

// oldPid returns the pid of the server-everything that runs now (the last written).
func (d *deployment) oldPid(t *testing.T) int {
	data, err := os.ReadFile(d.pids)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	if len(lines) == 0 {
		return 0
	}
	pid, _ := strconv.Atoi(lines[len(lines)-1])
	return pid
}

var (
	referenceOnce sync.Once
	reference     map[string]map[string]map[string]any
)

// matrixReference lists each kind of upstream directly with the go-sdk client (at
// 2025-11-25 for server-everything, declaring elicitation as toolshed does once its
// clients do; by default for the TS server, which is the same script in every mode),
// once per run.
func matrixReference(t *testing.T) map[string]map[string]map[string]any {
	referenceOnce.Do(func() {
		list := func(transport mcp.Transport, pin string) map[string]map[string]any {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "matrix-reference", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
			})
			var opts *mcp.ClientSessionOptions
			if pin != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: pin}
			}
			cs, err := client.Connect(ctx, transport, opts)
			if err != nil {
				t.Fatalf("listing an upstream directly: %v", err)
			}
			defer cs.Close()
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("listing an upstream directly: %v", err)
			}
			b, _ := json.Marshal(res)
			return toolMembers(t, b)
		}
		ecmd, eargs := testupstream.Everything(t)
		e := exec.Command(ecmd, eargs...)
		testupstream.Own(t, e)
		reference = map[string]map[string]map[string]any{
			"old": list(&mcp.CommandTransport{Command: e}, "2025-11-25"),
			"ts2": list(&mcp.StreamableClientTransport{Endpoint: testupstream.TS2HTTP(t, "reject", nil)}, ""),
		}
	})
	if reference == nil {
		t.Fatal("the upstreams could not be listed directly (see the first test that tried)")
	}
	return reference
}

// toolMembers splits a tools/list result into each tool's members, by tool name.
func toolMembers(t *testing.T, result json.RawMessage) map[string]map[string]any {
	var r struct {
		Tools []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("tools/list result %s: %v", result, err)
	}
	out := map[string]map[string]any{}
	for _, tool := range r.Tools {
		name, _ := tool["name"].(string)
		out[name] = tool
	}
	return out
}

// stage runs action once n clients have arrived, and then lets them all on.
type stage struct {
	mu     sync.Mutex
	left   int
	action func()
	open   chan struct{}
}

func newStage(n int, action func()) *stage {
	return &stage{left: n, action: action, open: make(chan struct{})}
}

func (s *stage) arrive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left--
	if s.left == 0 {
		s.action()
		close(s.open)
	}
}

// wait returns once every client has arrived, false if that took over 3 minutes.
func (s *stage) wait() bool {
	select {
	case <-s.open:
		return true
	case <-time.After(3 * time.Minute):
		return false
	}
}

// runCells runs every cell of one client, which must have negotiated want, against one
// deployment.
func runCells(t *testing.T, d *deployment, c matrixClient, want string) {
	// A client that stops early still arrives, so that the others go on.
	arriveLate, arriveKill := sync.OnceFunc(d.lateStage.arrive), sync.OnceFunc(d.killStage.arrive)
	defer arriveKill()
	defer arriveLate()

	t.Run("version", func(t *testing.T) {
		if got := c.version(); got != want {
			t.Errorf("negotiated protocol version %q, want %q", got, want)
		}
	})
	for _, u := range matrixUpstreams {
		if u.name == "old" {
			d.oldCell.Lock()
		}
		t.Run(u.name, func(t *testing.T) { runCell(t, d, c, u) })
		if u.name == "old" {
			d.oldCell.Unlock()
		}
	}

	arriveLate()
	t.Run("list_changed", func(t *testing.T) {
		if !d.lateStage.wait() {
			t.Fatal("the other clients of this toolshed did not finish their cells within 3 minutes")
		}
		for _, u := range matrixUpstreams {
			if u.late == "" {
				continue
			}
			t.Run(u.name, func(t *testing.T) {
				tool := u.name + "__" + u.late
				waitCell(t, "tool list change with "+tool+" listed", func() bool {
					return c.listChanges() > 0 && listed(t, c)[tool] != nil
				})
				res, err := c.callTool(ctxFor(t), tool, map[string]any{})
				if err != nil || resultText(t, res) != "late" {
					t.Errorf("%s = %s, %v; want the text late", tool, res, err)
				}
			})
		}
		arriveKill()
		if !d.killStage.wait() {
			t.Fatal("the other clients of this toolshed did not finish the late tool within 3 minutes")
		}
		t.Run("old", func(t *testing.T) {
			// Killed, server-everything's tools leave the list (a change the client is
			// told of), and come back when toolshed has restarted it.
			before := c.listChanges()
			tool := "old__echo"
			waitCell(t, tool+" gone after a list change", func() bool { return c.listChanges() > before && listed(t, c)[tool] == nil })
			gone := c.listChanges()
			waitCell(t, tool+" back after another list change", func() bool { return c.listChanges() > gone && listed(t, c)[tool] != nil })
		})
	})
}

// runCell runs one cell's steps, each a subtest.
func runCell(t *testing.T, d *deployment, c matrixClient, u upstreamCase) {
	ref := d.ref["ts2"]
	if u.name == "old" {
		ref = d.ref["old"]
	}
	tool := u.name + "__" + u.echo
	t.Run("list", func(t *testing.T) {
		got := listed(t, c)
		for _, name := range u.listed {
			want, ok := ref[name]
			if !ok {
				t.Fatalf("the upstream itself does not list %s", name)
			}
			have := got[u.name+"__"+name]
			if have == nil {
				t.Errorf("%s__%s is not listed", u.name, name)
				continue
			}
			for k, v := range want {
				if k != "name" && !reflect.DeepEqual(have[k], v) {
					t.Errorf("%s__%s: %s is %v through toolshed, the upstream lists %v", u.name, name, k, have[k], v)
				}
			}
		}
	})
	found := u.name + "__" + u.find
	t.Run("search", func(t *testing.T) {
		query := map[string]any{"query": u.query, "limit": 20}
		res := mustCall(t, c, "tool_search", query)
		var result struct{ Matches []struct{ Name string } }
		if err := json.Unmarshal([]byte(resultText(t, res)), &result); err != nil {
			t.Fatalf("tool_search result %s: %v", res, err)
		}
		var names []string
		for _, m := range result.Matches {
			names = append(names, m.Name)
		}
		if !slices.Contains(names, found) {
			t.Errorf("tool_search %v found %v, not %s", query, names, found)
		}
	})
	t.Run("describe", func(t *testing.T) {
		res := mustCall(t, c, "tool_describe", map[string]any{"name": found})
		var desc map[string]any
		if err := json.Unmarshal([]byte(resultText(t, res)), &desc); err != nil {
			t.Fatalf("tool_describe result %s: %v", res, err)
		}
		if want := ref[u.find]["inputSchema"]; want == nil || !reflect.DeepEqual(desc["inputSchema"], want) {
			t.Errorf("tool_describe %s gives the schema %v, the upstream lists %v", found, desc["inputSchema"], want)
		}
	})
	t.Run("call", func(t *testing.T) {
		if got := resultText(t, mustCall(t, c, tool, u.echoArgs)); got != u.echoWant {
			t.Errorf("%s = %q, want %q", tool, got, u.echoWant)
		}
		if got := resultText(t, mustCall(t, c, "tool_call", map[string]any{"name": tool, "arguments": u.echoArgs})); got != u.echoWant {
			t.Errorf("tool_call %s = %q, want %q", tool, got, u.echoWant)
		}
	})
	t.Run("bad_call", func(t *testing.T) {
		// A tool the upstream does not have: an error that names it, directly (a
		// JSON-RPC error or an error result) and through tool_call (an error result).
		bad := u.name + "__no_such_tool"
		res, err := c.callTool(ctxFor(t), bad, map[string]any{})
		if err == nil && !isError(res) {
			t.Errorf("%s = %s, want an error", bad, res)
		} else if msg := fmt.Sprint(err) + string(res); !strings.Contains(msg, "no_such_tool") {
			t.Errorf("%s: the error %q does not name the tool", bad, msg)
		}
		res = mustCall(t, c, "tool_call", map[string]any{"name": bad, "arguments": map[string]any{}})
		if !isError(res) || !strings.Contains(resultText(t, res), "no_such_tool") {
			t.Errorf("tool_call %s = %s, want an error result that names the tool", bad, res)
		}
	})
	t.Run("elicitation", func(t *testing.T) {
		name := u.name + "__" + u.elicit
		if u.name == "old" {
			// server-everything offers the tool once toolshed tells it the clients can
			// elicit (toolshed reconnects it when the first such client connects).
			waitCell(t, name+" listed", func() bool { return listed(t, c)[name] != nil })
		}
		before := len(c.elicitations())
		var res json.RawMessage
		var err error
		if u.viaToolCall {
			res, err = c.callTool(ctxFor(t), "tool_call", map[string]any{"name": name, "arguments": u.elicitArgs})
		} else {
			res, err = c.callTool(ctxFor(t), name, u.elicitArgs)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if text := resultText(t, res); isError(res) || !strings.Contains(text, u.elicitWant) {
			t.Errorf("%s = %s, want a result with %q", name, res, u.elicitWant)
		}
		if after := len(c.elicitations()); after != before+1 {
			t.Errorf("the client answered %d elicitations during %s, want 1", after-before, name)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		// The cell's own mark in the arguments finds its call in the upstream's wire.
		mark := strings.ReplaceAll(t.Name(), "/", "-")
		args := map[string]any{"cell": mark}
		for k, v := range u.slowArgs {
			args[k] = v
		}
		ctx, cancel := context.WithCancel(ctxFor(t))
		done := make(chan error, 1)
		go func() {
			_, err := c.callTool(ctx, u.name+"__"+u.slow, args)
			done <- err
		}()
		waitCell(t, "the slow call at the upstream", func() bool { return bytes.Contains(readWireFile(t, d.wire[u.name]), []byte(mark)) })
		n := d.cancels[u.name].Add(1)
		cancel()
		// The call may end in an error or in what the server answered when told of the
		// cancel (the TS server's slow says "slow done"): what matters is that it ends
		// and that the server was told.
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("the cancelled call did not return within a minute")
		}
		waitCell(t, fmt.Sprintf("%d notifications/cancelled at %s", n, u.name), func() bool {
			return bytes.Count(readWireFile(t, d.wire[u.name]), []byte(`"method":"notifications/cancelled"`)) >= int(n)
		})
		if got := resultText(t, mustCall(t, c, tool, u.echoArgs)); got != u.echoWant {
			t.Errorf("after the cancel, %s = %q, want %q", tool, got, u.echoWant)
		}
	})
}

// ctxFor is the context of one step: a minute, generous on a loaded machine.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustCall(t *testing.T, c matrixClient, name string, args any) json.RawMessage {
	t.Helper()
	res, err := c.callTool(ctxFor(t), name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// listed returns the tools the client lists, members by name.
func listed(t *testing.T, c matrixClient) map[string]map[string]any {
	t.Helper()
	res, err := c.listTools(ctxFor(t))
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	return toolMembers(t, res)
}

// resultText returns the text content of a CallToolResult.
func resultText(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatalf("a tools/call result %s: %v", res, err)
	}
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func isError(res json.RawMessage) bool {
	var r struct{ IsError bool }
	return json.Unmarshal(res, &r) == nil && r.IsError
}

// waitCell waits up to 30 seconds for cond, polling: what it waits for happens in
// processes that are up already.
func waitCell(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 30s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readWireFile(t *testing.T, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return data
}
