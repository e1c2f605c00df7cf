package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/oauth/resource"
	"github.com/toolshed/toolshed/policy"
	"github.com/toolshed/toolshed/searchlog"
)

// countingTransport counts the requests to the issuer's key set.
type countingTransport struct {
	jwks atomic.Int64
	base http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/jwks") {
		c.jwks.Add(1)
	}
	return c.base.RoundTrip(r)
}

// oauthFront is a gateway's HTTP front protected by a real oidc-provider.
type oauthFront struct {
	url    string // the front's base URL; its resource is url+"/mcp"
	keys   *countingTransport
	logs   *testupstream.SyncBuffer // the verifier's log
	bodies []string                 // every refusal's body and challenge, to grep for tokens
	mu     sync.Mutex
}

// serveOAuth serves h's HTTP front with OAuth from p (and the static token
// main-secret), on a port chosen first, as the resource URL must be known.
func serveOAuth(t *testing.T, h *harness, p *testoidc.Provider, edit func(*resource.Options)) *oauthFront {
	t.Helper()
	return serveOAuthSubjects(t, h, p, edit, "hash")
}

// serveOAuthSubjects is serveOAuth with the logs naming subjects as the config's
// oauth.subjects does ("plain", "hash" or "off").
func serveOAuthSubjects(t *testing.T, h *harness, p *testoidc.Provider, edit func(*resource.Options), subjects string) *oauthFront {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	f := &oauthFront{url: "http://" + srv.Listener.Addr().String(), keys: &countingTransport{base: http.DefaultTransport.(*http.Transport).Clone()}, logs: &testupstream.SyncBuffer{}}
	opts := resource.Options{Issuer: p.Issuer(), Audience: f.url + "/mcp", Scopes: []string{testoidc.ScopeRead},
		HTTPClient: &http.Client{Transport: f.keys, Timeout: 10 * time.Second},
		Logf:       func(format string, args ...any) { fmt.Fprintf(f.logs, format+"\n", args...) }}
	if edit != nil {
		edit(&opts)
	}
	v, err := resource.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h.g.Handler(gateway.HTTPOptions{Token: "main-secret", OAuth: &gateway.OAuthOptions{Verifier: v, Subjects: subjects}})
	srv.Start()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		v.Close()
	})
	return f
}

// refused posts an initialize with token to path and returns the reply, kept for the
// leak check.
func (f *oauthFront) refused(t *testing.T, path, token string) httpReply {
	t.Helper()
	r := post(t, f.url+path, map[string]string{"Authorization": "Bearer " + token}, strings.NewReader(initializeBody))
	f.mu.Lock()
	f.bodies = append(f.bodies, r.body, r.header.Get("WWW-Authenticate"))
	f.mu.Unlock()
	return r
}

func token(t *testing.T, p *testoidc.Provider, resource, scope string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, err := p.ClientCredentialsToken(ctx, resource, scope)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestOAuthResource: toolshed as a protected resource of a real oidc-provider. A real
// token is accepted and mapped by its claims to a profile, static tokens keep working,
// and each attack on the front is refused without the token leaking.
func TestOAuthResource(t *testing.T) {
	t.Parallel()
	p := testoidc.Start(t, testoidc.Options{})
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic"), testServer("beta", "basic")},
		Hooks: config.Hooks{ActivityLog: t.TempDir() + "/activity.jsonl"},
		Profiles: map[string]config.Profile{
			"svc": {Scope: policy.Scope{Servers: []string{"beta"}}, Claims: map[string][]string{"sub": {testoidc.ServiceClientID}}},
			"eng": {Scope: policy.Scope{Servers: []string{"alpha"}}, Claims: map[string][]string{"groups": {"engineering"}}},
		}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	f := serveOAuth(t, h, p, nil)
	resourceURL := f.url + "/mcp"
	good := token(t, p, resourceURL, testoidc.ScopeRead)
	var tokens []string // every token of the test, for the leak check
	tokens = append(tokens, good)

	t.Run("token mapped to its profile", func(t *testing.T) {
		cs := httpClient(t, resourceURL, map[string]string{"Authorization": "Bearer " + good}, nil, "")
		names := toolNames(t, cs)
		if len(withPrefix(names, "beta__")) == 0 || len(withPrefix(names, "alpha__")) > 0 {
			t.Errorf("the service's token sees %v; want the svc profile's beta tools only", names)
		}
		if res := call(t, cs, "beta__echo", map[string]any{"text": "hi"}); res.IsError {
			t.Errorf("call: %s", resultText(res))
		}
		// The activity log names the subject, hashed as configured.
		waitFor(t, "the call in the activity log", func() bool {
			b, _ := readFile(cfg.Hooks.ActivityLog)
			return strings.Contains(b, `"subject":"sha256:`)
		})
		b, _ := readFile(cfg.Hooks.ActivityLog)
		if strings.Contains(b, testoidc.ServiceClientID) {
			t.Errorf("the activity log names the subject in clear though subjects: hash: %s", b)
		}
	})

	t.Run("static token still works", func(t *testing.T) {
		cs := httpClient(t, resourceURL, map[string]string{"Authorization": "Bearer main-secret"}, nil, "")
		if names := toolNames(t, cs); len(withPrefix(names, "alpha__")) == 0 || len(withPrefix(names, "beta__")) == 0 {
			t.Errorf("the gateway's token sees %v", names)
		}
	})

	t.Run("a profile path the claims do not give", func(t *testing.T) {
		if r := f.refused(t, "/mcp/eng", good); r.status != http.StatusForbidden {
			t.Errorf("status %d %s", r.status, r.body)
		}
	})

	t.Run("no token names the metadata", func(t *testing.T) {
		for _, path := range []string{"/mcp", "/mcp/svc"} {
			r := post(t, f.url+path, nil, strings.NewReader(initializeBody))
			want := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource%s", scope="mcp:read"`, f.url, path)
			if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != want {
				t.Fatalf("%s: %d, WWW-Authenticate %q; want %q", path, r.status, r.header.Get("WWW-Authenticate"), want)
			}
			res, err := http.Get(f.url + "/.well-known/oauth-protected-resource" + path)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				ScopesSupported      []string `json:"scopes_supported"`
			}
			json.NewDecoder(res.Body).Decode(&meta)
			res.Body.Close()
			if meta.Resource != f.url+path || !slices.Equal(meta.AuthorizationServers, []string{p.Issuer()}) {
				t.Errorf("metadata of %s: %+v", path, meta)
			}
		}
	})

	t.Run("a token for the profile's own resource", func(t *testing.T) {
		tok := token(t, p, resourceURL+"/svc", testoidc.ScopeRead)
		tokens = append(tokens, tok)
		httpClient(t, resourceURL+"/svc", map[string]string{"Authorization": "Bearer " + tok}, nil, "")
		if r := f.refused(t, "/mcp", tok); r.status != http.StatusUnauthorized {
			t.Errorf("a token for /mcp/svc at /mcp: %d", r.status)
		}
	})

	t.Run("another audience", func(t *testing.T) {
		tok := token(t, p, "http://127.0.0.1:1/mcp", testoidc.ScopeRead)
		tokens = append(tokens, tok)
		r := f.refused(t, "/mcp", tok)
		if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) || !strings.Contains(r.body, "another audience") {
			t.Errorf("%d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
		}
	})

	t.Run("missing scope", func(t *testing.T) {
		tok := token(t, p, resourceURL, testoidc.ScopeWrite)
		tokens = append(tokens, tok)
		r := f.refused(t, "/mcp", tok)
		if r.status != http.StatusForbidden || !strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`) || !strings.Contains(r.header.Get("WWW-Authenticate"), `scope="mcp:read"`) {
			t.Errorf("%d %q %s", r.status, r.header.Get("WWW-Authenticate"), r.body)
		}
	})

	claims := jwt.MapClaims{}
	parsed, _, err := jwt.NewParser().ParseUnverified(good, claims)
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := parsed.Header["kid"].(string)

	t.Run("alg none", func(t *testing.T) {
		tok := jwt.NewWithClaims(jwt.SigningMethodNone, claims)
		tok.Header["kid"] = kid
		s, _ := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
		if r := f.refused(t, "/mcp", s); r.status != http.StatusUnauthorized {
			t.Errorf("unsigned token: %d %s", r.status, r.body)
		}
	})

	t.Run("HS256 with the public key as secret", func(t *testing.T) {
		pub := providerKey(t, p, kid)
		der, _ := x509.MarshalPKIXPublicKey(pub)
		for _, secret := range [][]byte{der, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})} {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
			tok.Header["kid"] = kid
			s, _ := tok.SignedString(secret)
			if r := f.refused(t, "/mcp", s); r.status != http.StatusUnauthorized {
				t.Errorf("HS256 token: %d %s", r.status, r.body)
			}
		}
	})

	t.Run("forged kid flood", func(t *testing.T) {
		forger, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		before := f.keys.jwks.Load()
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() {
				tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
				tok.Header["kid"] = fmt.Sprintf("forged-%d", i)
				s, _ := tok.SignedString(forger)
				if r := f.refused(t, "/mcp", s); r.status != http.StatusUnauthorized {
					t.Errorf("forged token %d: %d", i, r.status)
				}
			})
		}
		wg.Wait()
		if n := f.keys.jwks.Load() - before; n > 1 {
			t.Errorf("30 forged key ids fetched the key set %d times; want at most 1", n)
		}
	})

	t.Run("no token passthrough", func(t *testing.T) {
		// An HTTP upstream that records the Authorization header of every request.
		var mu sync.Mutex
		var seen []string
		srv := mcp.NewServer(&mcp.Implementation{Name: "recorder", Version: "1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
		mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header.Get("Authorization"))
			mu.Unlock()
			mcpHandler.ServeHTTP(w, r)
		}))
		t.Cleanup(up.Close)
		cfg := &config.Config{Servers: []config.Server{{Name: "rec", Type: config.HTTP, URL: up.URL}}}
		h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
		f := serveOAuth(t, h, p, nil)
		tok := token(t, p, f.url+"/mcp", testoidc.ScopeRead)
		tokens = append(tokens, tok)
		cs := httpClient(t, f.url+"/mcp", map[string]string{"Authorization": "Bearer " + tok}, nil, "")
		if res := call(t, cs, "rec__ping", map[string]any{}); res.IsError || resultText(res) != "pong" {
			t.Fatalf("call: %s", resultText(res))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			t.Fatal("the upstream saw no request")
		}
		for _, a := range seen {
			if a != "" {
				t.Errorf("the upstream got Authorization %q; toolshed must never pass its clients' tokens on", a[:min(len(a), 12)])
			}
		}
	})

	t.Run("no token in errors or logs", func(t *testing.T) {
		extra := ""
		if b, err := readFile(cfg.Hooks.ActivityLog); err == nil {
			extra = b
		}
		f.checkNoLeak(t, h, p, extra, tokens...)
	})
}

// checkNoLeak fails t if one of tokens appears in a refusal's body or challenge, the
// verifier's log, the gateway's or the provider's, or extra.
func (f *oauthFront) checkNoLeak(t *testing.T, h *harness, p *testoidc.Provider, extra string, tokens ...string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	all := strings.Join(f.bodies, "\n") + f.logs.String() + h.log.String() + p.Log() + extra
	for i, tok := range tokens {
		// The signature is the secret part of a JWT, the whole of an opaque one.
		sig := tok[strings.LastIndex(tok, ".")+1:]
		if strings.Contains(all, sig) {
			t.Errorf("token %d appears in an error, a challenge or a log", i)
		}
	}
}

// TestOAuthRotation: tokens of a new key are accepted without a restart, and once the
// provider stops publishing the old key its tokens are refused.
func TestOAuthRotation(t *testing.T) {
	t.Parallel()
	p := testoidc.Start(t, testoidc.Options{})
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
	// Refreshes on an unknown kid may follow each other at once here: the flood test
	// above keeps the default.
	f := serveOAuth(t, h, p, func(o *resource.Options) { o.MinRefresh = time.Nanosecond })
	ok := func(tok string) bool {
		return initialized(post(t, f.url+"/mcp", map[string]string{"Authorization": "Bearer " + tok}, strings.NewReader(initializeBody)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old := token(t, p, f.url+"/mcp", testoidc.ScopeRead)
	if !ok(old) {
		t.Fatal("a fresh token is refused")
	}
	for i := range 2 {
		if _, err := p.RotateKeys(ctx); err != nil {
			t.Fatal(err)
		}
		if !ok(token(t, p, f.url+"/mcp", testoidc.ScopeRead)) {
			t.Fatalf("after rotation %d, a token of the new key is refused", i+1)
		}
	}
	if ok(old) {
		t.Errorf("a token of a key the provider no longer publishes is accepted")
	}
}

// providerKey returns the provider's public key kid from its JWKS.
func providerKey(t *testing.T, p *testoidc.Provider, kid string) any {
	t.Helper()
	res, err := http.Get(p.Endpoint("jwks"))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}
	st, err := set.ToStorage()
	if err != nil {
		t.Fatal(err)
	}
	k, err := st.KeyRead(context.Background(), kid)
	if err != nil {
		t.Fatal(err)
	}
	return k.Key()
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// TestOAuthSubjectInSearchLog: the search log names the OAuth subject of each search
// and call, as oauth.subjects says (in clear, hashed, or not at all), and none for a
// client of a static token.
func TestOAuthSubjectInSearchLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := testoidc.Start(t, testoidc.Options{})
	log := openSearchLog(t, filepath.Join(t.TempDir(), "log.db"), searchlog.Options{})
	h := startGateway(t, &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}, gateway.Options{Mode: policy.On, SearchLog: log})
	sum := sha256.Sum256([]byte(p.Issuer() + "\x00" + testoidc.ServiceClientID))
	for _, c := range []struct{ subjects, token, want string }{
		{"plain", "oauth", testoidc.ServiceClientID},
		{"hash", "oauth", "sha256:" + hex.EncodeToString(sum[:])},
		{"off", "oauth", ""},
		{"plain", "static", ""},
	} {
		t.Run(c.subjects+"/"+c.token, func(t *testing.T) {
			f := serveOAuthSubjects(t, h, p, nil, c.subjects)
			bearer := "main-secret"
			if c.token == "oauth" {
				bearer = token(t, p, f.url+"/mcp", testoidc.ScopeRead)
			}
			cs := httpClient(t, f.url+"/mcp", map[string]string{"Authorization": "Bearer " + bearer}, nil, "")
			query := "add two numbers " + c.subjects + " " + c.token
			call(t, cs, "tool_search", map[string]any{"query": query, "limit": 3})
			call(t, cs, "tool_call", map[string]any{"name": "alpha__add", "arguments": map[string]any{"a": 1, "b": 2}})
			if err := log.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			searches, calls, err := log.Read(ctx, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			var s *searchlog.Search
			for i := range searches {
				if searches[i].Query == query {
					s = &searches[i]
				}
			}
			var cl *searchlog.Call
			for i := range calls {
				if calls[i].Query == query {
					cl = &calls[i]
				}
			}
			if s == nil || cl == nil {
				t.Fatalf("the search and call of %q are not in the log: %+v %+v", query, searches, calls)
			}
			if s.Subject != c.want || cl.Subject != c.want {
				t.Errorf("search subject %q, call subject %q; want %q", s.Subject, cl.Subject, c.want)
			}
		})
	}
}

// TestOAuthRealTokenLife: toolshed's front with the real oidc-provider's own tokens
// through their life: an opaque token is checked by introspection (as the
// introspection client the config names) and served, then refused once the provider
// revokes it; a JWT is served until it expires, then refused with invalid_token.
func TestOAuthRealTokenLife(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Servers: []config.Server{testServer("alpha", "basic")}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	t.Run("introspected, then revoked", func(t *testing.T) {
		t.Parallel()
		p := testoidc.Start(t, testoidc.Options{OpaqueAccessTokens: true})
		h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
		f := serveOAuth(t, h, p, func(o *resource.Options) {
			o.IntrospectionClientID, o.IntrospectionClientSecret = testoidc.ServiceClientID, p.ServiceSecret()
			o.IntrospectionCacheTTL = time.Second // the default 30 s is what a revoked token may still work
		})
		tok := token(t, p, f.url+"/mcp", testoidc.ScopeRead)
		if strings.Count(tok, ".") == 2 {
			t.Fatalf("the provider issued a JWT, not an opaque token")
		}
		cs := httpClient(t, f.url+"/mcp", map[string]string{"Authorization": "Bearer " + tok}, nil, "")
		if names := toolNames(t, cs); len(withPrefix(names, "alpha__")) == 0 {
			t.Fatalf("tools of an introspected token: %v", names)
		}
		form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.Endpoint("token/revocation"), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(testoidc.ServiceClientID, p.ServiceSecret())
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("revoking: %v %v", resp, err)
		}
		resp.Body.Close()
		// An introspection's answer is kept (here 1 s; 30 s by default, docs/auth.md): the
		// revoked token is refused once the issuer is asked again.
		waitRefused(t, f, tok, "not active", 90*time.Second)
		f.checkNoLeak(t, h, p, "", tok)
	})

	t.Run("served until it expires", func(t *testing.T) {
		t.Parallel()
		p := testoidc.Start(t, testoidc.Options{AccessTokenTTL: 3 * time.Second})
		h := startGateway(t, cfg, gateway.Options{Mode: policy.Off})
		f := serveOAuth(t, h, p, func(o *resource.Options) { o.Leeway = time.Second }) // the default allows 30 s of skew
		tok := token(t, p, f.url+"/mcp", testoidc.ScopeRead)
		if r := post(t, f.url+"/mcp", map[string]string{"Authorization": "Bearer " + tok}, strings.NewReader(initializeBody)); r.status != http.StatusOK {
			t.Fatalf("a fresh token: %d %s", r.status, r.body)
		}
		// Past its expiry and the verifier's leeway, it is refused.
		waitRefused(t, f, tok, "expired", 90*time.Second)
		f.checkNoLeak(t, h, p, "", tok)
	})
}

// waitRefused posts an initialize with tok until the front refuses it with 401
// invalid_token, whose body must say why, within limit.
func waitRefused(t *testing.T, f *oauthFront, tok, why string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		r := f.refused(t, "/mcp", tok)
		if r.status == http.StatusUnauthorized {
			if !strings.Contains(r.header.Get("WWW-Authenticate"), "invalid_token") || !strings.Contains(r.body, why) {
				t.Errorf("refused: %q %s; want invalid_token saying %q", r.header.Get("WWW-Authenticate"), r.body, why)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token was still served after %v: %d", limit, r.status)
		}
		time.Sleep(time.Second)
	}
}
