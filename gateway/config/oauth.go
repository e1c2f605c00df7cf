package config

import (
	"fmt"
	"sort"

	"go.yaml.in/yaml/v3"
)

// OAuth lets the HTTP front's clients sign in with access tokens of an OAuth 2.1
// authorization server (see package oauth/resource and docs/auth.md), besides the
// static tokens. The zero value is off.
type OAuth struct {
	// Issuer is the authorization server's issuer URL. Expanded.
	Issuer string
	// Resource is toolshed's public URL of /mcp, such as
	// https://toolshed.example.com/mcp: what its protected resource metadata names
	// and clients ask tokens for. Expanded.
	Resource string
	// Audience is what a token's aud must contain; "" means Resource. (A profile's
	// URL, Resource/NAME, is accepted too at /mcp/NAME.) Expanded.
	Audience string
	// Scopes are scopes every token must carry.
	Scopes []string
	// IntrospectionClientID and IntrospectionClientSecret let toolshed check opaque
	// tokens at the issuer's introspection endpoint. Expanded.
	IntrospectionClientID     string
	IntrospectionClientSecret string
	// Subjects is how the activity log and the search log name a token's subject:
	// "plain" (or ""), "hash" (sha256: and the hex SHA-256 of the issuer and subject),
	// or "off".
	Subjects string
}

// Enabled reports whether o asks for OAuth.
func (o OAuth) Enabled() bool { return o.Issuer != "" }

// oauth reads oauth: {issuer, resource, audience, scopes, introspection: {client_id,
// client_secret}, subjects}. Unlike other sections, a mistake here is an error, not a
// warning: an OAuth section left out would serve without the sign-in it asked for.
func (l *loader) oauth(n *yaml.Node, key string) (OAuth, error) {
	var o OAuth
	if isNull(n) {
		return o, nil
	}
	bad := func(k, format string, args ...any) (OAuth, error) {
		return OAuth{}, fmt.Errorf("%w: %s: %s", ErrConfig, k, fmt.Sprintf(format, args...))
	}
	if n.Kind != yaml.MappingNode {
		return bad(key, "is %s, not a mapping such as {issuer: https://login.example.com, resource: https://toolshed.example.com/mcp}", kindName(n))
	}
	for _, p := range l.pairs(n, key) {
		k := join(key, p.key)
		switch p.key {
		case "issuer", "resource", "audience", "subjects":
			v, ok := text(p.val)
			if !ok {
				return bad(k, "is %s, not a string", kindName(p.val))
			}
			v = l.expand(v, k)
			switch p.key {
			case "issuer":
				o.Issuer = v
			case "resource":
				o.Resource = v
			case "audience":
				o.Audience = v
			case "subjects":
				if v != "" && v != "plain" && v != "hash" && v != "off" {
					return bad(k, "is %q; use plain, hash or off", v)
				}
				o.Subjects = v
			}
		case "scopes":
			list, ok := stringList(p.val)
			if !ok {
				return bad(k, "is %s, not a scope or a list of scopes such as [mcp:read]", kindName(p.val))
			}
			o.Scopes = list
		case "introspection":
			if p.val.Kind != yaml.MappingNode {
				return bad(k, "is %s, not a mapping such as {client_id: toolshed, client_secret: \"${TOOLSHED_INTROSPECTION_SECRET}\"}", kindName(p.val))
			}
			for _, q := range l.pairs(p.val, k) {
				kk := join(k, q.key)
				v, ok := text(q.val)
				if !ok {
					return bad(kk, "is %s, not a string", kindName(q.val))
				}
				switch q.key {
				case "client_id":
					o.IntrospectionClientID = l.expand(v, kk)
				case "client_secret":
					o.IntrospectionClientSecret = l.expand(v, kk)
				default:
					return bad(kk, "unknown setting; introspection takes client_id and client_secret")
				}
			}
		default:
			return bad(k, "unknown setting; oauth takes issuer, resource, audience, scopes, introspection and subjects")
		}
	}
	if o.Issuer == "" {
		return bad(key+".issuer", "is missing: name the authorization server's issuer URL (its \"iss\"), or remove the oauth section")
	}
	if o.Resource == "" {
		return bad(key+".resource", "is missing: give toolshed's public URL of /mcp, such as https://toolshed.example.com/mcp, which clients ask tokens for")
	}
	return o, nil
}

// claims reads a profile's claims: {claim: value or [values]}.
func claims(n *yaml.Node) (map[string][]string, string) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Sprintf("claims is %s, not a mapping from claim to values such as {groups: [platform]}", kindName(n))
	}
	out := map[string][]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name := n.Content[i].Value
		list, ok := stringList(deref(n.Content[i+1]))
		if !ok || len(list) == 0 {
			return nil, fmt.Sprintf("claims.%s is %s, not a value or a list of values such as [platform]", name, kindName(n.Content[i+1]))
		}
		out[name] = list
	}
	return out, ""
}

// ClaimNames returns the claim names of p's Claims, sorted.
func (p Profile) ClaimNames() []string {
	out := make([]string, 0, len(p.Claims))
	for k := range p.Claims {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
