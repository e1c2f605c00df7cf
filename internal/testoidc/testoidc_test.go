package testoidc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/toolshed/toolshed/internal/testoidc"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// oauthConfig is the pre-registered native client's configuration against p, with a
// loopback redirect on an arbitrary port (the provider ignores loopback ports).
func oauthConfig(p *testoidc.Provider, scopes ...string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: testoidc.NativeClientID,
		Endpoint: oauth2.Endpoint{
			AuthURL:   p.Endpoint("auth"),
			TokenURL:  p.Endpoint("token"),
			AuthStyle: oauth2.AuthStyleInParams,
		},
		RedirectURL: "http://127.0.0.1:49152/callback",
		Scopes:      scopes,
	}
}

// signIn runs the authorization code flow with PKCE and a resource indicator through
// p.Login, checks the redirect (code, state, iss), and exchanges the code.
func signIn(t *testing.T, ctx context.Context, p *testoidc.Provider, conf *oauth2.Config, resource string) *oauth2.Token {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	state := "state-" + oauth2.GenerateVerifier()[:8]
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	redirect, err := p.Login(ctx, authURL)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	u, err := url.Parse(redirect)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Host != "127.0.0.1:49152" || u.Path != "/callback" {
		t.Fatalf("redirected to %s://%s%s, want the loopback redirect_uri", u.Scheme, u.Host, u.Path)
	}
	if q.Get("state") != state || q.Get("iss") != p.Issuer() || q.Get("code") == "" {
		t.Fatalf("redirect query: state %q (want %q), iss %q (want %q), code present %v, error %q",
			q.Get("state"), state, q.Get("iss"), p.Issuer(), q.Get("code") != "", q.Get("error"))
	}
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		t.Fatalf("exchanging the code: %v", err)
	}
	return tok
}

// connect opens an MCP session with url sending token as a static bearer token.
func connect(t *testing.T, ctx context.Context, url, token string) *mcp.ClientSession {
	t.Helper()
	hc := oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token}))
	client := mcp.NewClient(&mcp.Implementation{Name: "testoidc-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	t.Helper()
	if args == nil {
		args = map[string]any{} // the SDK v1 server refuses "arguments": null
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) == 0 {
		return "", errors.New("tool error")
	}
	return res.Content[0].(*mcp.TextContent).Text, nil
}

type whoami struct {
	Sub    string   `json:"sub"`
	Scopes []string `json:"scopes"`
	Groups []string `json:"groups"`
}

// sdks are the TypeScript SDK majors of the protected servers the tests run against.
var sdks = []int{1, 2}

func TestAuthorizationCodeFlow(t *testing.T) {
	for _, sdk := range sdks {
		t.Run(fmt.Sprintf("v%d", sdk), func(t *testing.T) { authorizationCodeFlow(t, sdk) })
	}
}

func authorizationCodeFlow(t *testing.T, sdk int) {
	ctx := ctxFor(t)
	p := testoidc.Start(t, testoidc.Options{})
	server := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{SDK: sdk})
	conf := oauthConfig(p, testoidc.ScopeRead, testoidc.ScopeWrite, "offline_access")

	tok := signIn(t, ctx, p, conf, server)
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token from the authorization code grant")
	}
	cs := connect(t, ctx, server, tok.AccessToken)
	text, err := callText(t, ctx, cs, "whoami", nil)
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	var who whoami
	if err := json.Unmarshal([]byte(text), &who); err != nil {
		t.Fatalf("whoami answered %q: %v", text, err)
	}
	if who.Sub != testoidc.DefaultUser.Name || !strings.Contains(strings.Join(who.Scopes, " "), testoidc.ScopeWrite) || len(who.Groups) != 1 {
		t.Errorf("whoami = %+v, want sub %s with mcp:write and its groups", who, testoidc.DefaultUser.Name)
	}
	if got, err := callText(t, ctx, cs, "admin_action", nil); err != nil || !strings.Contains(got, testoidc.DefaultUser.Name) {
		t.Errorf("admin_action with mcp:write = %q, %v", got, err)
	}

	t.Run("refresh rotates", func(t *testing.T) {
		fresh, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
		if err != nil {
			t.Fatalf("refresh: %v", err)
		}
		if fresh.AccessToken == tok.AccessToken || fresh.RefreshToken == "" || fresh.RefreshToken == tok.RefreshToken {
			t.Fatal("the refresh did not give a new access token and a new refresh token")
		}
		if _, err := callText(t, ctx, connect(t, ctx, server, fresh.AccessToken), "echo", map[string]any{"message": "hi"}); err != nil {
			t.Fatalf("echo with the refreshed token: %v", err)
		}
		// The old refresh token was rotated away: using it again fails.
		if _, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: tok.RefreshToken}).Token(); err == nil {
			t.Fatal("a rotated refresh token was accepted a second time")
		}
	})
}

// challenge POSTs a tools/call of tool to url with token (none when empty) and returns
// the status and WWW-Authenticate.
func challenge(t *testing.T, ctx context.Context, url, token, tool string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

func TestProtectedChallenges(t *testing.T) {
	for _, sdk := range sdks {
		t.Run(fmt.Sprintf("v%d", sdk), func(t *testing.T) { protectedChallenges(t, sdk) })
	}
}

func protectedChallenges(t *testing.T, sdk int) {
	ctx := ctxFor(t)
	p := testoidc.Start(t, testoidc.Options{})
	server := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{SDK: sdk})
	other := strings.Replace(server, "/mcp", "/other", 1)
	readOnly, err := p.ClientCredentialsToken(ctx, server, testoidc.ScopeRead)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := p.ClientCredentialsToken(ctx, other, testoidc.ScopeRead+" "+testoidc.ScopeWrite)
	if err != nil {
		t.Fatal(err)
	}
	metadata := strings.Replace(server, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)
	for _, tc := range []struct {
		name, token, tool string
		status            int
		want              []string
	}{
		{"no token", "", "echo", 401, []string{`Bearer `, `resource_metadata="` + metadata + `"`}},
		{"garbage token", "not-a-jwt", "echo", 401, []string{`error="invalid_token"`, `resource_metadata="` + metadata + `"`}},
		{"another audience", elsewhere, "echo", 401, []string{`error="invalid_token"`}},
		{"read-only token, write tool", readOnly, "admin_action", 403, []string{`error="insufficient_scope"`, `scope="mcp:write"`, `resource_metadata="` + metadata + `"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, www := challenge(t, ctx, server, tc.token, tc.tool)
			if status != tc.status {
				t.Errorf("status %d, want %d (WWW-Authenticate %q)", status, tc.status, www)
			}
			for _, w := range tc.want {
				if !strings.Contains(www, w) {
					t.Errorf("WWW-Authenticate %q lacks %q", www, w)
				}
			}
		})
	}

	t.Run("read-only token reads", func(t *testing.T) {
		cs := connect(t, ctx, server, readOnly)
		if got, err := callText(t, ctx, cs, "echo", map[string]any{"message": "hello"}); err != nil || got != "hello" {
			t.Errorf("echo = %q, %v", got, err)
		}
		if _, err := callText(t, ctx, cs, "admin_action", nil); err == nil {
			t.Error("admin_action succeeded with a token without mcp:write")
		}
	})

	t.Run("protected resource metadata", func(t *testing.T) {
		for _, u := range []string{metadata, strings.TrimSuffix(metadata, "/mcp")} {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var prm struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
			}
			if err := json.Unmarshal(body, &prm); err != nil || prm.Resource != server || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != p.Issuer() {
				t.Errorf("%s = %s (%v), want resource %s and authorization server %s", u, body, err, server, p.Issuer())
			}
		}
	})
}

func TestRotateKeys(t *testing.T) {
	ctx := ctxFor(t)
	p := testoidc.Start(t, testoidc.Options{})
	server := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	token := func() string {
		tok, err := p.ClientCredentialsToken(ctx, server, testoidc.ScopeRead)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	first := token()
	if status, _ := challenge(t, ctx, server, first, "echo"); status == 401 {
		t.Fatal("the first token is refused before any rotation")
	}
	kid, err := p.RotateKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := token()
	if header := jwtHeader(t, second); header.KID != kid {
		t.Fatalf("a token after the rotation is signed with kid %q, want the new %q", header.KID, kid)
	}
	for name, tok := range map[string]string{"the new key's token": second, "the previous key's token": first} {
		if status, www := challenge(t, ctx, server, tok, "echo"); status == 401 {
			t.Errorf("%s is refused after one rotation: %s", name, www)
		}
	}
	if _, err := p.RotateKeys(ctx); err != nil {
		t.Fatal(err)
	}
	if status, _ := challenge(t, ctx, server, first, "echo"); status != 401 {
		t.Errorf("a token of a key retired two rotations ago got %d, want 401", status)
	}
}

type header struct {
	KID string `json:"kid"`
}

func jwtHeader(t *testing.T, jwt string) header {
	t.Helper()
	part, _, _ := strings.Cut(jwt, ".")
	var h header
	raw, err := base64URL(part)
	if err == nil {
		err = json.Unmarshal(raw, &h)
	}
	if err != nil {
		t.Fatalf("not a JWT: %v", err)
	}
	return h
}

func TestLoginRefusals(t *testing.T) {
	ctx := ctxFor(t)
	p := testoidc.Start(t, testoidc.Options{})
	conf := oauthConfig(p, testoidc.ScopeRead)
	resource := "http://127.0.0.1:1/mcp"
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("s1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource))

	if _, err := p.LoginAs(ctx, authURL, testoidc.User{Name: "alice", Password: "wrong"}); !errors.Is(err, testoidc.ErrNoRedirect) || !strings.Contains(err.Error(), "wrong user name or password") {
		t.Errorf("a wrong password: %v, want ErrNoRedirect saying so", err)
	}
	redirect, err := p.Deny(ctx, authURL)
	if err != nil || !strings.Contains(redirect, "error=access_denied") {
		t.Errorf("Deny = %q, %v, want a redirect with error=access_denied", redirect, err)
	}
	noPKCE := conf.AuthCodeURL("s2", oauth2.SetAuthURLParam("resource", resource))
	if redirect, err := p.Login(ctx, noPKCE); err != nil || !strings.Contains(redirect, "error=invalid_request") {
		t.Errorf("without PKCE: %q, %v, want a redirect with error=invalid_request", redirect, err)
	}
	evil := *conf
	evil.RedirectURL = "http://evil.example/callback"
	if _, err := p.Login(ctx, evil.AuthCodeURL("s3", oauth2.S256ChallengeOption(verifier))); !errors.Is(err, testoidc.ErrNoRedirect) || !strings.Contains(err.Error(), "redirect_uri") {
		t.Errorf("an unregistered redirect_uri: %v, want ErrNoRedirect naming redirect_uri", err)
	}
}

func TestDynamicClientRegistration(t *testing.T) {
	ctx := ctxFor(t)
	p := testoidc.Start(t, testoidc.Options{})
	body := `{"application_type":"native","client_name":"dcr test","redirect_uris":["http://127.0.0.1/callback"],` +
		`"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`
	resp, err := http.Post(p.Endpoint("reg"), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var reg struct {
		ClientID        string `json:"client_id"`
		ApplicationType string `json:"application_type"`
	}
	if err := json.Unmarshal(raw, &reg); err != nil || resp.StatusCode != http.StatusCreated || reg.ClientID == "" || reg.ApplicationType != "native" {
		t.Fatalf("registration: HTTP %d %s", resp.StatusCode, raw)
	}
	conf := oauthConfig(p, testoidc.ScopeRead)
	conf.ClientID = reg.ClientID
	if tok := signIn(t, ctx, p, conf, "http://127.0.0.1:1/mcp"); tok.AccessToken == "" {
		t.Fatal("no access token for the registered client")
	}
}
