// Package testoidc runs the real OAuth components of toolshed's sign-in tests
// (issue 30): an authorization server and OAuth-protected MCP servers, each a Node
// process on 127.0.0.1 that dies with the test.
//
// The pieces:
//
//   - Start runs oidc-provider (provider.mjs, on the npm package oidc-provider, a
//     certified OpenID provider) as the authorization server. It requires PKCE
//     (S256) of every authorization request, takes resource indicators (RFC 8707)
//     and issues JWT access tokens whose aud is the resource, registers clients
//     dynamically (RFC 7591, with application_type) and by client ID metadata
//     document (oidc-provider's experimental clientIdMetadataDocument feature,
//     draft-02: the client_id must be an https URL, see Options.TrustCAPEM), issues
//     refresh tokens that rotate on every use, puts iss in every authorization
//     response (RFC 9207), publishes a JWKS that Provider.RotateKeys rotates, answers
//     token introspection and revocation, and knows the scopes offline_access,
//     mcp:read and mcp:write. Its test users sign in with fixed passwords on plain
//     HTML login and consent pages, which Provider.Login fills in and submits as a
//     browser would.
//   - StartProtected runs an MCP server over Streamable HTTP (protected-v1.mjs, on
//     the TypeScript SDK v1's requireBearerAuth and mcpAuthMetadataRouter) that
//     takes only the provider's JWTs issued for its own URL. It serves its protected
//     resource metadata (RFC 9728), answers 401 with WWW-Authenticate naming it, and
//     offers the tools whoami, echo and admin_action; admin_action needs mcp:write and
//     answers a token without it with 403 and an insufficient_scope challenge. With
//     ProtectedOptions{SDK: 2} the server is protected-v2.mjs, the same on the
//     TypeScript SDK v2 (@modelcontextprotocol/server: requireBearerAuth,
//     requireScopes, buildOAuthProtectedResourceMetadata), which also speaks MCP
//     2026-07-28; its whoami names the MCP-Protocol-Version of the call too.
//   - Provider.RunClientV1 runs an MCP client on the TypeScript SDK v1's OAuth
//     support (client-v1.mjs: an OAuthClientProvider, redirectToAuthorization,
//     finishAuth) against a protected MCP endpoint, such as toolshed's, and plays its
//     user with Login.
//
// A sign-in test then goes: p := Start(t, Options{}); url := StartProtected(t, p,
// ProtectedOptions{}); the client under test discovers p from url's 401, registers,
// and sends the user to the authorization URL, which p.Login(ctx, authURL) completes,
// returning the redirect to the client's loopback redirect_uri with code, state and
// iss. A test of toolshed as a protected resource gets its tokens from
// p.ClientCredentialsToken instead.
//
// The npm packages come from .deps/auth (and, for the v2 server, .deps/npm), installed by `bash scripts/deps.sh` from
// scripts/npm/auth (pinned by its package-lock.json). When they are missing or out of
// date the test fails with that command, as internal/testupstream does for its npm
// servers. Nothing here prints a token, a code or a secret.
package testoidc

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testupstream"
)

//go:embed *.mjs
var scripts embed.FS

// The pre-registered clients of every provider.
const (
	// NativeClientID is a public client (application_type native, no secret, PKCE)
	// allowed the authorization_code and refresh_token grants, whose redirect URI is
	// NativeRedirectURI on any port (RFC 8252 loopback redirection).
	NativeClientID = "testoidc-native"
	// NativeRedirectURI is NativeClientID's registered redirect URI.
	NativeRedirectURI = "http://127.0.0.1/callback"
	// ServiceClientID is a confidential client (client_secret_basic, secret from
	// Provider.ServiceSecret) allowed the client_credentials grant with the scopes
	// mcp:read and mcp:write, and token introspection and revocation.
	ServiceClientID = "testoidc-service"
)

// The scopes the provider knows besides openid and offline_access, granted for any
// resource.
const (
	ScopeRead  = "mcp:read"
	ScopeWrite = "mcp:write"
)

// ErrNoRedirect is returned by Login when the provider does not send the browser back
// to the client: it showed an error page, refused the password, or asked for more.
var ErrNoRedirect = errors.New("testoidc: the authorization did not end in a redirect to the client")

// A User is a test user of the provider.
type User struct {
	Name     string   // the login name and the sub of its tokens
	Password string   // what the login page wants
	Groups   []string // the groups claim of its tokens, omitted when empty
}

// DefaultUser is the test user of a provider started with no Users.
var DefaultUser = User{Name: "alice", Password: "alice-password", Groups: []string{"engineering"}}

// Options configures a provider. The zero value is a provider with DefaultUser,
// ten-minute access tokens and one-day refresh tokens.
type Options struct {
	// Users are the accounts that can sign in; Login signs in as the first one.
	Users []User
	// AccessTokenTTL is the lifetime of access tokens, at least a second (default 10 minutes).
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is the lifetime of refresh tokens, at least a second (default a day).
	RefreshTokenTTL time.Duration
	// OpaqueAccessTokens makes access tokens opaque strings to introspect rather than
	// JWTs; the protected MCP servers of StartProtected take only JWTs.
	OpaqueAccessTokens bool
	// Clients are more pre-registered clients, as OAuth client metadata (client_id,
	// client_secret, redirect_uris, grant_types, ...), for tests of a configured
	// client id and secret.
	Clients []map[string]any
	// TrustCAPEM is a PEM certificate the provider trusts when it fetches client ID
	// metadata documents, which must be https URLs: pass the certificate of an
	// httptest.NewTLSServer that serves the document (httptest's Certificate()).
	TrustCAPEM []byte
}

// A Provider is a running oidc-provider.
type Provider struct {
	issuer        string
	users         []User
	serviceSecret string
	control       string
	log           *testupstream.SyncBuffer
}

// Start runs oidc-provider on a free 127.0.0.1 port until the test ends.
func Start(t testing.TB, opts Options) *Provider {
	t.Helper()
	users := opts.Users
	if len(users) == 0 {
		users = []User{DefaultUser}
	}
	for _, u := range users {
		if u.Name == "" || u.Password == "" {
			t.Fatalf("testoidc: every user needs a name and a password")
		}
	}
	accessTTL := seconds(opts.AccessTokenTTL, 10*time.Minute)
	refreshTTL := seconds(opts.RefreshTokenTTL, 24*time.Hour)
	p := &Provider{users: users, serviceSecret: randomHex(t), control: randomHex(t)}
	clients := []map[string]any{
		{
			"client_id":                  NativeClientID,
			"application_type":           "native",
			"token_endpoint_auth_method": "none",
			"redirect_uris":              []string{NativeRedirectURI},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"response_types":             []string{"code"},
		},
		{
			"client_id":                  ServiceClientID,
			"client_secret":              p.serviceSecret,
			"token_endpoint_auth_method": "client_secret_basic",
			"redirect_uris":              []string{},
			"grant_types":                []string{"client_credentials"},
			"response_types":             []string{},
			"scope":                      ScopeRead + " " + ScopeWrite,
		},
	}
	clients = append(clients, opts.Clients...)
	type jsonUser struct {
		Name     string   `json:"name"`
		Password string   `json:"password"`
		Groups   []string `json:"groups"`
	}
	var ju []jsonUser
	for _, u := range users {
		ju = append(ju, jsonUser{u.Name, u.Password, u.Groups})
	}
	config, err := json.Marshal(map[string]any{
		"users":                ju,
		"clients":              clients,
		"resource_scopes":      []string{ScopeRead, ScopeWrite},
		"access_token_ttl":     accessTTL,
		"refresh_token_ttl":    refreshTTL,
		"opaque_access_tokens": opts.OpaqueAccessTokens,
		"cookie_key":           randomHex(t),
		"control_token":        p.control,
	})
	if err != nil {
		t.Fatalf("testoidc: %v", err)
	}
	env := []string{"TESTOIDC_CONFIG=" + string(config)}
	if len(opts.TrustCAPEM) > 0 {
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, opts.TrustCAPEM, 0o600); err != nil {
			t.Fatalf("testoidc: %v", err)
		}
		env = append(env, "NODE_EXTRA_CA_CERTS="+ca)
	}
	cmd := nodeCommand(t, "provider.mjs", env)
	p.log = testupstream.Start(t, cmd, func(stderr string) bool { return readyLine.MatchString(stderr) })
	p.issuer = readyLine.FindStringSubmatch(p.log.String())[1]
	return p
}

// readyLine is what provider.mjs and the protected servers print on stderr once they
// serve: "testoidc: ready URL".
var readyLine = regexp.MustCompile(`testoidc: ready (\S+)`)

// nodeCommand returns the command that runs the embedded script name with the npm
// packages of .deps/auth: the script is copied into a fresh directory beside a
// node_modules link, as Node resolves an ES module's imports from the script's own
// directory (NODE_PATH does not apply to them).
func nodeCommand(t testing.TB, name string, env []string) *exec.Cmd {
	t.Helper()
	modules := testupstream.AuthModules(t)
	node := testupstream.Node22(t) // oidc-provider 9 warns on Node 20 ("Unsupported runtime")
	dir := t.TempDir()
	src, err := scripts.ReadFile(name)
	if err != nil {
		t.Fatalf("testoidc: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), src, 0o600); err != nil {
		t.Fatalf("testoidc: %v", err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("testoidc: %v", err)
	}
	cmd := exec.Command(node, filepath.Join(dir, name))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

func seconds(d, def time.Duration) int {
	if d <= 0 {
		d = def
	}
	return max(1, int(d/time.Second))
}

func randomHex(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("testoidc: %v", err)
	}
	return hex.EncodeToString(b)
}

// Issuer is the provider's issuer URL (http://127.0.0.1:PORT), where its OpenID
// discovery document (/.well-known/openid-configuration) and RFC 8414 metadata
// (/.well-known/oauth-authorization-server) are served.
func (p *Provider) Issuer() string { return p.issuer }

// Users are the provider's test users; Login signs in as the first.
func (p *Provider) Users() []User { return p.users }

// ServiceSecret is the client secret of ServiceClientID.
func (p *Provider) ServiceSecret() string { return p.serviceSecret }

// Endpoint returns the URL of one of the provider's endpoints: "auth", "token",
// "reg" (registration), "jwks", "token/introspection" or "token/revocation".
func (p *Provider) Endpoint(name string) string { return p.issuer + "/" + name }

// ClientCredentialsToken gets an access token for resource with the given scopes
// (space-separated, e.g. "mcp:read") from the token endpoint, as ServiceClientID by
// the client_credentials grant: a JWT whose aud is resource and whose sub is
// ServiceClientID, for tests of a protected resource.
func (p *Provider) ClientCredentialsToken(ctx context.Context, resource, scope string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {scope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Endpoint("token"), strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(ServiceClientID, p.serviceSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("testoidc: token request: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		return "", fmt.Errorf("testoidc: client_credentials for %s with scope %q: HTTP %d %s: %s", resource, scope, resp.StatusCode, tok.Error, tok.Description)
	}
	return tok.AccessToken, nil
}

// RotateKeys makes the provider sign with a new key from now on and returns its kid.
// The JWKS then publishes the new key and the one before it, so a second rotation
// retires the key of the tokens issued before the first.
func (p *Provider) RotateKeys(ctx context.Context) (kid string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.issuer+"/__testoidc/rotate", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+p.control)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("testoidc: rotating keys: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		KID string `json:"kid"`
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || out.KID == "" {
		return "", fmt.Errorf("testoidc: rotating keys: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return out.KID, nil
}

// Log is what the provider wrote on stderr so far (never tokens or secrets).
func (p *Provider) Log() string { return p.log.String() }
