// Package frontdoor is what toolshed's HTTP fronts (`toolshed serve --http` and
// `toolshed proxy`) check before a request reaches them, and how they are served: the
// Host check against DNS rebinding, cross-origin protection, JSON bodies, bearer tokens,
// and the server's limits (concurrent connections, header and body timeouts). Both
// fronts use it so that every path of either port applies the same rules.
package frontdoor

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Options configure Guard. The zero value refuses requests that reach a loopback
// address with a Host header that is not a loopback host, and cross-origin browser
// requests.
type Options struct {
	// AllowHosts lists the Host header names (without port, any case) accepted besides
	// the loopback ones on a connection to a loopback address: those a reverse proxy on
	// the same machine forwards with. "*" accepts every Host, which turns the DNS
	// rebinding protection off.
	AllowHosts []string
	// AllowOrigins lists the browser origins (scheme://host[:port]) allowed besides
	// same-origin requests. A browser app of one of them is answered as CORS asks: its
	// preflight (OPTIONS) gets the methods and headers the fronts use, and the answers
	// name it in Access-Control-Allow-Origin and expose Mcp-Session-Id.
	AllowOrigins []string
	// Open says that the front needs no token. A front reachable beyond loopback without
	// one then takes only a Host header that is an IP address, a loopback name or one of
	// AllowHosts: a web page that rebinds its own name to the machine's address sends
	// that name, and with no token nothing else would stop it.
	Open bool
	// RequireJSON refuses a POST, PUT or PATCH whose Content-Type is not
	// application/json (parameters such as charset allowed) with 415. A web page can
	// send a cross-site POST without asking the server first (a CORS "simple request")
	// only as text/plain, application/x-www-form-urlencoded or multipart/form-data.
	RequireJSON bool
	// Deny writes a refusal in the front's own error format. Nil means text/plain.
	Deny func(w http.ResponseWriter, r *http.Request, status int, message string)
}

// ErrBadOrigin is returned by Guard and CheckOrigin for an allowed origin that is not
// scheme://host[:port].
var ErrBadOrigin = errors.New("not an origin")

// CheckOrigin reports whether o can be an allowed origin.
func CheckOrigin(o string) error {
	if err := http.NewCrossOriginProtection().AddTrustedOrigin(o); err != nil {
		return fmt.Errorf("%w: %q: give scheme://host[:port], such as https://app.example.com", ErrBadOrigin, o)
	}
	return nil
}

// Guard returns h behind the checks of opts, in this order: the Host header (403), the
// origin (403), and the content type (415). An allowed origin that is not an origin
// is skipped and reported in the error; the handler is usable either way.
func Guard(h http.Handler, opts Options) (http.Handler, error) {
	deny := opts.Deny
	if deny == nil {
		deny = func(w http.ResponseWriter, _ *http.Request, status int, message string) {
			http.Error(w, message, status)
		}
	}
	var errs []error
	protect := http.NewCrossOriginProtection()
	origins := map[string]bool{}
	for _, o := range opts.AllowOrigins {
		if err := CheckOrigin(o); err != nil {
			errs = append(errs, err)
			continue
		}
		protect.AddTrustedOrigin(o)
		origins[o] = true
	}
	hosts := map[string]bool{}
	for _, name := range opts.AllowHosts {
		hosts[strings.ToLower(hostname(name))] = true // as the Host header is compared
	}
	// A refused request's connection is closed after the answer, so that a client that
	// is refused cannot keep one of the connections (see Limits.MaxConns) idle.
	refuse := func(w http.ResponseWriter, r *http.Request, status int, message string) {
		w.Header().Set("Connection", "close")
		deny(w, r, status, message)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r, hosts, opts.Open) {
			refuse(w, r, http.StatusForbidden, fmt.Sprintf("invalid Host header %q: a request to a loopback address must name a loopback host (localhost, 127.0.0.1, [::1]), and one to another address with no token configured an IP address; this protects against DNS rebinding; allow the name with --allow-host if a reverse proxy or DNS name forwards it", r.Host))
			return
		}
		if o := r.Header.Get("Origin"); origins[o] {
			w.Header().Set("Access-Control-Allow-Origin", o)
			w.Header().Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
				w.Header().Set("Access-Control-Allow-Headers", corsHeaders)
				w.Header().Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
		}
		if err := protect.Check(r); err != nil {
			refuse(w, r, http.StatusForbidden, fmt.Sprintf("cross-origin request refused: origin %q is not allowed; add it with --allow-origin if a browser app must reach toolshed", r.Header.Get("Origin")))
			return
		}
		if opts.RequireJSON && hasBody(r.Method) && !isJSON(r.Header.Get("Content-Type")) {
			refuse(w, r, http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported Content-Type %q: send the body as JSON with Content-Type: application/json", r.Header.Get("Content-Type")))
			return
		}
		h.ServeHTTP(w, r)
	}), errors.Join(errs...)
}

// corsHeaders are the request headers a browser app may send: those of MCP's Streamable
// HTTP transport and of the Messages API.
const corsHeaders = "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, X-Api-Key, Anthropic-Version, Anthropic-Beta"

// hostAllowed is the go-sdk's DNS rebinding protection (mcp.StreamableHTTPHandler,
// DisableLocalhostProtection), for every path: a request that came to a loopback
// address, whatever address the server listens on, must name a loopback host in its
// Host header, or one of hosts. A web page that rebinds its own name to 127.0.0.1
// still sends that name. On another address, an open front (one without a token) takes
// an IP address or a loopback name too, or one of hosts.
func hostAllowed(r *http.Request, hosts map[string]bool, open bool) bool {
	if IsLoopback(r.Host) || hosts["*"] || hosts[strings.ToLower(hostname(r.Host))] {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return true
	}
	if IsLoopback(local.String()) {
		return false
	}
	_, err := netip.ParseAddr(hostname(r.Host))
	return !open || err == nil
}

// IsLoopback reports whether addr (a host, or host:port) is localhost or a loopback IP
// address, as the go-sdk decides it, but with localhost in any case, as DNS names are.
func IsLoopback(addr string) bool {
	host := hostname(addr)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// hostname is addr without its port and brackets.
func hostname(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	return host
}

func hasBody(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// isJSON reports whether a Content-Type is application/json, with any parameters.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// Bearer returns the token of a request's Authorization header: the scheme is matched
// in any case (RFC 7235: "bearer x" is "Bearer x"), and the token is what follows the
// spaces after it.
func Bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.Trim(token, " ")
	return token, token != ""
}

// Equal reports whether a token a client sent is want, in time that depends on neither
// its content nor its length: both are hashed first.
func Equal(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}
