//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// runBlocks are the blocks of docs/clients.md that tests run with the client itself.
var runBlocks = map[string]string{
	"claude-code-stdio": "TestClaudeCodeServeStdio", "claude-code-http": "TestClaudeCodeServeHTTP",
	"codex-stdio": "TestCodexServe", "codex-http": "TestCodexServe",
	"gemini-stdio": "TestGeminiServe", "gemini-http": "TestGeminiServe", "gemini-long-names": "TestGeminiLongNames",
	"inspector-env": "cmd/toolshed TestInspectorConfig", "inspector-dashdash": "cmd/toolshed TestInspectorConfig",
}

// TestClientsDocLoads checks the config blocks of docs/clients.md for the clients that
// cannot run here (Claude Desktop, Cursor, VS Code): toolshed's config loader, which reads those clients' files, loads each block
// without a warning as one server "toolshed" that starts `toolshed serve --config ...`
// or connects to the documented endpoint. Every other block must be run by a test.
func TestClientsDocLoads(t *testing.T) {
	ids := testupstream.DocBlockIDs(t, clientsDoc)
	if len(ids) == 0 {
		t.Fatalf("%s has no <!-- block: ID --> markers", clientsDoc)
	}
	for _, id := range ids {
		if _, ok := runBlocks[id]; ok {
			continue
		}
		client, front, _ := strings.Cut(id, "-")
		if client == "claude" {
			client, front, _ = strings.Cut(front, "-")
			client = "claude-" + client
		}
		if !slices.Contains([]string{"claude-code", "claude-desktop", "cursor", "vscode"}, client) {
			t.Errorf("block %s is neither run by a test nor a client file toolshed's loader reads", id)
			continue
		}
		t.Run(id, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mcp.json")
			if client == "vscode" {
				// VS Code's file lives in .vscode/, whose parent is ${workspaceFolder}.
				path = filepath.Join(dir, ".vscode", "mcp.json")
				os.MkdirAll(filepath.Dir(path), 0o755)
			}
			if err := os.WriteFile(path, []byte(testupstream.DocBlock(t, clientsDoc, id)), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, warns, err := config.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) > 0 {
				t.Errorf("warnings: %v", warns)
			}
			if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "toolshed" {
				t.Fatalf("servers %+v, want one named toolshed", cfg.Servers)
			}
			s := cfg.Servers[0]
			switch front {
			case "stdio":
				wantConfig := docServersPath
				if client == "vscode" {
					wantConfig = filepath.Join(dir, "servers.json")
				}
				if s.Type != config.Stdio || filepath.Base(s.Command) != "toolshed" || !slices.Equal(s.Args, []string{"serve", "--config", wantConfig}) {
					t.Errorf("server %+v, want stdio toolshed serve --config %s", s, wantConfig)
				}
			case "http":
				if s.Type != config.HTTP || s.URL != docURL {
					t.Errorf("server %+v, want http %s", s, docURL)
				}
			default:
				t.Errorf("block %s: front %q is neither stdio nor http", id, front)
			}
		})
	}
}
