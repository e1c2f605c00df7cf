//go:build e2e

package e2e

// Helpers for driving agent CLIs (Codex CLI, Gemini CLI) against toolshed serve: the
// upstream config, toolshed over HTTP, the docs' config blocks, and one CLI run.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// clientsDoc is the page whose config blocks the client tests run.
const clientsDoc = "docs/clients.md"

// docServersPath is the placeholder path of the upstream config in clientsDoc.
const docServersPath = "/home/you/.config/toolshed/servers.json"

// docURL is the placeholder endpoint of toolshed serve --http in clientsDoc.
const docURL = "http://127.0.0.1:8080/mcp"

// upstreams are the real npm servers behind toolshed in the client tests, and the file
// the memory server keeps its knowledge graph in.
type upstreams struct {
	config     string // toolshed's config file
	memoryFile string
}

// writeUpstreams writes a toolshed config of the npm everything and memory servers (as
// "everything" and "memory", MCP 2025-11-25) and the TypeScript SDK v2 test server in
// modern-only mode (as "modern", MCP 2026-07-28 only: its tools are echo, confirm and
// slow), with tool search forced on, so that the clients see the bridge, not the 27
// tools, and are shown working through a toolshed with old and modern servers at once.
func writeUpstreams(t *testing.T) upstreams {
	t.Helper()
	ecmd, eargs := testupstream.Everything(t)
	mcmd, margs := testupstream.Memory(t)
	tcmd, targs := testupstream.TS2Stdio(t, "reject", nil)
	memoryFile := strings.TrimPrefix(margs[0], "MEMORY_FILE_PATH=")
	return upstreams{config: writeConfigFile(t, map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": ecmd, "args": eargs},
			"memory":     map[string]any{"command": mcmd, "args": margs},
			"modern":     map[string]any{"command": tcmd, "args": targs},
		},
		"tools": map[string]any{"tool_search": map[string]any{"enabled": "on"}},
	}), memoryFile: memoryFile}
}

// writeConfigFile writes cfg as JSON to a new file and returns its path.
func writeConfigFile(t *testing.T, cfg any) string {
	t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// docConfig returns a config block of clientsDoc with its placeholders replaced: the
// toolshed command by the binary under test, the servers file by config, the HTTP
// endpoint by url.
func docConfig(t *testing.T, id, config, url string) string {
	t.Helper()
	block := testupstream.DocBlock(t, clientsDoc, id)
	r := strings.NewReplacer(
		`command = "toolshed"`, `command = "`+toolshedBin+`"`,
		`"command": "toolshed"`, `"command": "`+toolshedBin+`"`,
		docServersPath, config,
		docURL, url,
	)
	out := r.Replace(block)
	if strings.Contains(block, docURL) && url == "" || strings.Contains(block, docServersPath) && config == "" {
		t.Fatalf("block %s needs a URL and a config file: %s", id, block)
	}
	return out
}

// serveHTTP runs toolshed serve --http on a free loopback port until the test ends (see
// testupstream.Start) and returns its endpoint once the tool named ready can be described
// through it (so every upstream the test needs is up).
func serveHTTP(t *testing.T, config, ready string, args ...string) string {
	t.Helper()
	addr := testupstream.FreeAddr(t)
	stderr := testupstream.Start(t, exec.Command(toolshedBin, append([]string{"serve", "--config", config, "--http", addr}, args...)...), testupstream.ServersReady)
	url := "http://" + addr + "/mcp"
	deadline := time.Now().Add(time.Minute)
	for !describable(url, ready) {
		if time.Now().After(deadline) {
			t.Fatalf("toolshed serve --http at %s never described %s:\n%s", url, ready, stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return url
}

// describable reports whether the gateway at url lists tool, or describes it through
// tool_describe.
func describable(url, tool string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-ready", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		return false
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		return false
	}
	for _, x := range list.Tools {
		if x.Name == tool {
			return true
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_describe", Arguments: map[string]any{"name": tool}})
	return err == nil && !res.IsError
}

// envValue returns the value of key in env (KEY=VALUE entries; the last one wins).
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// runCLI runs an agent CLI to its end (at most 4 minutes) in dir with env and no
// standard input, and returns its combined output and exit code.
func runCLI(t *testing.T, dir string, env []string, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	testupstream.Own(t, cmd)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s did not finish in 4 minutes:\n%s", filepath.Base(name), strings.Join(args, " "), out)
	}
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return string(out), code
}

// readMemory returns the memory server's knowledge graph file ("" when it has none).
func readMemory(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}
