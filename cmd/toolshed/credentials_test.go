package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/pgtest"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/oauth/sqlstore"
)

// TestCredentialsDB: an operator signs in once with `toolshed auth login
// --credentials-db` on the PostgreSQL database two serve replicas share, and both
// call the server with that sign-in. Without TOOLSHED_TOKEN_KEY, serve and auth
// refuse the database and say how to make a key. Nothing prints a token or the
// database's password.
func TestCredentialsDB(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := strings.Replace(pg.Database(t), "postgres@", "postgres:db-password@", 1) // trust auth ignores it
	p := testoidc.Start(t, testoidc.Options{})
	url := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"protected": {"url": "`+url+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 32)
	rand.Read(b)
	key := base64.StdEncoding.EncodeToString(b)
	base := append(os.Environ(), "TOOLSHED_CONFIG="+cfg, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "TOOLSHED_CREDENTIALS=", "TOOLSHED_TOKEN_KEY_PREVIOUS=")
	withKey := append(base[:len(base):len(base)], "TOOLSHED_TOKEN_KEY="+key)
	noKey := append(base[:len(base):len(base)], "TOOLSHED_TOKEN_KEY=")
	var printed strings.Builder
	run := func(env []string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(toolshedBinary(t), args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		printed.Write(out)
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}

	// Without the key: refused, saying what to do.
	for _, args := range [][]string{
		{"auth", "--credentials-db", dsn, "status"},
		{"serve", "--db", "off", "--credentials-db", dsn},
	} {
		code, out := run(noKey, args...)
		if code == 0 || !strings.Contains(out, "TOOLSHED_TOKEN_KEY") || !strings.Contains(out, "openssl rand -base64 32") {
			t.Errorf("%s without TOOLSHED_TOKEN_KEY (exit %d):\n%s\nwant it refused, naming the variable and how to make a key", args[0], code, out)
		}
	}
	if code, out := run(withKey, "auth", "--credentials", filepath.Join(dir, "c.json"), "--credentials-db", dsn, "status"); code != 2 || !strings.Contains(out, "give one") {
		t.Errorf("both --credentials and --credentials-db (exit %d):\n%s", code, out)
	}

	// Two replicas start with the server needing sign-in.
	var sessions []*mcp.ClientSession
	var logs []*testupstream.SyncBuffer
	for i := range 2 {
		cmd := exec.Command(toolshedBinary(t), "serve", "--db", "off", "--tool-search", "off", "--credentials-db", dsn)
		cmd.Env = withKey
		testupstream.OwnGraceful(t, cmd)
		log := &testupstream.SyncBuffer{}
		cmd.Stderr = log
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "replica", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("serve %d: %v\n%s", i, err, log)
		}
		t.Cleanup(func() {
			cs.Close()
			if t.Failed() {
				t.Logf("serve %d's log:\n%s", i, log)
			}
		})
		sessions, logs = append(sessions, cs), append(logs, log)
	}
	call := func(cs *mcp.ClientSession) (string, bool) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "protected__whoami", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		printed.WriteString(b.String())
		return b.String(), !res.IsError
	}
	for i, cs := range sessions {
		if text, ok := call(cs); ok || !strings.Contains(text, "toolshed auth login protected") {
			t.Fatalf("replica %d before sign-in: %s", i, text)
		}
	}

	// One sign-in, from the operator's machine, into the shared database.
	out, code := credentialsLogin(t, p, withKey, "--credentials-db", dsn, "login", "--no-browser", "protected")
	printed.WriteString(out)
	if !strings.Contains(out, "Signed in to protected") || !strings.Contains(out, "(encrypted)") || strings.Contains(out, "db-password") {
		t.Errorf("login's output:\n%s", out)
	}
	if code, out := run(withKey, "auth", "--credentials-db", dsn, "status"); code != 0 || !strings.Contains(out, "signed in") || strings.Contains(out, "db-password") {
		t.Errorf("status (exit %d):\n%s", code, out)
	}
	for i, cs := range sessions {
		deadline := time.Now().Add(time.Minute)
		for {
			text, ok := call(cs)
			if ok {
				if !strings.Contains(text, testoidc.DefaultUser.Name) {
					t.Errorf("replica %d whoami: %s", i, text)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d never used the sign-in: %s", i, text)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	store, err := sqlstore.Open(t.Context(), dsn, sqlstore.Options{Keys: mustKeys(t, key)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := store.Get(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{code, string(c.AccessToken), string(c.RefreshToken)}

	// The key rotated: auth rekey reseals the credential and the registration with
	// the new key, after which the new key alone opens them.
	rawKey := make([]byte, 32)
	rand.Read(rawKey)
	newKey := base64.StdEncoding.EncodeToString(rawKey)
	rotating := append(base[:len(base):len(base)], "TOOLSHED_TOKEN_KEY="+newKey, "TOOLSHED_TOKEN_KEY_PREVIOUS="+key)
	if code, out := run(rotating, "auth", "--credentials-db", dsn, "rekey"); code != 0 || !strings.Contains(out, "Resealed 2 with the current key") {
		t.Errorf("rekey (exit %d):\n%s", code, out)
	}
	withNewKey := append(base[:len(base):len(base)], "TOOLSHED_TOKEN_KEY="+newKey)
	if code, out := run(withNewKey, "auth", "--credentials-db", dsn, "status"); code != 0 || !strings.Contains(out, "signed in") {
		t.Errorf("status with the new key alone after rekey (exit %d):\n%s", code, out)
	}
	if code, out := run(withKey, "auth", "--credentials", filepath.Join(dir, "c.json"), "rekey"); code != 2 || !strings.Contains(out, "--credentials-db") {
		t.Errorf("rekey of a file (exit %d):\n%s", code, out)
	}
	withKey = withNewKey
	if code, out := run(withKey, "auth", "--credentials-db", dsn, "logout", "protected"); code != 0 || !strings.Contains(out, "revoked") {
		t.Errorf("logout (exit %d):\n%s", code, out)
	}
	if _, err := store.Get(t.Context(), url); err == nil {
		t.Error("the credential is still there after logout")
	}

	// The code and tokens of the sign-in never show, nor the database's password.
	for i, cs := range sessions {
		cs.Close() // serve ends: its log is complete
		printed.WriteString(logs[i].String())
	}
	if strings.Contains(printed.String(), "db-password") {
		t.Error("the database's password was printed")
	}
	for _, s := range secrets {
		if s == "" || strings.Contains(printed.String(), s) {
			t.Error("a secret was printed (or the test found none to look for)")
		}
	}
}

func mustKeys(t *testing.T, key string) *sqlstore.Keys {
	k, err := sqlstore.ParseKeys(key, "")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// credentialsLogin runs `toolshed auth ARGS` (a login with --no-browser) with env,
// opening the URL it prints as the browser would, and returns its output and the
// authorization code.
func credentialsLogin(t *testing.T, p *testoidc.Provider, env []string, args ...string) (out, code string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, toolshedBinary(t), append([]string{"auth"}, args...)...)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testupstream.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		b.WriteString(line + "\n")
		if u := strings.TrimSpace(line); strings.HasPrefix(u, "http://") && strings.Contains(u, "/auth?") {
			redirect, err := p.Login(ctx, u)
			if err != nil {
				t.Fatalf("signing in on the provider's pages: %v", err)
			}
			if i := strings.Index(redirect, "code="); i >= 0 {
				code = strings.SplitN(redirect[i+5:], "&", 2)[0]
			}
			resp, err := http.Get(redirect)
			if err != nil {
				t.Fatalf("the loopback redirect: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("toolshed auth %s: %v\n%s%s", strings.Join(args, " "), err, b.String(), stderr)
	}
	return b.String() + stderr.String(), code
}
