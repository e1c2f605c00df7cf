package testupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// DefaultTimeout bounds Inspector and ConformanceSuite runs whose ctx has no deadline.
const DefaultTimeout = 2 * time.Minute

// Inspector exit codes (the CLI's EXIT_CODES), for the exitCode of Inspector.
const (
	InspectorOK          = 0
	InspectorUsage       = 1 // bad arguments, or a failure with no more specific code
	InspectorUnreachable = 4 // could not connect to the server
	InspectorToolError   = 5 // tools/call returned a result with isError: true
)

// Inspector runs the MCP Inspector CLI (mcp-inspector --cli, on Node 22) against
// target and returns what it printed and its exit code.
//
// target is either a single http:// or https:// URL, run as
//
//	mcp-inspector --cli --transport http --server-url URL OPTIONS...
//
// (the CLI guesses the transport only from a path ending in /mcp or /sse; put
// "--transport", "sse" in options to override), or a stdio server's command line,
// run as
//
//	mcp-inspector --cli COMMAND ARGS... -- OPTIONS...
//
// (or OPTIONS... -- COMMAND ARGS... when the command line itself contains "--").
// options are the CLI's own, e.g. "--method", "tools/list", "--format", "json";
// with --format json stdout is one JSON object ({"result": ...}) and an error is
// a JSON envelope ({"error": ...}) on stderr. A tools/call whose result has
// isError exits 5 (InspectorToolError) with the result still on stdout.
//
// err is nil whenever the Inspector ran to its end, whatever its exit code; it is
// non-nil (and exitCode -1) when it could not be started or ctx ended first (a
// ctx without deadline gets DefaultTimeout). The Inspector and the stdio server
// it spawned are killed together.
func Inspector(t testing.TB, ctx context.Context, target []string, options ...string) (stdout, stderr []byte, exitCode int, err error) {
	t.Helper()
	if len(target) == 0 {
		t.Fatalf("testupstream.Inspector: empty target")
	}
	node := Node22(t)
	args := []string{InspectorLauncher(t), "--cli"}
	switch {
	case len(target) == 1 && (strings.HasPrefix(target[0], "http://") || strings.HasPrefix(target[0], "https://")):
		args = append(args, "--transport", "http", "--server-url", target[0])
		args = append(args, options...)
	case slices.Contains(target, "--"):
		// The CLI splits at the first "--": options before it, the target after.
		args = append(args, options...)
		args = append(args, "--")
		args = append(args, target...)
	default:
		args = append(args, target...)
		args = append(args, "--")
		args = append(args, options...)
	}
	return run(ctx, t.TempDir(), node, args...)
}

// InspectorLauncher returns the MCP Inspector's launcher script, the program of
// `npx @modelcontextprotocol/inspector`, for a test that runs an Inspector command line
// of its own with Node22.
func InspectorLauncher(t testing.TB) string {
	t.Helper()
	return npmFile(t, "the MCP Inspector", "@modelcontextprotocol/inspector/clients/launcher/build/index.js")
}

// InspectorToolNames returns the tool names in the stdout of an Inspector
// tools/list run with --format json.
func InspectorToolNames(stdout []byte) ([]string, error) {
	var out struct {
		Result *struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		return nil, fmt.Errorf("inspector output is not JSON: %v", err)
	}
	if out.Result == nil {
		return nil, fmt.Errorf("inspector output has no result: %.300s", stdout)
	}
	names := make([]string, 0, len(out.Result.Tools))
	for _, tool := range out.Result.Tools {
		names = append(names, tool.Name)
	}
	return names, nil
}

// ConformanceSuite runs the MCP conformance suite's server tests (on Node 22),
//
//	conformance server --url URL ARGS...
//
// and returns its stdout and exit code: 0 when no check failed, 1 otherwise
// (also for a bad argument). ParseConformance reads the per-scenario verdicts
// from stdout. args are extra options, e.g. "--suite", "all", or "-o", DIR to
// keep each scenario's checks.json; note that with "--scenario" the suite prints
// no per-scenario summary, so ParseConformance then finds nothing.
//
// Anything the suite writes to stderr (a scenario that could not run) goes to
// t.Log. err is nil whenever the suite ran to its end; it is non-nil (and
// exitCode -1) when it could not be started or ctx ended first (a ctx without
// deadline gets DefaultTimeout).
func ConformanceSuite(t testing.TB, ctx context.Context, url string, args ...string) (stdout []byte, exitCode int, err error) {
	t.Helper()
	return conformanceSuite(t, ctx, npmFile(t, "the MCP conformance suite", "@modelcontextprotocol/conformance/dist/index.js"), url, args...)
}

// ConformanceSuite2026 is ConformanceSuite with the suite's 0.2 alpha (installed as
// conformance-2026), the first that knows MCP 2026-07-28 ("--requirements",
// "2026-07-28").
func ConformanceSuite2026(t testing.TB, ctx context.Context, url string, args ...string) (stdout []byte, exitCode int, err error) {
	t.Helper()
	return conformanceSuite(t, ctx, npmFile(t, "the MCP conformance suite for 2026-07-28", "conformance-2026/dist/index.js"), url, args...)
}

func conformanceSuite(t testing.TB, ctx context.Context, cli, url string, args ...string) (stdout []byte, exitCode int, err error) {
	t.Helper()
	node := Node22(t)
	argv := append([]string{cli, "server", "--url", url}, args...)
	stdout, stderr, exitCode, err := run(ctx, t.TempDir(), node, argv...)
	if len(bytes.TrimSpace(stderr)) > 0 {
		t.Logf("conformance suite stderr:\n%s", stderr)
	}
	return stdout, exitCode, err
}

// ConformanceClientSuite runs the client role of the MCP conformance suite at its
// newest version, 0.2.0-alpha.12 (the npm alias conformance-2026, the first to know
// MCP 2026-07-28), on Node 22:
//
//	conformance client --command COMMAND ARGS...
//
// The suite starts a test server of its own for each scenario and runs COMMAND with
// that server's URL appended. It returns the suite's stdout and exit code (0 when every
// check passed or failed as the --expected-failures baseline says), as
// ConformanceSuite does.
func ConformanceClientSuite(t testing.TB, ctx context.Context, command string, args ...string) (stdout []byte, exitCode int, err error) {
	t.Helper()
	node := Node22(t)
	cli := npmFile(t, "the MCP conformance suite 0.2.0-alpha.12 (npm alias conformance-2026)", "conformance-2026/dist/index.js")
	argv := append([]string{cli, "client", "--command", command}, args...)
	stdout, stderr, exitCode, err := run(ctx, t.TempDir(), node, argv...)
	if len(bytes.TrimSpace(stderr)) > 0 {
		t.Logf("conformance suite stderr:\n%s", stderr)
	}
	return stdout, exitCode, err
}

// summaryLine matches the suite's per-scenario summary lines:
//
//	✓ server-initialize: 1 passed, 0 failed
//	✗ tools-call-sampling: 0 passed, 1 failed
//
// (the client suite adds ", N warnings"). A scenario is marked ✗ when any of its
// checks failed; one with no checks at all is still ✓.
var summaryLine = regexp.MustCompile(`(?m)^(✓|✗) (\S+): \d+ passed, \d+ failed`)

// ParseConformance returns the scenarios that the conformance suite's summary
// (the lines after "=== SUMMARY ===") marks as passed and as failed, in order.
func ParseConformance(out []byte) (passed, failed []string) {
	if i := bytes.Index(out, []byte("SUMMARY ===")); i >= 0 {
		out = out[i:]
	}
	for _, m := range summaryLine.FindAllSubmatch(out, -1) {
		if string(m[1]) == "✓" {
			passed = append(passed, string(m[2]))
		} else {
			failed = append(failed, string(m[2]))
		}
	}
	return passed, failed
}

// run runs name args in dir, bounded by ctx (DefaultTimeout when ctx has no
// deadline), killing the whole process group at the end.
func run(ctx context.Context, dir, name string, args ...string) (stdout, stderr []byte, exitCode int, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// dir is HOME too: a stdio server the command starts gets HOME and little else
	// from it (the MCP SDKs' default environment), so this keeps a toolshed it starts
	// off the user's own search log and caches.
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.WaitDelay = 5 * time.Second
	ownProcessGroup(cmd, false)
	err = cmd.Run()
	killProcessGroup(cmd)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return o.Bytes(), e.Bytes(), -1, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), ctxErr)
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() >= 0 {
		return o.Bytes(), e.Bytes(), exitErr.ExitCode(), nil
	}
	if err != nil {
		return o.Bytes(), e.Bytes(), -1, fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	return o.Bytes(), e.Bytes(), 0, nil
}
