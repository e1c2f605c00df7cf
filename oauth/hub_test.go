package oauth_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshed/toolshed/internal/testoidc"
	"github.com/toolshed/toolshed/oauth"
)

// TestHubBounds: the sign-ins a Hub holds for users are bounded per user and in
// total, one per user and server is reused rather than started twice, a response
// with a state of no sign-in is refused, and Close ends every sign-in under way.
func TestHubBounds(t *testing.T) {
	ctx := ctxFor(t)
	p := testoidc.Start(t, testoidc.Options{})
	upstream := testoidc.StartProtected(t, p, testoidc.ProtectedOptions{})
	cb := httptest.NewServer(nil)
	defer cb.Close()
	hub := &oauth.Hub{CallbackURL: cb.URL + "/signin/callback", Store: &oauth.FileStore{Path: filepath.Join(t.TempDir(), "c.json")}, MaxPending: 2, MaxPendingPerUser: 1}
	cb.Config.Handler = http.HandlerFunc(hub.ServeCallback)
	srv := oauth.Server{Name: "protected", URL: upstream, User: "u1"}
	first, err := hub.Begin(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	again, err := hub.Begin(ctx, srv)
	if err != nil || again.ID != first.ID {
		t.Errorf("a second Begin for the same user and server: %v, %v", again, err)
	}
	if got, ok := hub.Lookup(first.ID); !ok || got != first || first.AuthURL() == "" {
		t.Errorf("Lookup: %v %v", got, ok)
	}
	srv.URL = upstream + "/other"
	if _, err := hub.Begin(ctx, srv); !errors.Is(err, oauth.ErrTooManySignIns) {
		t.Errorf("a second server for the same user past the per-user cap: %v", err)
	}
	srv.URL, srv.User = upstream, "u2"
	if _, err := hub.Begin(ctx, srv); err != nil {
		t.Fatal(err)
	}
	srv.User = "u3"
	if _, err := hub.Begin(ctx, srv); !errors.Is(err, oauth.ErrTooManySignIns) {
		t.Errorf("a third sign-in past the total cap: %v", err)
	}
	if code, _, err := get(cb.URL + "/signin/callback?code=x&state=made-up"); err != nil || code != http.StatusBadRequest {
		t.Errorf("a response with an unknown state: %d %v", code, err)
	}
	hub.Close()
	<-first.Done()
	if first.Err() == nil {
		t.Error("a sign-in given up by Close reports no error")
	}
	if _, ok := hub.Lookup(first.ID); ok {
		t.Error("a sign-in that ended can still be looked up")
	}
}

// TestUsersEndedSignIn: a user's requests go out with their own credential only; once
// its refresh is refused (the sign-in has ended), the user counts as not signed in, so
// that the gateway asks them to sign in again rather than fail every call.
func TestUsersEndedSignIn(t *testing.T) {
	ctx := ctxFor(t)
	p, srv, store := setup(t, testoidc.Options{})
	mine := srv
	mine.User = "u1"
	login(t, ctx, p, mine, store, oauth.LoginOptions{})
	users := &oauth.Users{Server: srv, Store: store, Shared: http.DefaultTransport}
	post := func(user string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(oauth.WithUser(ctx, user), http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		return users.RoundTrip(req)
	}
	if !users.SignedIn(ctx, "u1") || users.SignedIn(ctx, "u2") {
		t.Fatalf("signed in: u1 %v, u2 %v", users.SignedIn(ctx, "u1"), users.SignedIn(ctx, "u2"))
	}
	if _, err := post("u2"); !errors.Is(err, oauth.ErrNotSignedIn) {
		t.Errorf("a request of a user without a credential: %v", err)
	}
	key, _ := oauth.Key(srv.URL, "u1")
	if err := store.Update(ctx, key, func(c *oauth.Credential) (*oauth.Credential, error) {
		c.Expiry, c.RefreshToken = time.Now().Add(-time.Minute), "a-refresh-token-the-issuer-never-issued"
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
	users = &oauth.Users{Server: srv, Store: store, Shared: http.DefaultTransport} // a fresh process
	if _, err := post("u1"); !errors.Is(err, oauth.ErrNotSignedIn) {
		t.Fatalf("a request with a refused refresh: %v", err)
	}
	if users.SignedIn(ctx, "u1") {
		t.Error("a user whose sign-in ended still counts as signed in")
	}
}
