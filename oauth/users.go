package oauth

import (
	"context"
	"net/http"
	"sync"
)

// maxUserTransports bounds the transports Users keeps: past it, one is dropped (its
// next request reads the store again).
const maxUserTransports = 1024

type userKey struct{}

// WithUser returns ctx naming user as who a request made with it is for (see Users).
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserOf returns the user ctx names (see WithUser), or "".
func UserOf(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// Users is an http.RoundTripper for a server whose tools each user calls with their
// own sign-in: a request whose context names a user (WithUser) is signed with that
// user's credential and never sent without it; any other request (listing the
// tools, the gateway's own) goes through Shared. One user's credential is never used
// for another's request.
type Users struct {
	// Server is the server (its User is ignored); Store keeps the users'
	// credentials; Base sends their requests (nil: http.DefaultTransport).
	Server Server
	Store  Store
	Base   http.RoundTripper
	// Shared sends the requests that name no user.
	Shared http.RoundTripper

	mu sync.Mutex
	m  map[string]*Transport
}

// RoundTrip implements http.RoundTripper.
func (u *Users) RoundTrip(req *http.Request) (*http.Response, error) {
	user := UserOf(req.Context())
	if user == "" {
		return u.Shared.RoundTrip(req)
	}
	t, err := u.transport(req.Context(), user)
	if err != nil {
		return nil, err
	}
	if !t.Usable() {
		if req.Body != nil {
			req.Body.Close()
		}
		srv := u.Server
		srv.User = user
		return nil, needsSignIn(srv, "you have not signed in to it yet")
	}
	return t.RoundTrip(req)
}

// SignedIn reports whether user has a credential for the server that can still sign
// requests: one whose sign-in ended (its refresh refused) counts as none, so that the
// user is asked to sign in again.
func (u *Users) SignedIn(ctx context.Context, user string) bool {
	t, err := u.transport(ctx, user)
	return err == nil && t.Usable()
}

// transport returns user's transport: the one kept, or one made from the store when
// there is none or the one kept has no usable credential (the user may have signed in
// since).
func (u *Users) transport(ctx context.Context, user string) (*Transport, error) {
	u.mu.Lock()
	t := u.m[user]
	u.mu.Unlock()
	if t != nil && t.Usable() {
		return t, nil
	}
	srv := u.Server
	srv.User = user
	t, err := NewTransport(ctx, srv, u.Store, u.Base)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]*Transport{}
	}
	if old := u.m[user]; old != nil && old.Usable() {
		return old, nil // another request made it meanwhile
	}
	if len(u.m) >= maxUserTransports {
		for k := range u.m {
			delete(u.m, k)
			break
		}
	}
	u.m[user] = t
	return t, nil
}
