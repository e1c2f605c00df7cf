package resource

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// discoveryRetry is how long after a failed discovery Verify fails at once rather than
// asking the issuer again: a flood of requests while the issuer is down sends it one
// request per interval, not one per token.
const discoveryRetry = 5 * time.Second

// issuerMeta is what toolshed uses of the issuer's metadata.
type issuerMeta struct {
	JWKSURI               string
	IntrospectionEndpoint string
}

// discover returns the issuer's metadata and key set, reading them on first use.
func (v *Verifier) discover(ctx context.Context) (*issuerMeta, jwtKeys, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.meta != nil {
		return v.meta, v.keys, nil
	}
	if !v.lastTry.IsZero() && time.Since(v.lastTry) < discoveryRetry {
		return nil, nil, v.lastErr
	}
	v.lastTry = time.Now()
	meta, err := v.fetchMeta(ctx)
	if err == nil {
		var keys jwtKeys
		keys, err = v.newKeys(meta.JWKSURI)
		if err == nil {
			v.meta, v.keys = meta, keys
			if v.opts.IntrospectionClientID != "" {
				v.intro = &introspector{v: v}
			}
			return meta, keys, nil
		}
	}
	v.opts.Logf("oauth: %v", err)
	v.lastErr = fmt.Errorf("%w (%s): %v", ErrUnavailable, v.opts.Issuer, err)
	return nil, nil, v.lastErr
}

// metadataURLs are where an issuer's metadata may be, in the order the MCP
// authorization spec tries them: RFC 8414 with the issuer's path after the well-known
// segment, then OpenID Connect discovery in both placements.
func metadataURLs(issuer string) []string {
	u, _ := url.Parse(issuer) // checked by New
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	at := func(p string) string {
		w := *u
		w.RawPath, w.Path = "", ""
		return w.String() + p
	}
	if path == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + path),
		at("/.well-known/openid-configuration" + path),
		at(path + "/.well-known/openid-configuration"),
	}
}

// fetchMeta reads the issuer's metadata with the go-sdk's oauthex.GetAuthServerMeta,
// which also checks that the metadata's issuer is the one configured (RFC 8414 §3.3)
// and that its URLs are https or loopback.
func (v *Verifier) fetchMeta(ctx context.Context) (*issuerMeta, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultHTTPTimeout)
	defer cancel()
	var errs []error
	for _, u := range metadataURLs(v.opts.Issuer) {
		asm, err := oauthex.GetAuthServerMeta(ctx, u, v.opts.Issuer, v.client)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %v", u, err))
		case asm == nil: // 4xx: try the next place
		case asm.JWKSURI == "" && asm.IntrospectionEndpoint == "":
			return nil, fmt.Errorf("the metadata at %s has neither jwks_uri nor introspection_endpoint, so toolshed cannot check its tokens", u)
		default:
			return &issuerMeta{JWKSURI: asm.JWKSURI, IntrospectionEndpoint: asm.IntrospectionEndpoint}, nil
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("the issuer %s publishes no metadata at %s: check the issuer URL", v.opts.Issuer, strings.Join(metadataURLs(v.opts.Issuer), " or "))
	}
	return nil, errors.Join(errs...)
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
