package main

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestInspectorConfig runs the MCP Inspector commands of docs/clients.md. The
// Inspector has a --config flag of its own, so the usual form
// `inspector --cli toolshed serve --config FILE` gives it toolshed's flag and it
// refuses; toolshed serve takes its config from $TOOLSHED_CONFIG (set with the
// Inspector's -e), or its command line goes after "--", which the Inspector passes on.
func TestInspectorConfig(t *testing.T) {
	bin := toolshedBinary(t)
	mcmd, margs := testupstream.Memory(t)
	// A server named "notes" is in no built-in catalog: its tools prove the config was read.
	cfg := writeConfig(t, map[string][]string{"notes": argv(mcmd, margs)})
	launcher := testupstream.InspectorLauncher(t)

	// run runs a documented command line with the pinned Inspector and toolshed binary.
	run := func(t *testing.T, line string) (string, string, error) {
		t.Helper()
		words := strings.Fields(line)
		if len(words) < 3 || words[0] != "npx" || words[1] != "@modelcontextprotocol/inspector" {
			t.Fatalf("not an Inspector command: %s", line)
		}
		args := []string{launcher}
		for _, w := range words[2:] {
			switch {
			case w == "toolshed":
				w = bin
			case strings.Contains(w, "/home/you/.config/toolshed/servers.json"):
				w = strings.ReplaceAll(w, "/home/you/.config/toolshed/servers.json", cfg)
			}
			args = append(args, w)
			if w == "--cli" {
				args = append(args, "--format", "json")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, testupstream.Node22(t), args...)
		testupstream.Own(t, cmd)
		cmd.Dir = t.TempDir()
		// The Inspector gives the server it starts HOME and little else of its
		// environment (not TestMain's XDG_DATA_HOME): a HOME of its own keeps toolshed
		// off the user's search log.
		cmd.Env = append(os.Environ(), "HOME="+cmd.Dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}

	t.Run("clash", func(t *testing.T) {
		out, stderr, err := run(t, "npx @modelcontextprotocol/inspector --cli toolshed serve --config /home/you/.config/toolshed/servers.json --method tools/list")
		if err == nil || !strings.Contains(out+stderr, "--config cannot be combined") {
			t.Errorf("the Inspector took toolshed's --config without complaint (err %v):\n%s\n%s", err, out, stderr)
		}
	})
	for _, id := range []string{"inspector-env", "inspector-dashdash"} {
		t.Run(id, func(t *testing.T) {
			out, stderr, err := run(t, testupstream.DocBlock(t, "docs/clients.md", id))
			if err != nil {
				t.Fatalf("%v\nstdout: %s\nstderr: %s", err, out, stderr)
			}
			names, err := testupstream.InspectorToolNames([]byte(out))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(names, "notes__read_graph") {
				t.Errorf("tools/list through the Inspector gave %v, want the notes server's tools", names)
			}
		})
	}
}
