package testupstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The real agent clients that toolshed's end-to-end tests drive, installed from npm at
// the versions scripts/npm/clients/package.json pins (by `bash scripts/deps.sh --e2e`,
// into .deps/clients): Claude Code, Codex CLI and Gemini CLI, and the MCP TypeScript SDK
// and the AI SDK for client scripts run with node. No model can run here, so the tests
// point each client at internal/fakellm.

// ClaudeCode returns the Claude Code binary (@anthropic-ai/claude-code, a native
// executable that its postinstall copies from the platform package).
func ClaudeCode(t testing.TB) string {
	t.Helper()
	return npmClients.file(t, "Claude Code (@anthropic-ai/claude-code)", "@anthropic-ai/claude-code/bin/claude.exe")
}

// Codex returns the Codex CLI launcher (@openai/codex), a node script that runs the
// platform's native binary.
func Codex(t testing.TB) (command string, args []string) {
	t.Helper()
	script := npmClients.file(t, "Codex CLI (@openai/codex)", "@openai/codex/bin/codex.js")
	return Node(t), []string{script}
}

// GeminiCLI returns the command line of Gemini CLI (@google/gemini-cli), which runs on
// Node 20 or newer.
func GeminiCLI(t testing.TB) (command string, args []string) {
	t.Helper()
	script := npmClients.file(t, "Gemini CLI (@google/gemini-cli)", "@google/gemini-cli/bundle/gemini.js")
	return Node(t), []string{script}
}

// NodeModules returns .deps/clients/node_modules, for node scripts that import the MCP
// TypeScript SDK (@modelcontextprotocol/sdk) or the AI SDK (ai, @ai-sdk/mcp): run them
// from a directory inside it, or with NODE_PATH set to it. The AI SDK needs Node 22
// (Node22).
func NodeModules(t testing.TB) string {
	t.Helper()
	return filepath.Join(npmClients.check(t), "node_modules")
}

// ClientEnv is an environment for running an agent client (or a browser) in a test: the
// machine's environment with HOME (and XDG and client config directories) and TMPDIR
// moved into fresh temporary directories, so that no user config is read or written and
// nothing is left in ~ or /tmp (Claude Code writes claude-<uid>/ and cc-socks/ in
// Node's os.tmpdir(), Chromium its org.chromium.Chromium.* directories), and with
// telemetry, update checks and other calls home turned off. extra entries (KEY=VALUE)
// are added last and win.
//
// TMPDIR is a directory right in the test binary's TMPDIR, not in a t.TempDir: the
// clients make unix sockets there (Chromium its SingletonSocket, 45 characters below
// TMPDIR), whose paths may not pass 107 characters. It is removed at the end of the
// test, after the cleanups registered after this call: start the client after it.
func ClientEnv(t testing.TB, extra ...string) []string {
	t.Helper()
	home := t.TempDir()
	for _, d := range []string{".config", ".cache", ".local/share", ".claude", ".codex", ".gemini"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatalf("testupstream: %v", err)
		}
	}
	tmp, err := os.MkdirTemp("", "")
	if err != nil {
		t.Fatalf("testupstream: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	env := []string{
		"HOME=" + home,
		"TMPDIR=" + tmp, "CLAUDE_CODE_TMPDIR=" + tmp,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local/share"),
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"CODEX_HOME=" + filepath.Join(home, ".codex"),
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1",
		"DISABLE_BUG_COMMAND=1", "DISABLE_COST_WARNINGS=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// Claude Code refuses --dangerously-skip-permissions as root outside a sandbox.
		"IS_SANDBOX=1",
		"GEMINI_CLI_NO_RELAUNCH=true",
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		"NO_COLOR=1", "CI=1",
	}
	keep := map[string]bool{"PATH": true, "LANG": true, "LC_ALL": true, "USER": true, "TERM": true, "TOOLSHED_TEST_RUN": true}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if keep[k] {
			out = append(out, kv)
		}
	}
	out = append(out, env...)
	return append(out, extra...)
}
