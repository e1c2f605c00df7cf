//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testoidc"
)

// A new user signs in to an OAuth-protected MCP server with toolshed auth login, and
// Claude Code 2.1.332 calls its tools through toolshed serve (stdio), with a scripted
// model: the real oidc-provider, the TypeScript SDK's protected server, the real
// toolshed binary and the real Claude Code. The test plays the user's browser with
// the URL auth login prints.
//
//	go test -tags e2e ./internal/e2e -run TestClaudeCodeSignIn -v
func TestClaudeCodeSignIn(t *testing.T) {
	p := testoidc.Start(t, testoidc.Options{})
	url := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	servers := writeConfigFile(t, map[string]any{
		"mcpServers": map[string]any{"protected": map[string]any{"url": url}},
		"tools":      map[string]any{"tool_search": map[string]any{"enabled": "on"}},
	})
	creds := filepath.Join(t.TempDir(), "credentials.json")

	// toolshed auth login, the browser played by testoidc's Login.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	login := exec.CommandContext(ctx, toolshedBin, "auth", "login", "--no-browser", "--config", servers, "--credentials", creds, "protected")
	stdout, err := login.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	login.Stderr = &printed
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if u := strings.TrimSpace(sc.Text()); strings.HasPrefix(u, "http://") && strings.Contains(u, "/auth?") {
			redirect, err := p.Login(ctx, u)
			if err != nil {
				t.Fatalf("signing in on the provider's pages: %v", err)
			}
			resp, err := http.Get(redirect)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	if err := login.Wait(); err != nil {
		t.Fatalf("toolshed auth login: %v\n%s", err, printed.String())
	}
	if !strings.Contains(printed.String(), "Signed in to protected") {
		t.Fatalf("auth login printed:\n%s", printed.String())
	}

	const ccCall = "mcp__toolshed__tool_call"
	model := fakellm.NewAnthropic(
		fakellm.Call("", "toolu_01", ccCall, `{"name": "protected__whoami", "arguments": {}}`),
		fakellm.Say("Signed-in call finished."),
	)
	llm := httptest.NewServer(model)
	defer llm.Close()
	mcpConfig := filepath.Join(t.TempDir(), ".mcp.json")
	block, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"toolshed": map[string]any{
		"command": toolshedBin, "args": []string{"serve", "--config", servers, "--credentials", creds}}}})
	if err := os.WriteFile(mcpConfig, block, 0o644); err != nil {
		t.Fatal(err)
	}
	res := runClaudeCode(t, llm.URL, mcpConfig, "Who am I on the protected server?", nil, nil)
	if res.Subtype != "success" || res.IsError || res.Result != "Signed-in call finished." {
		t.Fatalf("Claude Code did not complete the conversation: %+v", res)
	}
	calls := upstreamCalls(t, model.Requests())
	if len(calls) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(calls))
	}
	if !toolResultContains(calls[1], "anthropic", "toolu_01", testoidc.DefaultUser.Name) {
		t.Errorf("tool_call of protected__whoami did not answer as %s", testoidc.DefaultUser.Name)
	}
	// No token in what auth login printed.
	b, err := os.ReadFile(creds)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Credentials []struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
	}
	json.Unmarshal(b, &f)
	for _, c := range f.Credentials {
		for _, s := range []string{c.AccessToken, c.RefreshToken} {
			if s != "" && strings.Contains(printed.String(), s) {
				t.Error("auth login printed a token")
			}
		}
	}
}
