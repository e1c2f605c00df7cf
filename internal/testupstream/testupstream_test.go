package testupstream_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// inspect runs the Inspector on target and fails the test unless it exits with want.
func inspect(t *testing.T, target []string, want int, options ...string) []byte {
	t.Helper()
	stdout, stderr, code, err := testupstream.Inspector(t, ctxFor(t), target, options...)
	if err != nil {
		t.Fatalf("inspector %q: %v\nstderr:\n%s", target, err, stderr)
	}
	if code != want {
		t.Fatalf("inspector %q %q: exit code %d, want %d\nstdout:\n%.2000s\nstderr:\n%.2000s", target, options, code, want, stdout, stderr)
	}
	return stdout
}

// listTools runs tools/list through the Inspector and checks that every tool in want is listed.
func listTools(t *testing.T, target []string, want ...string) []string {
	t.Helper()
	out := inspect(t, target, testupstream.InspectorOK, "--method", "tools/list", "--format", "json")
	names, err := testupstream.InspectorToolNames(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("tools/list of %q has no tool %q; it has %q", target, w, names)
		}
	}
	return names
}

func cmdline(command string, args []string) []string {
	return append([]string{command}, args...)
}

func TestRoot(t *testing.T) {
	root := testupstream.Root(t)
	if _, err := os.Stat(filepath.Join(root, "scripts", "deps.sh")); err != nil {
		t.Fatalf("Root() = %s, which has no scripts/deps.sh: %v", root, err)
	}
	out, err := exec.Command(testupstream.Node22(t), "--version").Output()
	if v := strings.TrimSpace(string(out)); err != nil || !strings.HasPrefix(v, "v22.") {
		t.Fatalf("Node22 --version = %q, %v; want v22.x", v, err)
	}
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	target := cmdline(testupstream.Everything(t))
	listTools(t, target, "echo", "get-sum")
	out := inspect(t, target, testupstream.InspectorOK,
		"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hello toolshed", "--format", "json")
	if !strings.Contains(string(out), "hello toolshed") {
		t.Errorf("echo result does not echo: %s", out)
	}
}

func TestMemoryStdio(t *testing.T) {
	t.Parallel()
	command, args := testupstream.Memory(t)
	target := cmdline(command, args)
	listTools(t, target, "create_entities", "read_graph", "search_nodes")

	file, ok := strings.CutPrefix(args[0], "MEMORY_FILE_PATH=")
	if !ok {
		t.Fatalf("Memory args[0] = %q, want MEMORY_FILE_PATH=...", args[0])
	}
	inspect(t, target, testupstream.InspectorOK, "--method", "tools/call", "--tool-name", "create_entities",
		"--tool-args-json", `{"entities":[{"name":"toolshed","entityType":"project","observations":["gateway under test"]}]}`)
	data, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(data), "gateway under test") {
		t.Fatalf("memory file %s after create_entities: %q, %v", file, data, err)
	}
	// A second server on the same file sees the entity.
	out := inspect(t, target, testupstream.InspectorOK, "--method", "tools/call", "--tool-name", "read_graph", "--format", "json")
	if !strings.Contains(string(out), "gateway under test") {
		t.Errorf("read_graph does not show the entity: %s", out)
	}
	// Each Memory call gets a graph of its own.
	_, other := testupstream.Memory(t)
	if other[0] == args[0] {
		t.Errorf("two Memory calls share %s", args[0])
	}
}

func TestFilesystemStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from toolshed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := cmdline(testupstream.Filesystem(t, dir))
	listTools(t, target, "read_text_file", "list_directory", "list_allowed_directories")
	out := inspect(t, target, testupstream.InspectorOK, "--method", "tools/call", "--tool-name", "read_text_file",
		"--tool-arg", "path="+filepath.Join(dir, "hello.txt"), "--format", "json")
	if !strings.Contains(string(out), "hello from toolshed") {
		t.Errorf("read_text_file result: %s", out)
	}
	// Outside the allowed directories the tool answers with isError: exit code 5.
	inspect(t, target, testupstream.InspectorToolError, "--method", "tools/call", "--tool-name", "read_text_file",
		"--tool-arg", "path=/etc/hostname", "--format", "json")

	// With no directory given it serves a fresh temporary one.
	_, args := testupstream.Filesystem(t)
	if len(args) != 2 || !filepath.IsAbs(args[1]) {
		t.Errorf("Filesystem(t) args = %q, want the script and one absolute directory", args)
	}
}

func TestConformanceServerStdio(t *testing.T) {
	t.Parallel()
	target := []string{testupstream.ConformanceServer(t)}
	listTools(t, target, "test_simple_text", "test_error_handling", "test_sampling")
	out := inspect(t, target, testupstream.InspectorOK, "--method", "tools/call", "--tool-name", "test_simple_text", "--format", "json")
	if !strings.Contains(string(out), "This is a simple text response for testing.") {
		t.Errorf("test_simple_text result: %s", out)
	}
	// A tool result with isError makes the Inspector exit 5, result on stdout.
	out = inspect(t, target, testupstream.InspectorToolError, "--method", "tools/call", "--tool-name", "test_error_handling", "--format", "json")
	if !strings.Contains(string(out), `"isError":true`) {
		t.Errorf("test_error_handling result: %s", out)
	}
}

func TestConformanceServerHTTP(t *testing.T) {
	t.Parallel()
	url := testupstream.ConformanceHTTP(t)
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("ConformanceHTTP = %q", url)
	}
	listTools(t, []string{url}, "test_simple_text", "test_error_handling")
	// A URL whose path does not end in /mcp works too: Inspector passes --transport http.
	listTools(t, []string{strings.TrimSuffix(url, "mcp")}, "test_simple_text")
}

func TestConformanceSuite(t *testing.T) {
	t.Parallel()
	url := testupstream.ConformanceHTTP(t)
	out, code, err := testupstream.ConformanceSuite(t, ctxFor(t), url)
	if err != nil {
		t.Fatal(err)
	}
	passed, failed := testupstream.ParseConformance(out)
	if code != 0 || len(failed) > 0 {
		t.Errorf("conformance suite against the go-sdk everything-server: exit %d, failed %q\n%s", code, failed, out)
	}
	for _, s := range []string{"server-initialize", "tools-list", "tools-call-sampling", "tools-call-elicitation", "resources-subscribe", "prompts-get-with-args", "dns-rebinding-protection"} {
		if !slices.Contains(passed, s) {
			t.Errorf("scenario %s not among the passed: %q", s, passed)
		}
	}
	if len(passed) < 30 {
		t.Errorf("only %d scenarios passed (%q); conformance 0.1.16's active suite has 30", len(passed), passed)
	}
}

// The go-sdk server's default, stateless HTTP mode cannot send requests to the
// client, so the sampling and elicitation scenarios fail: the suite exits 1 and
// ParseConformance names them.
func TestConformanceSuiteStateless(t *testing.T) {
	t.Parallel()
	url := testupstream.ConformanceHTTP(t, "-stateless=true")
	out, code, err := testupstream.ConformanceSuite(t, ctxFor(t), url, "--scenario", "server-initialize")
	if err != nil || code != 0 {
		t.Fatalf("single scenario: exit %d, %v\n%s", code, err, out)
	}
	out, code, err = testupstream.ConformanceSuite(t, ctxFor(t), url)
	if err != nil {
		t.Fatal(err)
	}
	passed, failed := testupstream.ParseConformance(out)
	if code != 1 || !slices.Contains(failed, "tools-call-sampling") || !slices.Contains(passed, "tools-list") {
		t.Errorf("stateless: exit %d, passed %q, failed %q\n%s", code, passed, failed, out)
	}
}

// A ctx that ends first kills the Inspector and the server it spawned (here a
// "server" that never answers).
func TestInspectorTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, _, code, err := testupstream.Inspector(t, ctx, []string{"sleep", "300"}, "--method", "tools/list")
	if err == nil || code != -1 {
		t.Fatalf("Inspector past its deadline: exit %d, err %v; want -1 and an error", code, err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("Inspector took %v to stop after a 3s deadline", d)
	}
}

func TestParseConformance(t *testing.T) {
	out := []byte(`Running active suite (3 scenarios) against http://127.0.0.1:1/mcp

=== Running scenario: server-initialize ===
Running client scenario 'server-initialize' against server: http://127.0.0.1:1/mcp

=== SUMMARY ===
✓ server-initialize: 1 passed, 0 failed
✗ tools-call-sampling: 0 passed, 1 failed
✓ server-sse-multiple-streams: 0 passed, 0 failed

Total: 1 passed, 1 failed
`)
	passed, failed := testupstream.ParseConformance(out)
	if !slices.Equal(passed, []string{"server-initialize", "server-sse-multiple-streams"}) || !slices.Equal(failed, []string{"tools-call-sampling"}) {
		t.Errorf("ParseConformance = %q, %q", passed, failed)
	}
	if p, f := testupstream.ParseConformance([]byte("no summary here")); p != nil || f != nil {
		t.Errorf("ParseConformance(no summary) = %q, %q", p, f)
	}
}
