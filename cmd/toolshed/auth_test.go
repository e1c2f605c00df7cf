package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/oauth"
)

// authEnv is the environment of the toolshed processes of one sign-in test: their
// credentials file, and what they printed, to look for secrets in at the end.
type authEnv struct {
	t     *testing.T
	p     *testoidc.Provider
	cfg   string
	creds string

	mu      sync.Mutex
	printed []string
	secrets []string
}

func (e *authEnv) env() []string {
	return append(os.Environ(), "TOOLSHED_CREDENTIALS="+e.creds, "TOOLSHED_CONFIG="+e.cfg, "XDG_DATA_HOME="+filepath.Join(e.t.TempDir(), "data"))
}

func (e *authEnv) record(s string) {
	e.mu.Lock()
	e.printed = append(e.printed, s)
	e.mu.Unlock()
}

// run runs `toolshed auth args...` and returns its exit status and output.
func (e *authEnv) run(args ...string) (int, string) {
	e.t.Helper()
	cmd := exec.Command(toolshedBinary(e.t), append([]string{"auth"}, args...)...)
	cmd.Env = e.env()
	out, err := cmd.CombinedOutput()
	e.record(string(out))
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return code, string(out)
}

// login runs `toolshed auth login --no-browser SERVER` as the user would: it opens
// the URL toolshed prints in the browser (testoidc's Login plays it), which the
// provider sends back to toolshed's loopback redirect.
func (e *authEnv) login(server string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolshedBinary(e.t), "auth", "login", "--no-browser", server)
	cmd.Env = e.env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	stderr := &testupstream.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if u := strings.TrimSpace(line); strings.HasPrefix(u, "http://") && strings.Contains(u, "/auth?") {
			redirect, err := e.p.Login(ctx, u)
			if err != nil {
				e.t.Fatalf("signing in on the provider's pages: %v", err)
			}
			resp, err := http.Get(redirect) // the browser follows the redirect
			if err != nil {
				e.t.Fatalf("the loopback redirect: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "Signed in") {
				e.t.Errorf("the page after the redirect: %s", body)
			}
		}
	}
	err = cmd.Wait()
	e.record(out.String() + stderr.String())
	if err != nil {
		e.t.Fatalf("toolshed auth login: %v\n%s%s", err, out.String(), stderr)
	}
	e.keepSecrets()
	return out.String()
}

// keepSecrets notes the secrets stored now, to look for in everything printed.
func (e *authEnv) keepSecrets() {
	b, err := os.ReadFile(e.creds)
	if err != nil {
		e.t.Fatal(err)
	}
	var f struct {
		Credentials []struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
		}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		e.t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range f.Credentials {
		for _, s := range []string{c.AccessToken, c.RefreshToken} {
			if s != "" {
				e.secrets = append(e.secrets, s)
			}
		}
	}
}

func (e *authEnv) checkNoSecrets() {
	e.mu.Lock()
	defer e.mu.Unlock()
	all := strings.Join(e.printed, "\n")
	for _, s := range e.secrets {
		if strings.Contains(all, s) {
			e.t.Errorf("a token was printed (in the output of auth, serve's log or a tool result)")
			return
		}
	}
	if len(e.secrets) < 2 {
		e.t.Errorf("only %d secrets seen: the check checked little", len(e.secrets))
	}
}

// call calls tool through serve's session and returns the text and whether it is an
// error result.
func (e *authEnv) call(cs *mcp.ClientSession, tool string) (string, bool) {
	e.t.Helper()
	res, err := cs.CallTool(e.t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	if err != nil {
		e.t.Fatalf("calling %s: %v", tool, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	e.record(b.String())
	return b.String(), res.IsError
}

// waitFor calls tool until its result is ok (or not), within a minute.
func (e *authEnv) waitFor(cs *mcp.ClientSession, tool string, ok bool) string {
	e.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		text, isErr := e.call(cs, tool)
		if isErr != ok {
			return text
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s never became ok=%v; last: %s", tool, ok, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAuthCommands: a user signs in to an OAuth-protected server with toolshed auth
// login while serve runs; serve, which started with the server needing sign-in,
// connects to it and calls its tools with the stored token, refreshes it as it
// expires, tells how to step up to a scope a tool needs, and, after logout (which
// revokes the grant), says to sign in again. No token is ever printed.
func TestAuthCommands(t *testing.T) {
	p := testoidc.Start(t, testoidc.Options{AccessTokenTTL: 3 * time.Second})
	url := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	modernURL := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{SDK: 2})
	dir := t.TempDir()
	e := &authEnv{t: t, p: p, cfg: filepath.Join(dir, "mcp.json"), creds: filepath.Join(dir, "credentials.json")}
	cfg := `{"mcpServers": {"protected": {"url": "` + url + `", "oauth": {"scopes": ["mcp:read"]}},
		"modern": {"url": "` + modernURL + `", "oauth": {"scopes": ["mcp:read"]}}}}`
	if err := os.WriteFile(e.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	defer e.checkNoSecrets()

	if code, out := e.run("status"); code != 0 || !strings.Contains(out, "needs sign-in: run toolshed auth login protected") {
		t.Fatalf("status before sign-in (exit %d):\n%s", code, out)
	}

	// serve starts with the server needing sign-in: the rest runs, and the
	// server's tools say what to run.
	cmd := exec.Command(toolshedBinary(t), "serve", "--db", "off", "--tool-search", "off")
	cmd.Env = e.env()
	testupstream.OwnGraceful(t, cmd)
	serveLog := &testupstream.SyncBuffer{}
	cmd.Stderr = serveLog
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "auth-test", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, serveLog)
	}
	t.Cleanup(func() {
		cs.Close()
		e.record(serveLog.String())
		if t.Failed() {
			t.Logf("serve's log:\n%s", serveLog)
		}
	})
	if text := e.waitFor(cs, "protected__whoami", false); !strings.Contains(text, "needs sign-in: run `toolshed auth login protected`") {
		t.Fatalf("a call before sign-in: %s", text)
	}

	out := e.login("protected")
	if !strings.Contains(out, "Signed in to protected (issuer "+p.Issuer()) || !strings.Contains(out, e.creds) {
		t.Errorf("login's output:\n%s", out)
	}
	fi, err := os.Stat(e.creds)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file: %v, mode %v", err, fi.Mode().Perm())
	}
	if code, out := e.run("status"); code != 0 || !strings.Contains(out, "signed in") || !strings.Contains(out, p.Issuer()) {
		t.Errorf("status after sign-in (exit %d):\n%s", code, out)
	}

	// serve notices the credential and connects.
	if who := e.waitFor(cs, "protected__whoami", true); !strings.Contains(who, testoidc.DefaultUser.Name) {
		t.Fatalf("whoami through serve: %s", who)
	}
	if !strings.Contains(serveLog.String(), "protected needs sign-in") {
		t.Errorf("serve's log does not say the server needs sign-in:\n%s", serveLog)
	}

	// A server on the TypeScript SDK v2 (MCP 2026-07-28) at the same issuer: its
	// sign-in reuses the client registered for the first, and serve calls it.
	if out := e.login("modern"); !strings.Contains(out, "Signed in to modern (issuer "+p.Issuer()) {
		t.Errorf("login modern's output:\n%s", out)
	}
	// whoami names the protocol revision of the call: toolshed speaks 2026-07-28
	// with this server.
	if who := e.waitFor(cs, "modern__whoami", true); !strings.Contains(who, testoidc.DefaultUser.Name) || !strings.Contains(who, `"protocol":"2026-07-28"`) {
		t.Fatalf("whoami of the v2 server through serve: %s", who)
	}
	first, _ := (&oauth.FileStore{Path: e.creds}).Get(t.Context(), url)
	modern, _ := (&oauth.FileStore{Path: e.creds}).Get(t.Context(), modernURL)
	if first == nil || modern == nil || first.ClientID != modern.ClientID {
		t.Errorf("the sign-in to modern registered another client at the same issuer")
	}
	e.keepSecrets()

	// The token expires (3s): the next call refreshes it.
	before, _ := (&oauth.FileStore{Path: e.creds}).Get(t.Context(), url)
	for time.Now().Before(before.Expiry) {
		time.Sleep(100 * time.Millisecond) // waiting for the expiry the provider set
	}
	if _, isErr := e.call(cs, "protected__whoami"); isErr {
		t.Fatal("a call after the token expired failed")
	}
	after, _ := (&oauth.FileStore{Path: e.creds}).Get(t.Context(), url)
	if after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken {
		t.Error("the expired token was not refreshed (and the refresh token rotated)")
	}
	e.keepSecrets()

	// Step-up: admin_action needs mcp:write, which was not asked for.
	text, isErr := e.call(cs, "protected__admin_action")
	if !isErr || !strings.Contains(text, "mcp:write") || !strings.Contains(text, "toolshed auth login protected") {
		t.Fatalf("admin_action without mcp:write: %s", text)
	}
	e.login("protected")
	if text, isErr := e.call(cs, "protected__admin_action"); isErr {
		t.Fatalf("admin_action after signing in again: %s", text)
	}

	// Logout revokes the grant: once the access token in hand expires, serve
	// cannot refresh it and the server needs sign-in again.
	if code, out := e.run("logout", "protected"); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("logout (exit %d):\n%s", code, out)
	}
	if code, out := e.run("status"); code != 0 || !strings.Contains(out, "needs sign-in") {
		t.Errorf("status after logout (exit %d):\n%s", code, out)
	}
	if text := e.waitFor(cs, "protected__whoami", false); !strings.Contains(text, "toolshed auth login protected") {
		t.Errorf("a call after logout: %s", text)
	}
	if code, out := e.run("logout", "protected"); code == 0 || !strings.Contains(out, "not signed in") {
		t.Errorf("a second logout (exit %d):\n%s", code, out)
	}
}

// TestAuthStatusUsers: the users' own sign-ins to a per-user server are counted on
// its row, never listed one by one nor named by their keys.
func TestAuthStatusUsers(t *testing.T) {
	ctx := t.Context()
	store := &oauth.FileStore{Path: filepath.Join(t.TempDir(), "credentials.json")}
	put := func(url, user string) {
		key, err := oauth.Key(url, user)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Update(ctx, key, func(*oauth.Credential) (*oauth.Credential, error) {
			return &oauth.Credential{Server: "tracker", Issuer: "https://login.example", AccessToken: "t", User: user}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put("https://tracker.example/mcp", "")
	put("https://tracker.example/mcp", "0123abcd")
	put("https://tracker.example/mcp", "4567ef01")
	put("https://gone.example/mcp", "0123abcd")
	cfg := &config.Config{Servers: []config.Server{{Name: "tracker", Type: config.HTTP, URL: "https://tracker.example/mcp", OAuth: &config.SignIn{PerUser: true}}}}
	var out strings.Builder
	if err := authStatus(ctx, cfg, store, store.Path, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "(and 2 users' own sign-ins)") || !strings.Contains(s, "https://gone.example/mcp") || !strings.Contains(s, "(and 1 user's own sign-in)") ||
		strings.Contains(s, "#user=") || strings.Contains(s, "0123abcd") || strings.Count(s, "tracker ") != 1 {
		t.Errorf("status:\n%s", s)
	}
}
