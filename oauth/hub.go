package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// ErrTooManySignIns is wrapped by Hub.Begin's error when as many sign-ins as it
// holds are waiting for their users already.
var ErrTooManySignIns = errors.New("too many sign-ins are waiting for their users")

// Hub runs the sign-ins a gateway starts for its users (a server that needs each
// user's own sign-in): each sends the user's browser to the server's authorization
// server and takes the response at the gateway's public callback, CallbackURL, which
// ServeCallback answers. What stands between a user's call and the authorization
// server, checking that whoever opens the link is that user, is the gateway's (see
// Pending.AuthURL).
type Hub struct {
	// CallbackURL is the redirect URI of every sign-in: the public URL at which
	// ServeCallback is served. It is registered with the authorization servers.
	CallbackURL string
	// Store keeps the credentials, each under its user (see Key).
	Store Store
	// Options are the LoginOptions of every sign-in (Store and Redirect aside):
	// the configured client, scopes, HTTP client.
	Options func(srv Server) LoginOptions
	// Timeout bounds a sign-in from its start to the browser's return (default
	// 10 minutes); MaxPending the sign-ins waiting for their users in total
	// (default 256), and MaxPendingPerUser those of one user (default 8).
	Timeout                       time.Duration
	MaxPending, MaxPendingPerUser int

	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	byID    map[string]*Pending
	byState map[string]*Pending
	byKey   map[string]*Pending // credential key -> its sign-in under way
	perUser map[string]int
}

// Pending is a sign-in waiting for its user.
type Pending struct {
	// ID names it: the elicitation id a client is given, and the gateway's link.
	ID string
	// Server is the server's name, and User the user signing in.
	Server, User string
	// Expires is when it is given up.
	Expires time.Time

	key     string
	authURL string
	state   string
	used    bool
	results chan *auth.AuthorizationResult
	ready   chan struct{} // closed once authURL is known or the sign-in failed
	done    chan struct{} // closed when the sign-in has ended
	err     error         // why it ended without a credential; read after done
}

func (h *Hub) init() {
	h.once.Do(func() {
		h.ctx, h.cancel = context.WithCancel(context.Background())
		h.byID, h.byState = map[string]*Pending{}, map[string]*Pending{}
		h.byKey, h.perUser = map[string]*Pending{}, map[string]int{}
	})
}

func (h *Hub) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 10 * time.Minute
}

func orDefault(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// Begin starts the sign-in of srv.User to srv, or returns the one under way: it
// returns once the authorization URL is known (the server discovered, the client
// registered), or with why it cannot be.
func (h *Hub) Begin(ctx context.Context, srv Server) (*Pending, error) {
	h.init()
	if srv.User == "" {
		return nil, errors.New("oauth: Hub.Begin needs the user who signs in")
	}
	key, err := srv.key()
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	p := h.byKey[key]
	if p == nil {
		if len(h.byID) >= orDefault(h.MaxPending, 256) || h.perUser[srv.User] >= orDefault(h.MaxPendingPerUser, 8) {
			h.mu.Unlock()
			return nil, fmt.Errorf("%w (%d in all); try again in a few minutes", ErrTooManySignIns, len(h.byID))
		}
		p = &Pending{ID: rand.Text(), Server: srv.Name, User: srv.User, Expires: time.Now().Add(h.timeout()), key: key,
			results: make(chan *auth.AuthorizationResult, 1), ready: make(chan struct{}), done: make(chan struct{})}
		h.byID[p.ID], h.byKey[key] = p, p
		h.perUser[srv.User]++
		go h.run(srv, p)
	}
	h.mu.Unlock()
	select {
	case <-p.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if p.authURL == "" {
		<-p.done
		return nil, p.err
	}
	return p, nil
}

// run is the sign-in of p, to its end.
func (h *Hub) run(srv Server, p *Pending) {
	ctx, cancel := context.WithDeadline(h.ctx, p.Expires)
	defer cancel()
	var opts LoginOptions
	if h.Options != nil {
		opts = h.Options(srv)
	}
	var readyOnce sync.Once
	ready := func() { readyOnce.Do(func() { close(p.ready) }) }
	opts.Store = h.Store
	opts.Redirect = &Redirect{URL: h.CallbackURL, Wait: func(ctx context.Context, authURL, state string) (*auth.AuthorizationResult, error) {
		h.mu.Lock()
		p.authURL, p.state = authURL, state
		h.byState[state] = p
		h.mu.Unlock()
		ready()
		select {
		case r := <-p.results:
			if r == nil {
				return nil, errors.New("the authorization server refused")
			}
			return r, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("the user did not sign in within %v", h.timeout())
		}
	}}
	_, err := Login(ctx, srv, opts)
	h.mu.Lock()
	delete(h.byID, p.ID)
	delete(h.byKey, p.key)
	if p.state != "" {
		delete(h.byState, p.state)
	}
	if h.perUser[p.User]--; h.perUser[p.User] <= 0 {
		delete(h.perUser, p.User)
	}
	p.err = err
	h.mu.Unlock()
	ready()
	close(p.done)
}

// Lookup returns the sign-in named id, while it waits for its user.
func (h *Hub) Lookup(id string) (*Pending, bool) {
	h.init()
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.byID[id]
	return p, ok
}

// AuthURL is the authorization server's URL the user's browser is sent to; the
// gateway sends it there only once it knows the browser's user is p.User.
func (p *Pending) AuthURL() string { return p.authURL }

// Done is closed when the sign-in has ended; Err then says why it stored no
// credential (nil when it did).
func (p *Pending) Done() <-chan struct{} { return p.done }

// Err is why the sign-in ended without a credential, once Done is closed.
func (p *Pending) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// ServeCallback takes an authorization response at CallbackURL: once per sign-in,
// with the state of a sign-in under way. It answers with a page saying how it went.
func (h *Hub) ServeCallback(w http.ResponseWriter, r *http.Request) {
	h.init()
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "The sign-in callback takes GET only.", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	h.mu.Lock()
	p := h.byState[q.Get("state")]
	used := p != nil && p.used
	if p != nil {
		p.used = true
	}
	h.mu.Unlock()
	switch {
	case p == nil:
		http.Error(w, "This sign-in response belongs to no sign-in toolshed is waiting for (unknown or expired state); start again by calling the tool.", http.StatusBadRequest)
		return
	case used:
		http.Error(w, "This sign-in response has been used already; it is ignored.", http.StatusBadRequest)
		return
	}
	if e := q.Get("error"); e != "" || q.Get("code") == "" {
		p.results <- nil
		<-p.done
		page(w, http.StatusBadRequest, "Sign-in to %s failed: the authorization server refused (%s). Call the tool again to start over.", p.Server, e)
		return
	}
	p.results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	select {
	case <-p.done:
	case <-r.Context().Done():
		return
	}
	if p.err != nil {
		page(w, http.StatusBadGateway, "Sign-in to %s failed: %v. Call the tool again to start over.", p.Server, p.err)
		return
	}
	page(w, http.StatusOK, "Signed in to %s. You can close this tab and go back to your client; call the tool again.", p.Server)
}

// page answers with a short HTML page saying msg.
func page(w http.ResponseWriter, status int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.Header().Set("X-Frame-Options", "DENY")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>toolshed</title><p>%s</p>\n", html.EscapeString(fmt.Sprintf(format, args...)))
}

// Close gives up every sign-in under way.
func (h *Hub) Close() {
	h.init()
	h.cancel()
}
