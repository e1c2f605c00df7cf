package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/internal/testupstream"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/oauth/resource"
	"github.com/toolshed/toolshed/policy"
)

// perUserRig is a gateway over HTTP with a per-user server (the real oidc-provider
// and a protected server of the TypeScript SDK), its operator signed in.
type perUserRig struct {
	p       *testoidc.Provider
	h       *harness
	public  string
	path    string
	store   *oauth.FileStore
	ctx     context.Context
	browser *http.Client // follows no redirect
}

var (
	operator = testoidc.User{Name: "operator", Password: "operator-password"}
	alice    = testoidc.User{Name: "alice", Password: "alice-password", Groups: []string{"engineering"}}
	bob      = testoidc.User{Name: "bob", Password: "bob-password", Groups: []string{"engineering"}}
	carol    = testoidc.User{Name: "carol", Password: "carol-password"}
)

// startPerUser starts the rig; front, when not nil, makes the HTTP front take OAuth
// tokens of the same provider too (with the options it gets, edited).
func startPerUser(t *testing.T, front func(p *testoidc.Provider, public string, o *gateway.HTTPOptions)) *perUserRig {
	p := testoidc.Start(t, testoidc.Options{Users: []testoidc.User{operator, alice, bob, carol}})
	upstream := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	r := &perUserRig{p: p, path: filepath.Join(t.TempDir(), "credentials.json"),
		browser: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}}
	r.store = &oauth.FileStore{Path: r.path}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx

	// The operator's own sign-in (toolshed auth login) lists the tools.
	_, err := oauth.Login(ctx, oauth.Server{Name: "protected", URL: upstream}, oauth.LoginOptions{Store: r.store, Browser: func(authURL string) error {
		redirect, err := p.LoginAs(ctx, authURL, operator)
		if err == nil {
			go http.Get(redirect)
		}
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{
		Servers:  []config.Server{testServer("alpha", "basic"), {Name: "protected", Type: config.HTTP, URL: upstream, OAuth: &config.SignIn{PerUser: true}}},
		Profiles: map[string]config.Profile{"alice": {Token: "alice-token"}, "bob": {Token: "bob-token"}, "carol": {Token: "carol-token"}},
	}
	r.h = startGateway(t, cfg, gateway.Options{Mode: policy.Off, Credentials: r.store})
	srv := httptest.NewUnstartedServer(nil)
	r.public = "http://" + srv.Listener.Addr().String()
	opts := gateway.HTTPOptions{Token: "main-secret", PublicURL: r.public}
	if front != nil {
		front(p, r.public, &opts)
	}
	srv.Config.Handler = r.h.g.Handler(opts)
	srv.Start()
	t.Cleanup(srv.Close)
	waitFor(t, "protected ready", func() bool {
		for _, s := range r.h.g.Statuses() {
			if s.Name == "protected" {
				return s.State == gateway.Ready
			}
		}
		return false
	})
	return r
}

// subject calls the server's whoami as cs and returns the subject it was called as.
func (r *perUserRig) subject(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.CallTool(r.ctx, whoami)
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	var who struct {
		Sub string `json:"sub"`
	}
	if text := resultText(res); res.IsError || json.Unmarshal([]byte(text), &who) != nil {
		t.Fatalf("whoami: %s", text)
	}
	return who.Sub
}

// elicitation calls whoami as cs and returns the URL-mode elicitation it is answered with.
func (r *perUserRig) elicitation(t *testing.T, cs *mcp.ClientSession) mcp.ElicitParams {
	t.Helper()
	_, err := cs.CallTool(r.ctx, whoami)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("first call: %v, want error %d", err, mcp.CodeURLElicitationRequired)
	}
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(je.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("error data %s: %v", je.Data, err)
	}
	el := data.Elicitations[0]
	if el.Mode != "url" || el.ElicitationID == "" || el.URL != r.public+"/signin/"+el.ElicitationID || !strings.Contains(el.Message, "protected") {
		t.Fatalf("elicitation %+v", el)
	}
	return el
}

// get GETs link as the browser, and returns the response with its body read.
func (r *perUserRig) get(t *testing.T, link string) (*http.Response, string) {
	t.Helper()
	resp, err := r.browser.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// signInAt has the browser, sent to authURL, sign in to the upstream's authorization
// server as user and come back to toolshed's callback, which must say it is done; the
// same answer again is refused.
func (r *perUserRig) signInAt(t *testing.T, authURL string, as testoidc.User) {
	t.Helper()
	if !strings.HasPrefix(authURL, r.p.Issuer()) {
		t.Fatalf("sent to %q, not to the authorization server", authURL)
	}
	redirect, err := r.p.LoginAs(r.ctx, authURL, as)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(redirect, r.public+"/signin/callback?") {
		t.Fatalf("the provider sent the browser to %s", redirect)
	}
	if resp, body := r.get(t, redirect); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Signed in to protected") {
		t.Fatalf("the callback: %d %s", resp.StatusCode, body)
	}
	if resp, _ := r.get(t, redirect); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the callback replayed: %d", resp.StatusCode)
	}
}

var (
	whoami  = &mcp.CallToolParams{Name: "protected__whoami", Arguments: map[string]any{}}
	urlMode = &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}
)

// TestPerUserSignIn: a server whose config says oauth.perUser is listed with the
// gateway's own sign-in, and each user of the HTTP front calls it with their own,
// against the real oidc-provider and a protected MCP server of the TypeScript SDK. A
// user's first call gets a URL-mode elicitation (-32042) of toolshed's sign-in page;
// the page sends on only the browser of that user (a link passed to another user, or
// opened without a token, goes nowhere); after sign-in the user's calls reach the
// server as that user, another user's never do, and a client that cannot open links
// is told where to go.
func TestPerUserSignIn(t *testing.T) {
	r := startPerUser(t, nil)
	p, public, ctx, browser, store, path := r.p, r.public, r.ctx, r.browser, r.store, r.path
	// Alice, on a client of MCP 2026-07-28 that opens links, is asked to sign in.
	aliceCS := httpClient(t, public+"/mcp", map[string]string{"Authorization": "Bearer alice-token"}, urlMode, "")
	el := r.elicitation(t, aliceCS)
	// The link carries nothing of alice's.
	if strings.Contains(el.URL, "alice") || strings.Contains(el.URL, p.Issuer()) {
		t.Errorf("the link %s names the user or the authorization server", el.URL)
	}
	// The other server is not held up.
	if text := resultText(call(t, aliceCS, "alpha__echo", map[string]any{"text": "hi"})); !strings.Contains(text, "hi") {
		t.Errorf("the other server: %s", text)
	}

	confirm := func(link, token string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, link, strings.NewReader(url.Values{"token": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", public)
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// The page asks who opened it.
	if resp, body := r.get(t, el.URL); resp.StatusCode != http.StatusOK || !strings.Contains(body, `name=token`) || strings.Contains(body, p.Issuer()) {
		t.Fatalf("the sign-in page: %d %s", resp.StatusCode, body)
	}
	// Phishing: alice's link opened by bob, or with no token, or with the gateway's
	// own token, sends nobody on.
	for _, tok := range []string{"bob-token", "", "main-secret", "alice-token2"} {
		if resp := confirm(el.URL, tok); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
			t.Errorf("token %q on alice's link: %d, Location %q", tok, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// A form posted from another origin is refused.
	req, _ := http.NewRequest(http.MethodPost, el.URL, strings.NewReader("token=alice-token"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, err := browser.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site form: %v %v", resp.StatusCode, err)
	}

	signIn := func(t *testing.T, link, token string, as testoidc.User) {
		t.Helper()
		resp := confirm(link, token)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("confirmed: %d", resp.StatusCode)
		}
		r.signInAt(t, resp.Header.Get("Location"), as)
	}
	signIn(t, el.URL, "alice-token", alice)
	if got := r.subject(t, aliceCS); got != "alice" {
		t.Fatalf("alice's call reached the server as %q", got)
	}
	// Her link is used up.
	if resp := confirm(el.URL, "alice-token"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("alice's link after sign-in: %d", resp.StatusCode)
	}

	// Bob, on a 2025-11-25 client that cannot open links, is told where to go, and is
	// never served with alice's token.
	bobCS := httpClient(t, public+"/mcp", map[string]string{"Authorization": "Bearer bob-token"}, nil, "2025-11-25")
	res, err := bobCS.CallTool(ctx, whoami)
	if err != nil {
		t.Fatal(err)
	}
	text := resultText(res)
	i := strings.Index(text, public+"/signin/")
	if !res.IsError || i < 0 || !strings.Contains(text, "cannot open links") || strings.Contains(text, `"sub"`) {
		t.Fatalf("bob's first call: %s", text)
	}
	bobLink := strings.Fields(text[i:])[0]
	// Nor does he read the server's resources as anyone else.
	if sub, err := readSubject(ctx, bobCS); err == nil || sub != "" {
		t.Errorf("bob, not signed in, read the resource as %q", sub)
	}
	if resp := confirm(bobLink, "alice-token"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("alice on bob's link: %d", resp.StatusCode)
	}
	signIn(t, bobLink, "bob-token", bob)
	if got := r.subject(t, bobCS); got != "bob" {
		t.Errorf("bob's call reached the server as %q", got)
	}
	if got := r.subject(t, aliceCS); got != "alice" {
		t.Errorf("alice's call, after bob signed in, reached the server as %q", got)
	}
	// The gateway's own clients (its main token) use its own sign-in.
	mainCS := httpClient(t, public+"/mcp", map[string]string{"Authorization": "Bearer main-secret"}, nil, "")
	if got := r.subject(t, mainCS); got != "operator" {
		t.Errorf("the main token's call reached the server as %q", got)
	}
	// Resources are read as the reader, like calls.
	for cs, want := range map[*mcp.ClientSession]string{aliceCS: "alice", bobCS: "bob", mainCS: "operator"} {
		if sub, err := readSubject(ctx, cs); err != nil || sub != want {
			t.Errorf("the resource read for %s: %q, %v", want, sub, err)
		}
	}

	// The store holds three credentials, the users' under digests, no token of
	// toolshed's own in it, and the file is its owner's only.
	creds, err := store.List(ctx)
	if err != nil || len(creds) != 3 {
		t.Fatalf("stored: %d, %v", len(creds), err)
	}
	users := 0
	for _, c := range creds {
		if c.User != "" {
			users++
		}
	}
	raw, _ := os.ReadFile(path)
	if users != 2 || strings.Contains(string(raw), "alice-token") || strings.Contains(string(raw), "bob-token") {
		t.Errorf("%d per-user credentials; file names a toolshed token: %v", users, strings.Contains(string(raw), "-token"))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, %v", fi.Mode().Perm(), err)
	}
}

// TestPerUserSignInOAuth: a user signed in to toolshed with OAuth proves who they are
// on the sign-in page by signing in at toolshed's authorization server in the browser:
// as the user whose call made the link, they are sent on to the server's sign-in, and
// their calls then reach it as them; as anyone else (the link passed to bob), refused.
func TestPerUserSignInOAuth(t *testing.T) {
	r := startPerUser(t, func(p *testoidc.Provider, public string, o *gateway.HTTPOptions) {
		v, err := resource.New(resource.Options{Issuer: p.Issuer(), Audience: public + "/mcp", Scopes: []string{testoidc.ScopeRead}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Close)
		o.OAuth = &gateway.OAuthOptions{Verifier: v}
	})
	aliceTok := userToken(t, r.ctx, r.p, alice, r.public+"/mcp")
	aliceCS := httpClient(t, r.public+"/mcp", map[string]string{"Authorization": "Bearer " + aliceTok}, urlMode, "")
	el := r.elicitation(t, aliceCS)
	if resp, body := r.get(t, el.URL); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id=oauth href="`+el.ElicitationID+`/confirm"`) {
		t.Fatalf("the sign-in page offers no sign-in at toolshed's authorization server: %d %s", resp.StatusCode, body)
	}
	confirmAs := func(as testoidc.User) (*http.Response, string) {
		t.Helper()
		resp, _ := r.get(t, el.URL+"/confirm")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), r.p.Issuer()) {
			t.Fatalf("confirm: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		redirect, err := r.p.LoginAs(r.ctx, resp.Header.Get("Location"), as)
		if err != nil {
			t.Fatal(err)
		}
		return r.get(t, redirect)
	}
	// Bob, given alice's link, signs in as himself: refused, and the link stays alice's.
	if resp, body := confirmAs(bob); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Location") != "" {
		t.Fatalf("bob on alice's link: %d %s", resp.StatusCode, body)
	}
	// Nor does her toolshed token exist for a form: a made-up one is refused.
	resp, err := r.browser.PostForm(el.URL, url.Values{"token": {aliceTok + "x"}})
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a token on the form: %v %v", resp.StatusCode, err)
	}
	resp, _ = confirmAs(alice)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("alice confirmed: %d", resp.StatusCode)
	}
	r.signInAt(t, resp.Header.Get("Location"), alice)
	if got := r.subject(t, aliceCS); got != "alice" {
		t.Errorf("alice's call reached the server as %q", got)
	}
	// Bob's own client, with his own token, is still asked to sign in.
	bobCS := httpClient(t, r.public+"/mcp", map[string]string{"Authorization": "Bearer " + userToken(t, r.ctx, r.p, bob, r.public+"/mcp")}, urlMode, "")
	r.elicitation(t, bobCS)
}

// userToken signs in to p as user, with its native test client, for an access token
// for resource.
func userToken(t *testing.T, ctx context.Context, p *testoidc.Provider, user testoidc.User, resource string) string {
	t.Helper()
	conf := &oauth2.Config{ClientID: testoidc.NativeClientID, RedirectURL: "http://127.0.0.1:49152/callback", Scopes: []string{testoidc.ScopeRead},
		Endpoint: oauth2.Endpoint{AuthURL: p.Endpoint("auth"), TokenURL: p.Endpoint("token"), AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	redirect, err := p.LoginAs(ctx, conf.AuthCodeURL("state", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource)), user)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(redirect)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := conf.Exchange(ctx, u.Query().Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// TestPerUserSignInModern: a client of MCP 2026-07-28 (the TypeScript SDK v2 client)
// is asked to sign in the way that revision has it, a URL-mode elicitation riding the
// multi round-trip flow (input_required, never the -32042 error); it accepts, its retry
// waits while the user signs in on toolshed's page, and then the call is made, as that
// user.
func TestPerUserSignInModern(t *testing.T) {
	r := startPerUser(t, nil)
	cs := testupstream.TS2MatrixClientEnv(t, map[string]string{"TS2_BEARER": "carol-token", "TS2_ELICIT_URL": "1"}, "auto", r.public+"/mcp")
	if cs.Version != "2026-07-28" {
		t.Fatalf("the TS v2 client negotiated %q", cs.Version)
	}
	type outcome struct {
		raw json.RawMessage
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		raw, err := cs.CallTool(r.ctx, "protected__whoami", map[string]any{})
		done <- outcome{raw, err}
	}()
	var link string
	waitFor(t, "the client to be asked to open the sign-in page", func() bool {
		if urls := cs.ElicitedURLs(); len(urls) > 0 {
			link = urls[0]
			return true
		}
		return false
	})
	if !strings.HasPrefix(link, r.public+"/signin/") {
		t.Fatalf("the client was asked to open %q", link)
	}
	resp, err := r.browser.PostForm(link, url.Values{"token": {"carol-token"}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("confirming: %v %v", resp, err)
	}
	resp.Body.Close()
	r.signInAt(t, resp.Header.Get("Location"), carol)
	var out outcome
	select {
	case out = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the call did not end within a minute of the sign-in")
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if out.err != nil || json.Unmarshal(out.raw, &res) != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, `"sub":"carol"`) {
		t.Fatalf("the call after sign-in: %s, %v", out.raw, out.err)
	}
	if n := len(cs.ElicitedURLs()); n != 1 {
		t.Errorf("the client was asked %d times", n)
	}
}

// readSubject reads the protected server's whoami://me resource as cs, and returns
// the subject the server saw.
func readSubject(ctx context.Context, cs *mcp.ClientSession) (string, error) {
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "whoami://me"})
	if err != nil {
		return "", err
	}
	var who struct {
		Sub string `json:"sub"`
	}
	if len(res.Contents) == 0 || json.Unmarshal([]byte(res.Contents[0].Text), &who) != nil {
		return "", fmt.Errorf("not a subject: %+v", res.Contents)
	}
	return who.Sub, nil
}
