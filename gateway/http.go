package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/toolshed/toolshed/internal/frontdoor"
)

// HTTPOptions configure the Streamable HTTP front. The zero value serves the default
// profile at /mcp and every profile at /mcp/{profile}, without authentication, with
// DNS-rebinding protection and cross-origin protection on.
type HTTPOptions struct {
	// Token, when set, is a bearer token every request must carry (unless it carries
	// a profile's own token).
	Token string
	// MaxBodyBytes limits request bodies; 0 means 4 MiB.
	MaxBodyBytes int64
	// AllowOrigins lists the browser origins allowed besides same-origin requests
	// (cross-origin requests are refused otherwise).
	AllowOrigins []string
	// AllowHosts lists the Host names accepted, besides loopback ones, on a
	// connection to a loopback address (see frontdoor.Options.AllowHosts).
	AllowHosts []string
	// IdleTimeout closes a session that has sent no request for this long: a client
	// that went away without ending its session (Claude Code and the MCP Inspector
	// never send DELETE) would otherwise stay a client forever, and what toolshed
	// declares to its upstreams is what every client supports. A client whose session
	// was closed starts a new one, as MCP asks. Zero means DefaultIdleTimeout; a
	// negative value, never.
	IdleTimeout time.Duration
	// MaxSessions caps the sessions live at once, and MaxSessionsPerToken those of one
	// bearer token (all clients are one token when none is needed): a client that opens
	// sessions and never ends them would otherwise grow toolshed's memory without bound.
	// Past a cap, a new session is refused with 503 and Retry-After. Zero means
	// DefaultMaxSessions and DefaultMaxSessionsPerToken; a negative value, no cap.
	MaxSessions, MaxSessionsPerToken int
	// MaxListens caps the subscriptions/listen streams (MCP 2026-07-28) open at once,
	// and MaxListensPerToken those of one bearer token: each holds a connection for as
	// long as its client keeps it. Past a cap, a listen is refused with JSON-RPC error
	// -32603 "Subscription limit reached" before its acknowledgement. Zero means
	// DefaultMaxListens and DefaultMaxListensPerToken; a negative value, no cap.
	MaxListens, MaxListensPerToken int
	// Stateless serves Streamable HTTP without sessions, as the go-sdk's
	// StreamableHTTPOptions.Stateless does: no Mcp-Session-Id is issued or read, every
	// POST is served on its own (a request other than initialize as if its session had
	// been initialized with no client capabilities), and GET and DELETE answer 405. Any
	// replica behind a balancer can then serve any request; what needs a session is
	// lost: requests from server to client (sampling, elicitation, roots), resumable
	// streams, list_changed notifications (see docs/replicas.md).
	Stateless bool
	// ReplicaID, when set, names this replica in every session id it issues
	// ("ReplicaID.random"), so that a balancer can route each session's requests to
	// the replica that owns it (see deploy/nginx). It must be a DNS label (see
	// CheckReplicaID). A session id of another replica is unknown here (404), as any
	// unknown session is: its client initializes again.
	ReplicaID string
	// OAuth, when set, lets clients sign in with OAuth access tokens besides the
	// static tokens, and serves the protected resource metadata that tells them how.
	OAuth *OAuthOptions
	// PublicURL is toolshed's public URL (scheme://host[:port], a path prefix
	// allowed), where browsers reach the pages of per-user sign-in (/signin/...,
	// see usersignin.go). "" means the origin of OAuth.Resource, if set; without
	// either, a server that needs each user's sign-in cannot be signed in to.
	PublicURL string
}

// replicaID is the shape of HTTPOptions.ReplicaID: a DNS label (RFC 1123), so that a
// Kubernetes pod name fits, and no dot, which ends it in a session id.
var replicaID = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ErrReplicaID is CheckReplicaID's error.
var ErrReplicaID = errors.New("a replica id must be a DNS label: 1 to 63 lowercase letters, digits and hyphens, starting and ending with a letter or digit (such as toolshed-1)")

// CheckReplicaID reports whether id can be an HTTPOptions.ReplicaID.
func CheckReplicaID(id string) error {
	if !replicaID.MatchString(id) {
		return fmt.Errorf("%w; got %q", ErrReplicaID, id)
	}
	return nil
}

// DefaultIdleTimeout is HTTPOptions.IdleTimeout's default.
const DefaultIdleTimeout = 30 * time.Minute

var profileName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Handler returns the HTTP handler of the gateway's Streamable HTTP front.
//
// The profile of a request is the one its bearer token belongs to, else the one named by
// its path (/mcp/{profile}), else the default. A request with a token must match the
// profile of its path, if it names one; without any configured token, requests need none.
//
// Besides MCP it serves GET /healthz (liveness: 200 as long as it answers), GET /readyz
// (see ready) and GET /status[/{profile}] (the state, tools and error of each server
// of the caller's profile). Every path applies the same Host and origin checks; /status
// needs the same token as /mcp, while /healthz and /readyz need none and say nothing
// but ok or not.
func (g *Gateway) Handler(opts HTTPOptions) http.Handler {
	auth := g.newHTTPAuth(opts.Token, opts.OAuth)
	maxBody := opts.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = 4 << 20
	}
	idle := opts.IdleTimeout
	switch {
	case idle == 0:
		idle = DefaultIdleTimeout
	case idle < 0:
		idle = 0 // never
	}
	front := newStreamableFront(g, newHTTPSessions(g, opts, auth.required, idle), maxBody, idle)
	front.stateless = opts.Stateless
	badReplica := error(nil)
	if opts.ReplicaID != "" {
		if badReplica = CheckReplicaID(opts.ReplicaID); badReplica != nil {
			g.logf("http: HTTPOptions.ReplicaID: %v", badReplica)
		}
		front.replica = opts.ReplicaID
	}

	mux := http.NewServeMux()
	g.handleHealth(mux, auth)
	if auth.oauth != nil {
		auth.oauth.handleMetadata(mux)
	}
	serveMCP := func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			g.posts.Add(1)
			defer g.posts.Add(-1)
		}
		if badReplica != nil {
			// A balancer routing by it would send sessions to the wrong replica.
			httpError(w, http.StatusInternalServerError, "toolshed is misconfigured: HTTPOptions.ReplicaID: %v", badReplica)
			return
		}
		profile, cred, ok := auth.profile(w, r)
		if !ok {
			return
		}
		front.serve(w, r, cred, profile)
	}
	mux.HandleFunc("/mcp", serveMCP)
	mux.HandleFunc("/mcp/{profile}", serveMCP)
	guard := frontdoor.Options{AllowHosts: opts.AllowHosts, AllowOrigins: opts.AllowOrigins, RequireJSON: true, Open: !auth.required,
		Deny: func(w http.ResponseWriter, _ *http.Request, status int, message string) {
			httpError(w, status, "%s", message)
		}}
	h, err := frontdoor.Guard(mux, guard)
	if err != nil {
		g.logf("http: ignoring allowed origins: %v", err)
	}
	// The sign-in pages take a form (POST, same origin only), not JSON.
	pages := http.NewServeMux()
	g.handleSignIn(pages, publicURL(opts), auth)
	guard.RequireJSON = false
	ph, _ := frontdoor.Guard(pages, guard)
	top := http.NewServeMux()
	top.Handle("/signin/", ph)
	top.Handle("/", h)
	return top
}

// publicURL is toolshed's public URL as opts give it (see HTTPOptions.PublicURL).
func publicURL(opts HTTPOptions) string {
	if opts.PublicURL != "" {
		return strings.TrimSuffix(opts.PublicURL, "/")
	}
	if opts.OAuth != nil && opts.OAuth.Resource != "" {
		if u, err := url.Parse(opts.OAuth.Resource); err == nil && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return ""
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, format+"\n", args...)
}

// ServeStdio serves one client over stdin and stdout until it disconnects or ctx ends.
// It reads stdin at once: the handshake is answered without waiting for the upstreams,
// and the requests after it wait for them (see sessionMiddleware).
func (g *Gateway) ServeStdio(ctx context.Context, profile string) error {
	if err := g.cfg.CheckProfile(profile); err != nil {
		return err
	}
	// What mcp.Server.Run does, but a stop is not logged as an error, and the calls in
	// flight are cancelled first: the SDK closes a session only once they are
	// answered. (When the client closes stdin, the SDK cancels them itself.)
	ss, err := g.connect(ctx, stdioTransport{}, profile)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
		g.calls.cancelFor(func(c *call) bool { return c.session == ss }, errStopping)
		ss.Close()
		<-ended
		return ctx.Err()
	}
}
