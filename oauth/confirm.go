package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// maxConfirms bounds the identity checks waiting for their browsers.
const maxConfirms = 256

// Confirmer learns who a browser's user is from the authorization server that a
// gateway's own clients sign in with (the MCP authorization server of the gateway):
// the browser signs in there, and the access token it gets for the gateway's resource
// names the subject. A gateway uses it before it sends a browser on to a per-user
// sign-in (see Hub), so that a link passed to someone else signs nobody in for its
// sender: the MCP specification's defence against that phishing.
type Confirmer struct {
	// Issuer is the authorization server, and Resource the gateway's resource URL,
	// which the token is asked for (RFC 8707).
	Issuer, Resource string
	// RedirectURL is where the authorization server sends the browser back: the
	// gateway's page that calls Finish.
	RedirectURL string
	// Scopes are asked for besides openid.
	Scopes []string
	// ClientID and ClientSecret are a client registered beforehand; without them the
	// Confirmer registers itself (dynamic registration, kept in Store when it is a
	// RegistrationStore).
	ClientID, ClientSecret string
	Store                  Store
	// HTTPClient makes the requests to the authorization server; nil means
	// http.DefaultClient.
	HTTPClient *http.Client

	mu      sync.Mutex
	pending map[string]*confirm // state -> the check under way
}

type confirm struct {
	next     string // what the check is for (a Hub sign-in's ID)
	verifier string
	cfg      *oauth2.Config
	expires  time.Time
}

func (c *Confirmer) client() *http.Client {
	if c.HTTPClient == nil {
		return http.DefaultClient
	}
	return c.HTTPClient
}

// Start returns the authorization server's URL to send the browser to, for the
// check that ends with Finish returning next.
func (c *Confirmer) Start(ctx context.Context, next string) (string, error) {
	asm, err := auth.GetAuthServerMetadata(ctx, c.Issuer, c.client())
	if err != nil || asm == nil {
		return "", fmt.Errorf("reading the metadata of %s: %v", c.Issuer, err)
	}
	cfg := &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: c.RedirectURL,
		Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint}, Scopes: append([]string{"openid"}, c.Scopes...)}
	if cfg.ClientID == "" {
		if asm.RegistrationEndpoint == "" {
			return "", fmt.Errorf("%s offers no dynamic client registration: configure a client for toolshed's sign-in page", c.Issuer)
		}
		reg, err := registration(ctx, c.Store, asm, c.RedirectURL, c.client())
		if err != nil {
			return "", err
		}
		cfg.ClientID, cfg.ClientSecret = reg.ClientID, string(reg.ClientSecret)
		if reg.TokenEndpointAuthMethod == "client_secret_post" {
			cfg.Endpoint.AuthStyle = oauth2.AuthStyleInParams
		}
	}
	state, verifier := rand.Text(), oauth2.GenerateVerifier()
	now := time.Now()
	c.mu.Lock()
	if c.pending == nil {
		c.pending = map[string]*confirm{}
	}
	for s, p := range c.pending {
		if now.After(p.expires) {
			delete(c.pending, s)
		}
	}
	if len(c.pending) >= maxConfirms {
		c.mu.Unlock()
		return "", fmt.Errorf("%w (identity checks); try again in a few minutes", ErrTooManySignIns)
	}
	c.pending[state] = &confirm{next: next, verifier: verifier, cfg: cfg, expires: now.Add(10 * time.Minute)}
	c.mu.Unlock()
	return cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", c.Resource)), nil
}

// Finish takes the authorization server's answer (r, at RedirectURL): once per
// check, with its state and the issuer's iss. It returns what the check was for and
// the access token issued for the resource, which the caller verifies (signature,
// audience) to learn the subject.
func (c *Confirmer) Finish(ctx context.Context, r *http.Request) (next, accessToken string, err error) {
	q := r.URL.Query()
	c.mu.Lock()
	p := c.pending[q.Get("state")]
	delete(c.pending, q.Get("state"))
	c.mu.Unlock()
	switch {
	case p == nil || time.Now().After(p.expires):
		return "", "", errors.New("this answer belongs to no identity check under way (unknown or expired state)")
	case q.Get("error") != "":
		return p.next, "", fmt.Errorf("the authorization server refused: %s", q.Get("error"))
	case q.Get("iss") != "" && q.Get("iss") != c.Issuer:
		return p.next, "", fmt.Errorf("the answer comes from %s, not from %s", q.Get("iss"), c.Issuer)
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.client())
	tok, err := p.cfg.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(p.verifier), oauth2.SetAuthURLParam("resource", c.Resource))
	if err != nil {
		return p.next, "", scrub(err)
	}
	return p.next, tok.AccessToken, nil
}

// Owns reports whether state is that of an identity check under way: a gateway
// that takes the answers of its checks and of its sign-ins at one URL tells them
// apart by it.
func (c *Confirmer) Owns(state string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[state]
	return ok
}
