package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestConfigErrors checks the one rule for a config's mistakes (config.ErrConfig) in
// every command that reads a config: a file that cannot be read or parsed, or that
// leaves no server to serve, exits 2 at once with a message naming the file and what to
// fix. serve runs as the binary over stdio, as an MCP client starts it (stdin at its
// end): it used to exit 1 for some of these, and 0 after serving nothing for others.
func TestConfigErrors(t *testing.T) {
	bin := toolshedBinary(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A directory cannot be read as a file, even by root (who reads files whatever
	// their permissions): the unreadable file of this test.
	unreadable := filepath.Join(dir, "unreadable.json")
	if err := os.Mkdir(unreadable, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file string
		want       []string // in the message, besides the file's name
		// tokens reads a file of settings alone as settings for the catalog.
		tokensServes bool
	}{
		{"missing", filepath.Join(dir, "missing.json"), []string{"cannot read the configuration file", "no such file", "check the path"}, false},
		{"unreadable", unreadable, []string{"cannot read the configuration file", "is a directory"}, false},
		{"unparsable", write("unparsable.json", `{"mcpServers": {"a": }`), []string{"not valid JSON", "fix the syntax"}, false},
		{"wrong type, the only server", write("wrongtype.json", `{"mcpServers": {"x": {"command": 5}}}`),
			[]string{"its one server cannot be used, so there is nothing to serve", "mcpServers.x.command: is the number 5, not a string", "in quotes"}, false},
		{"empty mcpServers", write("empty.json", `{"mcpServers": {}}`), []string{"has no servers", "list the upstream servers under mcpServers"}, false},
		{"settings alone", write("settings.yaml", "tools: {tool_search: {enabled: on}}\n"), []string{"lists no servers", "under mcpServers"}, true},
		{"every server disabled", write("disabled.json", `{"mcpServers": {"a": {"command": "a", "disabled": true}, "b": {"command": "b", "enabled": false}}}`),
			[]string{"disables every server it lists (a, b)", "remove its disabled: true"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(command string, code int, stdout, stderr string) {
				t.Helper()
				if code != 2 || stdout != "" {
					t.Errorf("%s: exit %d, want 2 with nothing on stdout\nstdout: %s\nstderr: %s", command, code, stdout, stderr)
				}
				for _, w := range append([]string{"toolshed " + command + ": invalid configuration: ", tc.file}, tc.want...) {
					if !strings.Contains(stderr, w) {
						t.Errorf("%s: stderr lacks %q:\n%s", command, w, stderr)
					}
				}
			}
			code, stdout, stderr := runBinary(t, bin, "serve", "--config", tc.file)
			check("serve", code, stdout, stderr)
			for _, args := range [][]string{
				{"lint", "--config", tc.file},
				{"stats", "--from", statsLog, "--config", tc.file},
				{"tokens", "--config", tc.file},
			} {
				if args[0] == "tokens" && tc.tokensServes {
					continue
				}
				var stdout, stderr bytes.Buffer
				code := run(args, &stdout, &stderr)
				check(args[0], code, stdout.String(), stderr.String())
			}
		})
	}
}

// TestConfigBadEntryAmongGood: a server entry that cannot be used, beside one that can,
// is a warning naming it, and the other is served (serve, the binary over HTTP) and
// counted (lint, stats, tokens).
func TestConfigBadEntryAmongGood(t *testing.T) {
	bin := toolshedBinary(t)
	mcmd, margs := testupstream.Memory(t)
	cfg := jsonFile(t, map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": mcmd, "args": margs},
		"broken": map[string]any{"command": 5},
	}})
	const warning = `mcpServers.broken.command: is the number 5, not a string`
	stderr := startCommand(t, bin, nil, []string{"serve", "--config", cfg, "--http", freeAddr(t)}, testupstream.ServersReady)
	if log := stderr.String(); !strings.Contains(log, warning) || !strings.Contains(log, "toolshed: 1 of 1 servers ready") {
		t.Errorf("serve: want the warning and the memory server served:\n%s", log)
	}
	for _, args := range [][]string{
		{"lint", "--json", "--config", cfg},
		{"stats", "--json", "--from", statsLog, "--config", cfg},
		{"tokens", "--json", "--config", cfg},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), warning) {
			t.Errorf("%s: exit %d, want 0 and the warning:\n%s", args[0], code, stderr.String())
		}
	}
}

// TestServeUnknownProfile: an unknown --profile is refused with the profiles there are,
// exit 2, before any server starts (the config's one server would leave a file behind).
func TestServeUnknownProfile(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	cfg := jsonFile(t, map[string]any{
		"mcpServers": map[string]any{"s": map[string]any{"command": "sh", "args": []string{"-c", "touch " + marker}}},
		"profiles":   map[string]any{"ops": map[string]any{"tools": []string{"s__*"}}},
	})
	code, stdout, stderr := runBinary(t, toolshedBinary(t), "serve", "--config", cfg, "--profile", "nope")
	if code != 2 || stdout != "" || !strings.Contains(stderr, `--profile: unknown profile "nope"; the profiles are ops`) {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the server started: %v", err)
	}
}

// runBinary runs bin with args, stdin empty, and returns its exit status and output; it
// is killed if it runs for two minutes.
func runBinary(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	testupstream.OwnGraceful(t, cmd)
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %v ran for two minutes:\n%s", bin, args, errOut.String())
	}
	return code, out.String(), errOut.String()
}

// jsonFile writes v as a JSON file in a fresh directory and returns its path.
func jsonFile(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
