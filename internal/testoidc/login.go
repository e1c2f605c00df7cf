package testoidc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Login plays the browser of the provider's first user: it opens authorizeURL (an
// authorization request a client built), signs in on the login page, allows the
// request on the consent page, and returns the URL the provider then redirects to,
// the client's redirect_uri with code, state and iss (or error) in its query, without
// following it. Each call is a fresh browser (its own cookie jar), so the user always
// signs in. When the provider does not redirect to the client (it shows an error page,
// e.g. for a redirect_uri that is not registered), the error wraps ErrNoRedirect and
// quotes the page's error.
func (p *Provider) Login(ctx context.Context, authorizeURL string) (redirectURL string, err error) {
	return p.browse(ctx, authorizeURL, p.users[0], "consent")
}

// LoginAs is Login as user, whose name and password fill in the login page (a wrong
// password gets ErrNoRedirect).
func (p *Provider) LoginAs(ctx context.Context, authorizeURL string, user User) (redirectURL string, err error) {
	return p.browse(ctx, authorizeURL, user, "consent")
}

// Deny is Login with the user refusing on the consent page: the redirect carries
// error=access_denied.
func (p *Provider) Deny(ctx context.Context, authorizeURL string) (redirectURL string, err error) {
	return p.browse(ctx, authorizeURL, p.users[0], "deny")
}

// browse drives the pages from authorizeURL until the provider redirects away from
// itself. It submits the form with id "login" (filled in as user) or, on the consent
// page, the form with id consentForm, at most a few times.
func (p *Provider) browse(ctx context.Context, authorizeURL string, user User, consentForm string) (string, error) {
	issuer, err := url.Parse(p.issuer)
	if err != nil {
		return "", err
	}
	jar, _ := cookiejar.New(nil)
	var away *url.URL
	client := &http.Client{
		Jar: jar,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Host != issuer.Host || req.URL.Scheme != issuer.Scheme {
				away = req.URL
				return http.ErrUseLastResponse
			}
			if len(via) > 10 {
				return errors.New("more than 10 redirects")
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorizeURL, nil)
	if err != nil {
		return "", fmt.Errorf("testoidc: authorization URL: %w", err)
	}
	for step := 0; step < 4; step++ {
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("testoidc: %s %s: %w", req.Method, req.URL.Path, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		if away != nil {
			return away.String(), nil
		}
		doc, err := html.Parse(strings.NewReader(string(body)))
		if err != nil {
			return "", fmt.Errorf("%w: HTTP %d, a page that does not parse: %v", ErrNoRedirect, resp.StatusCode, err)
		}
		form := findByID(doc, "login")
		fill := map[string]string{"login": user.Name, "password": user.Password}
		if form == nil {
			form, fill = findByID(doc, consentForm), nil
		}
		if form == nil || resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%w: HTTP %d on %s: %s", ErrNoRedirect, resp.StatusCode, resp.Request.URL.Path, pageError(doc))
		}
		req, err = submit(ctx, resp.Request.URL, form, fill)
		if err != nil {
			return "", err
		}
	}
	return "", fmt.Errorf("%w: still on the provider's pages after 4 forms", ErrNoRedirect)
}

// submit builds the request a browser sends for form on the page at base: its inputs
// with their values, those named in fill set to the given ones.
func submit(ctx context.Context, base *url.URL, form *html.Node, fill map[string]string) (*http.Request, error) {
	action, err := base.Parse(attr(form, "action"))
	if err != nil {
		return nil, fmt.Errorf("testoidc: form action: %w", err)
	}
	values := url.Values{}
	walk(form, func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "input" || attr(n, "name") == "" {
			return
		}
		name := attr(n, "name")
		v, ok := fill[name]
		if !ok {
			v = attr(n, "value")
		}
		values.Set(name, v)
	})
	method := strings.ToUpper(attr(form, "method"))
	if method != http.MethodPost {
		action.RawQuery = values.Encode()
		return http.NewRequestWithContext(ctx, http.MethodGet, action.String(), nil)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, action.String(), strings.NewReader(values.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

// pageError is the text of an error page: its elements with ids error and
// error_description, else its title.
func pageError(doc *html.Node) string {
	var parts []string
	for _, id := range []string{"error", "error_description"} {
		if n := findByID(doc, id); n != nil {
			parts = append(parts, text(n))
		}
	}
	if len(parts) == 0 {
		walk(doc, func(n *html.Node) {
			if n.Type == html.ElementNode && n.Data == "title" && len(parts) == 0 {
				parts = append(parts, text(n))
			}
		})
	}
	return strings.Join(parts, ": ")
}

func findByID(doc *html.Node, id string) *html.Node {
	var found *html.Node
	walk(doc, func(n *html.Node) {
		if found == nil && n.Type == html.ElementNode && attr(n, "id") == id {
			found = n
		}
	})
	return found
}

func walk(n *html.Node, f func(*html.Node)) {
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return strings.TrimSpace(b.String())
}
