package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
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
	return connectVia(t, ctx, srv, store, nil)
}

// connectVia is connect with base sending the requests.
func connectVia(t *testing.T, ctx context.Context, srv oauth.Server, store oauth.Store, base http.RoundTripper) (*mcp.ClientSession, error) {
	tr, err := oauth.NewTransport(ctx, srv, store, base)
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

// login signs in to srv as p's user, failing the test if it cannot.
func login(t *testing.T, ctx context.Context, p *testoidc.Provider, srv oauth.Server, store oauth.Store, opts oauth.LoginOptions) (*oauth.Credential, *browser) {
	t.Helper()
	b := &browser{t: t, p: p}
	opts.Store, opts.Browser = store, b.open
	c, err := oauth.Login(ctx, srv, opts)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	return c, b
}

// expire makes the stored access token of srv expired (or, with bogus, replaces it
// with one the server refuses), so that the next call has to refresh.
func expire(t *testing.T, ctx context.Context, store oauth.Store, srv oauth.Server, bogus bool) *oauth.Credential {
	t.Helper()
	var before oauth.Credential
	err := store.Update(ctx, srv.URL, func(c *oauth.Credential) (*oauth.Credential, error) {
		before = *c
		if bogus {
			c.AccessToken = "not-a-token"
		} else {
			c.Expiry = time.Now().Add(-time.Minute)
		}
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &before
}

// refreshWith uses refreshToken once at p's token endpoint as c's client, and
// reports whether p took it.
func refreshWith(ctx context.Context, p *testoidc.Provider, c *oauth.Credential, refreshToken oauth.Secret) bool {
	form := strings.NewReader("grant_type=refresh_token&client_id=" + c.ClientID + "&refresh_token=" + string(refreshToken))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.Endpoint("token"), form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestRefresh: an expired token is refreshed before the call, a refused one on the
// 401, each time once for many calls at once from two transports (two processes
// sharing the file), and the refresh token each refresh used is spent.
func TestRefresh(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	login(t, ctx, p, srv, store, oauth.LoginOptions{})
	var spent []oauth.Secret
	for _, bogus := range []bool{false, true} {
		before := expire(t, ctx, store, srv, bogus)
		spent = append(spent, before.RefreshToken)
		// Four transports on two stores of the one file, as two toolshed processes
		// with two connections each, all starting at once with the expired token:
		// one refreshes, the others take its token.
		other := &oauth.FileStore{Path: store.Path}
		counter := &tokenRequests{url: p.Endpoint("token")}
		errs := make(chan error, 8)
		for i := range 4 {
			s := oauth.Store(store)
			if i%2 == 1 {
				s = other
			}
			go func() {
				cs, err := connectVia(t, ctx, srv, s, counter)
				if err != nil {
					errs <- err
					errs <- err
					return
				}
				for range 2 {
					go func() {
						_, err := callText(ctx, cs, "echo", map[string]any{"message": "hi"})
						errs <- err
					}()
				}
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Fatalf("bogus %v: a call after expiry: %v", bogus, err)
			}
		}
		if n := counter.n.Load(); n != 1 {
			t.Errorf("bogus %v: %d refreshes for 8 calls on 4 connections, want 1", bogus, n)
		}
		after, err := store.Get(ctx, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if after.AccessToken == before.AccessToken || after.RefreshToken == before.RefreshToken {
			t.Fatalf("bogus %v: the token was not refreshed", bogus)
		}
	}
	// Rotation: each refresh token used is spent. Had two refreshes used one, the
	// provider would have refused the second and revoked the grant, and a call
	// above would have failed.
	last, _ := store.Get(ctx, srv.URL)
	for _, rt := range spent {
		if refreshWith(ctx, p, last, rt) {
			t.Errorf("the provider took a refresh token twice")
		}
	}
}

// TestRefreshRefused: when the issuer refuses the refresh token, the transport says
// to sign in again, and the credential is marked as needing it.
func TestRefreshRefused(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	c, _ := login(t, ctx, p, srv, store, oauth.LoginOptions{})
	if !refreshWith(ctx, p, c, c.RefreshToken) { // spends it behind toolshed's back
		t.Fatal("the provider refused the stored refresh token")
	}
	expire(t, ctx, store, srv, false)
	_, err := connect(t, ctx, srv, store)
	var sie *oauth.SignInError
	if !errors.As(err, &sie) || !errors.Is(err, oauth.ErrNotSignedIn) || !strings.Contains(err.Error(), "toolshed auth login protected") {
		t.Fatalf("connecting with a spent refresh token: %v, want a SignInError saying what to run", err)
	}
	got, _ := store.Get(ctx, srv.URL)
	if st := oauth.StateOf(got, time.Now()); st != oauth.NeedsSignIn {
		t.Errorf("state after a refused refresh: %s", st)
	}
	if oauth.Ready(ctx, srv, store) {
		t.Error("Ready with a dead credential")
	}
	noSecret(t, err.Error(), c)
}

// TestStepUp: a call refused for want of mcp:write says to sign in again; the next
// Login asks for it, and the call then runs.
func TestStepUp(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	login(t, ctx, p, srv, store, oauth.LoginOptions{Scopes: []string{testoidc.ScopeRead}})
	cs, err := connect(t, ctx, srv, store)
	if err != nil {
		t.Fatal(err)
	}
	_, err = callText(ctx, cs, "admin_action", nil)
	if !errors.Is(err, oauth.ErrInsufficientScope) || !strings.Contains(err.Error(), testoidc.ScopeWrite) || !strings.Contains(err.Error(), "toolshed auth login protected") {
		t.Fatalf("admin_action with mcp:read only: %v, want ErrInsufficientScope naming mcp:write and what to run", err)
	}
	if _, err := callText(ctx, cs, "echo", map[string]any{"message": "still works"}); err != nil {
		t.Fatalf("the connection broke on the 403: %v", err)
	}
	c, _ := login(t, ctx, p, srv, store, oauth.LoginOptions{Scopes: []string{testoidc.ScopeRead}})
	if !slices.Contains(c.Scopes, testoidc.ScopeWrite) {
		t.Fatalf("scopes after step-up: %v", c.Scopes)
	}
	cs, err = connect(t, ctx, srv, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := callText(ctx, cs, "admin_action", nil); err != nil {
		t.Fatalf("admin_action after step-up: %v", err)
	}
}

// TestLogout revokes the refresh token at the provider and forgets the credential.
func TestLogout(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	c, _ := login(t, ctx, p, srv, store, oauth.LoginOptions{})
	if c.RevocationURL == "" {
		t.Fatal("no revocation endpoint recorded")
	}
	revoked, err := oauth.Logout(ctx, srv, store, nil)
	if err != nil || !revoked {
		t.Fatalf("Logout: revoked %v, %v", revoked, err)
	}
	if refreshWith(ctx, p, c, c.RefreshToken) {
		t.Error("the provider still takes the refresh token after logout")
	}
	if _, err := store.Get(ctx, srv.URL); !errors.Is(err, oauth.ErrNotSignedIn) {
		t.Errorf("after logout, Get: %v", err)
	}
	if _, err := oauth.Logout(ctx, srv, store, nil); !errors.Is(err, oauth.ErrNotSignedIn) {
		t.Errorf("second Logout: %v, want ErrNotSignedIn", err)
	}
}

// noSecret fails the test if s holds one of c's secrets.
func noSecret(t *testing.T, s string, c *oauth.Credential) {
	t.Helper()
	for _, sec := range []oauth.Secret{c.AccessToken, c.RefreshToken, c.ClientSecret} {
		if sec != "" && strings.Contains(s, string(sec)) {
			t.Errorf("a secret leaked into: %.200s", s)
		}
	}
}

// tokenRequests sends requests with http.DefaultTransport and counts those to the
// token endpoint url.
type tokenRequests struct {
	url string
	n   atomic.Int32
}

func (c *tokenRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.String() == c.url {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// TestMixUp: an authorization response whose iss is another authorization server's
// (RFC 9207) is refused, and nothing is stored.
func TestMixUp(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	other := testoidc.Start(t, testoidc.Options{})
	b := &browser{t: t, p: p}
	var out strings.Builder
	_, err := oauth.Login(ctx, srv, oauth.LoginOptions{Store: store, Out: &out, Browser: func(authURL string) error {
		redirect, err := p.Login(ctx, authURL)
		if err != nil {
			return err
		}
		u, _ := url.Parse(redirect)
		q := u.Query()
		q.Set("iss", other.Issuer())
		u.RawQuery = q.Encode()
		b.redirect = u.String()
		go get(b.redirect)
		return nil
	}})
	if err == nil || !strings.Contains(err.Error(), other.Issuer()) {
		t.Fatalf("Login with another server's iss: %v, want it refused naming that issuer", err)
	}
	if _, err := store.Get(ctx, srv.URL); !errors.Is(err, oauth.ErrNotSignedIn) {
		t.Errorf("something was stored: %v", err)
	}
	code, _ := url.Parse(b.redirect)
	if c := code.Query().Get("code"); c == "" || strings.Contains(err.Error(), c) || strings.Contains(out.String(), c) {
		t.Errorf("the code leaked into the error or the output")
	}
}

// TestCodeReplay: the code of a sign-in is used once; a replay of it is refused by
// the provider, and toolshed's listener is gone.
func TestCodeReplay(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	c, b := login(t, ctx, p, srv, store, oauth.LoginOptions{})
	u, _ := url.Parse(b.redirect)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")}, "client_id": {c.ClientID},
		"redirect_uri": {u.Scheme + "://" + u.Host + u.Path}, "code_verifier": {strings.Repeat("a", 43)}}
	resp, err := http.PostForm(p.Endpoint("token"), form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Error("the provider took a code twice")
	}
	if _, _, err := get(b.redirect); err == nil {
		t.Error("the loopback listener still answers after the sign-in")
	}
}

// TestTokenStaysWithItsResource: the token goes to the resource it was issued for
// only: not to another path of its host, and not to the host a request of it is
// redirected to.
func TestTokenStaysWithItsResource(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	c, _ := login(t, ctx, p, srv, store, oauth.LoginOptions{})
	var seen []string
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+": "+r.Header.Get("Authorization"))
	}))
	defer recorder.Close()
	// A server whose MCP endpoint redirects elsewhere, signed in to with c's token.
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, "redirector"+r.URL.Path+": "+r.Header.Get("Authorization"))
		http.Redirect(w, r, recorder.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	red := oauth.Server{Name: "redirector", URL: redirector.URL + "/mcp"}
	err := store.Update(ctx, red.URL, func(*oauth.Credential) (*oauth.Credential, error) {
		cp := *c
		cp.Server, cp.Resource = red.Name, red.URL
		return &cp, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := oauth.NewTransport(ctx, red, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: tr}
	for _, u := range []string{red.URL, redirector.URL + "/other", recorder.URL + "/mcp"} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []string{
		"redirector/mcp: Bearer " + string(c.AccessToken), // its resource
		"/elsewhere: ",       // where that redirects
		"redirector/other: ", // another path of its host
		"/elsewhere: ",       // where that redirects
		"/mcp: ",             // another host
	}
	if !slices.Equal(seen, want) {
		t.Errorf("requests seen (token shown as T):\n%s\nwant\n%s", strings.ReplaceAll(strings.Join(seen, "\n"), string(c.AccessToken), "T"),
			strings.ReplaceAll(strings.Join(want, "\n"), string(c.AccessToken), "T"))
	}
	// A transport for a server whose credential names another resource has none.
	err = store.Update(ctx, red.URL, func(c *oauth.Credential) (*oauth.Credential, error) {
		c.Resource = srv.URL
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := oauth.NewTransport(ctx, red, store, nil); err != nil || tr.SignedIn() {
		t.Errorf("a credential for %s signs requests to %s", srv.URL, red.URL)
	}
}

// TestNoSecretInOutput: what Login prints and stores as text, and the credential
// printed with %v and %+v, hold no token or secret.
func TestNoSecretInOutput(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	var out strings.Builder
	c, b := login(t, ctx, p, srv, store, oauth.LoginOptions{Out: &out})
	code, _ := url.Parse(b.redirect)
	for _, s := range []string{out.String(), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c)} {
		noSecret(t, s, c)
		if strings.Contains(s, code.Query().Get("code")) {
			t.Errorf("the code leaked into: %.200s", s)
		}
	}
	if c.AccessToken == "" || !strings.Contains(fmt.Sprintf("%+v", *c), "REDACTED") {
		t.Error("the credential does not print its secrets as REDACTED")
	}
}
