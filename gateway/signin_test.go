package gateway_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/policy"
)

// TestNeedsSignIn: a remote server that asks for OAuth with no credential stored
// waits in NeedsSignIn, not restarting, while the other servers serve; its status,
// tool_search and a call of its tools say what to run; and it connects once a
// credential is stored.
func TestNeedsSignIn(t *testing.T) {
	p := testoidc.Start(t, testoidc.Options{})
	url := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	store := &oauth.FileStore{Path: filepath.Join(t.TempDir(), "credentials.json")}
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic"), {Name: "protected", Type: config.HTTP, URL: url}}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.On, Credentials: store})
	status := func() gateway.Status {
		for _, s := range h.g.Statuses() {
			if s.Name == "protected" {
				return s
			}
		}
		t.Fatal("no status of protected")
		return gateway.Status{}
	}
	waitFor(t, "protected needs sign-in", func() bool { return status().State == gateway.NeedsSignIn })
	st := status()
	if st.Restarts != 0 || st.Err == nil || !strings.Contains(st.Err.Error(), "run `toolshed auth login protected`") {
		t.Errorf("status: restarts %d, error %v", st.Restarts, st.Err)
	}
	cs := h.client("", nil)
	res := call(t, cs, "tool_search", map[string]any{"query": "zebra quantum xylophone"})
	if text := resultText(res); !strings.Contains(text, "1 server needs sign-in: protected (run `toolshed auth login protected`)") {
		t.Errorf("tool_search: %s", text)
	}
	res = call(t, cs, "tool_call", map[string]any{"name": "protected__whoami", "arguments": map[string]any{}})
	if text := resultText(res); !res.IsError || !strings.Contains(text, "needs sign-in: run `toolshed auth login protected`") {
		t.Errorf("a call of its tool: %s", text)
	}
	if text := resultText(call(t, cs, "tool_call", map[string]any{"name": "alpha__echo", "arguments": map[string]any{"text": "hi"}})); !strings.Contains(text, "hi") {
		t.Errorf("the other server: %s", text)
	}

	// Signing in (as toolshed auth login does) brings it up.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := oauth.Login(ctx, oauth.Server{Name: "protected", URL: url}, oauth.LoginOptions{Store: store, Browser: func(authURL string) error {
		redirect, err := p.Login(ctx, authURL)
		if err == nil {
			go http.Get(redirect)
		}
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "protected ready", func() bool { return status().State == gateway.Ready })
	res = call(t, cs, "tool_call", map[string]any{"name": "protected__whoami", "arguments": map[string]any{}})
	if text := resultText(res); res.IsError || !strings.Contains(text, testoidc.DefaultUser.Name) {
		t.Errorf("whoami once signed in: %s", text)
	}
}
