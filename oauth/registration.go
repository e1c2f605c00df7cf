package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Registration is a client toolshed registered with an authorization server by
// dynamic client registration (RFC 7591). It is kept per issuer, so that the next
// sign-in to a server of that issuer reuses it instead of registering yet another
// client, and it is never offered to another issuer.
type Registration struct {
	// Issuer is the authorization server the client is registered with.
	Issuer string `json:"issuer"`
	// ClientID and ClientSecret (empty for a public client) are what the
	// registration returned.
	ClientID     string `json:"client_id"`
	ClientSecret Secret `json:"client_secret,omitempty"`
	// SecretExpires is when ClientSecret expires; zero means never.
	SecretExpires time.Time `json:"client_secret_expires_at,omitzero"`
	// The registered metadata that decides whether the client fits a sign-in.
	RedirectURIs            []string `json:"redirect_uris"`
	ApplicationType         string   `json:"application_type,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	// Registered is when the client was registered.
	Registered time.Time `json:"registered,omitzero"`
}

// A RegistrationStore keeps dynamically registered clients keyed by issuer. A Store
// that implements it lets Login reuse a registration; one that does not makes
// Login register a client on every sign-in.
type RegistrationStore interface {
	// Registration returns the client registered with issuer, or nil.
	Registration(ctx context.Context, issuer string) (*Registration, error)
	// SetRegistration stores r as the client registered with issuer, replacing
	// any; nil forgets it.
	SetRegistration(ctx context.Context, issuer string, r *Registration) error
}

// Registration implements RegistrationStore.
func (s *FileStore) Registration(ctx context.Context, issuer string) (*Registration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	for _, r := range f.Registrations {
		if r.Issuer == issuer {
			return r, nil
		}
	}
	return nil, nil
}

// SetRegistration implements RegistrationStore.
func (s *FileStore) SetRegistration(ctx context.Context, issuer string, r *Registration) error {
	if r != nil && r.Issuer != issuer {
		return fmt.Errorf("oauth: a registration with %s stored under issuer %s", r.Issuer, issuer)
	}
	return s.modify(ctx, func(f *fileContent) (bool, error) {
		f.Registrations = slices.DeleteFunc(f.Registrations, func(o *Registration) bool { return o.Issuer == issuer })
		if r != nil {
			f.Registrations = append(f.Registrations, r)
		}
		return true, nil
	})
}

// fits reports whether r can be used for a sign-in with the redirect URI redirect
// at issuer: registered with that issuer, with a secret that has not expired, and
// with redirect among its redirect URIs. For a native client a loopback IP literal
// redirect URI matches whatever its port (RFC 8252 section 7.3, which authorization
// servers must follow and oidc-provider does); otherwise it must match exactly.
func (r *Registration) fits(issuer, redirect string, now time.Time) bool {
	if r == nil || r.Issuer != issuer || r.ClientID == "" {
		return false
	}
	if !r.SecretExpires.IsZero() && !now.Before(r.SecretExpires) {
		return false
	}
	if slices.Contains(r.RedirectURIs, redirect) {
		return true
	}
	if r.ApplicationType != "native" {
		return false
	}
	want, ok := withoutLoopbackPort(redirect)
	if !ok {
		return false
	}
	return slices.ContainsFunc(r.RedirectURIs, func(u string) bool {
		got, ok := withoutLoopbackPort(u)
		return ok && got == want
	})
}

// withoutLoopbackPort returns an http redirect URI on a loopback IP literal with its
// port removed; ok is false for any other URI (localhost included: RFC 8252 allows
// the variable port for IP literals only).
func withoutLoopbackPort(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return "", false
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return "", false
	}
	u.Host = u.Hostname()
	if strings.Contains(u.Host, ":") {
		u.Host = "[" + u.Host + "]"
	}
	return u.String(), true
}

// register registers toolshed with the authorization server of asm as a public
// client whose redirect URI is redirect: a native one for a loopback redirect
// (`toolshed auth login`), a web one for a gateway's public callback.
func register(ctx context.Context, asm *oauthex.AuthServerMeta, redirect string, client *http.Client) (*Registration, error) {
	meta := &oauthex.ClientRegistrationMetadata{
		ClientName:              "toolshed",
		ApplicationType:         applicationType(redirect),
		RedirectURIs:            []string{redirect},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
	}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, client)
	if err != nil {
		return nil, fmt.Errorf("registering with %s: %w", asm.Issuer, err)
	}
	r := &Registration{
		Issuer:                  asm.Issuer,
		ClientID:                resp.ClientID,
		ClientSecret:            Secret(resp.ClientSecret),
		SecretExpires:           resp.ClientSecretExpiresAt,
		RedirectURIs:            resp.RedirectURIs,
		ApplicationType:         resp.ApplicationType,
		TokenEndpointAuthMethod: resp.TokenEndpointAuthMethod,
		Registered:              time.Now(),
	}
	if len(r.RedirectURIs) == 0 {
		r.RedirectURIs = meta.RedirectURIs
	}
	if r.ApplicationType == "" {
		r.ApplicationType = meta.ApplicationType
	}
	return r, nil
}

// applicationType is the OAuth application type of a client whose redirect URI is
// redirect (OpenID Connect Dynamic Client Registration, section 2): native for a
// loopback one, web for any other.
func applicationType(redirect string) string {
	if _, err := CheckRedirectURL(redirect); err == nil {
		return "native"
	}
	return "web"
}

// refused asks the token endpoint of asm whether it still knows the client of r,
// before the user is sent to sign in with it: it redeems a made-up authorization
// code, which a server answers with invalid_grant for a client it knows and with
// invalid_client (RFC 6749 section 5.2) for one it does not, e.g. one it has
// forgotten or deleted. Any other answer counts as known: the sign-in itself then
// says what is wrong.
func refused(ctx context.Context, asm *oauthex.AuthServerMeta, r *Registration, redirect string, client *http.Client) bool {
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {rand.Text()},
		"redirect_uri":  {redirect},
		"code_verifier": {rand.Text() + rand.Text()},
	}
	basic := r.ClientSecret != "" && r.TokenEndpointAuthMethod != "client_secret_post"
	if !basic {
		form.Set("client_id", r.ClientID)
		if r.ClientSecret != "" {
			form.Set("client_secret", string(r.ClientSecret))
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, asm.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(r.ClientID), url.QueryEscape(string(r.ClientSecret)))
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var body struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body)
	return body.Error == "invalid_client"
}
