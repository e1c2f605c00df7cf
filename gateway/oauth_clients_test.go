package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/policy"
)

// The tests of this file sign real MCP clients in to a toolshed protected by a real
// oidc-provider, with the clients' own OAuth support: the go-sdk's
// auth.AuthorizationCodeHandler here, the TypeScript SDK v1's OAuthClientProvider in
// TestOAuthClientTypeScript. testoidc's Login plays the user's browser.

// oauthClientConfig is the gateway of the client tests: alpha for the engineering
// group (alice's), beta for tokens with mcp:write.
func oauthClientConfig(t *testing.T) *config.Config {
	return &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")},
		Hooks: config.Hooks{ActivityLog: t.TempDir() + "/activity.jsonl"},
		Profiles: map[string]config.Profile{
			"eng":   {Scope: policy.Scope{Servers: []string{"alpha"}}, Claims: map[string][]string{"groups": {"engineering"}}},
			"admin": {Scope: policy.Scope{Servers: []string{"beta"}}, Claims: map[string][]string{"scope": {testoidc.ScopeWrite}}},
		}}
}

// browser is an AuthorizationCodeFetcher that signs in on p as its first user and
// hands the redirect's code, state and iss back, as a client's loopback listener
// would. It keeps the authorization URLs it was given.
type browser struct {
	p    *testoidc.Provider
	mu   sync.Mutex
	urls []string
}

func (b *browser) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	b.mu.Lock()
	b.urls = append(b.urls, args.URL)
	b.mu.Unlock()
	redirect, err := b.p.Login(ctx, args.URL)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(redirect)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorization refused: %s: %s", e, q.Get("error_description"))
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// authorizations returns the authorization URLs the client sent the user to so far.
func (b *browser) authorizations() []*url.URL {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*url.URL
	for _, s := range b.urls {
		u, _ := url.Parse(s)
		out = append(out, u)
	}
	return out
}

// wire records what goes over a client's HTTP connections: the grants it asks of the
// token endpoint, and the access tokens (as digests) it sends to toolshed per MCP
// session.
type wire struct {
	base     http.RoundTripper
	mu       sync.Mutex
	grants   []string
	sessions map[string]map[[32]byte]bool // Mcp-Session-Id ("" for none) → digests of the bearer tokens
}

func newWire() *wire {
	return &wire{base: http.DefaultTransport.(*http.Transport).Clone(), sessions: map[string]map[[32]byte]bool{}}
}

func (w *wire) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/token") && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		form, _ := url.ParseQuery(string(body))
		w.mu.Lock()
		w.grants = append(w.grants, form.Get("grant_type"))
		w.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if id, tok := r.Header.Get("Mcp-Session-Id"), r.Header.Get("Authorization"); tok != "" && !strings.HasSuffix(r.URL.Path, "/token") {
		w.mu.Lock()
		if w.sessions[id] == nil {
			w.sessions[id] = map[[32]byte]bool{}
		}
		w.sessions[id][sha256.Sum256([]byte(tok))] = true
		w.mu.Unlock()
	}
	return w.base.RoundTrip(r)
}

func (w *wire) count(grant string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, g := range w.grants {
		if g == grant {
			n++
		}
	}
	return n
}

// tokensOf is the number of distinct access tokens sent on session id ("": the
// requests of protocol versions without sessions).
func (w *wire) tokensOf(id string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.sessions[id])
}

// loopback is the redirect URI of the client tests: the provider takes any port of a
// registered loopback redirect (RFC 8252), and Login never follows it.
const loopback = "http://127.0.0.1:49152/callback"

// goSDKClient connects the go-sdk client with handler h to endpoint, over w, speaking
// protocol version (see sessionOptions).
func goSDKClient(ctx context.Context, endpoint string, h auth.OAuthHandler, w *wire, version string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-oauth-client", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, OAuthHandler: h,
		HTTPClient: &http.Client{Transport: w}, MaxRetries: -1, DisableStandaloneSSE: true}, sessionOptions(version))
}

// TestOAuthClientGoSDK: the go-sdk client signs in to toolshed by itself, registering
// dynamically or as a pre-registered client, gets the tools of the profile its
// claims give, keeps its session across refreshed access tokens, and steps up to a
// larger scope for a profile that needs one.
func TestOAuthClientGoSDK(t *testing.T) {
	t.Parallel()
	const secret = "preregistered-secret-of-the-test"
	p := testoidc.Start(t, testoidc.Options{
		// Shorter than the ten seconds before expiry at which golang.org/x/oauth2
		// refreshes: every request of the client refreshes its access token.
		AccessTokenTTL: 5 * time.Second,
		Clients: []map[string]any{{
			"client_id":                  "toolshed-test-confidential",
			"client_secret":              secret,
			"token_endpoint_auth_method": "client_secret_post",
			"redirect_uris":              []string{loopback},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"response_types":             []string{"code"},
		}},
	})
	cfg := oauthClientConfig(t)
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	f := serveOAuth(t, h, p, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	registrations := map[string]func(*auth.AuthorizationCodeHandlerConfig){
		"dynamic registration": func(c *auth.AuthorizationCodeHandlerConfig) {
			c.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName: "go-sdk test client", RedirectURIs: []string{loopback}, TokenEndpointAuthMethod: "none",
				GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			}}
		},
		"pre-registered client": func(c *auth.AuthorizationCodeHandlerConfig) {
			c.PreregisteredClient = &oauthex.ClientCredentials{ClientID: "toolshed-test-confidential",
				ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}, Issuer: p.Issuer()}
			c.RedirectURL = loopback
		},
	}
	// The SDK's own protocol version, without sessions, and 2025-11-25, whose session
	// must outlive the access token it began with (it belongs to the subject).
	for name, register := range registrations {
		for _, version := range []string{sdkDefault, "2025-11-25"} {
			t.Run(name+"/"+version, func(t *testing.T) {
				b := &browser{p: p}
				w := newWire()
				hc := &auth.AuthorizationCodeHandlerConfig{AuthorizationCodeFetcher: b.fetch, RequestRefreshToken: true, Client: &http.Client{Transport: w}}
				register(hc)
				handler, err := auth.NewAuthorizationCodeHandler(hc)
				if err != nil {
					t.Fatal(err)
				}
				cs, err := goSDKClient(ctx, f.url+"/mcp", handler, w, version)
				if err != nil {
					t.Fatalf("connecting: %v", err)
				}
				defer cs.Close()
				if n := w.count("authorization_code"); n != 1 {
					t.Fatalf("%d authorization codes exchanged; want 1", n)
				}
				if auths := b.authorizations(); len(auths) != 1 || auths[0].Query().Get("resource") != f.url+"/mcp" {
					t.Fatalf("authorization requests %v; want one for the resource %s/mcp", auths, f.url)
				}
				names := toolNames(t, cs)
				if len(withPrefix(names, "alpha__")) == 0 || len(withPrefix(names, "beta__")) > 0 {
					t.Errorf("alice sees %v; want the eng profile's alpha tools only", names)
				}
				// More requests on the same session, each with a refreshed access token.
				for i := range 2 {
					if res := call(t, cs, "alpha__echo", map[string]any{"text": fmt.Sprint("hi ", i)}); res.IsError {
						t.Fatalf("call %d: %s", i, resultText(res))
					}
				}
				if n := w.count("refresh_token"); n < 2 {
					t.Errorf("%d refreshes; want one per request after the token expired", n)
				}
				if n := w.tokensOf(cs.ID()); n < 2 {
					t.Errorf("the session saw %d access tokens; want the refreshed ones too", n)
				}

				// Step-up: the admin profile needs mcp:write, which alice's token lacks.
				// Toolshed answers 403 insufficient_scope and the handler signs in again
				// asking for it, for the profile's own resource.
				admin, err := goSDKClient(ctx, f.url+"/mcp/admin", handler, w, version)
				if err != nil {
					t.Fatalf("connecting to /mcp/admin: %v", err)
				}
				defer admin.Close()
				auths := b.authorizations()
				if len(auths) != 2 {
					t.Fatalf("%d authorizations; want a second one for the step-up", len(auths))
				}
				q := auths[1].Query()
				if !strings.Contains(" "+q.Get("scope")+" ", " "+testoidc.ScopeWrite+" ") || q.Get("resource") != f.url+"/mcp/admin" {
					t.Errorf("the step-up asked for scope %q for %q; want %s for %s/mcp/admin", q.Get("scope"), q.Get("resource"), testoidc.ScopeWrite, f.url)
				}
				if names := toolNames(t, admin); len(withPrefix(names, "beta__")) == 0 || len(withPrefix(names, "alpha__")) > 0 {
					t.Errorf("the admin profile shows %v; want beta's tools only", names)
				}
			})
		}
	}

	t.Run("user denies", func(t *testing.T) {
		w := newWire()
		handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
			PreregisteredClient: &oauthex.ClientCredentials{ClientID: testoidc.NativeClientID}, RedirectURL: loopback,
			AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
				redirect, err := p.Deny(ctx, args.URL)
				if err != nil {
					return nil, err
				}
				u, _ := url.Parse(redirect)
				return nil, errors.New(u.Query().Get("error"))
			},
			Client: &http.Client{Transport: w},
		})
		if err != nil {
			t.Fatal(err)
		}
		if cs, err := goSDKClient(ctx, f.url+"/mcp", handler, w, sdkDefault); err == nil {
			cs.Close()
			t.Fatal("connected though the user denied the sign-in")
		} else if !strings.Contains(err.Error(), "access_denied") {
			t.Errorf("error %v; want the denial", err)
		}
	})
}

// TestOAuthClientTypeScript: the TypeScript SDK v1 client signs in to toolshed with its
// own OAuth support (an OAuthClientProvider, dynamic registration, finishAuth), then
// lists the tools of the profile its claims give and calls one; the activity log names
// its subject, hashed.
func TestOAuthClientTypeScript(t *testing.T) {
	t.Parallel()
	p := testoidc.Start(t, testoidc.Options{})
	cfg := oauthClientConfig(t)
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	f := serveOAuth(t, h, p, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := p.RunClientV1(t, ctx, f.url+"/mcp", testoidc.ClientOptions{Call: "alpha__echo", Arguments: map[string]any{"text": "from node"}})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := url.Parse(run.AuthorizeURL)
	if err != nil {
		t.Fatal(err)
	}
	q := auth.Query()
	if q.Get("resource") != f.url+"/mcp" || q.Get("code_challenge_method") != "S256" || !strings.Contains(q.Get("scope"), testoidc.ScopeRead) {
		t.Errorf("the client asked for resource %q, scope %q, PKCE %q; want %s/mcp, %s, S256", q.Get("resource"), q.Get("scope"), q.Get("code_challenge_method"), f.url, testoidc.ScopeRead)
	}
	if len(withPrefix(run.Tools, "alpha__")) == 0 || len(withPrefix(run.Tools, "beta__")) > 0 {
		t.Errorf("the client sees %v; want the eng profile's alpha tools only", run.Tools)
	}
	if !strings.Contains(run.Result, "from node") {
		t.Errorf("the call answered %q", run.Result)
	}
	waitFor(t, "the call in the activity log", func() bool {
		b, _ := readFile(cfg.Hooks.ActivityLog)
		return strings.Contains(b, `"subject":"sha256:`)
	})
}
