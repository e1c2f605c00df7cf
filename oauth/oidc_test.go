package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/oauth"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// browser plays the user's browser for Login: it signs in on p's pages and follows
// the redirect back to toolshed's loopback listener. It records the redirect.
type browser struct {
	t        *testing.T
	p        *testoidc.Provider
	redirect string
}

func (b *browser) open(authURL string) error {
	redirect, err := b.p.Login(context.Background(), authURL)
	if err != nil {
		return err
	}
	b.redirect = redirect
	go get(redirect) // as the browser does; Login waits for it
	return nil
}

// get GETs u and returns the status and body.
func get(u string) (int, string, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// setup starts a provider and a protected server, and returns a store in a temp dir.
func setup(t *testing.T, opts testoidc.Options) (*testoidc.Provider, oauth.Server, *oauth.FileStore) {
	p := testoidc.Start(t, opts)
	url := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	return p, oauth.Server{Name: "protected", URL: url}, &oauth.FileStore{Path: filepath.Join(t.TempDir(), "credentials.json")}
}

// connect opens an MCP session with srv through an oauth.Transport on store.
func connect(t *testing.T, ctx context.Context, srv oauth.Server, store oauth.Store) (*mcp.ClientSession, error) {
	tr, err := oauth.NewTransport(ctx, srv, store, nil)
	if err != nil {
		return nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: tr}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	return cs, nil
}

func callText(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	if args == nil {
		args = map[string]any{}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return b.String(), errors.New("tool error: " + b.String())
	}
	return b.String(), nil
}

// TestLoginAndCall signs in to a protected server by dynamic registration and calls
// its tools with the stored credential.
func TestLoginAndCall(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	b := &browser{t: t, p: p}
	c, err := oauth.Login(ctx, srv, oauth.LoginOptions{Store: store, Browser: b.open})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	if c.Issuer != p.Issuer() || c.Resource != srv.URL || c.RefreshToken == "" {
		t.Fatalf("credential: issuer %q resource %q refresh token present %v", c.Issuer, c.Resource, c.RefreshToken != "")
	}
	fi, err := os.Stat(store.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, want 0600", fi.Mode().Perm())
	}
	cs, err := connect(t, ctx, srv, store)
	if err != nil {
		t.Fatalf("connecting with the stored credential: %v", err)
	}
	who, err := callText(ctx, cs, "whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("whoami: %s", who)
	if !strings.Contains(who, testoidc.DefaultUser.Name) {
		t.Errorf("whoami = %s, want the signed-in user %s", who, testoidc.DefaultUser.Name)
	}
}
