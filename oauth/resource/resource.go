// Package resource makes toolshed an OAuth 2.1 protected resource: it checks the bearer
// tokens that toolshed's own HTTP clients send, as the MCP authorization spec asks of
// an MCP server.
//
// A JWT access token is checked against the issuer's JSON Web Key Set: its signature
// (asymmetric algorithms only: "none" and the HMAC family are refused, so that a public
// key can never serve as a shared secret), its iss, its aud (toolshed's resource URL),
// its exp and nbf with a small leeway, and its scopes. The key set's address comes from
// the issuer's metadata (RFC 8414, or OpenID Connect discovery); the keys are cached,
// refreshed every hour and when a token names a key id the cache lacks, at most once
// per Options.MinRefresh however many such tokens arrive, so that forged key ids cannot
// make toolshed hammer the issuer. An opaque token is checked by token introspection
// (RFC 7662) when Options names toolshed's introspection client.
//
// The JOSE work is github.com/golang-jwt/jwt/v5's (which the go-sdk already depends
// on), the key set's fetching, caching and rate-limited refresh
// github.com/MicahParks/keyfunc/v3's; this package only configures them and says what
// went wrong without ever repeating the token.
//
// [Verifier.Verify] has the shape of the go-sdk's auth.TokenVerifier and returns its
// auth.TokenInfo, so it can stand behind auth.RequireBearerToken as well as behind
// toolshed's gateway.
package resource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Errors of Verify. A token that is not valid wraps auth.ErrInvalidToken too, so that
// auth.RequireBearerToken answers it with 401.
var (
	// ErrInvalidToken is wrapped by every refusal of a token itself: malformed, badly
	// signed, expired, for another audience or issuer, inactive.
	ErrInvalidToken = fmt.Errorf("%w", auth.ErrInvalidToken)
	// ErrUnavailable is wrapped when the token could not be checked: the issuer's
	// metadata, keys or introspection endpoint cannot be reached. It says nothing
	// about the token, and the client may try again later.
	ErrUnavailable = errors.New("the authorization server cannot be reached to check the token")
	// ErrOptions is wrapped by New's errors.
	ErrOptions = errors.New("oauth resource options")
)

// Defaults of Options.
const (
	DefaultLeeway = 30 * time.Second
	// DefaultIntrospectionCacheTTL is Options.IntrospectionCacheTTL's default.
	DefaultIntrospectionCacheTTL = 30 * time.Second
	DefaultMinRefresh            = time.Minute
	DefaultRefreshInterval       = time.Hour
	DefaultHTTPTimeout           = 10 * time.Second
)

// DefaultAlgorithms are the signature algorithms accepted when Options.Algorithms is
// empty: every asymmetric one of RFC 7518 and EdDSA. HS256 and its family are absent
// on purpose: a verifier holding only public keys must never accept a MAC, or anyone
// could sign with the public key as the secret.
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Options configure a Verifier. Issuer and Audience are required.
type Options struct {
	// Issuer is the authorization server's issuer identifier (its "iss"), an https URL
	// (http only on a loopback host, for tests). Its metadata is read from
	// /.well-known/oauth-authorization-server, else /.well-known/openid-configuration.
	Issuer string
	// Audience is what a token's aud must contain: toolshed's resource URL, the public
	// URL of its /mcp endpoint, which clients name as the RFC 8707 resource indicator.
	Audience string
	// Scopes are scopes every token must carry (see MissingScopes); Verify itself does
	// not check them, so that its caller can tell a missing scope (403) from a bad
	// token (401).
	Scopes []string
	// Algorithms are the JWS algorithms accepted; empty means DefaultAlgorithms. HMAC
	// algorithms and "none" are refused here whatever this says.
	Algorithms []string
	// Leeway is the clock skew allowed on exp and nbf; 0 means DefaultLeeway.
	Leeway time.Duration
	// MinRefresh is the least time between two fetches of the key set caused by unknown
	// key ids (0: DefaultMinRefresh). A token with a key id the cache lacks, when a
	// fetch was that recent, is refused without one.
	MinRefresh time.Duration
	// RefreshInterval is how often the key set is fetched anyway (0:
	// DefaultRefreshInterval).
	RefreshInterval time.Duration
	// IntrospectionClientID and IntrospectionClientSecret authenticate toolshed at the
	// issuer's introspection endpoint (client_secret_basic). Without them, a token that
	// is not a JWT is refused.
	IntrospectionClientID     string
	IntrospectionClientSecret string
	// IntrospectionCacheTTL is how long an introspection's answer is kept: a token
	// revoked at the issuer is still accepted for up to this long. 0 means
	// DefaultIntrospectionCacheTTL.
	IntrospectionCacheTTL time.Duration
	// HTTPClient reaches the issuer; nil means a client with DefaultHTTPTimeout.
	HTTPClient *http.Client
	// Logf receives what goes wrong with the issuer (never a token); nil discards it.
	Logf func(format string, args ...any)
}

// A Verifier checks bearer tokens for one issuer and audience. Its methods are safe for
// concurrent use. It reads the issuer's metadata on first use, not in New, so that a
// toolshed started while the issuer is down serves the rest (static tokens, health)
// and checks tokens once the issuer answers.
type Verifier struct {
	opts   Options
	client *http.Client
	ctx    context.Context // ends the key set's refreshes
	cancel context.CancelFunc

	mu      sync.Mutex
	meta    *issuerMeta // nil until discovered
	keys    jwtKeys
	lastTry time.Time
	lastErr error

	intro *introspector
}

// New returns a Verifier for opts, or an error wrapping ErrOptions that says what is
// wrong with them. Close it when done, to stop its key refreshes.
func New(opts Options) (*Verifier, error) {
	if err := checkIssuer(opts.Issuer); err != nil {
		return nil, err
	}
	if opts.Audience == "" {
		return nil, fmt.Errorf("%w: the audience is empty: set it to toolshed's public /mcp URL, such as https://toolshed.example.com/mcp", ErrOptions)
	}
	if u, err := url.Parse(opts.Audience); err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("%w: the audience %q is not an absolute URL: set it to toolshed's public /mcp URL, such as https://toolshed.example.com/mcp", ErrOptions, opts.Audience)
	}
	if len(opts.Algorithms) == 0 {
		opts.Algorithms = DefaultAlgorithms
	}
	for _, a := range opts.Algorithms {
		if !slices.Contains(DefaultAlgorithms, a) {
			return nil, fmt.Errorf("%w: algorithm %q is not accepted: use asymmetric ones only (%s)", ErrOptions, a, strings.Join(DefaultAlgorithms, ", "))
		}
	}
	if (opts.IntrospectionClientID == "") != (opts.IntrospectionClientSecret == "") {
		return nil, fmt.Errorf("%w: token introspection needs both a client id and a client secret", ErrOptions)
	}
	for _, s := range opts.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			return nil, fmt.Errorf("%w: scope %q is not a scope token (no spaces, quotes or backslashes)", ErrOptions, s)
		}
	}
	if opts.IntrospectionCacheTTL <= 0 {
		opts.IntrospectionCacheTTL = DefaultIntrospectionCacheTTL
	}
	if opts.Leeway <= 0 {
		opts.Leeway = DefaultLeeway
	}
	if opts.MinRefresh <= 0 {
		opts.MinRefresh = DefaultMinRefresh
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	client := opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	v := &Verifier{opts: opts, client: client}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	return v, nil
}

// checkIssuer reports whether iss can be an issuer: https, or http on loopback.
func checkIssuer(iss string) error {
	u, err := url.Parse(iss)
	if iss == "" || err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%w: the issuer %q is not an https URL without query or fragment, such as https://login.example.com/realms/eng", ErrOptions, iss)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
		return fmt.Errorf("%w: the issuer %q must use https (http is allowed on a loopback host only)", ErrOptions, iss)
	}
	return nil
}

// Options returns the options v uses, with defaults filled in.
func (v *Verifier) Options() Options { return v.opts }

// Close stops v's background key refreshes.
func (v *Verifier) Close() { v.cancel() }

// Verify checks token and returns what it says. It has the signature of the go-sdk's
// auth.TokenVerifier. Its error wraps ErrInvalidToken for a token that is not valid, or
// ErrUnavailable when the issuer could not be reached; it never contains the token.
// The scopes of Options.Scopes are not checked: see MissingScopes.
//
// In the TokenInfo, UserID is the token's sub, Scopes its scope (or scp) claim, and
// Extra every claim of the token (of the introspection response, for an opaque token),
// for mapping claims to profiles.
func (v *Verifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	return v.VerifyAudience(ctx, token, v.opts.Audience)
}

// VerifyAudience is Verify for a token whose aud must contain one of audiences rather
// than Options.Audience: toolshed serves each profile at a resource URL of its own
// (/mcp/{profile}), which clients name as their resource indicator.
func (v *Verifier) VerifyAudience(ctx context.Context, token string, audiences ...string) (*auth.TokenInfo, error) {
	meta, keys, err := v.discover(ctx)
	if err != nil {
		return nil, err
	}
	if looksLikeJWT(token) {
		return v.verifyJWT(ctx, keys, token, audiences)
	}
	if v.intro == nil || meta.IntrospectionEndpoint == "" {
		why := "toolshed is not configured for token introspection (an introspection client id and secret)"
		if v.intro != nil {
			why = "the issuer has no introspection endpoint"
		}
		return nil, fmt.Errorf("%w: the token is not a JWT, and %s", ErrInvalidToken, why)
	}
	info, err := v.intro.introspect(ctx, meta.IntrospectionEndpoint, token)
	if err != nil {
		return nil, err
	}
	if !hasAudience(info.Extra["aud"], audiences) {
		return nil, fmt.Errorf("%w: %s", ErrInvalidToken, audienceReason(audiences))
	}
	return info, nil
}

// audienceReason says which audience a token lacks.
func audienceReason(audiences []string) string {
	return "the token is for another audience: its aud must contain " + strings.Join(audiences, " or ") + " (ask for it as the resource indicator)"
}

// hasAudience reports whether an aud claim (a string or a list) holds one of want.
func hasAudience(aud any, want []string) bool {
	switch a := aud.(type) {
	case string:
		return slices.Contains(want, a)
	case []any:
		for _, e := range a {
			if s, ok := e.(string); ok && slices.Contains(want, s) {
				return true
			}
		}
	}
	return false
}

// MissingScopes returns the scopes of required that info lacks, in order.
func MissingScopes(info *auth.TokenInfo, required []string) []string {
	var out []string
	for _, s := range required {
		if info == nil || !slices.Contains(info.Scopes, s) {
			out = append(out, s)
		}
	}
	return out
}

// looksLikeJWT reports whether token has the shape of a JWS compact serialization:
// three dot-separated parts. An opaque token of that shape would be refused as a
// malformed JWT rather than introspected; the authorization servers toolshed meets
// issue opaque tokens without dots.
func looksLikeJWT(token string) bool {
	return strings.Count(token, ".") == 2
}
