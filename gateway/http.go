package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the Streamable HTTP front. The zero value serves the default
// profile at /mcp and every profile at /mcp/{profile}, without authentication, with
// the SDK's DNS-rebinding protection and cross-origin protection on.
type HTTPOptions struct {
	// Token, when set, is a bearer token every request must carry (unless it carries
	// a profile's own token).
	Token string
	// MaxBodyBytes limits request bodies; 0 means 4 MiB.
	MaxBodyBytes int64
	// AllowOrigins lists the browser origins allowed besides same-origin requests
	// (cross-origin requests are refused otherwise).
	AllowOrigins []string
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
}

// DefaultIdleTimeout is HTTPOptions.IdleTimeout's default.
const DefaultIdleTimeout = 30 * time.Minute

type profileKey struct{}

var profileName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Handler returns the HTTP handler of the gateway's Streamable HTTP front.
//
// The profile of a request is the one its bearer token belongs to, else the one named by
// its path (/mcp/{profile}), else the default. A request with a token must match the
// profile of its path, if it names one; without any configured token, requests need none.
func (g *Gateway) Handler(opts HTTPOptions) http.Handler {
	tokens := map[string]string{} // token -> profile
	for name, p := range g.cfg.Profiles {
		if p.Token != "" {
			tokens[p.Token] = name
		}
	}
	authRequired := opts.Token != "" || len(tokens) > 0
	maxBody := opts.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = 4 << 20
	}
	idle := opts.IdleTimeout
	switch {
	case idle == 0:
		idle = DefaultIdleTimeout
	case idle < 0:
		idle = 0 // the SDK's "never"
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		profile, _ := r.Context().Value(profileKey{}).(string)
		return g.mcpServerFor(profile)
	}, &mcp.StreamableHTTPOptions{Logger: g.slogger(), MaxRequestBodyBytes: maxBody, SessionTimeout: idle,
		// Resumable streams: a client that loses an SSE stream mid-call reconnects with
		// Last-Event-ID and gets what it missed (bounded to 10 MiB).
		EventStore: mcp.NewMemoryEventStore(nil)})
	sessions := newHTTPSessions(g, opts, authRequired, idle)

	protect := http.NewCrossOriginProtection()
	for _, o := range opts.AllowOrigins {
		if err := protect.AddTrustedOrigin(o); err != nil {
			g.logf("http: ignoring allowed origin %q: %v", o, err)
		}
	}
	protect.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusForbidden, "cross-origin request refused: origin %q is not allowed; add it to the allowed origins if a browser app must reach toolshed", r.Header.Get("Origin"))
	}))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		type up struct {
			Name  string `json:"name"`
			State State  `json:"state"`
			Tools int    `json:"tools"`
			Error string `json:"error,omitempty"`
		}
		var ups []up
		for _, s := range g.Statuses() {
			e := ""
			if s.Err != nil {
				e = s.Err.Error()
			}
			ups = append(ups, up{s.Name, s.State, s.Tools, e})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"upstreams": ups})
	})
	serveMCP := func(w http.ResponseWriter, r *http.Request) {
		pathProfile := r.PathValue("profile")
		profile := pathProfile
		if authRequired {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			switch {
			case !ok || tok == "":
				w.Header().Set("WWW-Authenticate", `Bearer realm="toolshed"`)
				httpError(w, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <token>")
				return
			case opts.Token != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(opts.Token)) == 1:
			default:
				p, found := "", false
				for t, name := range tokens {
					if subtle.ConstantTimeCompare([]byte(tok), []byte(t)) == 1 {
						p, found = name, true
					}
				}
				if !found {
					w.Header().Set("WWW-Authenticate", `Bearer realm="toolshed", error="invalid_token"`)
					httpError(w, http.StatusUnauthorized, "the bearer token is not valid for this gateway")
					return
				}
				if pathProfile != "" && pathProfile != p {
					httpError(w, http.StatusForbidden, "this token belongs to another profile than %q", pathProfile)
					return
				}
				profile = p
			}
		}
		// Checked after authentication, so that only an authorized client learns which
		// profiles exist.
		if pathProfile != "" {
			if _, ok := g.cfg.Profiles[pathProfile]; !ok || !profileName.MatchString(pathProfile) {
				httpError(w, http.StatusNotFound, "no profile named %q; the profiles are %s", pathProfile, strings.Join(g.Profiles(), ", "))
				return
			}
		}
		ctx := context.WithValue(r.Context(), profileKey{}, profile)
		if r.Method == http.MethodGet {
			// A client's standing stream waits for messages as long as its session
			// lives: it ends when the gateway stops, or it would hold a stopping
			// server's drain (http.Server.Shutdown) until its timeout.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(g.life, cancel)()
		}
		coalesced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveCoalesced(mcpHandler, w, r, maxBody) })
		sessions.serve(coalesced, w, r.WithContext(ctx), credentialOf(r, authRequired), profile)
	}
	mux.HandleFunc("/mcp", serveMCP)
	mux.HandleFunc("/mcp/{profile}", serveMCP)
	return protect.Handler(mux)
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
	if profile != "" {
		if _, ok := g.cfg.Profiles[profile]; !ok {
			return fmt.Errorf("no profile named %q; the profiles are %s", profile, strings.Join(g.Profiles(), ", "))
		}
	}
	// What mcp.Server.Run does, but a stop is not logged as an error, and the calls in
	// flight are cancelled first: the SDK closes a session only once they are
	// answered. (When the client closes stdin, the SDK cancels them itself.)
	ss, err := g.mcpServerFor(profile).Connect(ctx, &directFront{Transport: stdioTransport{}}, nil)
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
