package resource

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// introspectionEntries bounds the introspection cache: an MCP client sends its token
// with every request, and asking the issuer each time would make it the gateway's
// bottleneck (see Options.IntrospectionCacheTTL).
const introspectionEntries = 4096

// introspector checks opaque tokens at the issuer's introspection endpoint (RFC 7662).
type introspector struct {
	v *Verifier

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cached // by the token's SHA-256, never the token
}

type cached struct {
	info  *auth.TokenInfo
	until time.Time
}

// introspect asks endpoint about token and checks the answer as a JWT's claims are
// checked: active, the issuer, exp and nbf. The caller checks the audience.
func (in *introspector) introspect(ctx context.Context, endpoint, token string) (*auth.TokenInfo, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	in.mu.Lock()
	if c, ok := in.cache[key]; ok && now.Before(c.until) {
		in.mu.Unlock()
		return c.info, nil
	}
	in.mu.Unlock()

	claims, err := in.ask(ctx, endpoint, token)
	if err != nil {
		return nil, err
	}
	info, err := in.check(claims, now)
	if err != nil {
		return nil, err
	}
	until := now.Add(in.v.opts.IntrospectionCacheTTL)
	if !info.Expiration.IsZero() && info.Expiration.Before(until) {
		until = info.Expiration
	}
	in.mu.Lock()
	if in.cache == nil || len(in.cache) >= introspectionEntries {
		in.cache = map[[sha256.Size]byte]cached{}
	}
	in.cache[key] = cached{info, until}
	in.mu.Unlock()
	return info, nil
}

// ask posts token to endpoint, authenticated as toolshed's introspection client.
func (in *introspector) ask(ctx context.Context, endpoint, token string) (map[string]any, error) {
	o := in.v.opts
	ctx, cancel := context.WithTimeout(ctx, DefaultHTTPTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: the introspection endpoint %q is not a URL", ErrUnavailable, endpoint)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(o.IntrospectionClientID), url.QueryEscape(o.IntrospectionClientSecret))
	res, err := in.v.client.Do(req)
	if err != nil {
		// A url.Error names the endpoint and the failure; the token is in the body.
		o.Logf("oauth: token introspection at %s: %v", endpoint, err)
		return nil, fmt.Errorf("%w: introspection at %s failed", ErrUnavailable, endpoint)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		o.Logf("oauth: token introspection at %s answered %s: check toolshed's introspection client id and secret", endpoint, res.Status)
		return nil, fmt.Errorf("%w: introspection at %s answered %s", ErrUnavailable, endpoint, res.Status)
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("%w: introspection at %s answered %q, not JSON", ErrUnavailable, endpoint, mt)
	}
	var claims map[string]any
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&claims); err != nil {
		return nil, fmt.Errorf("%w: introspection at %s answered malformed JSON", ErrUnavailable, endpoint)
	}
	return claims, nil
}

// check applies to an introspection response the checks a JWT's claims get.
func (in *introspector) check(claims map[string]any, now time.Time) (*auth.TokenInfo, error) {
	o := in.v.opts
	if active, _ := claims["active"].(bool); !active {
		return nil, fmt.Errorf("%w: the issuer says the token is not active (expired, revoked, or never issued)", ErrInvalidToken)
	}
	if iss, ok := claims["iss"].(string); ok && iss != o.Issuer {
		return nil, fmt.Errorf("%w: the token is from another issuer than %s", ErrInvalidToken, o.Issuer)
	}
	if exp, ok := number(claims["exp"]); ok && now.After(time.Unix(int64(exp), 0).Add(o.Leeway)) {
		return nil, fmt.Errorf("%w: the token has expired: get a new one", ErrInvalidToken)
	}
	if nbf, ok := number(claims["nbf"]); ok && now.Add(o.Leeway).Before(time.Unix(int64(nbf), 0)) {
		return nil, fmt.Errorf("%w: the token is not valid yet (nbf)", ErrInvalidToken)
	}
	return tokenInfo(claims)
}
