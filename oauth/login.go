package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ErrNoSignIn is returned by Login for a server that answers without asking for
// sign-in: it needs no credential.
var ErrNoSignIn = errors.New("the server does not ask for sign-in")

// Server is an upstream MCP server reached over HTTP.
type Server struct {
	// Name is the server's name in the config, used in messages and advice.
	Name string
	// URL is its MCP endpoint.
	URL string
	// Headers are sent with every request to it (not Authorization, which sign-in
	// sets).
	Headers map[string]string
	// User, when set, makes the credential one user's of the server (a gateway's
	// user signing in for their own calls, see Key) rather than the gateway's own.
	User string
	// SignIn says the config asks for sign-in (an oauth block): without a
	// credential, any 401 of the server then means it needs sign-in. Otherwise
	// only a 401 with a Bearer challenge does; another 401 is an error like any
	// other.
	SignIn bool
}

// LoginOptions configure Login. The zero value registers toolshed with the
// authorization server by itself (dynamic client registration), asks for the scopes
// the server names, takes the redirect on a random loopback port and prints the URL
// to open.
type LoginOptions struct {
	// Store keeps the credential; nil means a FileStore at DefaultPath.
	Store Store
	// ClientID and ClientSecret are a client registered with the authorization
	// server beforehand (the config's oauth.clientId and oauth.clientSecret): used
	// instead of dynamic registration. ClientMetadataURL is the https URL of a
	// client ID metadata document, used first where the server supports those.
	ClientID, ClientSecret, ClientMetadataURL string
	// Scopes, when set, are asked for instead of those the server names. Scopes
	// granted before and those a call was refused for are asked for too.
	Scopes []string
	// RedirectURL is the redirect URI to register and listen on. It must be an
	// http URL on a loopback address (127.0.0.1, [::1] or localhost); the default
	// is http://127.0.0.1:PORT/callback on CallbackPort, or a random free port.
	RedirectURL  string
	CallbackPort int
	// Browser is called with the URL the user has to open. nil opens it with the
	// system's browser (xdg-open, open) where there is one; either way the URL is
	// printed to Out too, so a user without a browser (over SSH) can open it
	// elsewhere. NoBrowser only prints it.
	Browser   func(authURL string) error
	NoBrowser bool
	// Redirect, when set, takes the authorization response elsewhere than on a
	// loopback listener: at a gateway's public callback (see Hub). RedirectURL,
	// CallbackPort, Browser and NoBrowser are then not used.
	Redirect *Redirect
	// Out receives the advice to open the URL; nil means io.Discard.
	Out io.Writer
	// HTTPClient makes the requests to the server and the authorization server;
	// nil means http.DefaultClient.
	HTTPClient *http.Client
}

func (o *LoginOptions) store() Store {
	if o.Store == nil {
		return &FileStore{}
	}
	return o.Store
}

func (o *LoginOptions) client() *http.Client {
	if o.HTTPClient == nil {
		return http.DefaultClient
	}
	return o.HTTPClient
}

// Login signs in to srv: it asks the server for its authorization requirements,
// sends the user to the authorization server (see LoginOptions.Browser), takes the
// authorization response on a loopback redirect, exchanges the code and stores the
// credential. It returns the credential stored. It waits for the user until ctx
// ends.
func Login(ctx context.Context, srv Server, opts LoginOptions) (*Credential, error) {
	key, err := srv.key()
	if err != nil {
		return nil, err
	}
	store, client := opts.store(), opts.client()
	prev, err := store.Get(ctx, key)
	if err != nil && !errors.Is(err, ErrNotSignedIn) {
		return nil, err
	}

	var redirectURL string
	var fetch auth.AuthorizationCodeFetcher
	if r := opts.Redirect; r != nil {
		redirectURL = r.URL
		fetch = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			state, err := checkAuthURL(args.URL, r.URL)
			if err != nil {
				return nil, err
			}
			return r.Wait(ctx, args.URL, state)
		}
	} else {
		cb, err := listenLoopback(opts.RedirectURL, opts.CallbackPort)
		if err != nil {
			return nil, err
		}
		defer cb.close()
		redirectURL = cb.redirectURL
		fetch = func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return cb.fetch(ctx, args.URL, func(u string) error { return opts.show(srv.Name, u, cb.redirectURL) })
		}
	}

	req, resp, err := probe(ctx, srv, client)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	prm, asm, err := discover(ctx, srv.URL, resp, client)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", srv.Name, err)
	}

	var issued struct {
		cfg *oauth2.Config
		tok *oauth2.Token
	}
	hcfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirectURL,
		AuthorizationCodeFetcher: fetch,
		RequestRefreshToken:      true,
		// A matching iss that the server does not advertise is still checked: a
		// mismatched one is refused either way.
		AcceptUnadvertisedIss: true,
		Client:                client,
		ScopeFilter: func(discovered []string) []string {
			want := discovered
			if len(opts.Scopes) > 0 {
				want = slices.Clone(opts.Scopes)
			}
			if prev != nil && prev.Issuer == asm.Issuer {
				want = union(want, prev.Scopes)
			}
			if prev != nil {
				want = union(want, prev.WantScopes)
			}
			return want
		},
		NewTokenSource: func(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			issued.cfg, issued.tok = cfg, tok
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if opts.ClientMetadataURL != "" {
		hcfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: opts.ClientMetadataURL}
	}
	switch {
	case opts.ClientID != "":
		pre := &oauthex.ClientCredentials{ClientID: opts.ClientID}
		if opts.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: opts.ClientSecret}
		}
		hcfg.PreregisteredClient = pre
	case opts.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported:
		// The handler uses the metadata document.
	case asm.RegistrationEndpoint != "":
		reg, err := registration(ctx, store, asm, redirectURL, client)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", srv.Name, err)
		}
		pre := &oauthex.ClientCredentials{ClientID: reg.ClientID, Issuer: reg.Issuer}
		if reg.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: string(reg.ClientSecret)}
		}
		hcfg.PreregisteredClient = pre
	default: // no registration endpoint in the metadata: the handler's fallbacks
		hcfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:              "toolshed",
				ApplicationType:         applicationType(redirectURL),
				RedirectURIs:            []string{redirectURL},
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			},
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(hcfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", srv.Name, err)
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return nil, fmt.Errorf("signing in to %s: %w", srv.Name, scrub(err))
	}
	if issued.tok == nil {
		return nil, fmt.Errorf("signing in to %s: the authorization server issued no token", srv.Name)
	}
	if issued.cfg.Endpoint.TokenURL != asm.TokenEndpoint {
		return nil, fmt.Errorf("signing in to %s: the token came from %s, not from the token endpoint of %s; not stored", srv.Name, issued.cfg.Endpoint.TokenURL, asm.Issuer)
	}

	c := &Credential{
		Server:        srv.Name,
		Resource:      prm.Resource,
		Issuer:        asm.Issuer,
		TokenURL:      asm.TokenEndpoint,
		RevocationURL: asm.RevocationEndpoint,
		ClientID:      issued.cfg.ClientID,
		ClientSecret:  Secret(issued.cfg.ClientSecret),
		AuthStyle:     int(issued.cfg.Endpoint.AuthStyle),
		Scopes:        grantedScopes(issued.tok, issued.cfg.Scopes),
		Updated:       time.Now(),
		User:          srv.User,
	}
	c.setToken(issued.tok)
	err = store.Update(ctx, key, func(*Credential) (*Credential, error) { return c, nil })
	if err != nil {
		return nil, err
	}
	c.URL = key
	return c, nil
}

// Redirect is where the authorization server sends the browser back to, when it is
// not a loopback listener of Login's own.
type Redirect struct {
	// URL is the redirect URI, registered with the authorization server.
	URL string
	// Wait is called with the URL the user has to open, whose state the response
	// must carry, and returns the authorization response received at URL. It waits
	// until ctx ends.
	Wait func(ctx context.Context, authURL, state string) (*auth.AuthorizationResult, error)
}

// registration returns the client to sign in to asm's issuer with: the one
// registered before, kept in store (when it is a RegistrationStore), if it fits
// redirect and the authorization server still knows it; else a new registration,
// which it keeps for the next sign-in.
func registration(ctx context.Context, store Store, asm *oauthex.AuthServerMeta, redirect string, client *http.Client) (*Registration, error) {
	rs, _ := store.(RegistrationStore)
	if rs != nil {
		old, err := rs.Registration(ctx, asm.Issuer)
		if err != nil {
			return nil, err
		}
		if old.fits(asm.Issuer, redirect, time.Now()) && !refused(ctx, asm, old, redirect, client) {
			return old, nil
		}
	}
	reg, err := register(ctx, asm, redirect, client)
	if err != nil {
		return nil, err
	}
	if rs != nil {
		if err := rs.SetRegistration(ctx, asm.Issuer, reg); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// setToken copies what a token endpoint answered into c. A refresh that brings no
// new refresh token keeps the old one (RFC 6749 section 6).
func (c *Credential) setToken(tok *oauth2.Token) {
	c.AccessToken, c.TokenType, c.Expiry = Secret(tok.AccessToken), tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		c.RefreshToken = Secret(tok.RefreshToken)
	}
	c.Updated = time.Now()
}

// grantedScopes is the scope a token response names, else what was asked for
// (RFC 6749 section 5.1: the scope is left out when it is what was asked for).
func grantedScopes(tok *oauth2.Token, asked []string) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	return slices.Clone(asked)
}

// union returns a with the elements of b it lacks appended.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// probe sends srv an initialize request without a token, to be told how to sign in.
// It returns the request and the response, which is a 401 or 403 with the body
// unread.
func probe(ctx context.Context, srv Server, client *http.Client) (*http.Request, *http.Response, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolshed","version":"sign-in"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", srv.Name, err)
	}
	for k, v := range srv.Headers {
		if !strings.EqualFold(k, "Authorization") {
			req.Header.Set(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reaching the server: %w", srv.Name, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return req, resp, nil
	case resp.StatusCode < 300:
		resp.Body.Close()
		return nil, nil, fmt.Errorf("%s: %w: it answered initialize without a token", srv.Name, ErrNoSignIn)
	default:
		resp.Body.Close()
		return nil, nil, fmt.Errorf("%s: the server answered %s to initialize, not 401 with a sign-in challenge; check its url", srv.Name, resp.Status)
	}
}

// discover finds what the SDK's handler finds (the protected resource metadata the
// 401 points to, else at the well-known URLs; then the first authorization server's
// metadata), so that the credential can record its issuer and endpoints. Login
// checks that the handler used the same token endpoint.
func discover(ctx context.Context, serverURL string, resp *http.Response, client *http.Client) (*oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, error) {
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the server's WWW-Authenticate: %w", err)
	}
	var candidates [][2]string // metadata URL, resource
	for _, c := range challenges {
		if u := c.Params["resource_metadata"]; u != "" {
			candidates = append(candidates, [2]string{u, serverURL})
			break
		}
	}
	su, err := url.Parse(serverURL)
	if err != nil {
		return nil, nil, err
	}
	at := *su
	at.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(su.Path, "/")
	root := *su
	root.Path, root.RawQuery = "", ""
	rootMeta := root
	rootMeta.Path = "/.well-known/oauth-protected-resource"
	candidates = append(candidates, [2]string{at.String(), serverURL}, [2]string{rootMeta.String(), root.String()})
	var prm *oauthex.ProtectedResourceMetadata
	for _, c := range candidates {
		p, err := oauthex.GetProtectedResourceMetadata(ctx, c[0], c[1], client)
		if err == nil && p != nil {
			prm = p
			break
		}
	}
	if prm == nil { // the 2025-03-26 fallback: the server's root is the authorization server
		prm = &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root.String()}, Resource: serverURL}
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, nil, errors.New("the server's protected resource metadata names no authorization server")
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], client)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the authorization server's metadata: %w", err)
	}
	if asm == nil {
		as := prm.AuthorizationServers[0]
		asm = &oauthex.AuthServerMeta{Issuer: as, AuthorizationEndpoint: as + "/authorize", TokenEndpoint: as + "/token"}
	}
	return prm, asm, nil
}

// show sends the user to authURL.
func (o *LoginOptions) show(name, authURL, redirect string) error {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	fmt.Fprintf(out, "To sign in to %s, open this URL in a browser:\n\n  %s\n\nWaiting for the authorization server to send the browser back to %s ...\n", name, authURL, redirect)
	switch {
	case o.NoBrowser:
		return nil
	case o.Browser != nil:
		return o.Browser(authURL)
	}
	if err := openBrowser(authURL); err != nil {
		fmt.Fprintf(out, "(no browser opened: %v)\n", err)
	}
	return nil
}

// scrub keeps the text of an error from the token endpoint but not what it may
// carry: oauth2.RetrieveError quotes the response body, which a broken server could
// fill with a token.
func scrub(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := re.ErrorCode
		if msg == "" {
			msg = re.Response.Status
		}
		if re.ErrorDescription != "" {
			msg += ": " + re.ErrorDescription
		}
		return fmt.Errorf("the token endpoint refused: %s", msg)
	}
	return err
}

// key is the key of srv's credential in a Store.
func (srv Server) key() (string, error) { return Key(srv.URL, srv.User) }
