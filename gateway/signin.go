package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/toolshed/toolshed/oauth"
)

// signInPoll is how often an upstream that needs sign-in looks for the credential
// `toolshed auth login` stores: a read of a small file.
const signInPoll = 2 * time.Second

// signIn returns the HTTP transport of a new connection to the remote upstream: its
// sign-in's (see package oauth) when the gateway has a credential store and the
// config neither turns sign-in off nor sends its own Authorization header, else
// http.DefaultTransport.
func (u *Upstream) signIn(ctx context.Context) (http.RoundTripper, error) {
	var base http.RoundTripper = http.DefaultTransport
	store := u.g.opts.Credentials
	switch {
	case store == nil, u.cfg.OAuth != nil && u.cfg.OAuth.Disabled, hasAuthorization(u.cfg.Headers):
	default:
		t, err := oauth.NewTransport(ctx, u.oauthServer(), store, http.DefaultTransport)
		if err != nil {
			return nil, err
		}
		base = signInWatch{t: t, u: u}
		if u.perUser() {
			base = u.usersTransport(base)
		}
	}
	u.mu.Lock()
	u.base = base
	u.mu.Unlock()
	return base, nil
}

// httpBase is the transport of requests to the remote upstream outside its SDK
// connection (task polls): the current connection's.
func (u *Upstream) httpBase() http.RoundTripper {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.base == nil {
		return http.DefaultTransport
	}
	return u.base
}

func (u *Upstream) oauthServer() oauth.Server {
	return oauth.Server{Name: u.cfg.Name, URL: u.cfg.URL, Headers: u.cfg.Headers, SignIn: u.cfg.OAuth != nil}
}

func hasAuthorization(h map[string]string) bool {
	for k := range h {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// signInWatch notices a sign-in that ends during a connection (the issuer refused
// the refresh token, the user signed out): the upstream then leaves its connection
// and waits for sign-in (see waitForSignIn), rather than fail every call.
type signInWatch struct {
	t *oauth.Transport
	u *Upstream
}

func (w signInWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.t.RoundTrip(req)
	if err != nil && errors.Is(err, oauth.ErrNotSignedIn) {
		w.u.signInLost(err)
	}
	return resp, err
}

// signInLost ends the current connection, whose sign-in ended with err:
// connectAndServe returns err, and run waits for sign-in.
func (u *Upstream) signInLost(err error) {
	u.mu.Lock()
	l := u.link
	if l != nil && u.lostSignIn == nil {
		u.lostSignIn = err
	}
	u.mu.Unlock()
	if l != nil {
		go l.close() // not from within a request of that connection
	}
}

// takeLostSignIn returns, once, why the sign-in of the connection that ended ended.
func (u *Upstream) takeLostSignIn() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	err := u.lostSignIn
	u.lostSignIn = nil
	return err
}

// waitForSignIn holds the upstream in NeedsSignIn, with err (which says what to
// run), until a credential is stored for it or ctx ends. It is no failure: the
// server is not restarted, nor counted as restarting.
func (u *Upstream) waitForSignIn(ctx context.Context, err error) {
	var sie *oauth.SignInError
	if errors.As(err, &sie) {
		err = sie // without the SDK's wrapping, which quotes the request
	}
	u.setState(NeedsSignIn, err)
	store := u.g.opts.Credentials
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(signInPoll):
		}
		if store != nil && oauth.Ready(ctx, u.oauthServer(), store) {
			return
		}
	}
}
