package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/toolshed/toolshed/oauth"
)

// SignIn is how toolshed signs in to a remote server (`toolshed auth login`). A
// remote server without one still signs in when it asks to (a 401 naming its
// protected resource metadata), with the defaults: dynamic client registration,
// the scopes the server names, a random loopback port.
type SignIn struct {
	// Disabled (oauth: false, Gemini's enabled: false) means never sign in: a 401
	// is an error like any other.
	Disabled bool
	// ClientID and ClientSecret are a client registered with the authorization
	// server beforehand; without them toolshed registers itself.
	ClientID, ClientSecret string
	// ClientMetadataURL is the https URL of toolshed's client ID metadata
	// document, used where the authorization server supports those.
	ClientMetadataURL string
	// Scopes, when set, are asked for instead of those the server names.
	Scopes []string
	// CallbackPort fixes the loopback port of the redirect (for a client
	// registered with a fixed redirect URI); RedirectURI fixes the whole URI,
	// which must be on a loopback address.
	CallbackPort int
	RedirectURI  string
	// PerUser makes each user of toolshed's HTTP front sign in to the server with
	// their own account, for their own calls (see docs/auth.md): the gateway's own
	// sign-in then only lists the server's tools.
	PerUser bool
}

// oauthFields maps each key of an oauth (or auth) block, in every client's spelling,
// to one canonical name: Claude Code (clientId, callbackPort), Gemini CLI (clientId,
// clientSecret, scopes, redirectUri, enabled), Cursor (CLIENT_ID, CLIENT_SECRET,
// scopes).
var oauthFields = map[string]string{
	"clientId": "clientId", "client_id": "clientId", "CLIENT_ID": "clientId",
	"clientSecret": "clientSecret", "client_secret": "clientSecret", "CLIENT_SECRET": "clientSecret",
	"clientMetadataUrl": "clientMetadataUrl", "client_metadata_url": "clientMetadataUrl",
	"scopes": "scopes", "scope": "scopes",
	"callbackPort": "callbackPort", "callback_port": "callbackPort",
	"redirectUri": "redirectUri", "redirect_uri": "redirectUri", "redirectUrl": "redirectUri",
	"enabled": "enabled",
	"perUser": "perUser", "per_user": "perUser",
}

// discoveredOAuthKeys are keys of other clients' oauth blocks that name what toolshed
// discovers from the server itself (RFC 9728, RFC 8414): skipped with a warning.
var discoveredOAuthKeys = map[string]bool{
	"authorizationUrl": true, "tokenUrl": true, "registrationUrl": true, "issuer": true,
	"authServerMetadataUrl": true, "audiences": true, "tokenParamName": true,
}

// oauthBlock reads a server's oauth (or auth) setting: true/false, Hermes' "oauth",
// or a mapping.
func (l *loader) oauthBlock(n *yaml.Node, key string) *SignIn {
	if isNull(n) {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if b, ok := boolOf(n); ok {
			return &SignIn{Disabled: !b}
		}
		if strings.EqualFold(strings.TrimSpace(n.Value), "oauth") { // Hermes: auth: oauth
			return &SignIn{}
		}
		l.warn(key, "%s is not an oauth setting; write true, false, or a mapping such as {\"clientId\": \"...\", \"scopes\": [\"read\"]}; ignored", describe(n))
		return nil
	}
	if n.Kind != yaml.MappingNode {
		l.warn(key, "is %s, not a mapping; write {\"clientId\": \"...\", \"clientSecret\": \"${SECRET}\", \"scopes\": [...], \"callbackPort\": 8080}; ignored", kindName(n))
		return nil
	}
	o := &SignIn{}
	seen := map[string]string{}
	for _, p := range l.pairs(n, key) {
		k := join(key, p.key)
		c, ok := oauthFields[p.key]
		switch {
		case discoveredOAuthKeys[p.key]:
			l.warn(k, "is discovered from the server (its protected resource metadata and its authorization server's metadata); ignored")
			continue
		case !ok:
			l.warn(k, "unknown oauth setting, ignored; oauth takes clientId, clientSecret, clientMetadataUrl, scopes, callbackPort, redirectUri, perUser and enabled")
			continue
		}
		if prev, dup := seen[c]; dup {
			l.warn(k, "means the same as %s, which is used; remove one of them", prev)
			continue
		}
		seen[c] = p.key
		v := p.val
		switch c {
		case "clientId", "clientSecret", "clientMetadataUrl", "redirectUri":
			s, ok := text(v)
			if !ok {
				l.warn(k, "is %s, not a string; ignored", kindName(v))
				continue
			}
			s = strings.TrimSpace(l.expand(s, k))
			switch c {
			case "clientId":
				o.ClientID = s
			case "clientSecret":
				o.ClientSecret = s
			case "clientMetadataUrl":
				if s != "" && !strings.HasPrefix(s, "https://") {
					l.warn(k, "is not an https URL; a client ID metadata document must be served over https; ignored")
					continue
				}
				o.ClientMetadataURL = s
			case "redirectUri":
				if s == "" {
					continue
				}
				if _, err := oauth.CheckRedirectURL(s); err != nil {
					l.warn(k, "%v. toolshed takes the redirect only on its own machine; ignored, a loopback port is used", err)
					continue
				}
				o.RedirectURI = s
			}
		case "scopes":
			list, ok := stringList(v)
			if !ok {
				l.warn(k, "is %s; write a list of scopes such as [\"read\", \"write\"]; ignored", kindName(v))
				continue
			}
			for _, s := range list {
				o.Scopes = append(o.Scopes, strings.Fields(s)...)
			}
		case "callbackPort":
			port, ok := intOf(v)
			if !ok || port < 1 || port > 65535 {
				l.warn(k, "%s is not a TCP port (1 to 65535); ignored, a free port is used", describe(v))
				continue
			}
			o.CallbackPort = port
		case "enabled":
			o.Disabled = !l.boolean(v, k, true)
		case "perUser":
			o.PerUser = l.boolean(v, k, false)
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		l.warn(key, "has a clientSecret but no clientId; give the clientId it belongs to. The secret is ignored")
		o.ClientSecret = ""
	}
	return o
}

// authProviderType reads Gemini CLI's authProviderType: only dynamic_discovery,
// which is what toolshed does, is honoured.
func (l *loader) authProviderType(n *yaml.Node, key string) {
	s, ok := str(n)
	switch {
	case ok && (s == "" || s == "dynamic_discovery"):
	case ok:
		l.warn(key, "%s is not supported (toolshed signs in by OAuth discovery, dynamic_discovery); ignored", fmt.Sprintf("%q", s))
	default:
		l.warn(key, "is %s; write dynamic_discovery or leave it out; ignored", kindName(n))
	}
}
