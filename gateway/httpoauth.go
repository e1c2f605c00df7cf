package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolshed/toolshed/oauth/resource"
)

// OAuthOptions let the HTTP front's clients sign in with OAuth access tokens (see
// package oauth/resource and docs/auth.md), besides the static tokens, which keep
// working. The profile of a signed-in client is chosen by its token's claims (see
// config.Profile.Claims); when no profile names claims, a valid token may use every
// profile, as the gateway's own token may.
type OAuthOptions struct {
	// Verifier checks the tokens; required.
	Verifier *resource.Verifier
	// Resource is toolshed's public URL of /mcp, named by its protected resource
	// metadata; "" means the Verifier's audience. /mcp/NAME is the resource
	// Resource/NAME, and a token for it is accepted there as well as one for Resource.
	Resource string
	// Subjects is how the activity and search logs name a token's subject: "plain" (or ""),
	// "hash" or "off" (see config.OAuth.Subjects).
	Subjects string
}

// oauthFront is the OAuth half of httpAuth.
type oauthFront struct {
	opts     OAuthOptions
	base     string   // the resource URL of /mcp
	scopes   []string // required of every token
	claimed  bool     // some profile names claims
	issuer   string
	audience string
}

func newOAuthFront(o *OAuthOptions, g *Gateway) *oauthFront {
	if o == nil || o.Verifier == nil {
		return nil
	}
	vo := o.Verifier.Options()
	f := &oauthFront{opts: *o, base: strings.TrimSuffix(o.Resource, "/"), scopes: vo.Scopes, issuer: vo.Issuer, audience: vo.Audience}
	if f.base == "" {
		f.base = strings.TrimSuffix(vo.Audience, "/")
	}
	for _, p := range g.cfg.Profiles {
		if len(p.Claims) > 0 {
			f.claimed = true
		}
	}
	return f
}

// resourceOf is the resource URL of a request for profile ("" for /mcp).
func (f *oauthFront) resourceOf(profile string) string {
	if profile == "" {
		return f.base
	}
	return f.base + "/" + profile
}

// challenge sets the WWW-Authenticate header of a refusal of a request for profile.
func (f *oauthFront) challenge(w http.ResponseWriter, profile, errCode, description string) {
	w.Header().Set("WWW-Authenticate", resource.Challenge{
		ResourceMetadata: resource.MetadataURL(f.resourceOf(profile)),
		Scope:            strings.Join(f.scopes, " "),
		Error:            errCode,
		Description:      description,
	}.String())
}

// handleMetadata serves the protected resource metadata (RFC 9728) with the go-sdk's
// auth.ProtectedResourceMetadataHandler: at the root well-known URL, at the one of
// /mcp's path (and of Resource's path, if toolshed sits under a prefix), and at each
// profile's.
func (f *oauthFront) handleMetadata(mux *http.ServeMux) {
	meta := func(res string) http.Handler {
		m := f.opts.Verifier.Metadata()
		m.Resource = res
		return auth.ProtectedResourceMetadataHandler(m)
	}
	mux.Handle(resource.WellKnown, meta(f.base))
	paths := []string{"/mcp"}
	if u, err := url.Parse(f.base); err == nil && u.Path != "" && u.Path != "/mcp" {
		paths = append(paths, strings.TrimSuffix(u.Path, "/"))
	}
	for _, p := range paths {
		mux.Handle(resource.WellKnown+p, meta(f.base))
		mux.HandleFunc(resource.WellKnown+p+"/{profile}", func(w http.ResponseWriter, r *http.Request) {
			name := r.PathValue("profile")
			if !profileName.MatchString(name) {
				httpError(w, http.StatusNotFound, "no such profile")
				return
			}
			meta(f.resourceOf(name)).ServeHTTP(w, r)
		})
	}
}

// profile checks an OAuth access token sent for pathProfile ("" for /mcp), and
// returns the profile it is served as and the credential of its subject, or writes
// why it is refused: 401 for a token that is not valid, 403 for one that lacks a
// scope or a profile, 503 when the authorization server cannot be reached.
func (f *oauthFront) profile(a *httpAuth, w http.ResponseWriter, r *http.Request, tok, pathProfile string) (string, credential, bool) {
	auds := []string{f.audience}
	if pathProfile != "" {
		auds = append(auds, f.resourceOf(pathProfile))
	}
	info, err := f.opts.Verifier.VerifyAudience(r.Context(), tok, auds...)
	if err != nil {
		if errors.Is(err, resource.ErrInvalidToken) {
			why := strings.TrimPrefix(err.Error(), auth.ErrInvalidToken.Error()+": ")
			f.challenge(w, pathProfile, "invalid_token", why)
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusUnauthorized, "the bearer token is not valid for this gateway: %s", why)
			return "", credential{}, false
		}
		w.Header().Set("Retry-After", "10")
		httpError(w, http.StatusServiceUnavailable, "%v", err)
		return "", credential{}, false
	}
	if missing := resource.MissingScopes(info, f.scopes); len(missing) > 0 {
		why := fmt.Sprintf("the token lacks the scope %s: ask for %s", strings.Join(missing, " and "), strings.Join(f.scopes, " "))
		f.challenge(w, pathProfile, "insufficient_scope", why)
		httpError(w, http.StatusForbidden, "%s", why)
		return "", credential{}, false
	}
	profile := pathProfile
	if f.claimed {
		granted := f.granted(a, info)
		switch {
		case pathProfile != "" && !slices.Contains(granted, pathProfile):
			if more := f.stepUp(a, pathProfile, info); len(more) > 0 {
				// A profile given by a scope: the client may ask for it (step-up
				// authorization, as the MCP authorization spec describes).
				why := fmt.Sprintf("the profile %q needs the scope %s, which the token lacks: ask for %s", pathProfile, strings.Join(more, " or "), strings.Join(append(slices.Clone(f.scopes), more...), " "))
				w.Header().Set("WWW-Authenticate", resource.Challenge{
					ResourceMetadata: resource.MetadataURL(f.resourceOf(pathProfile)),
					Scope:            strings.Join(append(slices.Clone(f.scopes), more...), " "),
					Error:            "insufficient_scope",
					Description:      why,
				}.String())
				httpError(w, http.StatusForbidden, "%s", why)
				return "", credential{}, false
			}
			httpError(w, http.StatusForbidden, "the token's claims do not give the profile %q%s", pathProfile, grantedText(granted))
			return "", credential{}, false
		case pathProfile != "":
		case len(granted) == 1:
			profile = granted[0]
		case len(granted) == 0:
			httpError(w, http.StatusForbidden, "the token's claims give no profile of this gateway: ask its operator to map one of your groups or scopes to a profile (profiles.NAME.claims)")
			return "", credential{}, false
		default:
			httpError(w, http.StatusForbidden, "the token's claims give several profiles%s: connect to /mcp/NAME to choose one", grantedText(granted))
			return "", credential{}, false
		}
	}
	// A session belongs to the subject, not to one access token: a client that
	// refreshes its token keeps its sessions.
	cred := oauthCred(f.issuer, info.UserID)
	a.g.subjects.Store(cred, f.logged(info.UserID))
	return profile, cred, true
}

// oauthCred is the credential of an OAuth subject: a session belongs to it, not to
// one access token.
func oauthCred(issuer, subject string) credential {
	return credential(sha256.Sum256([]byte("oauth\x00" + issuer + "\x00" + subject)))
}

// stepUp returns the scopes that would give profile to a token (those its claims
// scope or scp name), but only those info lacks; nil for a profile no scope gives.
func (f *oauthFront) stepUp(a *httpAuth, profile string, info *auth.TokenInfo) []string {
	var out []string
	for _, claim := range []string{"scope", "scp"} {
		for _, v := range a.g.cfg.Profiles[profile].Claims[claim] {
			if !slices.Contains(info.Scopes, v) && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// logged is how the activity and search logs name subject.
func (f *oauthFront) logged(subject string) string {
	switch f.opts.Subjects {
	case "off":
		return ""
	case "hash":
		h := sha256.Sum256([]byte(f.issuer + "\x00" + subject))
		return "sha256:" + hex.EncodeToString(h[:])
	}
	return subject
}

// granted returns the profiles whose claims info matches, sorted.
func (f *oauthFront) granted(a *httpAuth, info *auth.TokenInfo) []string {
	var out []string
	for name, p := range a.g.cfg.Profiles {
		for claim, values := range p.Claims {
			if claimHas(info, claim, values) {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// claimHas reports whether the token's claim holds one of values: equals it (a
// string), contains it (a list), or, for scope and scp, grants it.
func claimHas(info *auth.TokenInfo, claim string, values []string) bool {
	if claim == "scope" || claim == "scp" {
		for _, v := range values {
			if slices.Contains(info.Scopes, v) {
				return true
			}
		}
		return false
	}
	switch c := info.Extra[claim].(type) {
	case string:
		return slices.Contains(values, c)
	case []any:
		for _, e := range c {
			if s, ok := e.(string); ok && slices.Contains(values, s) {
				return true
			}
		}
	}
	return false
}

func grantedText(granted []string) string {
	if len(granted) == 0 {
		return ""
	}
	return " (it gives " + strings.Join(granted, ", ") + ")"
}

// subjectOf is the subject of session ss as the activity and search logs name it: "" unless its
// client signed in with OAuth.
func (g *Gateway) subjectOf(ss *mcp.ServerSession) string {
	v, ok := g.subjects.Load(g.clients.principalOf(ss).cred)
	if !ok {
		return ""
	}
	return v.(string)
}
