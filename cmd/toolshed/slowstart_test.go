package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// A one-shot client (the real Inspector CLI, a separate process) that lists the tools
// of a toolshed whose npm server starts late, as a first `npx -y` of it does (8 seconds,
// where toolshed used to wait 5), gets that server's tools: listed with tool search off,
// searchable with it on.
func TestServeInspectorSlowStart(t *testing.T) {
	bin := toolshedBinary(t)
	mcmd, margs := testupstream.Memory(t)
	ecmd, eargs := testupstream.Everything(t)
	slowMemory := []string{"sh", "-c", "sleep 8; exec " + testupstream.ShellLine(mcmd, margs)}
	cfg := writeConfig(t, map[string][]string{"memory": slowMemory, "everything": argv(ecmd, eargs)})

	list, _ := inspect(t, []string{bin, "serve", "--config", cfg, "--tool-search", "off"}, "--method", "tools/list")
	var names []string
	for _, x := range list["tools"].([]any) {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	if !slices.Contains(names, "memory__read_graph") || !slices.Contains(names, "everything__echo") {
		t.Errorf("the Inspector's first tools/list has %v, want the tools of memory and everything", names)
	}

	list, _ = inspect(t, []string{bin, "serve", "--config", cfg, "--tool-search", "on"}, "--method", "tools/list")
	var desc string
	for _, x := range list["tools"].([]any) {
		if m := x.(map[string]any); m["name"] == "tool_search" {
			desc, _ = m["description"].(string)
		}
	}
	if !strings.Contains(desc, "from 2 servers: everything (14 tools") || !strings.Contains(desc, "memory (9 tools") || strings.Contains(desc, "starting") {
		t.Errorf("the Inspector's first tools/list describes tool_search as %q, want it to search everything and memory", desc)
	}
}

// A client answered while a real server (npm server-memory, held back as npx
// installing it would) is still starting is told so, over stdio and over HTTP:
// tool_search's description names the server, toolshed says so on stderr, and once the
// server is up the client gets notifications/tools/list_changed and the tools.
func TestServeTellsClientOfLateServer(t *testing.T) {
	bin := toolshedBinary(t)
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			mcmd, margs := testupstream.Memory(t)
			gcmd, gargs, open := testupstream.Gated(t, mcmd, margs)
			cfg := writeConfig(t, map[string][]string{"memory": argv(gcmd, gargs)})
			args := []string{"--config", cfg, "--tool-search", "on", "--start-wait", "1s"}
			changed := make(chan struct{}, 100)
			opts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}
			var cs *mcp.ClientSession
			var stderr *testupstream.SyncBuffer
			if transport == "stdio" {
				cs, stderr = serveStdio(t, opts, args...)
			} else {
				addr := freeAddr(t)
				stderr = startCommand(t, bin, []string{"XDG_DATA_HOME=" + filepath.Join(t.TempDir(), "data")}, append([]string{"serve", "--http", addr}, args...),
					func(stderr string) bool { return strings.Contains(stderr, "serving MCP over Streamable HTTP") })
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				var err error
				cs, err = mcp.NewClient(&mcp.Implementation{Name: "first-contact", Version: "1"}, opts).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
			}
			description := func() string {
				t.Helper()
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatalf("tools/list: %v\n%s", err, stderr)
				}
				for _, tool := range res.Tools {
					if tool.Name == "tool_search" {
						return tool.Description
					}
				}
				t.Fatalf("no tool_search in %+v", res.Tools)
				return ""
			}

			if desc, want := description(), "Search 0 more tools that are not listed. 1 server still starting: memory; their tools appear when they are up."; !strings.HasPrefix(desc, want) {
				t.Errorf("tool_search's description while memory starts: %q, want it to begin %q", desc, want)
			}
			// stderr comes through a pipe of its own, maybe after the answer.
			want := "toolshed: answered a client's tools/list while 1 server is still starting (memory)"
			for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), want); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("toolshed's stderr does not say %q:\n%s", want, stderr)
				}
			}
			open()
			deadline := time.After(time.Minute)
			for up := false; !up; {
				select {
				case <-changed:
					desc := description()
					up = strings.Contains(desc, "from 1 server: memory (") && !strings.Contains(desc, "starting")
				case <-deadline:
					t.Fatalf("no notifications/tools/list_changed with memory's tools; tool_search is described as %q\n%s", description(), stderr)
				}
			}
		})
	}
}

// While a real server (npm server-memory, held back as npx installing it would) is
// still in its first start past the start-up wait, serve says so on stderr, with how
// long it may still take, and then that it is ready: it is not killed and restarted,
// and nothing says it failed.
func TestServeSaysServerStillStarting(t *testing.T) {
	bin := toolshedBinary(t)
	mcmd, margs := testupstream.Memory(t)
	gcmd, gargs, open := testupstream.Gated(t, mcmd, margs)
	cfg := writeConfig(t, map[string][]string{"memory": argv(gcmd, gargs)})
	addr := freeAddr(t)
	stderr := startCommand(t, bin, []string{"XDG_DATA_HOME=" + filepath.Join(t.TempDir(), "data")},
		[]string{"serve", "--http", addr, "--config", cfg, "--start-wait", "1s"},
		func(stderr string) bool { return strings.Contains(stderr, "serving MCP over Streamable HTTP") })
	waitStderr := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), want); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("serve's stderr does not say %q:\n%s", want, stderr)
			}
		}
	}
	waitStderr("toolshed: memory is still starting after 1s; a first start may install it (npx -y, uvx), so toolshed gives it up to 2m0s; meanwhile clients are answered without its tools, and told when it is up (notifications/tools/list_changed)\n")
	open()
	waitStderr("toolshed: memory               ready      9 tools")
	waitStderr("toolshed: 1 of 1 servers ready, 9 tools.")
	if strings.Contains(stderr.String(), "failed") || strings.Count(stderr.String(), "still starting") != 1 {
		t.Errorf("serve's stderr:\n%s\nwant memory said to be still starting once, then ready, and no failure", stderr)
	}
}
