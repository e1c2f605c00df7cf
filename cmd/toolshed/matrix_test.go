package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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
				a := d.arrivals()
				defer a.all()
				runCells(t, d, a, matrixClients[i].start(t, url), matrixClients[i].want)
			})
			return
		}
		concurrently(t, clientNames(), func(t *testing.T, i int) {
			d := newDeployment(t, "stdio-"+matrixClients[i].name, 1)
			a := d.arrivals()
			defer a.all()
			runCells(t, d, a, matrixClients[i].start(t, bin, "serve", "--config", d.config, "--tool-search", "on"), matrixClients[i].want)
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

// runCells runs every cell of one client, which must have negotiated want, against one
// deployment, arriving at its stages through a.
func runCells(t *testing.T, d *deployment, a arrivals, c matrixClient, want string) {
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

	a.late()
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
		a.kill()
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
