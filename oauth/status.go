package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// State is where a server's sign-in stands.
type State string

// Sign-in states.
const (
	// SignedIn: the access token is valid.
	SignedIn State = "signed in"
	// Refreshable: the access token has expired, and a refresh token will get
	// another at the next call.
	Refreshable State = "expired, refreshable"
	// NeedsSignIn: there is no credential, or it can no longer be refreshed.
	NeedsSignIn State = "needs sign-in"
)

// StateOf returns c's state at now; c may be nil.
func StateOf(c *Credential, now time.Time) State {
	switch {
	case c == nil || c.AccessToken == "" && c.RefreshToken == "":
		return NeedsSignIn
	case !c.expired(now, 0):
		return SignedIn
	case c.RefreshToken != "":
		return Refreshable
	}
	return NeedsSignIn
}

// Logout forgets the credential of srv and, where its issuer has a revocation
// endpoint, revokes its tokens there first (RFC 7009). It returns whether it
// revoked them; an error revoking is returned together with the credential
// forgotten all the same, so that the user is signed out here either way.
func Logout(ctx context.Context, srv Server, store Store, client *http.Client) (revoked bool, err error) {
	key, err := srv.key()
	if err != nil {
		return false, err
	}
	if client == nil {
		client = http.DefaultClient
	}
	var revokeErr error
	err = store.Update(ctx, key, func(c *Credential) (*Credential, error) {
		if c == nil {
			return nil, fmt.Errorf("%w to %s; nothing to sign out of", ErrNotSignedIn, srv.Name)
		}
		if c.RevocationURL == "" {
			return nil, nil
		}
		// The refresh token first: revoking it ends the grant, and with it (at
		// most servers) the access tokens issued under it.
		for _, t := range []struct {
			tok  Secret
			hint string
		}{{c.RefreshToken, "refresh_token"}, {c.AccessToken, "access_token"}} {
			if t.tok == "" {
				continue
			}
			err := revoke(ctx, c, t.tok, t.hint, client)
			if errors.Is(err, errUnsupportedToken) && t.hint == "access_token" {
				continue // a JWT: it expires by itself; its grant is revoked already
			}
			if err != nil {
				revokeErr = fmt.Errorf("revoking the %s of %s at %s: %w; it is forgotten here, but the server may still honour it until it expires", strings.ReplaceAll(t.hint, "_", " "), srv.Name, c.RevocationURL, err)
				return nil, nil
			}
		}
		revoked = true
		return nil, nil
	})
	if err != nil {
		return false, err
	}
	return revoked, revokeErr
}

// revoke sends one token to c's revocation endpoint, authenticated as the client
// the token was issued to.
func revoke(ctx context.Context, c *Credential, tok Secret, hint string, client *http.Client) error {
	form := url.Values{"token": {string(tok)}, "token_type_hint": {hint}}
	basic := oauth2.AuthStyle(c.AuthStyle) == oauth2.AuthStyleInHeader && c.ClientSecret != ""
	if !basic {
		form.Set("client_id", c.ClientID)
		if c.ClientSecret != "" {
			form.Set("client_secret", string(c.ClientSecret))
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.RevocationURL, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(c.ClientID), url.QueryEscape(string(c.ClientSecret)))
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var answer struct {
		Error string `json:"error"`
	}
	json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&answer)
	if answer.Error == "unsupported_token_type" {
		return errUnsupportedToken
	}
	if answer.Error != "" {
		return fmt.Errorf("the server answered %s (%s)", resp.Status, answer.Error)
	}
	return fmt.Errorf("the server answered %s", resp.Status)
}

// errUnsupportedToken is a revocation endpoint's answer for a kind of token it
// cannot revoke (RFC 7009 section 2.2.1), such as a JWT access token, which stays
// valid until it expires.
var errUnsupportedToken = errors.New("unsupported_token_type")
