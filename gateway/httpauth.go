package gateway

import (
	"crypto/sha256"
	"fmt"
	"net/http"

	"github.com/toolshed/toolshed/gateway/config"
	"github.com/toolshed/toolshed/internal/frontdoor"
)

// httpAuth decides the profile of an HTTP request from its bearer token and path.
type httpAuth struct {
	g        *Gateway
	token    string            // the gateway's own token, for any profile
	tokens   map[string]string // profile token -> profile
	oauth    *oauthFront       // nil without OAuth
	required bool
}

func (g *Gateway) newHTTPAuth(token string, oauth *OAuthOptions) *httpAuth {
	a := &httpAuth{g: g, token: token, tokens: map[string]string{}, oauth: newOAuthFront(oauth, g)}
	for name, p := range g.cfg.Profiles {
		if p.Token != "" {
			a.tokens[p.Token] = name
		}
	}
	a.required = token != "" || len(a.tokens) > 0 || a.oauth != nil
	if token != "" {
		own := credential(sha256.Sum256([]byte(token)))
		g.ownCred.Store(&own)
	}
	return a
}

// whole reports whether r may see what covers every profile (GET /metrics on the main
// listener): any request when no token is needed, else one with the gateway's own token.
// A profile's token is refused with 403, as it would learn the servers and calls of the
// other profiles, which its /status hides; otherwise it answers as profile does.
func (a *httpAuth) whole(w http.ResponseWriter, r *http.Request) bool {
	if !a.required {
		return true
	}
	if tok, ok := frontdoor.Bearer(r); ok && a.token != "" && frontdoor.Equal(tok, a.token) {
		return true
	}
	if _, _, ok := a.profile(w, r); ok {
		httpError(w, http.StatusForbidden, "the metrics cover every profile: read them with the gateway's own token (--token), or from --metrics-addr")
	}
	return false
}

// profile finds the profile of a request (see Gateway.Handler) and the credential it
// was accepted with (see credential), or writes why it has none. The token's scheme is
// matched in any case, and tokens are compared in constant time.
func (a *httpAuth) profile(w http.ResponseWriter, r *http.Request) (profile string, cred credential, ok bool) {
	pathProfile := r.PathValue("profile")
	profile = pathProfile
	cred = sha256.Sum256(nil)
	if a.required {
		tok, ok := frontdoor.Bearer(r)
		cred = sha256.Sum256([]byte(tok))
		switch {
		case !ok && a.oauth != nil:
			a.oauth.challenge(w, pathProfile, "", "")
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusUnauthorized, "missing bearer token: sign in with OAuth (see the resource_metadata of WWW-Authenticate), or send Authorization: Bearer <token>")
			return "", credential{}, false
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolshed"`)
			w.Header().Set("Connection", "close") // a refused client keeps no connection
			httpError(w, http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <token>")
			return "", credential{}, false
		case a.token != "" && frontdoor.Equal(tok, a.token):
		default:
			p, found := "", false
			for t, name := range a.tokens {
				if frontdoor.Equal(tok, t) {
					p, found = name, true
				}
			}
			if !found && a.oauth != nil {
				if profile, cred, ok = a.oauth.profile(a, w, r, tok, pathProfile); !ok {
					return "", credential{}, false
				}
				break
			}
			if !found {
				w.Header().Set("WWW-Authenticate", `Bearer realm="toolshed", error="invalid_token"`)
				w.Header().Set("Connection", "close")
				httpError(w, http.StatusUnauthorized, "the bearer token is not valid for this gateway")
				return "", credential{}, false
			}
			if pathProfile != "" && pathProfile != p {
				httpError(w, http.StatusForbidden, "this token belongs to another profile than %q", pathProfile)
				return "", credential{}, false
			}
			profile = p
		}
	}
	// Checked after authentication, so that only an authorized client learns which
	// profiles exist.
	if pathProfile != "" {
		err := a.g.cfg.CheckProfile(pathProfile)
		if err == nil && !profileName.MatchString(pathProfile) {
			err = fmt.Errorf("%w %q: a profile's name is made of letters, digits, _ and -", config.ErrUnknownProfile, pathProfile)
		}
		if err != nil {
			httpError(w, http.StatusNotFound, "%v", err)
			return "", credential{}, false
		}
	}
	return profile, cred, true
}
