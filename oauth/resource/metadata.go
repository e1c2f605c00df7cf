package resource

import (
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// WellKnown is the well-known path of protected resource metadata (RFC 9728 §3).
const WellKnown = "/.well-known/oauth-protected-resource"

// Metadata returns the protected resource metadata (RFC 9728) of the resource v
// protects, for the go-sdk's auth.ProtectedResourceMetadataHandler.
func (v *Verifier) Metadata() *oauthex.ProtectedResourceMetadata {
	return &oauthex.ProtectedResourceMetadata{
		Resource:               v.opts.Audience,
		AuthorizationServers:   []string{v.opts.Issuer},
		ScopesSupported:        v.opts.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "toolshed",
	}
}

// MetadataURL returns where the metadata of resource is served: the well-known path
// inserted between the resource URL's host and its path (RFC 9728 §3.1), so that
// https://h/mcp has https://h/.well-known/oauth-protected-resource/mcp.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	w := url.URL{Scheme: u.Scheme, Host: u.Host}
	return w.String() + WellKnown + path
}

// A Challenge is a WWW-Authenticate Bearer challenge (RFC 6750 §3, with RFC 9728's
// resource_metadata). Empty fields are left out.
type Challenge struct {
	// ResourceMetadata is the URL of the protected resource metadata.
	ResourceMetadata string
	// Scope is the scopes the request needs, space-separated.
	Scope string
	// Error is invalid_request, invalid_token or insufficient_scope; empty when the
	// request had no token (RFC 6750 §3.1).
	Error string
	// Description is a human-readable text for the client's developer.
	Description string
}

// String formats c as a WWW-Authenticate header value.
func (c Challenge) String() string {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	for _, p := range [][2]string{{"resource_metadata", c.ResourceMetadata}, {"scope", c.Scope}, {"error", c.Error}, {"error_description", c.Description}} {
		if p[1] == "" {
			continue
		}
		b.WriteString(sep + p[0] + `="` + quote(p[1]) + `"`)
		sep = ", "
	}
	return b.String()
}

// quote escapes s for an HTTP quoted-string, dropping the control characters and the
// non-ASCII runes it cannot hold.
func quote(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r >= 0x7f:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
