package resource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/time/rate"
)

// jwtKeys is the issuer's key set, cached and refreshed by keyfunc (nil when the issuer
// publishes none).
type jwtKeys = keyfunc.Keyfunc

// rateLimitWait bounds how long a token with an unknown key id waits for the refresh
// limiter: past it, the token is refused at once (rate.Limiter.Wait fails at once when
// its turn would come after the deadline), so a flood of forged key ids neither reaches
// the issuer nor holds requests for long. The same deadline bounds the refresh's fetch.
const rateLimitWait = DefaultHTTPTimeout

// newKeys fetches the key set at uri once, and returns it cached, refreshed every
// RefreshInterval and on an unknown key id at most once per MinRefresh.
func (v *Verifier) newKeys(uri string) (jwtKeys, error) {
	if uri == "" {
		return nil, nil
	}
	fail := false
	keys, err := keyfunc.NewDefaultOverrideCtx(v.ctx, []string{uri}, keyfunc.Override{
		Client:                    v.client,
		HTTPTimeout:               DefaultHTTPTimeout,
		NoErrorReturnFirstHTTPReq: &fail,
		RateLimitWaitMax:          rateLimitWait,
		RefreshInterval:           v.opts.RefreshInterval,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(v.opts.MinRefresh), 1),
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				v.opts.Logf("oauth: refreshing the issuer's keys from %s: %v", u, err)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("reading the issuer's keys from %s: %v", uri, err)
	}
	return keys, nil
}

// verifyJWT checks a JWT access token's signature and claims.
func (v *Verifier) verifyJWT(ctx context.Context, keys jwtKeys, token string, audiences []string) (*auth.TokenInfo, error) {
	if keys == nil {
		return nil, fmt.Errorf("%w: the issuer publishes no key set (jwks_uri), so its JWTs cannot be checked", ErrInvalidToken)
	}
	p := jwt.NewParser(
		jwt.WithValidMethods(v.opts.Algorithms),
		jwt.WithIssuer(v.opts.Issuer),
		jwt.WithAudience(audiences...),
		jwt.WithLeeway(v.opts.Leeway),
		jwt.WithExpirationRequired(),
	)
	claims := jwt.MapClaims{}
	if _, err := p.ParseWithClaims(token, claims, keys.KeyfuncCtx(ctx)); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidToken, v.jwtReason(err, audiences))
	}
	return tokenInfo(claims)
}

// jwtReason says why a JWT was refused, in words of toolshed's own: the library's
// messages may quote the token's header values, which the client chose.
func (v *Verifier) jwtReason(err error, audiences []string) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is not a well-formed JWT"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token is signed with a key the issuer does not publish (unknown or missing key id)"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "the token's signature is not valid, or uses an algorithm toolshed refuses (it accepts " + strings.Join(v.opts.Algorithms, ", ") + ")"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired: get a new one"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "the token is not valid yet (nbf)"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return audienceReason(audiences)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token is from another issuer than " + v.opts.Issuer
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the token lacks a required claim (exp and aud are required)"
	}
	return "the token is not valid"
}

// tokenInfo turns verified claims (of a JWT, or of an introspection response) into an
// auth.TokenInfo.
func tokenInfo(claims map[string]any) (*auth.TokenInfo, error) {
	info := &auth.TokenInfo{Extra: claims, Scopes: scopesOf(claims)}
	if sub, ok := claims["sub"].(string); ok && sub != "" {
		info.UserID = sub
	} else if id, ok := claims["client_id"].(string); ok && id != "" {
		// A client_credentials token acts for its client.
		info.UserID = "client:" + id
	} else {
		return nil, fmt.Errorf("%w: the token names no subject (sub) nor client (client_id)", ErrInvalidToken)
	}
	if exp, ok := number(claims["exp"]); ok {
		info.Expiration = time.Unix(int64(exp), 0)
	}
	return info, nil
}

// scopesOf reads the scope claim (RFC 9068: space-separated), or scp (a list or a
// string, as some identity providers send).
func scopesOf(claims map[string]any) []string {
	for _, name := range []string{"scope", "scp"} {
		switch s := claims[name].(type) {
		case string:
			return strings.Fields(s)
		case []any:
			var out []string
			for _, e := range s {
				if str, ok := e.(string); ok {
					out = append(out, str)
				}
			}
			return out
		}
	}
	return nil
}

// number reads a JSON number claim.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	}
	return 0, false
}
