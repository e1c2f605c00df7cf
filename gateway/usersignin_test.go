package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
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

	"github.com/toolshed/toolshed/gateway"
	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/oauth"
	"github.com/toolshed/toolshed/policy"
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
	operator := testoidc.User{Name: "operator", Password: "operator-password"}
	alice := testoidc.User{Name: "alice", Password: "alice-password"}
	bob := testoidc.User{Name: "bob", Password: "bob-password"}
	p := testoidc.Start(t, testoidc.Options{Users: []testoidc.User{operator, alice, bob}})
	upstream := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	path := filepath.Join(t.TempDir(), "credentials.json")
	store := &oauth.FileStore{Path: path}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The operator's own sign-in (toolshed auth login) lists the tools.
	_, err := oauth.Login(ctx, oauth.Server{Name: "protected", URL: upstream}, oauth.LoginOptions{Store: store, Browser: func(authURL string) error {
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
		Profiles: map[string]config.Profile{"alice": {Token: "alice-token"}, "bob": {Token: "bob-token"}},
	}
	h := startGateway(t, cfg, gateway.Options{Mode: policy.Off, Credentials: store})
	srv := httptest.NewUnstartedServer(nil)
	public := "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = h.g.Handler(gateway.HTTPOptions{Token: "main-secret", PublicURL: public})
	srv.Start()
	t.Cleanup(srv.Close)
	waitFor(t, "protected ready", func() bool {
		for _, s := range h.g.Statuses() {
			if s.Name == "protected" {
				return s.State == gateway.Ready
			}
		}
		return false
	})

	urlMode := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}
	whoami := &mcp.CallToolParams{Name: "protected__whoami", Arguments: map[string]any{}}
	subject := func(t *testing.T, cs *mcp.ClientSession) string {
		t.Helper()
		res, err := cs.CallTool(ctx, whoami)
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

	// Alice, on a client of MCP 2026-07-28 that opens links, is asked to sign in.
	aliceCS := httpClient(t, public+"/mcp", map[string]string{"Authorization": "Bearer alice-token"}, urlMode, "")
	_, err = aliceCS.CallTool(ctx, whoami)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != mcp.CodeURLElicitationRequired {
		t.Fatalf("alice's first call: %v, want error %d", err, mcp.CodeURLElicitationRequired)
	}
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(je.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("error data %s: %v", je.Data, err)
	}
	el := data.Elicitations[0]
	if el.Mode != "url" || el.ElicitationID == "" || el.URL != public+"/signin/"+el.ElicitationID || !strings.Contains(el.Message, "protected") {
		t.Fatalf("elicitation %+v", el)
	}
	// The link carries nothing of alice's.
	if strings.Contains(el.URL, "alice") || strings.Contains(el.URL, p.Issuer()) {
		t.Errorf("the link %s names the user or the authorization server", el.URL)
	}
	// The other server is not held up.
	if text := resultText(call(t, aliceCS, "alpha__echo", map[string]any{"text": "hi"})); !strings.Contains(text, "hi") {
		t.Errorf("the other server: %s", text)
	}

	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}
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
	resp, err := browser.Get(el.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `name=token`) || strings.Contains(string(body), p.Issuer()) {
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
		authURL := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(authURL, p.Issuer()) {
			t.Fatalf("confirmed: %d, Location %q", resp.StatusCode, authURL)
		}
		redirect, err := p.LoginAs(ctx, authURL, as)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(redirect, public+"/signin/callback?") {
			t.Fatalf("the provider sent the browser to %s", redirect)
		}
		resp, err = browser.Get(redirect)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Signed in to protected") {
			t.Fatalf("the callback: %d %s", resp.StatusCode, b)
		}
		// The same response again is refused.
		if resp, err := browser.Get(redirect); err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("the callback replayed: %v %v", resp.StatusCode, err)
		}
	}
	signIn(t, el.URL, "alice-token", alice)
	if got := subject(t, aliceCS); got != "alice" {
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
	if resp := confirm(bobLink, "alice-token"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("alice on bob's link: %d", resp.StatusCode)
	}
	signIn(t, bobLink, "bob-token", bob)
	if got := subject(t, bobCS); got != "bob" {
		t.Errorf("bob's call reached the server as %q", got)
	}
	if got := subject(t, aliceCS); got != "alice" {
		t.Errorf("alice's call, after bob signed in, reached the server as %q", got)
	}
	// The gateway's own clients (its main token) use its own sign-in.
	mainCS := httpClient(t, public+"/mcp", map[string]string{"Authorization": "Bearer main-secret"}, nil, "")
	if got := subject(t, mainCS); got != "operator" {
		t.Errorf("the main token's call reached the server as %q", got)
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
