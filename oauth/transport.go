package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ErrInsufficientScope is wrapped by the error of a call the server refused for
// want of a scope (403 with error="insufficient_scope"): the user has to sign in
// again to grant it, and the next Login asks for it.
var ErrInsufficientScope = errors.New("the server needs a scope that was not granted")

// SignInError says that a server needs the user to sign in (again), and how. It
// wraps ErrNotSignedIn or ErrInsufficientScope.
type SignInError struct {
	Server string
	// User is the user whose own sign-in the server needs, for a server each user
	// signs in to (see Users); "" for the gateway's own sign-in.
	User string
	// Reason says why, such as "the refresh token was refused".
	Reason string
	// Scopes are the scopes a call was refused for, with ErrInsufficientScope.
	Scopes []string
	err    error
}

func (e *SignInError) Error() string {
	if e.User != "" {
		return fmt.Sprintf("%s needs you to sign in to it with your own account (%s): call the tool again from a client that can open links (URL-mode elicitation), or open the sign-in link toolshed gave", e.Server, e.Reason)
	}
	if errors.Is(e.err, ErrInsufficientScope) {
		return fmt.Sprintf("%s needs sign-in with scope %s (%s): run `toolshed auth login %s`", e.Server, strings.Join(e.Scopes, " "), e.Reason, e.Server)
	}
	return fmt.Sprintf("%s needs sign-in (%s): run `toolshed auth login %s`", e.Server, e.Reason, e.Server)
}

func (e *SignInError) Unwrap() error { return e.err }

func needsSignIn(srv Server, format string, args ...any) error {
	return &SignInError{Server: srv.Name, User: srv.User, Reason: fmt.Sprintf(format, args...), err: ErrNotSignedIn}
}

// refreshTimeout bounds one refresh. It does not end with the request that
// needed it: a refresh cut short after the server used the refresh token would lose
// the new one.
const refreshTimeout = 30 * time.Second

// Transport is an http.RoundTripper that signs the requests to one server with its
// stored credential. It sends the access token only to the resource the credential
// was issued for; it refreshes the token shortly before it expires and when the
// server answers 401, one refresh at a time (see Store.Update); and it answers a
// request with a *SignInError when the user has to sign in (again). Without a
// usable credential it sends requests as they are, and turns the server's 401 into
// that error. Make one with NewTransport.
type Transport struct {
	srv   Server
	key   string
	store Store
	base  http.RoundTripper

	mu   sync.Mutex // one refresh at a time in this process; guards cred and stale
	cred *Credential
	// stale is set when a call was refused for want of a scope: the user is to
	// sign in again, so the store is read before each request until the credential
	// there is another.
	stale bool
	// readErr is why the store could not be read when the transport was made.
	readErr error
}

// NewTransport returns the transport of srv, with its credential from store. base
// sends the requests (nil means http.DefaultTransport), and the refreshes to the
// issuer's token endpoint. A store that cannot be read counts as no credential (a
// server that asks for sign-in is told why); only a server URL that is not one is an
// error.
func NewTransport(ctx context.Context, srv Server, store Store, base http.RoundTripper) (*Transport, error) {
	key, err := srv.key()
	if err != nil {
		return nil, err
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{srv: srv, key: key, store: store, base: base}
	c, err := store.Get(ctx, key)
	switch {
	case errors.Is(err, ErrNotSignedIn):
	case err != nil:
		// A store that cannot be read now (a database down) is no sign-in, for now:
		// a server that needs none is still reached, and one that asks is told why.
		t.readErr = err
	case usable(c, key):
		t.cred = c
	}
	return t, nil
}

// usable reports whether c can sign requests to the server at key.
func usable(c *Credential, key string) bool {
	return c != nil && (c.AccessToken != "" || c.RefreshToken != "") && covers(c.Resource, key)
}

// SignedIn reports whether t has a credential to sign requests with.
func (t *Transport) SignedIn() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cred != nil
}

// Usable reports whether t's credential can still sign a request: signed in, and not
// ended (a refused refresh, an expired token without a refresh token), after which
// only a new sign-in helps.
func (t *Transport) Usable() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return usable(t.cred, t.key)
}

// Ready reports whether store holds a credential srv's requests can be signed with:
// one to try again with after a *SignInError.
func Ready(ctx context.Context, srv Server, store Store) bool {
	key, err := srv.key()
	if err != nil {
		return false
	}
	c, err := store.Get(ctx, key)
	return err == nil && usable(c, key)
}

// covers reports whether u is within resource: the same origin, and a path at or
// under resource's path.
func covers(resource, u string) bool {
	r, err1 := url.Parse(resource)
	v, err2 := url.Parse(u)
	if err1 != nil || err2 != nil || r.Host == "" {
		return false
	}
	if !strings.EqualFold(r.Scheme, v.Scheme) || !strings.EqualFold(r.Host, v.Host) {
		return false
	}
	rp, vp := strings.TrimSuffix(r.Path, "/"), strings.TrimSuffix(v.Path, "/")
	return rp == "" || vp == rp || strings.HasPrefix(vp, rp+"/")
}

// margin is how long before its expiry a token is refreshed: 30s, or a quarter of
// its life when that is shorter.
func margin(c *Credential) time.Duration {
	m := 30 * time.Second
	if life := c.Expiry.Sub(c.Updated); life > 0 && life/4 < m {
		m = life / 4
	}
	return m
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.SignedIn() {
		resp, err := t.base.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusUnauthorized && covers(t.key, req.URL.String()) && (t.srv.SignIn || bearerChallenge(resp)) {
			drain(resp)
			if t.readErr != nil {
				return nil, needsSignIn(t.srv, "the server asks for it, and the credentials could not be read: %v", t.readErr)
			}
			return nil, needsSignIn(t.srv, "the server asks for it")
		}
		return resp, err
	}
	if !t.mine(req.URL) {
		return t.base.RoundTrip(req) // another resource: no token
	}
	t.reload(req.Context())
	tok, err := t.token(req.Context(), "")
	if err != nil {
		return nil, err
	}
	resp, err := t.send(req, tok)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		drain(resp)
		if tok, err = t.token(req.Context(), tok); err != nil {
			return nil, err
		}
		if req.Body != nil && req.GetBody == nil {
			return nil, needsSignIn(t.srv, "the server refused the token, and the request cannot be sent again")
		}
		if resp, err = t.send(req, tok); err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusUnauthorized {
			drain(resp)
			return nil, needsSignIn(t.srv, "the server refused a freshly refreshed token")
		}
	case http.StatusForbidden:
		if scopes, ok := insufficientScope(resp); ok {
			drain(resp)
			return nil, t.stepUp(req.Context(), scopes)
		}
	}
	return resp, nil
}

func (t *Transport) mine(u *url.URL) bool {
	t.mu.Lock()
	res := t.cred.Resource
	t.mu.Unlock()
	return covers(res, u.String())
}

// reload takes the stored credential when the user was told to sign in again
// (see stale) and has.
func (t *Transport) reload(ctx context.Context) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stale {
		return
	}
	c, err := t.store.Get(ctx, t.key)
	if err == nil && usable(c, t.key) && c.AccessToken != t.cred.AccessToken {
		t.cred, t.stale = c, false
	}
}

// send sends a copy of req with tok.
func (t *Transport) send(req *http.Request, tok Secret) (*http.Response, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	r.Header.Set("Authorization", "Bearer "+string(tok))
	return t.base.RoundTrip(r)
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// bearerChallenge reports whether a 401 asks for a Bearer token: the MCP
// authorization challenge (with resource_metadata since 2025-06-18).
func bearerChallenge(resp *http.Response) bool {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return false
	}
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return true
		}
	}
	return false
}

// insufficientScope reports whether a 403 is the Bearer insufficient_scope error,
// and which scopes it names.
func insufficientScope(resp *http.Response) ([]string, bool) {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, false
	}
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope" {
			return strings.Fields(c.Params["scope"]), true
		}
	}
	return nil, false
}

// stepUp records the scopes a call was refused for, for the next Login to ask, and
// returns the error that tells the user to sign in again.
func (t *Transport) stepUp(ctx context.Context, scopes []string) error {
	err := t.store.Update(context.WithoutCancel(ctx), t.key, func(c *Credential) (*Credential, error) {
		if c == nil {
			return nil, nil
		}
		c.WantScopes = union(c.WantScopes, scopes)
		return c, nil
	})
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.stale = true
	t.mu.Unlock()
	return &SignInError{Server: t.srv.Name, User: t.srv.User, Reason: "the server refused the call for want of it", Scopes: scopes, err: ErrInsufficientScope}
}

// token returns the access token to send. refused, when set, is a token the
// server refused: it is refreshed unless another refresh has replaced it already.
// Otherwise the token is refreshed when it is about to expire.
func (t *Transport) token(ctx context.Context, refused Secret) (Secret, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if refused == "" && !t.cred.expired(now, margin(t.cred)) {
		return t.cred.AccessToken, nil
	}
	if refused != "" && t.cred.AccessToken != refused && !t.cred.expired(now, 0) {
		return t.cred.AccessToken, nil // refreshed meanwhile
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refreshTimeout)
	defer cancel()
	var ended error
	err := t.store.Update(ctx, t.key, func(c *Credential) (*Credential, error) {
		switch {
		case c == nil:
			return nil, needsSignIn(t.srv, "signed out")
		case c.Issuer != t.cred.Issuer || c.TokenURL != t.cred.TokenURL:
			// Signed in anew, maybe with another issuer: take it as it is.
			if c.AccessToken == "" || !covers(c.Resource, t.key) {
				return nil, needsSignIn(t.srv, "the sign-in has ended")
			}
			t.cred = c
			return c, nil
		case c.AccessToken != t.cred.AccessToken && c.AccessToken != refused && !c.expired(time.Now(), margin(c)):
			t.cred = c // another process refreshed it
			return c, nil
		case c.RefreshToken == "":
			ended = needsSignIn(t.srv, "the token expired and there is no refresh token")
			c.AccessToken = ""
			t.cred = c
			return c, nil
		}
		tok, err := refresh(ctx, c, t.base)
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			// The issuer refused the refresh token (invalid_grant: expired,
			// revoked or used): this sign-in has ended.
			ended = needsSignIn(t.srv, "the refresh token was refused: %v", scrub(err))
			c.AccessToken, c.RefreshToken = "", ""
			t.cred = c
			return c, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: refreshing the token at %s: %w; the call can be retried", t.srv.Name, c.TokenURL, scrub(err))
		}
		c.setToken(tok)
		t.cred = c
		return c, nil
	})
	if err != nil {
		return "", err
	}
	if ended != nil {
		return "", ended
	}
	return t.cred.AccessToken, nil
}

// refresh uses c's refresh token once at c's issuer's token endpoint.
func refresh(ctx context.Context, c *Credential, base http.RoundTripper) (*oauth2.Token, error) {
	cfg := &oauth2.Config{
		ClientID:     c.ClientID,
		ClientSecret: string(c.ClientSecret),
		Endpoint:     oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyle(c.AuthStyle)},
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, &http.Client{Transport: base})
	return cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: string(c.RefreshToken), Expiry: time.Unix(1, 0)}).Token()
}
