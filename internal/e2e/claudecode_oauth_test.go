//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/fakellm"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/internal/testupstream"
)

// Claude Code 2.1.332 signs in to a toolshed that requires OAuth (serve --http with an
// oauth section), headlessly: `claude mcp login NAME --no-browser` prints the
// authorization URL, the test plays the browser against the real oidc-provider
// (testoidc's Login fills in its login and consent pages), and then calls the loopback
// redirect Claude Code listens on, as the browser would. Claude Code stores the token
// and uses it for toolshed's tools in a later `claude -p`: the scripted model searches
// and calls a real upstream tool through toolshed.
//
// Claude Code needs a terminal for `mcp login` (without one it refuses: "this isn't an
// interactive terminal"); util-linux's script(1) gives it one. It offers its client ID
// metadata document first when the authorization server supports them, which the
// provider cannot fetch here (no network), so the test registers a client id for it,
// as `claude mcp add --client-id ... --callback-port ...` does for servers that need a
// pre-registered client.
//
//	go test -tags e2e ./internal/e2e -run TestClaudeCodeOAuthToolshed -v
func TestClaudeCodeOAuthToolshed(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script (util-linux) is needed to give claude mcp login a terminal: %v", err)
	}
	_, callbackPort, _ := net.SplitHostPort(testupstream.FreeAddr(t))
	const clientID = "claude-code-e2e"
	provider := testoidc.Start(t, testoidc.Options{Clients: []map[string]any{{
		"client_id": clientID, "token_endpoint_auth_method": "none", "application_type": "native",
		"redirect_uris":  []string{"http://localhost:" + callbackPort + "/callback"},
		"grant_types":    []string{"authorization_code", "refresh_token"},
		"response_types": []string{"code"},
	}}})

	ecmd, eargs := testupstream.Everything(t)
	addr := testupstream.FreeAddr(t)
	url := "http://" + addr + "/mcp"
	config := writeConfigFile(t, map[string]any{
		"mcpServers": map[string]any{"everything": map[string]any{"command": ecmd, "args": eargs}},
		"tools":      map[string]any{"tool_search": map[string]any{"enabled": "on"}},
		"oauth":      map[string]any{"issuer": provider.Issuer(), "resource": url, "scopes": []string{testoidc.ScopeRead}},
	})
	serveLog := testupstream.Start(t, exec.Command(toolshedBin, "serve", "--config", config, "--http", addr), testupstream.ServersReady)

	// Without a token toolshed answers with the challenge that starts the sign-in.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("toolshed without a token: HTTP %d %q, want 401 with resource_metadata", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}

	// Claude Code's home, shared by mcp add, mcp login and the conversation.
	env := testupstream.ClientEnv(t)
	home := envValue(env, "HOME")
	server := map[string]any{"type": "http", "url": url, "oauth": map[string]any{"clientId": clientID, "callbackPort": json.Number(callbackPort)}}
	claude := testupstream.ClaudeCode(t)
	add := exec.Command(claude, "mcp", "add", "--transport", "http", "-s", "user", "--client-id", clientID, "--callback-port", callbackPort, "toolshed", url)
	add.Env, add.Dir = env, home
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("claude mcp add: %v\n%s", err, out)
	}

	login := claudeLogin(t, script, claude, env, home, provider)
	if !strings.Contains(login, `Authenticated with "toolshed"`) {
		t.Fatalf("claude mcp login did not sign in:\n%s", login)
	}
	creds, err := os.ReadFile(filepath.Join(home, ".claude", ".credentials.json"))
	if err != nil {
		t.Fatalf("Claude Code stored no credentials: %v", err)
	}
	if !strings.Contains(string(creds), `"issuer": "`+provider.Issuer()+`"`) && !strings.Contains(string(creds), `"issuer":"`+provider.Issuer()+`"`) {
		t.Errorf("Claude Code's credential is not from the provider %s", provider.Issuer())
	}

	model := fakellm.NewAnthropic(
		fakellm.Call("", "toolu_01", ccSearch, `{"query": "echo a message back", "limit": 3}`),
		fakellm.Call("", "toolu_02", ccCall, `{"name": "everything__echo", "arguments": {"message": "signed in through OAuth"}}`),
		fakellm.Say("OAuth test finished."),
	)
	llm := httptest.NewServer(model)
	defer llm.Close()
	mcpConfig := writeConfigFile(t, map[string]any{"mcpServers": map[string]any{"toolshed": server}})
	// The conversation runs in the same home (later values of env win over
	// ClientEnv's own), so Claude Code finds the token it stored.
	res := runClaudeCode(t, llm.URL, mcpConfig, "Use the toolshed gateway.", env, nil)
	if res.Subtype != "success" || res.IsError || res.Result != "OAuth test finished." {
		t.Fatalf("Claude Code did not complete the conversation: %+v\ntoolshed log:\n%s", res, serveLog)
	}
	calls := upstreamCalls(t, model.Requests())
	if len(calls) != 3 {
		t.Fatalf("the model got %d requests, want 3", len(calls))
	}
	if calls[0].tool(ccSearch) == nil {
		t.Fatalf("the first request has no %s: Claude Code did not reach toolshed with its token", ccSearch)
	}
	if !toolResultContains(calls[1], "anthropic", "toolu_01", "everything__echo") {
		t.Errorf("tool_search through the signed-in session did not find everything__echo")
	}
	if !toolResultContains(calls[2], "anthropic", "toolu_02", "signed in through OAuth") {
		t.Errorf("the call through toolshed did not reach the everything server")
	}
	// The token never reaches toolshed's log.
	if tok := storedToken(t, creds); tok == "" || strings.Contains(serveLog.String(), tok) {
		t.Errorf("toolshed's log holds Claude Code's access token (or none was stored)")
	}
}

// claudeLogin runs `claude mcp login toolshed --no-browser` in a terminal (script),
// signs in at the authorization URL it prints, and hands the provider's redirect to
// the loopback listener Claude Code waits on. It returns what Claude Code printed.
func claudeLogin(t *testing.T, script, claude string, env []string, dir string, provider *testoidc.Provider) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-q", "-e", "-f", "-c", claude+" mcp login toolshed --no-browser", "/dev/null")
	cmd.Env, cmd.Dir = env, dir
	stdin, err := cmd.StdinPipe() // held open: script ends when Claude Code does
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	testupstream.Own(t, cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	authURL := regexp.MustCompile(`http://127\.0\.0\.1:\d+/auth\?[^\s\x07\x1b]+`)
	escapes := regexp.MustCompile(`\x1b\][^\x07]*\x07|\x1b\[[0-9;?]*[a-zA-Z]`)
	for {
		select {
		case err := <-done:
			return escapes.ReplaceAllString(out.String(), "") + "\n(exit: " + errString(err) + ")"
		case <-time.After(200 * time.Millisecond):
		}
		m := authURL.FindString(escapes.ReplaceAllString(out.String(), ""))
		if m == "" {
			continue
		}
		redirect, err := provider.Login(ctx, m)
		if err != nil {
			t.Fatalf("signing in at %s: %v\nclaude:\n%s", m, err, out)
		}
		resp, err := http.Get(redirect) // the browser following the redirect to Claude Code
		if err != nil {
			t.Fatalf("Claude Code's callback %s: %v", redirect, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		select {
		case err := <-done:
			return escapes.ReplaceAllString(out.String(), "") + "\n(exit: " + errString(err) + ")"
		case <-ctx.Done():
			t.Fatalf("claude mcp login did not end after the callback:\n%s", out)
		}
	}
}

// storedToken is the access token of the one credential in Claude Code's credentials.
func storedToken(t *testing.T, creds []byte) string {
	var f struct {
		MCPOAuth map[string]struct {
			AccessToken string `json:"accessToken"`
		} `json:"mcpOAuth"`
	}
	if err := json.Unmarshal(creds, &f); err != nil {
		t.Fatalf("Claude Code's credentials: %v", err)
	}
	for _, c := range f.MCPOAuth {
		return c.AccessToken
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "0"
	}
	return err.Error()
}

// lockedBuffer is a bytes.Buffer written by a process and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
